package convert

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

var multiRun = filepath.Join("..", "testdata", "adal", "multi-run-stream.ndjson")

// runTree lists the files under dir, relative to it, sorted.
func runTree(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// documents splits a stream of JSON documents.
func documents(t *testing.T, s string) []string {
	t.Helper()
	var docs []string
	values := formats.NewValueReader(strings.NewReader(s))
	for {
		doc, _, err := values.Next()
		if err != nil {
			break
		}
		docs = append(docs, string(doc))
	}
	return docs
}

// TestOutputDirOneFilePerRun: --to atif -o DIR writes each run to
// DIR/<session id>/trajectory.json, the same document as on standard
// output, and each passes the ATIF validator.
func TestOutputDirOneFilePerRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, stdout, stderr := runCLI("", "--to", "atif", "-o", dir, multiRun)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, stdout, stderr)
	}
	want := []string{
		"5e6f7a8b-0000-4000-8000-000000000002/trajectory.json",
		"9c0d1e2f-0000-4000-8000-000000000003/trajectory.json",
		"a1b2c3d4-.../trajectory.json",
	}
	if got := runTree(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("files:\n got %v\nwant %v", got, want)
	}
	_, all, _ := runCLI("", "--to", "atif", multiRun)
	docs := documents(t, all)
	order := []string{want[2], want[0], want[1]} // the input's order
	var files []string
	for i, rel := range order {
		f := filepath.Join(dir, filepath.FromSlash(rel))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i < len(docs) && strings.TrimSpace(string(b)) != docs[i] {
			t.Errorf("%s is not run %d of the standard output:\n%s", rel, i+1, diff(docs[i], string(b)))
		}
		files = append(files, f)
	}
	for f, errs := range atifValidate(t, files) {
		t.Errorf("%s: the ATIF validator rejects it: %s", f, errs)
	}
}

