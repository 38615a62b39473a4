package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// withDialects replaces the table of dialects for the test: the session
// dialects that declare DirFiles, Places and Owner are stood in for by
// rows of the stream dialects given those fields.
func withDialects(t *testing.T, change func(d *formats.Dialect)) {
	t.Helper()
	// The table is the package's: a test that changes it cannot run in
	// parallel with others, and t.Setenv makes t.Parallel panic there.
	t.Setenv("AGENTCONV_TEST_DIALECTS_CHANGED", "1")
	old := Dialects
	ds := make([]formats.Dialect, len(old))
	copy(ds, old)
	for i := range ds {
		change(&ds[i])
	}
	Dialects = ds
	t.Cleanup(func() { Dialects = old })
}

// streamsReadDirs makes the stream dialects read directories: adal-stream
// *.ndjson, and the claude, codex, malac, gemini streams *.jsonl.
func streamsReadDirs(d *formats.Dialect) {
	switch d.Name {
	case "adal-stream":
		d.DirFiles = "*.ndjson"
	case "claude-stream", "codex", "malac", "gemini-stream", "cursor-stream":
		d.DirFiles = "*.jsonl"
	}
}

// manyTree copies the stream fixtures of several dialects into a tree,
// each several times over, with a file that no dialect reads among them.
func manyTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var srcs []string
	for _, fam := range []string{"adal", "claude", "codex", "malac", "gemini", "cursor"} {
		m, _ := filepath.Glob(filepath.Join("..", "testdata", fam, "*.*l"))
		for _, f := range m {
			// Codex rollouts under names other than Codex's own
			// (rollout-*.jsonl): a directory walk leaves them out.
			if !strings.Contains(filepath.Base(f), "rollout") {
				srcs = append(srcs, f)
			}
		}
	}
	srcs = append(srcs, filepath.Join("..", "testdata", "atif", "rfc-0001-example.json"))
	if len(srcs) < 20 {
		t.Fatalf("only %d fixtures", len(srcs))
	}
	for copyN := range 3 {
		for i, src := range srcs {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(dir, fmt.Sprintf("c%d", copyN), fmt.Sprintf("%02d-%s", i, filepath.Base(src)))
			os.MkdirAll(filepath.Dir(name), 0o755)
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	os.WriteFile(filepath.Join(dir, "c1", "notes.jsonl"), []byte("not an event stream\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "c2", "prose.ndjson"), []byte("hello\n"), 0o644)
	return dir
}

// TestManyFilesSameOutput: a directory of many files converts to the same
// bytes, and the same stderr, with one worker and with several, and to the
// same bytes as the files streamed one by one (standard input among the
// inputs keeps the streaming path); the files no dialect reads are skipped
// and counted.
func TestManyFilesSameOutput(t *testing.T) {
	withDialects(t, streamsReadDirs)
	dir := manyTree(t)
	files, err := dirInputs(dir, formats.Dialect{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, f := range files {
		if !strings.HasSuffix(f.Path, "notes.jsonl") && !strings.HasSuffix(f.Path, "prose.ndjson") {
			named = append(named, f.Path)
		}
	}
	for _, to := range []string{"otlp-json", "adal-stream", "malac", "pretty"} {
		args := []string{"--to", to, "--deterministic", "--lenient"}
		code1, out1, err1 := runCLI("", append(args, "--workers", "1", dir)...)
		codeN, outN, errN := runCLI("", append(args, "--workers", "5", dir)...)
		codeS, outS, _ := runCLI("", append(append(args, named...), "-")...)
		if code1 != 0 || codeN != 0 || codeS != 0 {
			t.Fatalf("%s: exit %d, %d, %d: %s", to, code1, codeN, codeS, err1)
		}
		if out1 == "" || out1 != outN {
			t.Errorf("%s: 1 worker and 5 give different output (%d and %d bytes)", to, len(out1), len(outN))
		}
		if err1 != errN {
			t.Errorf("%s: 1 worker and 5 give different stderr:\n%s", to, diff(err1, errN))
		}
		if out1 != outS {
			t.Errorf("%s: the directory and its files streamed one by one differ:\n%s", to, diff(outS, out1))
		}
		for _, want := range []string{
			"agentconv: skipped 2 files under " + dir + " that no dialect reads",
		} {
			if strings.Count(err1, want) != 1 {
				t.Errorf("%s: stderr lacks %q:\n%s", to, want, err1)
			}
		}
	}
}

// TestManyFilesSkipped: the count of skipped files is by directory named;
// a directory whose files no dialect reads is an error.
func TestManyFilesSkipped(t *testing.T) {
	withDialects(t, streamsReadDirs)
	a, b := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(a, "x.jsonl"), []byte("prose\n"), 0o644)
	os.WriteFile(filepath.Join(a, "y.jsonl"), []byte("\x00\x01binary\n"), 0o644)
	os.WriteFile(filepath.Join(b, "z.ndjson"), []byte("prose\n"), 0o644)
	cp(t, seedStream, filepath.Join(b, "seed.ndjson"))
	code, stdout, stderr := runCLI("", "--to", "adal-json", a, b)
	if code != 0 || !strings.Contains(stdout, `"success"`) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"agentconv: skipped 2 files under " + a + " that no dialect reads\n",
		"agentconv: skipped 1 file under " + b + " that no dialect reads\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, _, stderr = runCLI("", "--to", "adal-json", a)
	if code != ExitInput || !strings.Contains(stderr, "nothing under the input directories was read") {
		t.Errorf("a directory of unreadable dialects: exit %d: %s", code, stderr)
	}
}

// TestManyFilesUnreadable: a file of a directory that cannot be opened
// (permission denied, vanished) is warned about with its path and skipped;
// the rest is converted; the exit status is 1, or 0 with --lenient. A file
// named itself that cannot be read stops the conversion, as before.
func TestManyFilesUnreadable(t *testing.T) {
	withDialects(t, streamsReadDirs)
	dir := t.TempDir()
	for _, n := range []string{"a.ndjson", "b.ndjson", "c.ndjson"} {
		cp(t, seedStream, filepath.Join(dir, n))
	}
	bad := filepath.Join(dir, "b.ndjson")
	old := openInput
	openInput = func(name string) (*os.File, error) {
		if name == bad {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
		}
		return old(name)
	}
	t.Cleanup(func() { openInput = old })
	count := func(out string) int { return strings.Count(out, `"success"`) }
	code, stdout, stderr := runCLI("", "--to", "adal-json", dir)
	if code != ExitInput || count(stdout) != 2 {
		t.Errorf("exit %d, %d runs: %s", code, count(stdout), stderr)
	}
	for _, want := range []string{"warning: " + bad + ": cannot read it: permission denied; skipped",
		"1 file under the input directories could not be read"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, stdout, stderr = runCLI("", "--lenient", "--to", "adal-json", dir)
	if code != 0 || count(stdout) != 2 || !strings.Contains(stderr, bad+": cannot read it") {
		t.Errorf("--lenient: exit %d, %d runs: %s", code, count(stdout), stderr)
	}
	code, stdout, stderr = runCLI("", "--lenient", "--to", "adal-json", filepath.Join(dir, "a.ndjson"), bad)
	if code != ExitInput || count(stdout) != 1 || !strings.Contains(stderr, bad+": open "+bad+": permission denied") {
		t.Errorf("a named file: exit %d, %d runs: %s", code, count(stdout), stderr)
	}

	// A subdirectory that cannot be listed (only when not root: root
	// lists any).
	if os.Geteuid() != 0 {
		sub := filepath.Join(dir, "locked")
		os.Mkdir(sub, 0o755)
		cp(t, seedStream, filepath.Join(sub, "d.ndjson"))
		os.Chmod(sub, 0)
		t.Cleanup(func() { os.Chmod(sub, 0o755) })
		code, _, stderr = runCLI("", "--to", "adal-json", dir)
		if code != ExitInput || !strings.Contains(stderr, sub+": cannot read it: permission denied; skipped") {
			t.Errorf("a locked subdirectory: exit %d: %s", code, stderr)
		}
	}
}

// TestConvertManyVanished: a directory's file gone before it is read is
// warned about and counted; one named itself is an error.
func TestConvertManyVanished(t *testing.T) {
	withDialects(t, streamsReadDirs)
	dir := t.TempDir()
	cp(t, seedStream, filepath.Join(dir, "a.ndjson"))
	gone := filepath.Join(dir, "gone.ndjson")
	var errb strings.Builder
	rep := formats.NewReport(&errb)
	to, _ := Lookup("adal-json")
	var out strings.Builder
	p := New(to, &out, formats.WriteOptions{}, Options{Report: rep})
	res, err := p.ConvertMany(context.Background(), []Source{
		{Path: filepath.Join(dir, "a.ndjson"), Dir: dir}, {Path: gone, Dir: dir}, {Path: filepath.Join(dir, "a.ndjson"), Dir: dir},
	}, ManyOptions{Workers: 2})
	if err != nil || res.Unread != 1 || !strings.Contains(errb.String(), gone+": cannot read it: no such file or directory; skipped") {
		t.Errorf("err %v, unread %d: %s", err, res.Unread, errb.String())
	}
	if p.Result().Runs != 2 {
		t.Errorf("%d runs, want 2", p.Result().Runs)
	}
	p = New(to, io.Discard, formats.WriteOptions{}, Options{Report: formats.NewReport(io.Discard)})
	_, err = p.ConvertMany(context.Background(), []Source{{Path: filepath.Join(dir, "a.ndjson")}, {Path: gone}}, ManyOptions{})
	var ie *InputError
	if !errors.As(err, &ie) || ie.File != gone || p.Result().Runs != 1 {
		t.Errorf("a named file gone: %v, %d runs", err, p.Result().Runs)
	}
}

// TestConvertManyInterrupted: a cancelled context stops the conversion of
// many files with ErrInterrupted, the workers gone.
func TestConvertManyInterrupted(t *testing.T) {
	dir := t.TempDir()
	var srcs []Source
	for i := range 50 {
		p := filepath.Join(dir, fmt.Sprintf("%02d.ndjson", i))
		cp(t, seedStream, p)
		srcs = append(srcs, Source{Path: p, Dir: dir})
	}
	ctx, cancel := context.WithCancel(context.Background())
	to, _ := Lookup("adal-stream")
	p := New(to, io.Discard, formats.WriteOptions{}, Options{Report: formats.NewReport(io.Discard)})
	files := 0
	_, err := p.ConvertMany(ctx, srcs, ManyOptions{Workers: 3, Progress: func(m ManyProgress) {
		if files = m.Files; files == 5 {
			cancel()
		}
	}})
	if !errors.Is(err, ErrInterrupted) || files != 5 {
		t.Errorf("err %v after %d files", err, files)
	}
}

// TestFilesFrom: --files-from names the inputs, one a line; standard input
// cannot then be an input too.
func TestFilesFrom(t *testing.T) {
	list := seedStream + "\n\n" + multiRun + "\n"
	code, stdout, stderr := runCLI(list, "--to", "adal-json", "--files-from", "-")
	_, want, _ := runCLI("", "--to", "adal-json", seedStream, multiRun)
	if code != 0 || stdout != want || strings.Count(stdout, "\n") < 3 {
		t.Errorf("exit %d: %s\n%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(list, "--to", "adal-json", "--files-from", "-", "-")
	if code != ExitUsage {
		t.Errorf("--files-from - and -: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI("", "--to", "adal-json", "--files-from", "-")
	if code != ExitInput || !strings.Contains(stderr, "<stdin>: names no input") {
		t.Errorf("an empty list: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI("", "--to", "adal-json", "--files-from", "/nonexistent/list")
	if code != ExitInput || !strings.Contains(stderr, "--files-from /nonexistent/list: cannot read it") {
		t.Errorf("a missing list: exit %d: %s", code, stderr)
	}
}

func cp(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(to), 0o755)
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestManyFilesOwned: a file that another file of the directory reads (a
// subagent's, Dialect.Owner) is left out of the walk; one whose owner is
// missing is read on its own.
func TestManyFilesOwned(t *testing.T) {
	withDialects(t, func(d *formats.Dialect) {
		streamsReadDirs(d)
		if d.Name == "adal-stream" {
			d.Owner = func(path string) string {
				if dir := filepath.Dir(path); filepath.Base(dir) == "subagents" {
					return filepath.Dir(dir) + ".ndjson"
				}
				return ""
			}
		}
	})
	dir := t.TempDir()
	cp(t, seedStream, filepath.Join(dir, "s1.ndjson"))
	cp(t, multiRun, filepath.Join(dir, "s1", "subagents", "agent-a.ndjson"))
	cp(t, seedStream, filepath.Join(dir, "s2", "subagents", "agent-b.ndjson"))
	files, err := dirInputs(dir, formats.Dialect{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f.Path)
		got = append(got, filepath.ToSlash(rel))
	}
	if strings.Join(got, " ") != "s1.ndjson s2/subagents/agent-b.ndjson" {
		t.Errorf("the walk gives %v", got)
	}
	code, stdout, stderr := runCLI("", "--to", "adal-json", dir)
	if code != 0 || strings.Count(formatstest.OneLine(stdout), "\n") != 2 {
		t.Errorf("exit %d: %s\n%s", code, stdout, stderr)
	}
}

// FuzzManyFiles: a directory of any files converts without a panic, and to
// the same output and exit status with one worker and with three.
func FuzzManyFiles(f *testing.F) {
	for _, in := range []string{seedStream, multiRun, filepath.Join("..", "testdata", "atif", "rfc-0001-example.json"),
		filepath.Join("..", "testdata", "malac", "subagents.jsonl")} {
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		withDialects(t, streamsReadDirs)
		dir := t.TempDir()
		for i, name := range []string{"a.ndjson", "b/c.jsonl", "b/d.json", "e.jsonl"} {
			b := data
			if i == 1 {
				b = data[:len(data)/2]
			}
			p := filepath.Join(dir, filepath.FromSlash(name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code1, out1, err1 := runCLI("", "--deterministic", "--to", "otlp-json", "--workers", "1", dir)
		code3, out3, err3 := runCLI("", "--deterministic", "--to", "otlp-json", "--workers", "3", dir)
		if code1 != code3 || out1 != out3 || err1 != err3 {
			t.Fatalf("1 worker: exit %d, %d bytes; 3 workers: exit %d, %d bytes\n%s", code1, len(out1), code3, len(out3), diff(err1, err3))
		}
		if code1 != ExitOK && code1 != ExitInput || strings.Contains(err1, "internal error") {
			t.Fatalf("exit %d: %s", code1, err1)
		}
	})
}
