package convert

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// Hostile input, for every reader into every local writer: agentconv must
// never panic or hang, must fail with FILE:LINE when it fails, and must
// write valid UTF-8.

var placeRE = regexp.MustCompile(`<stdin>:\d+: `)

func hostileInputs() map[string]string {
	nested := `{"type":"tool_call","id":"a","name":"x","args":` + strings.Repeat(`{"a":[`, 150000) + strings.Repeat(`]}`, 150000) + "}\n"
	return map[string]string{
		"binary garbage":    "\x00\x01\x02\xff\xfe binary \x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"truncated json":    "{\"type\":\"tool_call\",\"id\":\"a\",\"na",
		"truncated array":   "[{\"type\":\"system\"},{\"type\":",
		"nested args":       nested,
		"huge numbers":      `{"type":"tool_call","id":"a","name":"x","args":{"n":123456789012345678901234567890123456789,"f":1e400}}` + "\n",
		"only blank lines":  "\n\n\r\n  \n",
		"a lone brace":      "}\n",
		"null":              "null\n",
		"array of numbers":  "[1,2,3]\n",
		"invalid utf8 keys": "{\"\xff\xfe\":\"\xc3\x28\",\"type\":\"\xe2\x82\"}\n",
	}
}

func TestHostileInput(t *testing.T) {
	formatstest.Long(t)
	t.Parallel()
	for name, in := range hostileInputs() {
		for _, from := range Readable() {
			for _, to := range Writable() {
				if to.Remote {
					continue
				}
				code, stdout, stderr := runCLI(in, "--from", from.Name, "--to", to.Name, "--deterministic")
				where := name + ": " + from.Name + "→" + to.Name
				switch code {
				case ExitOK:
				case ExitInput:
					if !placeRE.MatchString(stderr) {
						t.Errorf("%s: failed without FILE:LINE: %q", where, stderr)
					}
				default:
					t.Errorf("%s: exit %d: %s", where, code, stderr)
				}
				if !utf8.ValidString(stdout) {
					t.Errorf("%s: output is not valid UTF-8: %q", where, stdout)
				}
				if strings.Contains(stderr, "internal error") || strings.Contains(stderr, "panic") {
					t.Errorf("%s: %s", where, stderr)
				}
				for _, what := range undeclared(to, stderr) {
					t.Errorf("%s: reports %q, which %s's row does not declare", where, what, to.Name)
				}
			}
		}
	}
}

// TestCRLFBOMAndBlankLines: a fixture with CRLF line ends, a BOM and blank
// lines between events converts exactly as the plain fixture does.
func TestCRLFBOMAndBlankLines(t *testing.T) {
	t.Parallel()
	for _, in := range fixtures(t) {
		b, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		s := sniff(b)
		d := s.d
		if s.score < 50 {
			continue
		}
		plain := string(b)
		mangled := "\ufeff" + strings.ReplaceAll(plain, "\n", "\r\n\r\n")
		for _, to := range []string{"adal-json", d.Name} {
			if dd, ok := Lookup(to); !ok || dd.NewWriter == nil || dd.Remote {
				continue
			}
			c1, o1, _ := runCLI(plain, "--deterministic", "--from", d.Name, "--to", to)
			c2, o2, e2 := runCLI(mangled, "--deterministic", "--from", d.Name, "--to", to)
			if to == d.Name {
				// Same-dialect output copies records; compare without line ends.
				o1, o2 = normalize(o1), normalize(o2)
			}
			if c1 != c2 || o1 != o2 {
				t.Errorf("%s → %s: CRLF, BOM and blank lines changed the result (exit %d vs %d): %s\n%s", in, to, c1, c2, e2, diff(o1, o2))
			}
		}
	}
}

// TestHugeNumbersPassThrough: numbers too big for int64 and float64 are kept
// exactly in same-dialect output.
func TestHugeNumbersPassThrough(t *testing.T) {
	in := `{"type":"tool_call","id":"a","name":"x","args":{"n":123456789012345678901234567890123456789,"f":1e400}}` + "\n" +
		`{"type":"complete","exit_code":0,"session_id":"s","model":"m","extra":18446744073709551616}` + "\n"
	code, out, stderr := runCLI(in, "--from", "adal-stream", "--to", "adal-stream")
	if code != 0 || out != in {
		t.Fatalf("exit %d, %s\ngot  %q\nwant %q", code, stderr, out, in)
	}
	// Into another dialect the arguments are copied, not re-encoded.
	_, out, _ = runCLI(in, "--from", "adal-stream", "--to", "adal-json")
	if !strings.Contains(formatstest.OneLine(out), `{"n":123456789012345678901234567890123456789,"f":1e400}`) {
		t.Errorf("adal-json lost the exact numbers: %s", out)
	}
}

// TestLongLines: a line far over bufio's 64 KiB default converts.
func TestLongLines(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	big := strings.Repeat("x", 20<<20)
	in := `{"type":"tool_call","id":"a","name":"cat","args":{}}` + "\n" +
		`{"type":"tool_result","id":"a","name":"cat","status":"completed","output":"` + big + `"}` + "\n" +
		`{"type":"complete","exit_code":0}` + "\n"
	code, out, stderr := runCLI(in, "--to", "adal-stream")
	if code != 0 || len(out) < len(big) {
		t.Fatalf("exit %d, %d bytes out: %s", code, len(out), stderr)
	}
}

// TestFoundFilesRegularOnly: files a reader finds by itself beside its
// input (a Claude session's subagents) are read only when regular: a FIFO
// (which would block the reader for ever) and a link to /dev/zero (which
// never ends) are warned about and left out, and the session converts, in
// a conversion and in sessions.
func TestFoundFilesRegularOnly(t *testing.T) {
	dir := t.TempDir()
	const sid = "06381696-0074-49f8-863e-6ad4fac507f9"
	session := filepath.Join(dir, sid+".jsonl")
	if err := os.WriteFile(session, []byte(readFile(t, filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl"))), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, sid, "subagents")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(sub, "agent-x.jsonl"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(sub, "agent-y.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--to", "pretty", session}, {"sessions", dir}} {
		done := make(chan struct{})
		var out, errb bytes.Buffer
		go func() {
			defer close(done)
			Run(append([]string{"agentconv"}, args...), Sys{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: still reading after 30 s", args)
		}
		if !strings.Contains(out.String(), sid[:8]) {
			t.Errorf("%v: the session is not converted: %s\n%s", args, out.String(), errb.String())
		}
		if args[0] == "--to" && (!strings.Contains(errb.String(), "agent-x.jsonl (not a regular file but a FIFO)") ||
			!strings.Contains(errb.String(), "agent-y.jsonl (not a regular file but a device)")) {
			t.Errorf("%v: no warning naming the FIFO and the device: %s", args, errb.String())
		}
	}
}

// TestOutputDirLinks: a symbolic link planted under -o DIR that leads out
// of it is never followed: a run whose session id is the link's name
// (atif's DIR/<sid>/, codex-rollout's DIR/YYYY/) fails to write, exit 4,
// with a message that says so, and nothing outside DIR changes; a link in
// place of a file (claude-session's DIR/<sid>.jsonl) is replaced, its
// target left as it was.
func TestOutputDirLinks(t *testing.T) {
	in := `{"type":"system","subtype":"init","session_id":"victim","model":"m","cwd":"/w","tools":[]}
{"type":"result","subtype":"success","is_error":false,"result":"hi","session_id":"victim","timestamp":"2026-01-02T03:04:05Z","usage":{"input_tokens":1,"output_tokens":1}}
`
	for _, c := range []struct{ to, link, code string }{
		{"atif", "victim", "4"},
		{"codex-rollout", time.Now().Format("2006"), "4"},
		{"claude-session", "victim.jsonl", "0"},
	} {
		base := t.TempDir()
		out, elsewhere := filepath.Join(base, "out"), filepath.Join(base, "elsewhere")
		for _, d := range []string{out, elsewhere} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		victim := filepath.Join(elsewhere, "victim.jsonl")
		if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		target := elsewhere
		if strings.HasSuffix(c.link, ".jsonl") {
			target = victim
		}
		if err := os.Symlink(target, filepath.Join(out, c.link)); err != nil {
			t.Fatal(err)
		}
		var o, e bytes.Buffer
		code := Run([]string{"agentconv", "--from", "claude-stream", "--to", c.to, "-o", out + "/"},
			Sys{Stdin: strings.NewReader(in), Stdout: &o, Stderr: &e, Getenv: func(string) string { return "" }})
		if got := strconv.Itoa(code); got != c.code {
			t.Errorf("%s: exit %d, want %s: %s", c.to, code, c.code, e.String())
		}
		if c.code == "4" && !strings.Contains(e.String(), "symbolic link under the output directory leads out of it") {
			t.Errorf("%s: the message does not say why: %s", c.to, e.String())
		}
		entries, _ := os.ReadDir(elsewhere)
		if b, _ := os.ReadFile(victim); string(b) != "keep\n" || len(entries) != 1 {
			t.Errorf("%s: outside -o DIR changed: %q, %d entries", c.to, b, len(entries))
		}
	}
}

// TestATIFReferencesReadOnce: an embedded subagent trajectory that the
// document refers to ten times, nested six deep (10^6 expansions if each
// reference read it again), is read once, with a warning for the others.
func TestATIFReferencesReadOnce(t *testing.T) {
	var traj func(depth int) map[string]any
	traj = func(depth int) map[string]any {
		t := map[string]any{"schema_version": "ATIF-v1.7", "trajectory_id": "sub" + strconv.Itoa(depth),
			"agent": map[string]any{"name": "a", "version": "1"},
			"steps": []any{map[string]any{"step_id": 1, "source": "user", "message": "go"}}}
		if depth < 6 {
			refs := make([]any, 10)
			for i := range refs {
				refs[i] = map[string]any{"trajectory_id": "sub" + strconv.Itoa(depth+1)}
			}
			t["steps"] = append(t["steps"].([]any), map[string]any{"step_id": 2, "source": "agent", "message": "x",
				"tool_calls":  []any{map[string]any{"tool_call_id": "c", "function_name": "task", "arguments": map[string]any{}}},
				"observation": map[string]any{"results": []any{map[string]any{"source_call_id": "c", "subagent_trajectory_ref": refs}}}})
			t["subagent_trajectories"] = []any{traj(depth + 1)}
		}
		return t
	}
	doc, _ := json.Marshal(traj(0))
	var out, stderr bytes.Buffer
	code := Run([]string{"agentconv", "--to", "cli-agents"}, Sys{Stdin: bytes.NewReader(doc), Stdout: &out, Stderr: &stderr, Getenv: func(string) string { return "" }})
	if code != 0 || strings.Count(out.String(), "\n") > 200 || !strings.Contains(stderr.String(), `subagent trajectory "sub1" is referred to again; it is read once`) {
		t.Errorf("exit %d, %d lines out: %s", code, strings.Count(out.String(), "\n"), stderr.String())
	}
}

// TestWalkLinksOut: a directory walk does not read a symbolic link that
// leads out of the directory (to /proc/self/environ, whose bytes an error
// would quote): it is warned about and left out; a link inside is read.
func TestWalkLinksOut(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.jsonl")
	if err := os.WriteFile(secret, []byte("AWS_SECRET=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "x.jsonl")); err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(session, []byte(readFile(t, filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl"))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--from", "claude-session", "--to", "pretty", dir}, {"sessions", dir}} {
		var out, errb bytes.Buffer
		Run(append([]string{"agentconv"}, args...), Sys{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		if strings.Contains(out.String()+errb.String(), "hunter2") || !strings.Contains(errb.String(), "x.jsonl: cannot read it: a symbolic link to a file outside the directory") ||
			!strings.Contains(out.String(), "06381696") {
			t.Errorf("%v:\n%s\n%s", args, out.String(), errb.String())
		}
	}
}

// Two session files of one session id (issue 28 #3: a copy of a session
// kept in two folders) converted to claude-session -o DIR: each goes to a
// file of its own, whole, the second under the id with -2, and a warning
// says so; they were concatenated under one name, and read back only the
// second conversation remained.
func TestSameSessionTwoInputs(t *testing.T) {
	src := filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(in, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(in, d, "s.jsonl"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	code, _, stderr := runCLI("", "--to", "claude-session", "-o", out+"/", in)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	const id = "06381696-0074-49f8-863e-6ad4fac507f9"
	for _, name := range []string{id + ".jsonl", id + "-2.jsonl"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if string(b) != string(data) {
			t.Errorf("%s is not the session as it was: %d bytes of %d", name, len(b), len(data))
		}
	}
	if !strings.Contains(stderr, "an earlier input holds a session of the same id ("+id+"): this one is written to "+id+"-2.jsonl") {
		t.Errorf("no warning of the second session: %s", stderr)
	}
}

// xsReader yields a record's opening, then 'x' until n bytes in all and
// no line break, without holding them.
type xsReader struct {
	head string
	n    int
}

func (x *xsReader) Read(p []byte) (int, error) {
	if x.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), x.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	c := copy(p[:k], x.head)
	x.head = x.head[c:]
	x.n -= k
	return k, nil
}

// TestNoLineBreakIsBounded (issue 28 #7): a record without a line break
// (the opening of a JSON object, then 32 MiB of a string), on standard
// input or in a named file, is gathered by no reader past the record limit
// (formats.MaxLine, lowered here to 1 MiB): each refuses it as malformed,
// exit 1, having allocated far less than the input (counted without the
// race detector, whose instrumentation allocates too), where claude-stream,
// claude-session and gemini-chat once gathered such input past 1 GB.
func TestNoLineBreakIsBounded(t *testing.T) {
	old := formats.MaxLine
	formats.MaxLine = 1 << 20
	defer func() { formats.MaxLine = old }()
	const size, head = 32 << 20, `{"type":"message","text":"`
	file := filepath.Join(t.TempDir(), "x.jsonl")
	if err := os.WriteFile(file, append([]byte(head), bytes.Repeat([]byte("x"), size-len(head))...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range Dialects {
		if d.NewReader == nil || d.Binary {
			continue
		}
		for _, named := range []bool{false, true} {
			args := []string{"agentconv", "--from", d.Name, "--to", "adal-stream"}
			if named {
				args = append(args, file)
			}
			var out, errb bytes.Buffer
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			code := Run(args, Sys{Stdin: &xsReader{head: head, n: size}, Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
			runtime.ReadMemStats(&after)
			if code != 1 || !strings.Contains(errb.String(), "longer than") {
				t.Errorf("%s (named file: %v): exit %d, want 1 with the record's limit named; stderr: %.300s", d.Name, named, code, errb.String())
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > size/2 && !raceDetector {
				t.Errorf("%s (named file: %v): allocated %d bytes for a record cut at 1 MiB", d.Name, named, got)
			}
		}
	}
}
