package agenttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// geminiCLI is Gemini CLI (@google/gemini-cli). It speaks the Gemini API
// (gemini.go) at GOOGLE_GEMINI_BASE_URL with an API key, reads its
// settings from ~/.gemini/settings.json and keeps its sessions in
// ~/.gemini/tmp/<project>/chats/.
type geminiCLI struct{}

func init() { Families["gemini-cli"] = geminiCLI{} }

// geminiNew says whether the version is of the newer settings layout
// (0.2x has general.disableAutoUpdate; later ones general.enableAutoUpdate).
func geminiNew(pin Pin) bool {
	return !strings.HasPrefix(pin.Version, "0.2") && !strings.HasPrefix(pin.Version, "0.1")
}

func (geminiCLI) Setup(pin Pin, home, work, url string) ([]string, error) {
	general := map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true}
	if geminiNew(pin) {
		// maxAttempts: the main chat's attempts (default 10, 5 s apart
		// and more), so that api-error and rate-limit end within a minute.
		general = map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": 3}
	}
	settings := map[string]any{
		"general":   general,
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false, "logPrompts": false},
		"ide":       map[string]any{"enabled": false},
		"security": map[string]any{
			"auth":        map[string]any{"selectedType": "gemini-api-key"},
			"folderTrust": map[string]any{"enabled": false},
		},
	}
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, "settings.json"), settings); err != nil {
		return nil, err
	}
	return append(BaseEnv(home),
		"GEMINI_API_KEY=agentconv-fake-key",
		"GOOGLE_GEMINI_BASE_URL="+url,
		"GEMINI_CLI_NO_RELAUNCH=true",
	), nil
}

func (geminiCLI) Modes(pin Pin) []Mode {
	return []Mode{
		{Name: "stream-json", Dialect: "gemini-stream", Ext: "jsonl", Unmarked: true},
		{Name: "json", Dialect: "gemini-json", Ext: "json", Totals: true},
	}
}

func (geminiCLI) Args(pin Pin, mode Mode, sc Scenario) []string {
	args := []string{"-p", sc.Prompt, "-o", mode.Name}
	if !sc.Refuses() {
		args = append(args, "--yolo")
	}
	return args
}

func (geminiCLI) ResumeArgs(pin Pin, mode Mode, id, prompt string) []string {
	return []string{"--resume", id, "-p", prompt, "-o", mode.Name, "--yolo"}
}

var geminiSessionRe = regexp.MustCompile(`"session_id"\s*:\s*"([^"]+)"`)

// SessionID is the session_id of the output (stream-json's init, the
// json object of newer versions), else the sessionId of the session file
// the run wrote.
func (geminiCLI) SessionID(pin Pin, home string, stdout []byte) string {
	if m := geminiSessionRe.FindSubmatch(stdout); m != nil {
		return string(m[1])
	}
	files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*"))
	for _, f := range files {
		if id := sessionIDOf(f); id != "" {
			return id
		}
	}
	return ""
}

// sessionIDOf reads the sessionId of a session file: a JSON object, or
// JSON lines whose first line has it.
func sessionIDOf(name string) string {
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	var v struct {
		SessionID string `json:"sessionId"`
	}
	if strings.HasSuffix(name, ".jsonl") {
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		if sc.Scan() {
			json.Unmarshal(sc.Bytes(), &v) //nolint:errcheck // no id
		}
		return v.SessionID
	}
	json.NewDecoder(f).Decode(&v) //nolint:errcheck // no id
	return v.SessionID
}

// FileSession implements SessionReader: Gemini CLI names a session's file
// session-<time>-<the id's first eight characters>, and a subagent's
// file (0.61, kind "subagent") has an id of its own.
//
// A file of no message is no session's main file: a resume that starts in a
// later minute than the session leaves one behind, with the session's id
// and nothing else (agentconv reads no run from it).
func (geminiCLI) FileSession(file string) string {
	data, err := os.ReadFile(file)
	if err != nil || !bytes.Contains(data, []byte(`"type":"user"`)) && !bytes.Contains(data, []byte(`"type": "user"`)) {
		return ""
	}
	return sessionIDOf(file)
}

func (geminiCLI) Store(pin Pin) (string, string) { return ".gemini/tmp", "gemini-chat" }

func (geminiCLI) Tools(pin Pin) Toolset { return geminiTools{pin} }

// geminiTools are Gemini CLI's tools: run_shell_command, write_file, and
// the subagents (codebase_investigator in 0.2x, invoke_agent later).
type geminiTools struct{ pin Pin }

func (geminiTools) Shell(id, command string) Call {
	return Call{ID: id, Name: "run_shell_command", Args: map[string]any{"command": command}}
}

func (geminiTools) WriteFile(id, path, content string) Call {
	return Call{ID: id, Name: "write_file", Args: map[string]any{"file_path": WorkMark + "/" + path, "content": content}}
}

func (t geminiTools) Subagent(id, prompt string) (Call, bool) {
	if !geminiNew(t.pin) {
		return Call{ID: id, Name: "codebase_investigator", Args: map[string]any{"objective": prompt}}, true
	}
	return Call{ID: id, Name: "invoke_agent", Args: map[string]any{"agent_name": "generalist", "prompt": prompt}}, true
}

// SubagentEnd is the complete_task call a Gemini CLI subagent must end
// with, its argument named and shaped by the agent's output schema.
func (t geminiTools) SubagentEnd(id, result string) Call {
	if !geminiNew(t.pin) {
		return Call{ID: id, Name: "complete_task", Args: map[string]any{"report": map[string]any{
			"SummaryOfFindings": result, "ExplorationTrace": []any{}, "RelevantLocations": []any{}}}}
	}
	return Call{ID: id, Name: "complete_task", Args: map[string]any{"result": map[string]any{"response": result}}}
}

// CountsSide implements SideCounter: Gemini CLI's stats count its model
// router's classifier requests with the rest.
func (geminiCLI) CountsSide(Pin) bool { return true }

// Extra implements Extras: Gemini CLI runs the resume of a thinking
// session (its chat files restate the history on a resume) and the loop
// (it stops a run after 5 identical calls in a row: 0.2x at the fifth,
// 0.61 tells the model of the loop at the fifth and stops at the next).
func (geminiTools) Extra(name string) bool { return name == "resume-thinking" || name == "loop" }
