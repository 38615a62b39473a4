package convert

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// FuzzOutputDir writes -o DIR, with each writer of files, from hostile
// runs (any session id, agent id and records) into a directory where a
// symbolic link to a file or directory outside it stands at each name the
// writer gives (learnt from a first conversion into an empty directory),
// and checks that nothing outside the directory changed.
func FuzzOutputDir(f *testing.F) {
	f.Add("00000000-0000-4000-8000-000000000001", "agent-1", []byte(nil), uint8(0))
	f.Add("../../escape", "../up", []byte(`{"type":"system","subtype":"init","session_id":"/abs/path","model":"m"}`+"\n"), uint8(1))
	f.Add(".hidden", "a/b", []byte(nil), uint8(2))
	f.Add("CON", "x\x00y", []byte(nil), uint8(3))
	f.Add("s p a c e/..\\x", "..", []byte(nil), uint8(4))
	f.Add(strings.Repeat("long", 80), "", []byte(nil), uint8(5))
	f.Add("index", "index", []byte(nil), uint8(6))
	f.Add("run-1", "subagents", []byte(nil), uint8(7))
	f.Add("2026", "trajectory.json", []byte(nil), uint8(8))
	if b, err := os.ReadFile(filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl")); err == nil {
		f.Add("", "", b, uint8(0))
	}
	f.Fuzz(func(t *testing.T, session, agent string, extra []byte, which uint8) {
		to := filesWriters[int(which)%len(filesWriters)]
		in := hostileRuns(session, agent, extra)
		base := t.TempDir()
		learn, out, outside := filepath.Join(base, "learn"), filepath.Join(base, "out"), filepath.Join(base, "outside")
		for _, d := range []string{learn, out, filepath.Join(outside, "dir")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"--deterministic", "--lenient", "--to", to}
		code, _, stderr := runCLI(in, append(args, "-o", learn+"/")...)
		checkExit(t, to, code, stderr)
		// A link at each name the writer gave, and at each directory on
		// the way: to a file outside, to a directory outside, or dangling
		// to a name outside.
		i := 0
		filepath.WalkDir(learn, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == learn {
				return nil
			}
			rel, _ := filepath.Rel(learn, p)
			target := filepath.Join(outside, "victim")
			switch {
			case d.IsDir():
				target = filepath.Join(outside, "dir")
			case i%2 == 1:
				target = filepath.Join(outside, fmt.Sprintf("new-%d", i))
			}
			i++
			link := filepath.Join(out, rel)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err == nil {
				os.Symlink(target, link)
			}
			if d.IsDir() {
				return filepath.SkipDir // the link stands for the directory
			}
			return nil
		})
		before := treeState(t, outside)
		code, _, stderr = runCLI(in, append(args, "-o", out+"/")...)
		checkExit(t, to, code, stderr)
		if after := treeState(t, outside); after != before {
			t.Fatalf("%s: outside -o DIR changed:\nbefore %s\nafter  %s", to, before, after)
		}
		entries, _ := os.ReadDir(base)
		if len(entries) != 3 {
			t.Fatalf("%s: something was written beside -o DIR: %d entries", to, len(entries))
		}
	})
}

// hostileRuns is a claude-stream of two runs of the session, the second
// with a subagent of the agent id, then the extra records.
func hostileRuns(session, agent string, extra []byte) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	for run := range 2 {
		fmt.Fprintf(&b, `{"type":"system","subtype":"init","session_id":%s,"model":"m","cwd":"/w","tools":[]}`+"\n", q(session))
		fmt.Fprintf(&b, `{"type":"user","message":{"role":"user","content":"go %d"},"session_id":%s}`+"\n", run, q(session))
		if run == 1 {
			fmt.Fprintf(&b, `{"type":"assistant","message":{"id":"m1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":%s,"name":"Task","input":{"description":"d","prompt":"p"}}]},"session_id":%s}`+"\n", q(agent), q(session))
			fmt.Fprintf(&b, `{"type":"assistant","message":{"id":"m2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"sub"}]},"parent_tool_use_id":%s,"session_id":%s}`+"\n", q(agent), q(session))
			fmt.Fprintf(&b, `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%s,"content":"done"}]},"session_id":%s}`+"\n", q(agent), q(session))
		}
		fmt.Fprintf(&b, `{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":%s,"usage":{"input_tokens":1,"output_tokens":1}}`+"\n", q(session))
	}
	b.Write(extra)
	return b.String()
}

func checkExit(t *testing.T, to string, code int, stderr string) {
	t.Helper()
	switch {
	case strings.Contains(stderr, "internal error"), strings.Contains(stderr, "panic"):
		t.Fatalf("%s: %s", to, stderr)
	case code != ExitOK && code != ExitInput && code != ExitOutput:
		t.Fatalf("%s: exit %d: %s", to, code, stderr)
	}
}

// treeState sums up a tree: each entry's path, type, mode, and a file's
// or link's content.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			lines = append(lines, p+" "+err.Error())
			return nil
		}
		info, _ := d.Info()
		line := fmt.Sprintf("%s %v", p, info.Mode())
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			line += " -> " + l
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
