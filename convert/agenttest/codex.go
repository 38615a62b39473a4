package agenttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Codex (@openai/codex), a Rust binary the npm package runs. It reads
// $CODEX_HOME/config.toml, which declares a model provider pointing at the
// server's Responses API, and keeps each session as a rollout file under
// $CODEX_HOME/sessions/YYYY/MM/DD/. `codex exec --json` prints its events
// as JSON lines; `codex exec resume ID PROMPT` continues a session.
func init() { Families["codex"] = codexFamily{} }

type codexFamily struct{}

// codexKeyEnv is the environment variable the provider reads its fake key
// from.
const codexKeyEnv = "AGENTCONV_OPENAI_KEY"

// codexModel is a model in the version's own catalog, so that it declares
// the model's toolset (apply_patch among them) and no warning about
// unknown metadata: gpt-5.5 is 0.171's last model without the code-mode-only
// tools of the newer ones.
func codexModel(pin Pin) string {
	if codexBefore(pin, 0, 100) {
		return "gpt-5-codex"
	}
	return "gpt-5.5"
}

// codexBefore says whether pin is older than major.minor. The pins are
// 0.45 and 0.171; where between them a change came is not known, and the
// tests split them at 0.100.
func codexBefore(pin Pin, major, minor int) bool {
	var ma, mi int
	fmt.Sscanf(pin.Version, "%d.%d", &ma, &mi) //nolint:errcheck // a version that does not parse is 0.0
	return ma < major || ma == major && mi < minor
}

func (codexFamily) Setup(pin Pin, home, work, serverURL string) ([]string, error) {
	dir := filepath.Join(home, ".codex")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Few retries, soon: the api-error and rate-limit scenarios end within a
	// minute. No WebSocket: the provider speaks HTTP only.
	config := fmt.Sprintf(`model = %q
model_provider = "agentconv"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
web_search = "disabled"
disable_paste_burst = true

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
log_user_prompt = false

[model_providers.agentconv]
name = "agentconv"
base_url = %q
wire_api = "responses"
env_key = %q
request_max_retries = 2
stream_max_retries = 2
stream_idle_timeout_ms = 30000
supports_websockets = false

[projects.%q]
trust_level = "trusted"
`, codexModel(pin), serverURL+"/v1", codexKeyEnv, work)
	if !codexBefore(pin, 0, 100) {
		// Newer versions sync plugins and apps, discover models and start
		// a daemon at startup: all off, so that nothing leaves 127.0.0.1.
		// multi_agent_v2 declares the collaboration tools (spawn_agent).
		config += `
[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
tool_suggest = false
api_key_model_discovery = false
daemon_auto_start = false
in_app_updates = false
skill_mcp_dependency_install = false
image_generation = false
browser_use = false
computer_use = false
multi_agent_v2 = true
`
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	return append(BaseEnv(home), "CODEX_HOME="+dir, codexKeyEnv+"=sk-agentconv-fake", "RUST_LOG=warn"), nil
}

func (codexFamily) Modes(pin Pin) []Mode {
	return []Mode{{Name: "json", Dialect: "codex", Ext: "jsonl", Unmarked: true}}
}

// codexFlags are exec's flags: JSON lines, no git repository needed, and
// full access; for a scenario that refuses, a read-only sandbox with no
// approvals, where the command runs and the sandbox denies its write
// (exec cannot ask for an approval). Put before resume, both versions read
// them for the resumed session too.
func codexFlags(refuses bool) []string {
	f := []string{"--json", "--skip-git-repo-check"}
	if refuses {
		return append(f, "-s", "read-only", "-c", `approval_policy="never"`)
	}
	return append(f, "--dangerously-bypass-approvals-and-sandbox")
}

func (codexFamily) Args(pin Pin, mode Mode, sc Scenario) []string {
	return append(append([]string{"exec"}, codexFlags(sc.Refuses())...), sc.Prompt)
}

func (codexFamily) ResumeArgs(pin Pin, mode Mode, id, prompt string) []string {
	return append(append([]string{"exec"}, codexFlags(false)...), "resume", id, prompt)
}

var codexRollout = regexp.MustCompile(`rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)

// SessionID is the thread.started event's thread_id (session.created's
// session_id in older versions), else the id in the rollout's file name.
func (codexFamily) SessionID(pin Pin, home string, stdout []byte) string {
	for _, line := range strings.Split(string(stdout), "\n") {
		var ev struct {
			Type      string `json:"type"`
			ThreadID  string `json:"thread_id"`
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		if ev.ThreadID != "" {
			return ev.ThreadID
		}
		if ev.SessionID != "" {
			return ev.SessionID
		}
	}
	for _, f := range Files(filepath.Join(home, ".codex", "sessions")) {
		if m := codexRollout.FindStringSubmatch(f); m != nil {
			return m[1]
		}
	}
	return ""
}

func (codexFamily) Store(pin Pin) (string, string) {
	return filepath.Join(".codex", "sessions"), "codex-rollout"
}

func (codexFamily) Tools(pin Pin) Toolset { return codexTools{pin} }

// codexTools are Codex's tools as each version declares them: before 0.100
// a shell function taking an argv, later exec_command taking a command
// line; apply_patch, a custom tool taking the patch; from 0.100 a
// collaboration namespace whose spawn_agent starts a subagent.
type codexTools struct{ pin Pin }

func (t codexTools) Shell(id, command string) Call {
	if codexBefore(t.pin, 0, 100) {
		return Call{ID: id, Name: "shell", Args: map[string]any{"command": []any{"bash", "-lc", command}, "workdir": WorkMark}}
	}
	return Call{ID: id, Name: "exec_command", Args: map[string]any{"cmd": command, "workdir": WorkMark}}
}

// WriteFile adds the file with apply_patch; a custom tool's call takes the
// patch as its input.
func (t codexTools) WriteFile(id, path, content string) Call {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for _, line := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + strings.TrimSuffix(line, "\n") + "\n")
	}
	b.WriteString("*** End Patch\n")
	return Call{ID: id, Name: "apply_patch", Args: map[string]any{"input": b.String()}}
}

// Subagent spawns an agent that starts without the parent's history, so
// that its first message is the prompt.
func (t codexTools) Subagent(id, prompt string) (Call, bool) {
	if codexBefore(t.pin, 0, 100) {
		return Call{}, false
	}
	return Call{ID: id, Name: "collaboration.spawn_agent", Args: map[string]any{
		"task_name": "agentconv_subtask", "message": prompt, "fork_turns": "none"}}, true
}

// WaitSubagent waits for the subagents: the spawn call returns at once, and
// codex exec ends with its main thread's turn.
func (t codexTools) WaitSubagent(id string) Call {
	return Call{ID: id, Name: "collaboration.wait_agent", Args: map[string]any{"timeout_ms": 60000}}
}
