package agenttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// claudeFamily is Claude Code (@anthropic-ai/claude-code): it speaks the
// Anthropic Messages API to ANTHROPIC_BASE_URL, prints a stream of JSON
// lines (stream-json) or one JSON result (json) with -p, and keeps each
// session as JSON lines under ~/.claude/projects/<work folder>/.
type claudeFamily struct{}

func init() { Families["claude-code"] = claudeFamily{} }

// claudeKey is the fake API key the agent sends.
const claudeKey = "sk-ant-api03-agentconv-0000000000000000000000000000000000000000-agentconvAA"

// Setup implements Family: the endpoint and key in the environment, no
// telemetry, update check or nonessential traffic, at most two retries of a
// failed request, and a ~/.claude.json that has seen the onboarding and
// approved the key.
func (claudeFamily) Setup(pin Pin, home, work, serverURL string) ([]string, error) {
	cfg := map[string]any{
		"numStartups":                   1,
		"hasCompletedOnboarding":        true,
		"lastOnboardingVersion":         pin.Version,
		"bypassPermissionsModeAccepted": true,
		"autoUpdates":                   false,
		"customApiKeyResponses":         map[string]any{"approved": []string{claudeKey[len(claudeKey)-20:]}, "rejected": []string{}},
		"projects": map[string]any{work: map[string]any{
			"allowedTools": []string{}, "hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true,
		}},
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), js, 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		return nil, err
	}
	return append(BaseEnv(home),
		"ANTHROPIC_BASE_URL="+serverURL,
		"ANTHROPIC_API_KEY="+claudeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_MAX_RETRIES=2", // every version honours it: api-error ends in seconds
		"IS_SANDBOX=1",              // as root, --dangerously-skip-permissions wants it
		"DISABLE_UPDATES=1",
		"DISABLE_GROWTHBOOK=1",
		"CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL=1",
		// What does not go to the base URL goes to the server as a proxy
		// request, which it refuses: 1.0 and 2.0 check at exit whether an
		// API key's organisation wants metrics, whatever the settings.
		"HTTP_PROXY="+serverURL, "HTTPS_PROXY="+serverURL, "NO_PROXY=127.0.0.1,localhost",
	), nil
}

// Modes implements Family.
func (claudeFamily) Modes(Pin) []Mode {
	return []Mode{
		{Name: "stream-json", Dialect: "claude-stream", Ext: "jsonl"},
		{Name: "json", Dialect: "claude-json", Ext: "json"},
	}
}

func claudeOutput(mode Mode) []string {
	if mode.Name == "stream-json" {
		return []string{"--output-format", "stream-json", "--verbose"}
	}
	return []string{"--output-format", "json"}
}

// Args implements Family: -p with every tool allowed, or with the default
// permissions (which -p cannot ask for, so the agent denies the call).
func (claudeFamily) Args(pin Pin, mode Mode, sc Scenario) []string {
	args := append([]string{"-p", sc.Prompt}, claudeOutput(mode)...)
	if !sc.Refuses() {
		args = append(args, "--dangerously-skip-permissions")
	}
	return args
}

// ResumeArgs implements Family.
func (claudeFamily) ResumeArgs(pin Pin, mode Mode, id, prompt string) []string {
	return append([]string{"--resume", id, "-p", prompt, "--dangerously-skip-permissions"}, claudeOutput(mode)...)
}

// SessionID implements Family: the session_id of the stdout's first line
// that has one (stream-json), or of its one object (json).
func (claudeFamily) SessionID(_ Pin, _ string, stdout []byte) string {
	for _, line := range strings.Split(string(stdout), "\n") {
		var v struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(line), &v) == nil && v.SessionID != "" {
			return v.SessionID
		}
	}
	return ""
}

// Store implements Family.
func (claudeFamily) Store(Pin) (string, string) {
	return filepath.Join(".claude", "projects"), "claude-session"
}

// Tools implements Family.
func (claudeFamily) Tools(pin Pin) Toolset {
	sub := "Task"
	if claudeAtLeast(pin.Version, 2, 1) {
		sub = "Agent"
	}
	return claudeTools{subagent: sub}
}

// claudeAtLeast says whether version is major.minor or later.
func claudeAtLeast(version string, major, minor int) bool {
	f := strings.SplitN(version, ".", 3)
	if len(f) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(f[0])
	mi, _ := strconv.Atoi(f[1])
	return ma > major || ma == major && mi >= minor
}

// claudeTools are Claude Code's Bash, Write and subagent tools.
type claudeTools struct{ subagent string }

func (claudeTools) Shell(id, command string) Call {
	return Call{ID: id, Name: "Bash", Args: map[string]any{"command": command, "description": "Run " + strings.Fields(command)[0]}}
}

func (claudeTools) WriteFile(id, path, content string) Call {
	return Call{ID: id, Name: "Write", Args: map[string]any{"file_path": WorkMark + "/" + path, "content": content}}
}

func (t claudeTools) Subagent(id, prompt string) (Call, bool) {
	return Call{ID: id, Name: t.subagent, Args: map[string]any{
		"description": "List the folder", "prompt": prompt, "subagent_type": "general-purpose"}}, true
}
