package convert

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// sessionsHome builds a fake HOME whose agents keep sessions where fake
// rows of the table say: atif trajectories under ~/.traj/<project>/, each
// owning the files of <id>/subagents/ beside it, and adal-stream runs
// under $ADAL_HOME/runs. It returns HOME and the environment.
func sessionsHome(t *testing.T) (string, func(string) string) {
	t.Helper()
	home := t.TempDir()
	env := map[string]string{"HOME": home, "ADAL_HOME": filepath.Join(home, "adal")}
	getenv := func(k string) string { return env[k] }
	withDialects(t, func(d *formats.Dialect) {
		switch d.Name {
		case "atif":
			d.Places = func(getenv func(string) string) []string {
				return []string{filepath.Join(getenv("HOME"), ".traj"), filepath.Join(getenv("HOME"), ".nowhere")}
			}
			d.Owner = func(path string) string {
				dir := filepath.Dir(path)
				if filepath.Base(dir) != "subagents" {
					return ""
				}
				return filepath.Dir(dir) + ".json"
			}
		case "adal-stream":
			d.DirFiles = "*.ndjson"
			d.Places = func(getenv func(string) string) []string { return []string{filepath.Join(getenv("ADAL_HOME"), "runs")} }
		}
	})
	var src map[string]any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join("..", "testdata", "atif", "rfc-0001-example.json"))), &src); err != nil {
		t.Fatal(err)
	}
	traj := func(rel, session, agent, cwd string) {
		doc := map[string]any{}
		for k, v := range src {
			doc[k] = v
		}
		doc["session_id"] = session
		a := map[string]any{}
		for k, v := range src["agent"].(map[string]any) {
			a[k] = v
		}
		a["name"] = agent
		doc["agent"] = a
		doc["extra"] = map[string]any{"cwd": cwd}
		b, _ := json.MarshalIndent(doc, "", "  ")
		p := filepath.Join(home, ".traj", filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	traj("p1/s1.json", "s1", "harbor-agent", "/work/p1")
	traj("p1/s1/subagents/agent-a.json", "s1-sub", "harbor-agent", "/work/p1")
	traj("p1/s2.json", "s2", "harbor-agent", "/work/p1/sub")
	traj("p2/s3.json", "s3", "other-agent", "/work/p2")
	os.WriteFile(filepath.Join(home, ".traj", "p2", "notes.json"), []byte(`{"not":"a trajectory"}`), 0o644)
	cp(t, seedStream, filepath.Join(home, "adal", "runs", "seed.ndjson"))
	return home, getenv
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func runSessions(getenv func(string) string, now time.Time, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	sys := Sys{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: getenv}
	if !now.IsZero() {
		sys.Clock = func() time.Time { return now }
	}
	code := Run(append([]string{"agentconv", "sessions"}, args...), sys)
	return code, out.String(), errb.String()
}

// TestSessions: the sessions of the default places, each read through its
// dialect's reader and the run view: agent, session id, project, start,
// prompts, tool calls, tokens and size (with the files it owns); a file no
// dialect reads is skipped and counted; a subagent's file is its
// session's, not a session.
func TestSessions(t *testing.T) {
	home, getenv := sessionsHome(t)
	code, stdout, stderr := runSessions(getenv, time.Time{}, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "skipped 1 file that no dialect reads") {
		t.Errorf("stderr: %s", stderr)
	}
	got := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		got[m["path"].(string)] = m
	}
	var paths []string
	for p := range got {
		paths = append(paths, strings.TrimPrefix(p, home+"/"))
	}
	sort.Strings(paths)
	if strings.Join(paths, " ") != ".traj/p1/s1.json .traj/p1/s2.json .traj/p2/s3.json adal/runs/seed.ndjson" {
		t.Fatalf("sessions: %v", paths)
	}
	s1 := got[filepath.Join(home, ".traj/p1/s1.json")]
	size := func(rel string) float64 {
		st, err := os.Stat(filepath.Join(home, rel))
		if err != nil {
			t.Fatal(err)
		}
		return float64(st.Size())
	}
	want := map[string]any{"dialect": "atif", "agent": "harbor-agent", "session_id": "s1", "project": "/work/p1",
		"start": "2025-10-11T10:30:00Z", "runs": 1.0, "prompts": 1.0, "tool_calls": 2.0, "tokens": 1244.0,
		"bytes": size(".traj/p1/s1.json") + size(".traj/p1/s1/subagents/agent-a.json")}
	for k, v := range want {
		if s1[k] != v {
			t.Errorf("s1 %s = %v, want %v", k, s1[k], v)
		}
	}
	if seed := got[filepath.Join(home, "adal/runs/seed.ndjson")]; seed["dialect"] != "adal-stream" || seed["tool_calls"] != 2.0 {
		t.Errorf("the adal session: %v", seed)
	}

	// The table, oldest first (sessions without times by their files' times).
	code, stdout, _ = runSessions(getenv, time.Time{})
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 6 || !strings.HasPrefix(lines[0], "AGENT") || !strings.Contains(lines[1], "harbor-agent  s1") ||
		!strings.Contains(lines[1], "/work/p1 ") || !strings.Contains(lines[1], " 1120 ") || !strings.Contains(lines[1], " 124 ") ||
		!strings.HasPrefix(lines[5], "TOTAL") || !strings.Contains(lines[5], " 3360 ") {
		t.Errorf("exit %d, the table:\n%s", code, stdout)
	}
}

// TestSessionsFilters: --agent, --project and --since choose; --paths
// gives the files that the conversion takes with --files-from.
func TestSessionsFilters(t *testing.T) {
	home, getenv := sessionsHome(t)
	ids := func(args ...string) string {
		t.Helper()
		now := time.Date(2025, 10, 15, 0, 0, 0, 0, time.UTC)
		code, stdout, stderr := runSessions(getenv, now, append([]string{"--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var m map[string]any
			if l != "" && json.Unmarshal([]byte(l), &m) == nil {
				out = append(out, filepath.Base(m["path"].(string)))
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--agent", "harbor"}, "s1.json s2.json"},
		{[]string{"--agent", "Harbor-Agent"}, "s1.json s2.json"},
		{[]string{"--agent", "atif"}, "s1.json s2.json s3.json"},
		{[]string{"--agent", "adal"}, "seed.ndjson"},
		{[]string{"--agent", "harb"}, ""},
		{[]string{"--project", "/work/p1"}, "s1.json s2.json"},
		{[]string{"--project", "/work/p1/sub/"}, "s2.json"},
		{[]string{"--project", "/work/p"}, ""},
		{[]string{"--since", "7d", "--agent", "atif"}, "s1.json s2.json s3.json"},
		{[]string{"--since", "2025-10-12", "--agent", "atif"}, ""},
		{[]string{"--since", "48h", "--agent", "atif"}, ""},
		{[]string{"--since", "100h", "--agent", "atif"}, "s1.json s2.json s3.json"},
		{[]string{filepath.Join(home, ".traj", "p2")}, "s3.json"},
		{[]string{"--agent", "other", filepath.Join(home, ".traj")}, "s3.json"},
	} {
		if got := ids(c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	// A file not written to since --since is not read.
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(home, "adal", "runs", "seed.ndjson"), old, old)
	if got := ids("--since", "30d", "--agent", "adal"); got != "" {
		t.Errorf("--since 30d: %q", got)
	}

	code, paths, stderr := runSessions(getenv, time.Time{}, "--agent", "harbor", "--paths")
	if code != 0 || strings.Count(paths, "\n") != 2 {
		t.Fatalf("--paths: exit %d: %q %s", code, paths, stderr)
	}
	code, viaList, stderr := runCLI(paths, "--to", "adal-json", "--files-from", "-")
	_, direct, _ := runCLI("", append([]string{"--to", "adal-json"}, strings.Fields(paths)...)...)
	if code != 0 || viaList != direct || strings.Count(formatstest.OneLine(viaList), "\n") != 2 {
		t.Errorf("--files-from: exit %d: %s\n%s", code, viaList, stderr)
	}

	for _, bad := range [][]string{{"--since", "yesterday"}, {"--json", "--paths"}} {
		if code, _, stderr := runSessions(getenv, time.Time{}, bad...); code != ExitUsage {
			t.Errorf("%v: exit %d: %s", bad, code, stderr)
		}
	}
	if code, _, stderr := runSessions(getenv, time.Time{}, "/nonexistent"); code != ExitInput || !strings.Contains(stderr, "/nonexistent: cannot read it") {
		t.Errorf("a missing directory: exit %d: %s", code, stderr)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"2w":                   now.Add(-14 * 24 * time.Hour),
		"24h":                  now.Add(-24 * time.Hour),
		"90m":                  now.Add(-90 * time.Minute),
		"2026-11-24T09:00:00Z": time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC),
	} {
		if got, err := parseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	if got, err := parseSince("2026-11-24", now); err != nil || got.Day() != 24 || got.Hour() != 0 {
		t.Errorf("a date: %v %v", got, err)
	}
	for _, bad := range []string{"", "d", "-3d", "yesterday", "7 days", "1e400d", "NaNd"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestSessionsPathsLineBreak: a session file whose name holds a line break
// is left out of --paths, with a word and exit 1, since read back one a
// line it would name two other files (here, files that exist); with
// --paths --null, --files-from - --null reads it back as it is.
func TestSessionsPathsLineBreak(t *testing.T) {
	dir := t.TempDir()
	session := readFile(t, filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl"))
	for _, name := range []string{"a\nb.jsonl", "a", "b.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(session), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := func(string) string { return "" }
	code, out, stderr := runSessions(env, time.Time{}, "--paths", dir)
	if code != ExitInput || strings.Contains(out, "a\nb.jsonl") || !strings.Contains(out, filepath.Join(dir, "b.jsonl")+"\n") ||
		!strings.Contains(stderr, `a\nb.jsonl`) || !strings.Contains(stderr, "--null") {
		t.Errorf("--paths: exit %d\n%q\n%s", code, out, stderr)
	}
	code, out, stderr = runSessions(env, time.Time{}, "--paths", "--null", dir)
	want := filepath.Join(dir, "a\nb.jsonl") + "\x00"
	if code != ExitOK || !strings.Contains(out, want) || strings.Count(out, "\x00") != 2 {
		t.Fatalf("--paths --null: exit %d\n%q\n%s", code, out, stderr)
	}
	var got bytes.Buffer
	sys := Sys{Stdin: strings.NewReader(want), Stdout: &got, Stderr: &bytes.Buffer{}, Getenv: env}
	if code := Run([]string{"agentconv", "--to", "atif", "--files-from", "-", "--null"}, sys); code != ExitOK || !strings.Contains(got.String(), `"schema_version"`) {
		t.Errorf("--files-from - --null: exit %d: %s", code, got.String())
	}
	if code, _, stderr := runSessions(env, time.Time{}, "--null", dir); code != ExitUsage || !strings.Contains(stderr, "--paths") {
		t.Errorf("--null without --paths: exit %d: %s", code, stderr)
	}
}

// TestSessionsTerminalSafe: what the input names (a session id, a project,
// a file) reaches the terminal escaped: no escape sequence (clear screen,
// OSC 52 writing the clipboard, a window title), no carriage return, no
// bidi override, in the table, in warnings and in errors.
func TestSessionsTerminalSafe(t *testing.T) {
	dir := t.TempDir()
	evil := "s\x1b]52;c;ZXZpbA==\x07\x1b[2J\r\u202eid"
	doc := map[string]any{"schema_version": "ATIF-v1.7", "session_id": evil,
		"agent":                    map[string]any{"name": "a\x1b]0;title\x07", "version": "1"},
		"steps":                    []any{map[string]any{"step_id": 1, "source": "user", "message": "hi"}},
		"extra":                    map[string]any{"cwd": "/w\x1b[31m\u202e"},
		"continued_trajectory_ref": "next\x1b[2J.json"}
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(dir, "t\x1b[2J.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runSessions(func(string) string { return "" }, time.Time{}, dir)
	for _, s := range []string{out, stderr} {
		if strings.ContainsAny(s, "\x1b\x07\r\u202e") {
			t.Errorf("raw control characters reach the terminal: %q", s)
		}
	}
	if code != ExitOK || !strings.Contains(out, `s\x1b]52;c;ZXZpbA==\x07\x1b[2J\r\u202eid`) {
		t.Errorf("exit %d: the table does not show the id escaped: %q %q", code, out, stderr)
	}
	var o, e bytes.Buffer
	sys := Sys{Stdin: strings.NewReader(""), Stdout: &o, Stderr: &e, Getenv: func(string) string { return "" }}
	Run([]string{"agentconv", "--to", "pretty", filepath.Join(dir, "t\x1b[2J.json")}, sys)
	if strings.ContainsAny(o.String()+e.String(), "\x1b\x07\r\u202e") {
		t.Errorf("pretty and its warnings: raw control characters: %q %q", o.String(), e.String())
	}
	if !strings.Contains(e.String(), `t\x1b[2J.json`) {
		t.Errorf("the warnings do not name the file escaped: %q", e.String())
	}
	e.Reset()
	Run([]string{"agentconv", "--from", "claude-stream", "--to", "pretty", filepath.Join(dir, "t\x1b[2J.json")}, sys)
	if strings.ContainsAny(e.String(), "\x1b\x07\r\u202e") || !strings.Contains(e.String(), `\x1b`) {
		t.Errorf("an error quoting the input: %q", e.String())
	}
}

// TestNegativeTokenCounts: a count below zero is a warning and no count:
// it is not summed into the run's tokens, in a conversion or in sessions.
func TestNegativeTokenCounts(t *testing.T) {
	in := `{"type":"system","subtype":"init","session_id":"s1","model":"m","cwd":"/w","tools":[]}
{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":-10,"output_tokens":5}},"session_id":"s1"}
{"type":"result","subtype":"success","is_error":false,"result":"hi","session_id":"s1","usage":{"input_tokens":-1000,"output_tokens":5}}
`
	var out, errb bytes.Buffer
	sys := Sys{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	if code := Run([]string{"agentconv", "--to", "adal-json"}, sys); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "<stdin>:2: token counts below zero (input -10)") || !strings.Contains(errb.String(), "<stdin>:3:") {
		t.Errorf("no warning naming the counts: %s", errb.String())
	}
	if strings.Contains(out.String(), "-10") || strings.Contains(out.String(), "-1000") {
		t.Errorf("a negative count is written: %s", out.String())
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	code, js, stderr := runSessions(func(string) string { return "" }, time.Time{}, "--json", filepath.Join(dir, "s.jsonl"))
	if code != ExitOK || !strings.Contains(js, `"tokens":5,`) {
		t.Errorf("sessions: exit %d: %s %s", code, js, stderr)
	}
}

// TestSessionsMalformedLine: a session file with a malformed line is
// listed with what could be read, with a warning naming the line, and the
// exit status is 1.
// malformedSession writes a Claude Code session whose fourth line is
// malformed, alone in a directory.
func malformedSession(t *testing.T) (dir, file string) {
	t.Helper()
	lines := strings.SplitAfter(readFile(t, filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl")), "\n")
	dir = t.TempDir()
	file = filepath.Join(dir, "s.jsonl")
	bad := strings.Join(lines[:3], "") + "{\"type\":\"user\", broken\n" + strings.Join(lines[3:6], "")
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func TestSessionsMalformedLine(t *testing.T) {
	dir, f := malformedSession(t)
	code, out, stderr := runSessions(func(string) string { return "" }, time.Time{}, "--json", dir)
	if code != ExitInput || !strings.Contains(out, `"session_id":"06381696-0074-49f8-863e-6ad4fac507f9"`) || !strings.Contains(stderr, f+":4") {
		t.Errorf("exit %d: %s\n%s", code, out, stderr)
	}
}

// TestSessionsReadErrorExit: a file that fails as it is read (an I/O
// error) is named in a warning and left out, and the exit status is the
// read error's, 1, whatever the output asked for.
func TestSessionsReadErrorExit(t *testing.T) {
	const bad = "/proc/self/mem" // reading at offset 0 is an I/O error
	if _, err := os.Stat(bad); err != nil {
		t.Skip("no " + bad)
	}
	good := filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl")
	for _, args := range [][]string{{bad}, {"--json", good, bad}, {"--paths", good, bad}} {
		code, out, stderr := runSessions(func(string) string { return "" }, time.Time{}, args...)
		if code != ExitInput || !strings.Contains(stderr, bad) {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
		if len(args) > 1 && !strings.Contains(out, "06381696") && !strings.Contains(out, "agentcmd-claude-session") {
			t.Errorf("%v: the readable file is not listed: %s", args, out)
		}
	}
}
