package convert

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"

	"github.com/agentconv/agentconv/formats"
)

// filesWriters are the dialects that write files of their own under
// -o DIR, and atif, which writes a file per run.
var filesWriters = []string{"claude-session", "codex-rollout", "pi-session", "adal-session", "copilot-events",
	"opencode-export", "markdown", "html", "atif"}

// manySessions is a claude-stream of n sessions, each a run with a
// prompt and an answer, and a run more of the first one after them all.
func manySessions(n int) (string, []string) {
	var b strings.Builder
	ids := make([]string, n)
	run := func(i int) {
		id := ids[i]
		fmt.Fprintf(&b, `{"type":"system","subtype":"init","session_id":%q,"model":"m","cwd":"/w","tools":[]}`+"\n", id)
		fmt.Fprintf(&b, `{"type":"user","message":{"role":"user","content":"prompt %d"},"session_id":%q}`+"\n", i, id)
		fmt.Fprintf(&b, `{"type":"assistant","message":{"id":"msg_%d","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"answer %d"}],"usage":{"input_tokens":1,"output_tokens":1}},"session_id":%q}`+"\n", i, i, id)
		fmt.Fprintf(&b, `{"type":"result","subtype":"success","is_error":false,"result":"answer %d","session_id":%q,"usage":{"input_tokens":1,"output_tokens":1}}`+"\n", i, id)
	}
	for i := range n {
		ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		run(i)
	}
	run(0)
	return b.String(), ids
}

// placed counts the files under dir, and the temporary files among them.
func placed(t *testing.T, dir string) (files, tmp int) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files++
			if strings.HasSuffix(p, ".tmp") {
				tmp++
			}
		}
		return nil
	})
	return files, tmp
}

// countingFiles wraps create and reopen, to know how many of the files a
// writer made it holds open at once.
type countingFiles struct {
	open, most int
}

type countedFile struct {
	io.WriteCloser
	c      *countingFiles
	closed bool
}

func (f *countedFile) Close() error {
	if !f.closed {
		f.closed = true
		f.c.open--
	}
	return f.WriteCloser.Close()
}

func (c *countingFiles) wrap(make func(string) (io.WriteCloser, error)) func(string) (io.WriteCloser, error) {
	return func(name string) (io.WriteCloser, error) {
		wc, err := make(name)
		if err != nil {
			return nil, err
		}
		c.open++
		c.most = max(c.most, c.open)
		return &countedFile{WriteCloser: wc, c: c}, nil
	}
}

// TestManySessionsFilesAsTheyGo: each writer of files under -o DIR closes
// a session's file once another session begins, so that the conversion
// holds a few files open whatever the number of sessions, and the files
// are in place before the conversion ends; a session written again after
// the others goes on in its file.
func TestManySessionsFilesAsTheyGo(t *testing.T) {
	t.Parallel()
	// 60 sessions are 15 times the files a writer may hold open; the long
	// run converts 400.
	n := 60
	if formatstest.IsLong(t) {
		n = 400
	}
	in, ids := manySessions(n)
	from, _ := Lookup("claude-stream")
	for _, name := range filesWriters {
		if name == "atif" {
			continue // runFiles: a file a run, put in place at the next
		}
		t.Run(name, func(t *testing.T) {
			to, ok := Lookup(name)
			if !ok {
				t.Fatalf("no dialect %s", name)
			}
			out := t.TempDir()
			d := newDirFiles(out)
			var c countingFiles
			rep := formats.NewReport(io.Discard)
			wo := formats.WriteOptions{Dialect: name, Report: rep, Stderr: io.Discard, Create: c.wrap(d.create), Reopen: c.wrap(d.reopen), Getenv: func(string) string { return "" }}
			p := New(to, io.Discard, wo, Options{From: from, Report: rep})
			if err := p.Convert(context.Background(), Input{Name: "in", R: strings.NewReader(in)}); err != nil {
				t.Fatal(err)
			}
			files, _ := placed(t, out)
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if err := d.finish(false); err != nil {
				t.Fatal(err)
			}
			if c.most > 4 {
				t.Errorf("%d files open at once", c.most)
			}
			all, tmp := placed(t, out)
			if tmp > 0 {
				t.Errorf("%d temporary files left", tmp)
			}
			// The sessions but the last one or two are in place before
			// the end (a writer of metadata or an index writes those at
			// the end). opencode-export keeps its documents, each one JSON
			// object that a later run of its session adds to, until the
			// end.
			if files < n-2 && name != "opencode-export" {
				t.Errorf("%d files in place before the conversion's end, of %d (%d sessions)", files, all, n)
			}
			readBack(t, name, out, ids)
		})
	}
}

