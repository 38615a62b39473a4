package convert_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/gemini"
	"github.com/agentconv/agentconv/formats/opencode"
)

// The tests of Copilot CLI's and OpenCode's dialects that need the other
// dialects: detection among all of them, and the command line.

// copilotCaptures is where the agents' tests keep what Copilot CLI
// 1.0.102 printed and stored.
var copilotCaptures = filepath.Join("..", "testdata", "agents", "copilot", "1.0.102")

// copilotCapture reads a scenario's stdout and its session's events.jsonl.
func copilotCapture(t *testing.T, scenario string) (stdout, events []byte) {
	t.Helper()
	dir := filepath.Join(copilotCaptures, scenario, "json")
	stdout, err := os.ReadFile(filepath.Join(dir, "stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "home", ".copilot", "session-state", "*", "events.jsonl"))
	if len(files) != 1 {
		t.Fatalf("%s: %d events.jsonl files, want 1", scenario, len(files))
	}
	events, err = os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return stdout, events
}

// TestCopilotDetect: every capture's stdout is detected as copilot and its events
// file as copilot-events, by every dialect's detection (a failed run's
// stdout was read as claude-stream, as a success).
func TestCopilotDetect(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(copilotCaptures, "*"))
	if len(dirs) < 10 {
		t.Fatalf("%d copilotCaptures under %s", len(dirs), copilotCaptures)
	}
	for _, dir := range dirs {
		stdout, events := copilotCapture(t, filepath.Base(dir))
		for _, c := range []struct {
			data []byte
			want string
		}{{stdout, "copilot"}, {events, "copilot-events"}} {
			head := c.data[:min(len(c.data), formats.DetectSize)]
			if d, score := convert.Detect(head); d.Name != c.want || score < 90 {
				t.Errorf("%s: detected as %s (score %d), want %s", filepath.Base(dir), d.Name, score, c.want)
			}
			for _, d := range convert.Readable() {
				if d.Detect != nil && d.Name != c.want && d.Detect(head) > 0 {
					t.Errorf("%s: %s scores %d on %s's", filepath.Base(dir), d.Name, d.Detect(head), c.want)
				}
			}
		}
	}
}

// opencodeCapture is the folder of an OpenCode 1.18.33 capture
// (convert/agenttest).
func opencodeCapture(scenario string) string {
	return filepath.Join("..", "testdata", "agents", "opencode", "1.18.33", scenario, "json")
}

func opencodeRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOpenCodeIsNotGemini: OpenCode's stream, of a run that went well or
// failed, is OpenCode's, not Gemini CLI's (whose detection took its lines).
func TestOpenCodeIsNotGemini(t *testing.T) {
	for _, sc := range []string{"text-shell", "thinking", "parallel", "api-error"} {
		data := opencodeRead(t, filepath.Join(opencodeCapture(sc), "stdout.jsonl"))
		if d, g := opencode.Stream.Detect(data), gemini.Stream.Detect(data); d < 100 || g != 0 {
			t.Errorf("%s: opencode scores %d, gemini-stream %d", sc, d, g)
		}
	}
}

// TestOpenCodeDBOnStdin: the database piped to agentconv is detected and read as
// it is (Dialect.Binary: the pipeline gives the reader the input's bytes,
// not the UTF-8 it repairs for text dialects), without a warning; the
// same bytes with --from a text dialect are repaired and refused.
func TestOpenCodeDBOnStdin(t *testing.T) {
	dir := opencodeCapture("subagent")
	data := opencodeRead(t, filepath.Join(dir, "home", ".local", "share", "opencode", "opencode.db"))
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := convert.Run(append([]string{"agentconv"}, args...), convert.Sys{Stdin: bytes.NewReader(data), Stdout: &out, Stderr: &errb})
		return code, out.String(), errb.String()
	}
	var meta struct {
		Session string `json:"session"`
	}
	if err := json.Unmarshal(opencodeRead(t, filepath.Join(dir, "meta.json")), &meta); err != nil || meta.Session == "" {
		t.Fatalf("meta.json: %v", err)
	}
	code, out, errs := run("--to", "adal-json")
	if code != 0 || !strings.Contains(out, `"session_id": "`+meta.Session+`"`) || strings.Contains(errs, "UTF-8") {
		t.Errorf("exit %d, stderr %q, output %.300s", code, errs, out)
	}
	if code, _, errs := run("--from", "opencode", "--to", "adal-json"); code == 0 || !strings.Contains(errs, "UTF-8") {
		t.Errorf("--from opencode: exit %d, stderr %q", code, errs)
	}
}
