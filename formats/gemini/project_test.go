package gemini

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// captureWork is the directory Gemini CLI ran in for a capture.
func captureWork(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Work string `json:"work"`
	}
	json.Unmarshal(b, &m)
	return m.Work
}

func chatFile(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "home", ".gemini", "tmp", "*", "chats", "session-*"))
	if len(files) == 0 {
		t.Fatalf("no session file in %s", dir)
	}
	return files[0]
}

// The project of a session (issue 24 #9), on the files Gemini CLI wrote:
// 0.61 writes .project_root and a <session_context> naming the workspace,
// 0.20 only the projectHash, which tells whether a directory is it.
func TestChatProject(t *testing.T) {
	agents := filepath.Join("..", "..", "testdata", "agents", "gemini-cli")
	dir := filepath.Join(agents, "0.61.0", "text-shell", "json")
	work, file := captureWork(t, dir), chatFile(t, dir)
	data, _ := os.ReadFile(file)
	evs, err := readPath(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := formatstest.OfKind(evs, formats.RunStart)[0].Run.Cwd; got != work {
		t.Errorf("0.61 from its path: project %q, want %q", got, work)
	}
	// On standard input: the workspace of its <session_context>, which
	// the projectHash confirms.
	evs = formatstest.Read(t, Chat, data)
	if got := formatstest.OfKind(evs, formats.RunStart)[0].Run.Cwd; got != work {
		t.Errorf("0.61 on standard input: project %q, want %q", got, work)
	}

	dir = filepath.Join(agents, "0.20.2", "text-shell", "json")
	work, file = captureWork(t, dir), chatFile(t, dir)
	data, _ = os.ReadFile(file)
	evs = formatstest.Read(t, Chat, data)
	if got := formatstest.OfKind(evs, formats.RunStart)[0].Run.Cwd; got != "" {
		t.Errorf("0.20 names no project, got %q", got)
	}
	if !chatInProject(file, work) || chatInProject(file, filepath.Dir(work)) {
		t.Errorf("0.20's projectHash does not tell its project %s", work)
	}
}

// readPath reads a session file as the command line does, by its path.
func readPath(path string) ([]*formats.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := Chat.NewReader(f, formats.ReadOptions{Dialect: Chat.Name, Report: formats.NewReport(io.Discard), Path: path})
	var evs []*formats.Event
	for {
		e, err := r.Next()
		if err != nil {
			return evs, nil
		}
		evs = append(evs, e)
	}
}

// Gemini CLI 0.61's own JSONL files (issue 24 #10): the <session_context>
// checkpoint that opens every file is no event and no warning; a failed
// turn that a checkpoint takes back is a failed run with its prompt; a
// resume's checkpoints restate the held messages, whose tokens stay.
func TestChat061Checkpoints(t *testing.T) {
	agents := filepath.Join("..", "..", "testdata", "agents", "gemini-cli", "0.61.0")
	read := func(scenario string) ([]*formats.Event, string) {
		data, err := os.ReadFile(chatFile(t, filepath.Join(agents, scenario, "stream-json")))
		if err != nil {
			t.Fatal(err)
		}
		return formatstest.ReadWarnings(t, Chat, data)
	}
	evs, warn := read("text-shell")
	if warn != "" || len(formatstest.OfKind(evs, formats.Raw)) != 0 {
		t.Errorf("text-shell: warnings %q, raw events %d", warn, len(formatstest.OfKind(evs, formats.Raw)))
	}
	evs, warn = read("api-error")
	ends := formatstest.OfKind(evs, formats.RunEnd)
	if got := formatstest.Kinds(evs); got != "run_start user_message run_end" || warn != "" || ends[0].Status != formats.Failed {
		t.Errorf("api-error: %s %q %+v", got, warn, ends)
	}
	evs, warn = read("resume")
	var out int64
	for _, u := range formatstest.OfKind(evs, formats.Usage) {
		out += u.Usage.OutputTokens.V
	}
	if n := len(formatstest.OfKind(evs, formats.RunEnd)); n != 2 || out != 30+37+44 || warn != "" {
		t.Errorf("resume: %d runs, %d output tokens, warnings %q", n, out, warn)
	}
}
