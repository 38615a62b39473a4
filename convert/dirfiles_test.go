package convert

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestDirFiles(t *testing.T) {
	dir := t.TempDir()
	d := newDirFiles(dir)
	for _, bad := range []string{"", "/abs", "../out", "a/../../b", "a//b"} {
		if _, err := d.create(bad); err == nil {
			t.Errorf("create(%q) was allowed", bad)
		}
	}
	f, err := d.create("s1/subagents/agent-1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("one\n"))
	target := filepath.Join(dir, "s1", "subagents", "agent-1.jsonl")
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the file has its name before it is closed")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "one\n" {
		t.Fatalf("after Close: %q, %v", b, err)
	}
	// One left open is put in place at the end, unless the output failed.
	g, _ := d.create("s1.jsonl")
	g.Write([]byte("two\n"))
	h, _ := d.create("s2.jsonl")
	h.Write([]byte("three\n"))
	if err := d.finish(false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "s1.jsonl")); string(b) != "two\n" {
		t.Errorf("s1.jsonl: %q", b)
	}
	d2 := newDirFiles(dir)
	k, _ := d2.create("s3.jsonl")
	k.Write([]byte("x\n"))
	d2.finish(true)
	if _, err := os.Stat(filepath.Join(dir, "s3.jsonl")); err == nil {
		t.Error("a failed conversion put its file in place")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(fds)
}

// TestDirFilesFewOpen: files not closed yet hold at most maxOpenDirFiles
// descriptors; one written to after it let its own go goes on where it
// was.
func TestDirFilesFewOpen(t *testing.T) {
	defer func(n int) { maxOpenDirFiles = n }(maxOpenDirFiles)
	maxOpenDirFiles = 4
	dir := t.TempDir()
	d := newDirFiles(dir)
	base := openFDs(t)
	var fs []io.WriteCloser
	for i := range 50 {
		f, err := d.create(fmt.Sprintf("s%d.jsonl", i))
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	most := 0
	for round := range 3 {
		for i, f := range fs {
			if _, err := fmt.Fprintf(f, "%d %d\n", i, round); err != nil {
				t.Fatal(err)
			}
			most = max(most, openFDs(t)-base)
		}
	}
	if most > 4 {
		t.Errorf("%d more descriptors open", most)
	}
	for _, f := range fs[:25] {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.finish(false); err != nil {
		t.Fatal(err)
	}
	for i := range fs {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i)))
		if want := fmt.Sprintf("%d 0\n%d 1\n%d 2\n", i, i, i); err != nil || string(b) != want {
			t.Fatalf("s%d.jsonl: %q, %v; want %q", i, b, err, want)
		}
	}
}

// TestDirFilesReopen: a file put in place is continued by reopen, and is
// whole in place again when closed; reopen of a name not written makes it.
func TestDirFilesReopen(t *testing.T) {
	dir := t.TempDir()
	d := newDirFiles(dir)
	write := func(open func(string) (io.WriteCloser, error), name, s string) {
		f, err := open(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(f, s)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write(d.create, "a/s.jsonl", "one\n")
	write(d.create, "b.jsonl", "x\n")
	write(d.reopen, "a/s.jsonl", "two\n")
	write(d.reopen, "c.jsonl", "new\n")
	if err := d.finish(false); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a/s.jsonl": "one\ntwo\n", "b.jsonl": "x\n", "c.jsonl": "new\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
}