// readBack reads the sessions written under out, and checks that each is
// there, the first with both its runs.
func readBack(t *testing.T, name, out string, ids []string) {
	t.Helper()
	if name == "markdown" || name == "html" {
		b, err := os.ReadFile(filepath.Join(out, "index"+map[string]string{"markdown": ".md", "html": ".html"}[name]))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{ids[0], ids[len(ids)-1]} {
			if !strings.Contains(string(b), id[len(id)-8:]) {
				t.Errorf("the index has no session %s", id)
			}
		}
		// A page a session's consecutive runs: the first session's
		// second run, after the others, has a page of its own.
		pages, _ := filepath.Glob(filepath.Join(out, "*"+ids[0]+"*"))
		var both strings.Builder
		for _, p := range pages {
			b, _ := os.ReadFile(p)
			both.Write(b)
		}
		if len(pages) != 2 || strings.Count(both.String(), "prompt 0") < 2 {
			t.Errorf("the pages of %s do not hold both its runs: %v", ids[0], pages)
		}
		return
	}
	code, stdout, stderr := runCLI("", "--to", "claude-stream", out)
	if code != 0 {
		t.Fatalf("reading back: exit %d: %s", code, stderr)
	}
	sessions := map[string]int{}
	prompts := 0
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, `"subtype":"init"`) {
			i := strings.Index(line, `"session_id":"`)
			if i < 0 {
				t.Fatalf("no session id: %s", line)
			}
			id := line[i+len(`"session_id":"`):]
			sessions[id[:strings.IndexByte(id, '"')]]++
		}
		if strings.Contains(line, "prompt 0\"") {
			prompts++
		}
	}
	if len(sessions) != len(ids) {
		t.Errorf("%d sessions read back, of %d", len(sessions), len(ids))
	}
	if name != "opencode-export" {
		for _, id := range ids {
			if sessions[id] == 0 {
				t.Errorf("session %s not read back", id)
				break
			}
		}
	}
	if name != "atif" && strings.Count(stdout, "answer 0\"") < 2 {
		t.Errorf("the first session's second run is not read back")
	}
}

// TestManySessionsLowFileLimit converts 1,500 sessions to each
// writer of files under -o DIR in a process allowed 64 open files.
func TestManySessionsLowFileLimit(t *testing.T) {
	formatstest.Long(t)
	if os.Getenv("AGENTCONV_LOW_NOFILE") != "" {
		lim := syscall.Rlimit{Cur: 64, Max: 64}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
		in, ids := manySessions(1500)
		for _, name := range filesWriters {
			out := t.TempDir()
			code, _, stderr := runCLI(in, "--from", "claude-stream", "--to", name, "-o", out+"/")
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", name, code, stderr)
			}
			if _, tmp := placed(t, out); tmp > 0 {
				t.Errorf("%s: %d temporary files left", name, tmp)
			}
			readBack(t, name, out, ids)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestManySessionsLowFileLimit$", "-test.v")
	cmd.Env = append(os.Environ(), "AGENTCONV_LOW_NOFILE=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !strings.Contains(string(b), "--- PASS: TestManySessionsLowFileLimit") {
		t.Fatalf("the test did not run under the limit:\n%s", b)
	}

}
