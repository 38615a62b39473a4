package agenttest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// piFamily is pi (@mariozechner/pi-coding-agent, the command pi): a
// provider of its own in ~/.pi/agent/models.json speaks the Anthropic
// Messages API (anthropic.go) at the server, with a price per token so that
// pi prices each reply. pi keeps each session as one file of JSON lines,
// ~/.pi/agent/sessions/--<work folder>--/<time>_<session id>.jsonl, which
// `--session ID` continues. It has no subagent tool, and no permissions: it
// runs every tool it offers, so the refused scenario offers no shell
// (--tools read), and the model's shell call is of an unknown tool.
type piFamily struct{}

func init() { Families["pi"] = piFamily{} }

// piModel is the model of the provider pi is given.
const piModel = "claude-sonnet-4-5"

func (piFamily) Setup(pin Pin, home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	models := map[string]any{"providers": map[string]any{"agentconv": map[string]any{
		"baseUrl": url,
		"api":     "anthropic-messages",
		"apiKey":  "agentconv-fake-key",
		"models": []any{map[string]any{
			"id": piModel, "name": "agentconv scripted model", "reasoning": true, "input": []string{"text"},
			"contextWindow": 200000, "maxTokens": 16000,
			// dollars per million tokens
			"cost": map[string]any{"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
		}},
	}}}
	if err := writeJSON(filepath.Join(dir, "models.json"), models); err != nil {
		return nil, err
	}
	settings := map[string]any{
		"defaultProvider":        "agentconv",
		"defaultModel":           piModel,
		"enableInstallTelemetry": false,
		"quietStartup":           true,
		// pi's own retries of a failed request (2, 200 ms then 400 ms
		// apart), and none of the Anthropic client's: api-error and
		// rate-limit end in about a second.
		"retry": map[string]any{"enabled": true, "maxRetries": 2, "baseDelayMs": 200, "provider": map[string]any{"maxRetries": 0}},
	}
	if err := writeJSON(filepath.Join(dir, "settings.json"), settings); err != nil {
		return nil, err
	}
	return append(BaseEnv(home),
		"PI_OFFLINE=1",
		"PI_SKIP_VERSION_CHECK=1",
		"ANTHROPIC_API_KEY=agentconv-fake-key",
	), nil
}

// Modes: pi --mode json, a stream of JSON lines, read as pi.
func (piFamily) Modes(pin Pin) []Mode {
	return []Mode{{Name: "json", Dialect: "pi", Ext: "jsonl"}}
}

// piArgs are the flags of every run: the provider, and nothing of the
// user's machine (extensions, skills, prompt templates, context files).
func piArgs(prompt string) []string {
	return []string{"--mode", "json", "--provider", "agentconv", "--model", piModel, "--offline",
		"--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files", "-p", prompt}
}

func (piFamily) Args(pin Pin, mode Mode, sc Scenario) []string {
	args := piArgs(sc.Prompt)
	if sc.Refuses() {
		args = append(args, "--tools", "read")
	}
	if sc.Name == "thinking" || sc.Name == "resume-thinking" {
		args = append(args, "--thinking", "low")
	}
	return args
}

func (piFamily) ResumeArgs(pin Pin, mode Mode, id, prompt string) []string {
	return append(piArgs(prompt), "--session", id, "--thinking", "low")
}

var piSessionRe = regexp.MustCompile(`^\{"type":"session"[^\n]*?"id":"([^"]+)"`)

// SessionID is the id of the session header, pi's first line, else the
// id in the name of the session file the run wrote.
func (piFamily) SessionID(pin Pin, home string, stdout []byte) string {
	if m := piSessionRe.FindSubmatch(stdout); m != nil {
		return string(m[1])
	}
	files, _ := filepath.Glob(filepath.Join(home, ".pi", "agent", "sessions", "*", "*.jsonl"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		if _, id, ok := strings.Cut(name, "_"); ok {
			return id
		}
	}
	return ""
}

// Store: pi's session files, read as pi-session.
func (piFamily) Store(pin Pin) (string, string) { return ".pi/agent/sessions", "pi-session" }

func (piFamily) Tools(pin Pin) Toolset { return piTools{} }

// piTools are pi's built-in tools: bash and write. pi has no subagent.
type piTools struct{}

func (piTools) Shell(id, command string) Call {
	return Call{ID: id, Name: "bash", Args: map[string]any{"command": command}}
}

func (piTools) WriteFile(id, path, content string) Call {
	return Call{ID: id, Name: "write", Args: map[string]any{"path": WorkMark + "/" + path, "content": content}}
}

func (piTools) Subagent(id, prompt string) (Call, bool) { return Call{}, false }

// Extra: pi runs the resumed session whose answers think, and the loop
// (it has no loop detection: the model's own text ends it).
func (piTools) Extra(name string) bool { return name == "resume-thinking" || name == "loop" }

// Flags implements Resumer.
func (piFamily) Flags(Pin) []string { return nil }

// Place implements Resumer: pi finds a session by the id in its header
// among the files of its working folder's session folder,
// ~/.pi/agent/sessions/--<the folder without its leading /, each / and :
// a dash>--/.
func (piFamily) Place(_ Pin, home, work string) (string, string) {
	safe := "--" + strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(strings.TrimLeft(work, "/\\")) + "--"
	return filepath.Join(home, ".pi", "agent", "sessions", safe), "pi-session"
}

// WorkFlags implements WorkFlagger: pi resumes a session only in its
// working folder, which must exist.
func (piFamily) WorkFlags(_ Pin, work string) []string { return []string{"--pi-cwd", work} }
