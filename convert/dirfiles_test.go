package convert

import (
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
