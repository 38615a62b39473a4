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
