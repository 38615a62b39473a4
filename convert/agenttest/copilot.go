package agenttest

import (
	"os"
	"path/filepath"
	"regexp"
)

// copilotCLI is the GitHub Copilot CLI (@github/copilot, a native binary
// in a package of its platform). With COPILOT_OFFLINE it skips GitHub
// authentication, telemetry, the GitHub MCP server and the update, and
// wants a model provider of the user's own (BYOK): COPILOT_PROVIDER_BASE_URL,
// here the server's OpenAI Chat Completions (chat.go). It keeps its state
// under COPILOT_HOME (default ~/.copilot), each session in
// session-state/<session-id>/ with the session's events.jsonl.
type copilotCLI struct{}

func init() { Families["copilot"] = copilotCLI{} }

func (copilotCLI) Setup(pin Pin, home, work, url string) ([]string, error) {
	dir := filepath.Join(home, ".copilot")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return append(BaseEnv(home),
		"COPILOT_HOME="+dir,
		"COPILOT_OFFLINE=true",
		"COPILOT_AUTO_UPDATE=false",
		"COPILOT_PROVIDER_BASE_URL="+url+"/v1",
		"COPILOT_PROVIDER_TYPE=openai",
		"COPILOT_PROVIDER_API_KEY=agentconv-fake-key",
		"COPILOT_MODEL=gpt-4.1",
	), nil
}

// Modes: json is the session's events as JSON lines, read as copilot.
func (copilotCLI) Modes(pin Pin) []Mode {
	// NoUsage: the stream prints no token counts (they are in the
	// events file).
	return []Mode{{Name: "json", Dialect: "copilot", Ext: "jsonl", NoUsage: true}}
}

func (copilotCLI) Args(pin Pin, mode Mode, sc Scenario) []string {
	args := []string{"-p", sc.Prompt, "--output-format", "json", "--no-auto-update", "--disable-client-telemetry", "--no-ask-user"}
	if !sc.Refuses() {
		args = append(args, "--allow-all")
	}
	return args
}

func (copilotCLI) ResumeArgs(pin Pin, mode Mode, id, prompt string) []string {
	return []string{"--resume", id, "-p", prompt, "--output-format", "json", "--no-auto-update", "--disable-client-telemetry", "--no-ask-user", "--allow-all"}
}

var copilotSessionRe = regexp.MustCompile(`"sessionId"\s*:\s*"([^"]+)"`)

// SessionID is the sessionId of the closing result line, else the name of
// the session's folder.
func (copilotCLI) SessionID(pin Pin, home string, stdout []byte) string {
	if m := copilotSessionRe.FindSubmatch(stdout); m != nil {
		return string(m[1])
	}
	dirs, _ := filepath.Glob(filepath.Join(home, ".copilot", "session-state", "*", "events.jsonl"))
	for _, d := range dirs {
		return filepath.Base(filepath.Dir(d))
	}
	return ""
}

// Store: the sessions' folders, each with its events.jsonl, read as
// copilot-events.
func (copilotCLI) Store(pin Pin) (string, string) { return ".copilot/session-state", "copilot-events" }

func (copilotCLI) Tools(pin Pin) Toolset { return copilotTools{} }

// copilotTools are the Copilot CLI's tools: bash, create (an absolute
// path), and task, run in sync mode so that its result comes inline.
type copilotTools struct{}

func (copilotTools) Shell(id, command string) Call {
	return Call{ID: id, Name: "bash", Args: map[string]any{"command": command, "description": "run a command"}}
}

func (copilotTools) WriteFile(id, path, content string) Call {
	return Call{ID: id, Name: "create", Args: map[string]any{"path": WorkMark + "/" + path, "file_text": content}}
}

func (copilotTools) Subagent(id, prompt string) (Call, bool) {
	return Call{ID: id, Name: "task", Args: map[string]any{"description": "list the folder", "prompt": prompt,
		"name": "lister", "agent_type": "general-purpose", "mode": "sync"}}, true
}

// SessionFile: a session's events.jsonl; its folder's other files
// (workspace.yaml, checkpoints, rewind snapshots) are the CLI's own.
func (copilotCLI) SessionFile(rel string) bool { return filepath.Base(rel) == "events.jsonl" }

// FileSession: the session's id is its folder's name.
func (copilotCLI) FileSession(file string) string { return filepath.Base(filepath.Dir(file)) }
