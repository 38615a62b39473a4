package agenttest

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go
)

// openCode is OpenCode (opencode-ai, a compiled Bun program). It speaks
// OpenAI Chat Completions (chat.go) through its bundled
// @ai-sdk/openai-compatible provider, configured in
// $XDG_CONFIG_HOME/opencode/opencode.json, and keeps its sessions in one
// SQLite database, $XDG_DATA_HOME/opencode/opencode.db.
type openCode struct{}

func init() { Families["opencode"] = openCode{} }

// openCodeModel is the model as OpenCode names it: provider/model.
const openCodeModel = "agentconv/agentconv-model"

func (openCode) Setup(pin Pin, home, work, url string) ([]string, error) {
	config := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"autoupdate":  false,
		"share":       "disabled",
		"model":       openCodeModel,
		"small_model": openCodeModel,
		"provider": map[string]any{"agentconv": map[string]any{
			"npm":  "@ai-sdk/openai-compatible",
			"name": "agentconv",
			"options": map[string]any{
				"baseURL": url + "/v1",
				"apiKey":  "agentconv-fake-key",
			},
			"models": map[string]any{"agentconv-model": map[string]any{
				"name":      "agentconv model",
				"reasoning": true,
				"tool_call": true,
				"cost":      map[string]any{"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
				"limit":     map[string]any{"context": 200000, "output": 8192},
			}},
		}},
		"enabled_providers": []string{"agentconv"},
		// The shell and edits ask, as a user's would: --auto approves
		// them, and the refused scenario runs without it.
		"permission": map[string]any{"bash": "ask", "edit": "ask"},
		"lsp":        false,
		"formatter":  false,
	}
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, "opencode.json"), config); err != nil {
		return nil, err
	}
	return append(BaseEnv(home),
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
		"OPENCODE_DISABLE_EMBEDDED_WEB_UI=1",
		"OPENCODE_DISABLE_PROJECT_CONFIG=1",
	), nil
}

// Modes: `run --format json --thinking`, one JSON line per finished part.
func (openCode) Modes(Pin) []Mode {
	return []Mode{{Name: "json", Dialect: "opencode", Ext: "jsonl"}}
}

func (openCode) Args(_ Pin, mode Mode, sc Scenario) []string {
	args := []string{"run", "--format", mode.Name, "--thinking", "--model", openCodeModel}
	if !sc.Refuses() {
		args = append(args, "--auto")
	}
	return append(args, sc.Prompt)
}

func (openCode) ResumeArgs(_ Pin, mode Mode, id, prompt string) []string {
	return []string{"run", "--format", mode.Name, "--thinking", "--model", openCodeModel, "--auto", "--session", id, prompt}
}

// SessionID is the sessionID of the output's first line.
func (openCode) SessionID(_ Pin, home string, stdout []byte) string {
	for _, line := range bytes.Split(stdout, []byte("\n")) {
		var v struct {
			SessionID string `json:"sessionID"`
		}
		if json.Unmarshal(line, &v) == nil && v.SessionID != "" {
			return v.SessionID
		}
	}
	return ""
}

// Store: the SQLite database under the data folder, read as opencode-db.
func (openCode) Store(Pin) (string, string) {
	return filepath.Join(".local", "share", "opencode"), "opencode-db"
}

// SessionFile: the database is the one session file.
func (openCode) SessionFile(rel string) bool { return rel == "opencode.db" }

func (openCode) Tools(Pin) Toolset { return openCodeTools{} }

// openCodeTools are OpenCode's tools: bash, write, and task (a subagent,
// which runs in the foreground and returns its report).
type openCodeTools struct{}

func (openCodeTools) Shell(id, command string) Call {
	return Call{ID: id, Name: "bash", Args: map[string]any{"command": command, "description": "agentconv command"}}
}

func (openCodeTools) WriteFile(id, path, content string) Call {
	return Call{ID: id, Name: "write", Args: map[string]any{"filePath": WorkMark + "/" + path, "content": content}}
}

func (openCodeTools) Subagent(id, prompt string) (Call, bool) {
	return Call{ID: id, Name: "task", Args: map[string]any{"description": "list the folder", "prompt": prompt, "subagent_type": "general"}}, true
}

// Settle checkpoints the database's write-ahead log into it, as SQLite
// does when OpenCode closes it (the process exits without closing it):
// the last connection's close removes the -wal and -shm files.
func (openCode) Settle(_ Pin, home string) error {
	name := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	if _, err := os.Stat(name); err != nil {
		return nil // the agent kept nothing
	}
	db, err := sql.Open("sqlite", name)
	if err != nil {
		return err
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		db.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	return db.Close()
}

// Extra implements Extras: OpenCode resumes a session whose answers think,
// and stops a model that repeats a call (its doom_loop permission).
func (openCodeTools) Extra(name string) bool { return name == "resume-thinking" || name == "loop" }