// TestOutputDirNames: a run without a session id is run-N, N counting such
// runs; a second run with the same name gets -2 and a warning; a name
// ending in a slash is made; a file from an earlier conversion is
// replaced; no temporary file is left.
func TestOutputDirNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new") + "/"
	cut := filepath.Join("..", "testdata", "adal", "cut-stream.ndjson")
	args := []string{"--to", "atif", "-o", dir, cut, seedStream, cut, seedStream}
	code, _, stderr := runCLI("", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "a1b2c3d4-...-2/trajectory.json a1b2c3d4-.../trajectory.json run-1/trajectory.json run-2/trajectory.json"
	if got := strings.Join(runTree(t, dir), " "); got != want {
		t.Fatalf("files:\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(stderr, "another run was already written to "+filepath.Join(dir, "a1b2c3d4-...", "trajectory.json")) {
		t.Errorf("no warning for the second run of a1b2c3d4-...:\n%s", stderr)
	}
	// Again into the same directory: the same files, replaced.
	os.WriteFile(filepath.Join(dir, "run-1", "trajectory.json"), []byte("old\n"), 0o644)
	if code, _, stderr := runCLI("", args...); code != 0 {
		t.Fatalf("again: exit %d: %s", code, stderr)
	}
	if got := strings.Join(runTree(t, dir), " "); got != want {
		t.Fatalf("files again:\n got %s\nwant %s", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run-1", "trajectory.json")); !strings.Contains(string(b), `"cut": true`) {
		t.Errorf("run-1 was not replaced: %s", b)
	}
}

func TestSafeName(t *testing.T) {
	for id, want := range map[string]string{
		"a1b2-C3_d.4": "a1b2-C3_d.4",
		"../../etc":   "_.._etc",
		"..":          "",
		".hidden":     "hidden",
		"a/b c":       "a_b_c",
		"":            "",
		"é":           "_",
	} {
		if got := safeName(id); got != want {
			t.Errorf("safeName(%q) = %q, want %q", id, got, want)
		}
	}
	if got := safeName(strings.Repeat("x", 300)); len(got) != 128 {
		t.Errorf("a long id makes a name of %d bytes", len(got))
	}
}

// TestOutputDirFailure: a run's file that cannot be put in place is an
// output error (exit 4); the runs before it are kept, and no temporary file
// is left.
func TestOutputDirFailure(t *testing.T) {
	dir := t.TempDir()
	cut := filepath.Join("..", "testdata", "adal", "cut-stream.ndjson")
	if err := os.MkdirAll(filepath.Join(dir, "run-2", "trajectory.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("", "--to", "atif", "-o", dir, cut, cut, cut)
	if code != ExitOutput || !strings.Contains(stderr, "cannot write "+filepath.Join(dir, "run-2", "trajectory.json")) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := strings.Join(runTree(t, dir), " "); got != "run-1/trajectory.json" {
		t.Errorf("files: %s", got)
	}
	noTemporaryFiles(t, dir)
}

// TestOutputDirCase: session ids that differ only in case get names that
// differ otherwise, for a file system that does not tell them apart.
func TestOutputDirCase(t *testing.T) {
	doc := func(session string) string {
		return `{"schema_version":"ATIF-v1.7","session_id":"` + session + `","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"user","message":"hi"}]}` + "\n"
	}
	dir := t.TempDir()
	code, _, stderr := runCLI(doc("Abc")+doc("abc")+doc("x/y"), "--from", "atif", "--to", "atif", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, want := strings.Join(runTree(t, dir), " "), "Abc/trajectory.json abc-2/trajectory.json x_y/trajectory.json"; got != want {
		t.Errorf("files:\n got %s\nwant %s", got, want)
	}
}

// TestRunNamesLinear: the runs of one session are named id, id-2, id-3, …
// around names taken otherwise, in linear work: naming 4N runs of one
// session allocates at most 5 times what N runs do, where trying each
// suffix from 2 again allocates 16 times as much.
func TestRunNamesLinear(t *testing.T) {
	name := func(n int) []string {
		rf := &runFiles{report: formats.NewReport(io.Discard), used: map[string]bool{"s-3": true}}
		var names []string
		for range n {
			names = append(names, rf.nameFor("S"))
		}
		return names
	}
	names := name(1000)
	if want := []string{"S", "S-2", "S-4", "S-5"}; !slices.Equal(names[:4], want) {
		t.Errorf("names %q, want %q", names[:4], want)
	}
	if names[999] != "S-1001" {
		t.Errorf("the 1000th run is named %q, want S-1001", names[999])
	}
	small := testing.AllocsPerRun(1, func() { name(1000) })
	if large := testing.AllocsPerRun(1, func() { name(4000) }); large > 5*small {
		t.Errorf("naming 1000 runs allocates %.0f times, 4000 runs %.0f (quadratic?)", small, large)
	}
}

// TestOutputDirLargeRuns: runs past what runFiles holds in memory
// (spillAt) are written through a temporary file, among runs held whole:
// every file is the document standard output gets, in its place, and no
// temporary file is left.
func TestOutputDirLargeRuns(t *testing.T) {
	doc := func(session string, size int) string {
		return `{"schema_version":"ATIF-v1.7","session_id":"` + session + `","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"user","message":"` +
			strings.Repeat("x", size) + `"}]}` + "\n"
	}
	var in strings.Builder
	var names []string
	for i, size := range []int{10, 3 * spillAt, 20, spillAt - 200, spillAt + 1, 5} {
		name := "s" + string(rune('a'+i))
		in.WriteString(doc(name, size))
		names = append(names, name)
	}
	code, stdout, stderr := runCLI(in.String(), "--from", "atif", "--to", "atif")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := documents(t, stdout)
	dir := t.TempDir()
	if code, _, stderr := runCLI(in.String(), "--from", "atif", "--to", "atif", "-o", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got []string
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name, "trajectory.json"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if len(got) != len(want) {
		t.Fatalf("%d files, %d documents on standard output", len(got), len(want))
	}
	for i := range want {
		if strings.TrimSpace(got[i]) != strings.TrimSpace(want[i]) {
			t.Errorf("%s/trajectory.json (%d bytes) is not the document of standard output (%d bytes)", names[i], len(got[i]), len(want[i]))
		}
	}
	noTemporaryFiles(t, dir)
}

// closeOnly is a writer that writes nothing.
type closeOnly struct{}

func (closeOnly) Write(*formats.Event, *formats.RunView) error { return nil }
func (closeOnly) Close() error                                 { return nil }

// TestRunFilesSpill: a run written in pieces, held until it passes
// spillAt and then written on to a temporary file, is put in place whole
// and in order, between runs held whole.
func TestRunFilesSpill(t *testing.T) {
	dir := t.TempDir()
	rf := &runFiles{dir: dir, file: "f.json", report: formats.NewReport(io.Discard), used: map[string]bool{}, w: closeOnly{}}
	rf.root, rf.rootErr = os.OpenRoot(dir)
	want := map[string]string{}
	for _, run := range []struct {
		name   string
		pieces []int
	}{{"a", []int{10}}, {"b", []int{100, spillAt, 100}}, {"c", []int{5, 5}}, {"d", []int{spillAt / 2, spillAt / 2, 1, spillAt}}} {
		var all strings.Builder
		for i, n := range run.pieces {
			p := strings.Repeat(string(rune('0'+i)), n)
			if _, err := rf.Write([]byte(p)); err != nil {
				t.Fatal(err)
			}
			all.WriteString(p)
		}
		want[run.name] = all.String()
		rf.ended, rf.name = true, run.name
		rf.before()
	}
	if err := rf.Close(); err != nil {
		t.Fatal(err)
	}
	rf.abort()
	for name, w := range want {
		b, err := os.ReadFile(filepath.Join(dir, name, "f.json"))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != w {
			t.Errorf("%s: %d bytes, want %d (or not in order)", name, len(b), len(w))
		}
	}
	if got := len(runTree(t, dir)); got != len(want) {
		t.Errorf("%d files, want %d: %v", got, len(want), runTree(t, dir))
	}
}
