package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestDirectoryRoundTrip: atif DIR → atif DIR gives back the same files,
// byte for byte, with --from atif and detected; every file passes the ATIF
// validator.
func TestDirectoryRoundTrip(t *testing.T) {
	t.Parallel()
	first := t.TempDir()
	cut := filepath.Join("..", "testdata", "adal", "cut-stream.ndjson")
	if code, _, stderr := runCLI("", "--to", "atif", "-o", first, multiRun, seedStream, cut, cut); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files := runTree(t, first)
	if len(files) != 6 {
		t.Fatalf("%d files, want 6: %v", len(files), files)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(first, f))
	}
	for f, errs := range atifValidate(t, paths) {
		t.Errorf("%s: the ATIF validator rejects it: %s", f, errs)
	}
	for _, from := range [][]string{{"--from", "atif"}, nil} {
		second := t.TempDir()
		code, _, stderr := runCLI("", append(from, "--to", "atif", "-o", second, first)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", from, code, stderr)
		}
		if strings.Contains(stderr, "lost:") {
			t.Errorf("%v: atif → atif reported losses:\n%s", from, stderr)
		}
		if got := runTree(t, second); strings.Join(got, " ") != strings.Join(files, " ") {
			t.Fatalf("%v: files:\n got %v\nwant %v", from, got, files)
		}
		for _, f := range files {
			a, _ := os.ReadFile(filepath.Join(first, f))
			b, _ := os.ReadFile(filepath.Join(second, f))
			if string(a) != string(b) {
				t.Errorf("%v: %s changed:\n%s", from, f, diff(string(a), string(b)))
			}
		}
	}
}

// TestDirectoryInput: a directory is read as its *.json files in path order,
// subdirectories included, hidden names and other files left out; a
// dialect that does not read directories keeps the error, and a directory
// without trajectories is one.
func TestDirectoryInput(t *testing.T) {
	dir := t.TempDir()
	doc := func(session string) string {
		return `{"schema_version":"ATIF-v1.7","session_id":"` + session + `","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"user","message":"hi ` + session + `"}]}`
	}
	for name, content := range map[string]string{
		"b.json":          doc("s3"),
		"a/z.json":        doc("s2"),
		"a/y.json":        doc("s1"),
		"a-b.json":        doc("s-ab"),
		".hidden.json":    doc("hidden"),
		".git/x.json":     doc("git"),
		"notes.txt":       "not a trajectory",
		"c/d/e/deep.json": doc("s4"),
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, from := range [][]string{{"--from", "atif"}, nil} {
		code, stdout, stderr := runCLI("", append(from, "--to", "adal-json", dir)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", from, code, stderr)
		}
		var sessions []string
		for _, l := range strings.Split(strings.TrimSpace(formatstest.OneLine(stdout)), "\n") {
			i := strings.Index(l, `"session_id":"`)
			if i < 0 {
				t.Fatalf("no session id in %s", l)
			}
			rest := l[i+len(`"session_id":"`):]
			sessions = append(sessions, rest[:strings.IndexByte(rest, '"')])
		}
		if got, want := strings.Join(sessions, " "), "s1 s2 s-ab s3 s4"; got != want {
			t.Errorf("%v: runs in the order %s, want %s", from, got, want)
		}
	}
	code, _, stderr := runCLI("", "--from", "adal-stream", "--to", "adal-json", dir)
	if code != ExitInput || !strings.Contains(stderr, dir+": is a directory; name the files in it") {
		t.Errorf("--from adal-stream DIR: exit %d: %s", code, stderr)
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "x.txt"), nil, 0o644)
	code, _, stderr = runCLI("", "--to", "adal-json", empty)
	if code != ExitInput || !(strings.Contains(stderr, "*.json") && strings.Contains(stderr, "file under it")) {
		t.Errorf("a directory without trajectories: exit %d: %s", code, stderr)
	}
}
