package agenttest

import (
	"os"
	"path/filepath"
	"regexp"
)

// qwenCode is Qwen Code (@qwen-code/qwen-code), a fork of Gemini CLI that
// speaks OpenAI Chat Completions (chat.go) at OPENAI_BASE_URL. It reads
// its settings from ~/.qwen/settings.json and keeps its sessions in
// ~/.qwen/projects/<project>/chats/<session-id>.jsonl.
type qwenCode struct{}

func init() { Families["qwen-code"] = qwenCode{} }

func (qwenCode) Setup(pin Pin, home, work, url string) ([]string, error) {
	settings := map[string]any{
		"general":   map[string]any{"enableAutoUpdate": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false, "logPrompts": false},
		"ide":       map[string]any{"enabled": false},
		"security": map[string]any{
			"auth":        map[string]any{"selectedType": "openai"},
			"folderTrust": map[string]any{"enabled": false},
		},
		// maxRetries: the OpenAI client's own retries and the stream's
		// rate-limit retries (default 10, a minute apart and more), so that
		// api-error and rate-limit end within about a minute and a half
		// (Qwen Code's own 7 attempts, 1.5 s to 30 s apart, stay).
		"model": map[string]any{"name": "qwen3-coder-plus", "generationConfig": map[string]any{
			"maxRetries": 0, "retryInitialDelayMs": 1000, "retryMaxDelayMs": 2000}},
		// Managed auto-memory forks the conversation after a turn into a
		// request with tools whose first user message is the prompt: the
		// server would take it for the main thread. It is off, as the
		// update check and the usage statistics are.
		"memory": map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
	}
	dir := filepath.Join(home, ".qwen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, "settings.json"), settings); err != nil {
		return nil, err
	}
	return append(BaseEnv(home),
		"OPENAI_API_KEY=agentconv-fake-key",
		"OPENAI_BASE_URL="+url+"/v1",
		"OPENAI_MODEL=qwen3-coder-plus",
		"QWEN_CODE_NO_RELAUNCH=true",
	), nil
}

// Modes: stream-json is Claude Code's stream-json, which agentconv reads
// as qwen-code; json is the array of the same messages, as Claude Code's
// --verbose json, which agentconv reads as qwen-json.
func (qwenCode) Modes(pin Pin) []Mode {
	return []Mode{
		{Name: "stream-json", Dialect: "qwen-code", Ext: "jsonl"},
		{Name: "json", Dialect: "qwen-json", Ext: "json", Totals: true},
	}
}

func (qwenCode) Args(pin Pin, mode Mode, sc Scenario) []string {
	args := []string{"-p", sc.Prompt, "-o", mode.Name}
	if !sc.Refuses() {
		args = append(args, "--yolo")
	}
	return args
}

func (qwenCode) ResumeArgs(pin Pin, mode Mode, id, prompt string) []string {
	return []string{"--resume", id, "-p", prompt, "-o", mode.Name, "--yolo"}
}

var qwenSessionRe = regexp.MustCompile(`"session_id"\s*:\s*"([^"]+)"`)

// SessionID is the session_id of the output, else the name of the session
// file the run wrote.
func (qwenCode) SessionID(pin Pin, home string, stdout []byte) string {
	if m := qwenSessionRe.FindSubmatch(stdout); m != nil {
		return string(m[1])
	}
	files, _ := filepath.Glob(filepath.Join(home, ".qwen", "projects", "*", "chats", "*.jsonl"))
	for _, f := range files {
		return filepath.Base(f[:len(f)-len(".jsonl")])
	}
	return ""
}

// Store: Qwen Code's session files (JSON lines of records chained by
// uuid/parentUuid, each with a Gemini API Content), read as qwen-session.
func (qwenCode) Store(pin Pin) (string, string) { return ".qwen/projects", "qwen-session" }

func (qwenCode) Tools(pin Pin) Toolset { return qwenTools{} }

// qwenTools are Qwen Code's tools: run_shell_command, write_file, and the
// agent tool, run in the foreground so that its result comes inline.
type qwenTools struct{}

func (qwenTools) Shell(id, command string) Call {
	return Call{ID: id, Name: "run_shell_command", Args: map[string]any{"command": command}}
}

func (qwenTools) WriteFile(id, path, content string) Call {
	return Call{ID: id, Name: "write_file", Args: map[string]any{"file_path": WorkMark + "/" + path, "content": content}}
}

func (qwenTools) Subagent(id, prompt string) (Call, bool) {
	return Call{ID: id, Name: "agent", Args: map[string]any{"description": "list the folder", "prompt": prompt,
		"subagent_type": "general-purpose", "run_in_background": false}}, true
}
