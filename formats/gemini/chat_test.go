package gemini

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/goccy/go-json"
)

// readChat reads a session with the gemini-chat reader as the pipeline
// gives it, with the input's path; malformed records are skipped (as
// --lenient does) and counted. It returns the events and the warnings.
func readChat(t *testing.T, data []byte, path string) ([]*formats.Event, string, int) {
	t.Helper()
	var warn bytes.Buffer
	r := Chat.NewReader(bytes.NewReader(data), formats.ReadOptions{Dialect: Chat.Name, Report: formats.NewReport(&warn), Path: path})
	var evs []*formats.Event
	bad := 0
	for len(evs) < formatstest.MaxEvents {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, warn.String(), bad
		}
		var le *formats.LineError
		if errors.As(err, &le) {
			bad++
			continue
		}
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		evs = append(evs, ev)
	}
	t.Fatal("the reader does not end")
	return nil, "", 0
}

func countOf(evs []*formats.Event, k formats.Kind) int { return len(formatstest.OfKind(evs, k)) }

// TestChatFixtures: the real legacy session (and the .jsonl that Gemini
// CLI makes of it when it resumes it) read as five runs of one session:
// one per prompt, each ended, with every call, its status, and the usage
// of each response once.
func TestChatFixtures(t *testing.T) {
	legacy := formatstest.Fixture(t, "gemini", "chat-pomodoro-timer.json")
	evs, warn, bad := readChat(t, legacy, "")
	if warn != "" || bad != 0 {
		t.Errorf("warnings %q, %d bad records", warn, bad)
	}
	if n := countOf(evs, formats.RunStart); n != 5 {
		t.Errorf("%d runs, want 5 (one per prompt)", n)
	}
	if n := countOf(evs, formats.RunEnd); n != 5 {
		t.Errorf("%d runs ended, want 5", n)
	}
	prompts := formatstest.OfKind(evs, formats.UserMessage)
	if len(prompts) != 5 || prompts[1].Text != "add smooth transitions between states" {
		t.Errorf("prompts: %d, second %q", len(prompts), prompts[1].Text)
	}
	for _, e := range formatstest.OfKind(evs, formats.RunStart) {
		if e.Run.SessionID != "0b23371a-ce2e-4b1c-81a0-44af5d94d9ce" || e.Run.Model != "gemini-2.5-pro" || e.Run.Provider != Provider {
			t.Errorf("run read as %+v", e.Run)
		}
	}
	for _, e := range formatstest.OfKind(evs, formats.RunEnd) {
		if e.Status != formats.Completed || e.Cut {
			t.Errorf("run ended as %v (cut %v)", e.Status, e.Cut)
		}
	}
	calls, results := formatstest.OfKind(evs, formats.ToolCall), formatstest.OfKind(evs, formats.ToolResult)
	if len(calls) != 11 || len(results) != 11 {
		t.Fatalf("%d calls, %d results; want 11 of each", len(calls), len(results))
	}
	failed := 0
	for _, r := range results {
		if r.Call.Status == formats.Failed {
			failed++
			if r.Call.ID != "replace-1761077322005-e180d6d44397f" || !strings.HasPrefix(r.Call.Error, "A secondary check by an LLM") {
				t.Errorf("failed call read as %+v", r.Call)
			}
		} else if r.Call.Status != formats.Completed || r.Call.Output.Text() == "" {
			t.Errorf("call read as %+v", r.Call)
		}
	}
	if failed != 1 {
		t.Errorf("%d failed calls, want 1", failed)
	}
	if c := calls[0].Call; c.Name != "write_file" || !bytes.Contains(c.Args, []byte(`"file_path":"/Users/yoavfarhi/dev/pomodoro/gemini/index.html"`)) {
		t.Errorf("first call read as %s %s", c.Name, c.Args)
	}
	usage := formatstest.OfKind(evs, formats.Usage)
	if len(usage) != 14 {
		t.Fatalf("%d usage events, want 14 (one per response with tokens)", len(usage))
	}
	var sum formats.UsageInfo
	for _, u := range usage {
		if u.Response.Model != "gemini-2.5-pro" {
			t.Errorf("usage without its model: %+v", u.Response)
		}
		sum.Add(u.Usage)
	}
	if sum.InputTokens.V != 120730 || sum.OutputTokens.V != 6223 || sum.TotalTokens.V != 126953 {
		t.Errorf("usage sums to %+v", sum)
	}
	if n := countOf(evs, formats.ThinkingDelta); n != 14 {
		t.Errorf("%d thinking events, want 14", n)
	}

	// Gemini CLI's migration of the same session to JSONL reads the same.
	jsonl := formatstest.Fixture(t, "gemini", "chat-pomodoro-timer-resumed.jsonl")
	back, warn, bad := readChat(t, jsonl, "")
	if warn != "" || bad != 0 {
		t.Errorf("jsonl: warnings %q, %d bad records", warn, bad)
	}
	if !reflect.DeepEqual(comparable(evs), comparable(back)) {
		t.Errorf("the .json and the .jsonl of one session read differently")
	}
}

// TestChatNewerFixture: a real session of the newer shape (kind, Part[]
// prompts) reads as its two prompts' runs, every call and usage once.
func TestChatNewerFixture(t *testing.T) {
	evs, warn, bad := readChat(t, formatstest.Fixture(t, "gemini", "chat-aim-control-pro-run4.json"), "")
	if warn != "" || bad != 0 {
		t.Errorf("warnings %q, %d bad records", warn, bad)
	}
	prompts := formatstest.OfKind(evs, formats.UserMessage)
	if len(prompts) != 2 || prompts[1].Text != "please read the task.md file" || countOf(evs, formats.RunEnd) != 2 {
		t.Fatalf("kinds %s", formatstest.Kinds(evs))
	}
	if n, m := countOf(evs, formats.ToolCall), countOf(evs, formats.ToolResult); n != 9 || m != 9 {
		t.Errorf("%d calls, %d results; want 9", n, m)
	}
	if n := countOf(evs, formats.Usage); n != 11 {
		t.Errorf("%d usage events, want 11", n)
	}
	if r := formatstest.OfKind(evs, formats.RunStart)[0].Run; r.Model != "gemini-3.1-pro-preview" || r.SessionID != "95ee2bc8-b4a1-47fb-8db8-b0cfe91bee88" {
		t.Errorf("run %+v", r)
	}
}

// comparable is what two readings of one session must share.
func comparable(evs []*formats.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, strings.Join([]string{e.Kind.String(), e.Time.String(), e.Agent, e.Text, e.Call.ID, e.Call.Name,
			e.Call.Status.String(), e.Call.Output.Text(), e.Call.Error, string(e.Call.Args), e.Run.SessionID, e.Run.Model, e.Status.String(),
			formatUsage(e.Usage)}, "|"))
	}
	return out
}

func formatUsage(u formats.UsageInfo) string {
	return strings.Join([]string{itoa(u.InputTokens), itoa(u.OutputTokens), itoa(u.CacheReadTokens), itoa(u.ReasoningTokens), itoa(u.TotalTokens)}, ",")
}

func itoa(o formats.Opt[int64]) string {
	if !o.OK {
		return "-"
	}
	b, _ := formats.Marshal(o.V)
	return string(b)
}

// TestChatUsage: Gemini's input includes the cached tokens, as the model's
// does; tool-use prompt tokens are input too; the output gets the thoughts.
func TestChatUsage(t *testing.T) {
	in := `{"sessionId":"s","projectHash":"h","startTime":"2026-06-10T10:00:00.000Z","lastUpdated":"2026-06-10T10:00:00.000Z","kind":"main"}
{"id":"u","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":[{"text":"hi"}]}
{"id":"g","timestamp":"2026-06-10T10:00:02.000Z","type":"gemini","content":"hello","model":"gemini-3-pro","tokens":{"input":1200,"output":80,"cached":1000,"thoughts":40,"tool":30,"total":1350}}
`
	evs, _, _ := readChat(t, []byte(in), "")
	u := formatstest.OfKind(evs, formats.Usage)
	if len(u) != 1 {
		t.Fatalf("%d usage events", len(u))
	}
	if got := formatUsage(u[0].Usage); got != "1230,120,1000,40,1350" {
		t.Errorf("usage read as %s, want input 1230 (cached and tool included), output 120 (thoughts included), cached 1000, reasoning 40, total 1350", got)
	}
	if u[0].Usage.InputTokens.V+u[0].Usage.OutputTokens.V != u[0].Usage.TotalTokens.V {
		t.Errorf("input and output do not add up to Gemini's total")
	}
}

const meta = `{"sessionId":"sess-1","projectHash":"h","startTime":"2026-06-10T10:00:00.000Z","lastUpdated":"2026-06-10T10:00:00.000Z","kind":"main"}` + "\n"

// TestChatLog: the records of a JSONL session as Gemini CLI's loader
// applies them: the last copy of a message wins in its place, $set patches
// the metadata, $rewindTo drops a message and the rest (reported, with the
// count), a $set of the messages replaces them all.
func TestChatLog(t *testing.T) {
	in := meta +
		`{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":[{"text":"first"}]}
{"$set":{"lastUpdated":"2026-06-10T10:00:01.001Z"}}
{"id":"g1","timestamp":"2026-06-10T10:00:02.000Z","type":"gemini","content":"","thoughts":[],"model":"gemini-3-pro"}
{"id":"g1","timestamp":"2026-06-10T10:00:02.000Z","type":"gemini","content":"","thoughts":[{"subject":"Plan","description":"read it","timestamp":"2026-06-10T10:00:01.500Z"}],"tokens":{"input":100,"output":10,"cached":0,"thoughts":5,"tool":0,"total":115},"model":"gemini-3-pro","toolCalls":[{"id":"c1","name":"read_file","args":{"file_path":"a.md"},"result":[{"functionResponse":{"id":"c1","name":"read_file","response":{"output":"A"}}}],"status":"success","timestamp":"2026-06-10T10:00:03.000Z"}]}
{"id":"r1","timestamp":"2026-06-10T10:00:03.100Z","type":"user","content":[{"functionResponse":{"id":"c1","name":"read_file","response":{"output":"A"}}}]}
{"id":"g2","timestamp":"2026-06-10T10:00:04.000Z","type":"gemini","content":"done","model":"gemini-3-pro","tokens":{"input":120,"output":3,"cached":100,"total":123}}
{"id":"u2","timestamp":"2026-06-10T10:00:10.000Z","type":"user","content":"second, rewound"}
{"id":"g3","timestamp":"2026-06-10T10:00:11.000Z","type":"gemini","content":"never","model":"gemini-3-pro"}
{"$rewindTo":"u2"}
{"id":"u3","timestamp":"2026-06-10T10:00:20.000Z","type":"user","content":"third"}
{"id":"e1","timestamp":"2026-06-10T10:00:21.000Z","type":"error","content":"[API Error: quota]"}
`
	evs, warn, _ := readChat(t, []byte(in), "")
	want := "run_start user_message thinking_delta tool_call usage tool_result message usage run_end " +
		"run_start user_message notice run_end"
	if got := formatstest.Kinds(evs); got != want {
		t.Fatalf("kinds\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(warn, "a rewind to message \"u2\" dropped 2 messages") {
		t.Errorf("the rewind is not reported with its count: %q", warn)
	}
	if th := evs[2].Text; th != "**Plan**\nread it" {
		t.Errorf("thinking read as %q", th)
	}
	if c := evs[5].Call; c.ID != "c1" || c.Status != formats.Completed || c.Output.Text() != "A" {
		t.Errorf("result read as %+v", c)
	}
	if evs[5].Time.Second() != 3 {
		t.Errorf("the result is not at its own time: %v", evs[5].Time)
	}
	if end := evs[12]; end.Status != formats.Failed || end.Text != "[API Error: quota]" {
		t.Errorf("a run ending in an error ended as %v %q", end.Status, end.Text)
	}
	for _, e := range evs {
		if e.Text == "never" || e.Text == "second, rewound" {
			t.Errorf("a rewound message is converted: %q", e.Text)
		}
	}

	// A checkpoint replaces the messages; the summary of a compression is a
	// compaction, the context Gemini CLI adds is no event, nor a prompt.
	in = meta +
		`{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":"gone"}
{"id":"g1","timestamp":"2026-06-10T10:00:02.000Z","type":"gemini","content":"gone too","model":"m"}
{"$set":{"messages":[{"id":"ctx","timestamp":"2026-06-10T10:01:00.000Z","type":"user","content":[{"text":"<session_context>\nWorkspace /w\n</session_context>"}]},{"id":"s1","timestamp":"2026-06-10T10:01:00.000Z","type":"user","content":[{"text":"<state_snapshot>we read a.md</state_snapshot>"}]},{"id":"s2","timestamp":"2026-06-10T10:01:00.000Z","type":"gemini","content":[{"text":"Got it. Thanks for the additional context!"}]}],"lastUpdated":"2026-06-10T10:01:00.000Z"}}
{"id":"u2","timestamp":"2026-06-10T10:01:05.000Z","type":"user","content":[{"text":"go on"}]}
{"id":"g2","timestamp":"2026-06-10T10:01:06.000Z","type":"gemini","content":[{"text":"thinking","thought":true},{"text":"on it"}],"model":"m"}
`
	evs, warn, _ = readChat(t, []byte(in), "")
	want = "run_start compaction message run_end run_start user_message thinking_delta message run_end"
	if got := formatstest.Kinds(evs); got != want {
		t.Fatalf("kinds after a checkpoint\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(warn, "2 messages it leaves out not converted") {
		t.Errorf("the checkpoint's dropped messages are not reported: %q", warn)
	}
	if evs[1].Text != "<state_snapshot>we read a.md</state_snapshot>" || evs[7].Text != "on it" || evs[6].Text != "thinking" {
		t.Errorf("read as %q %q %q", evs[1].Text, evs[6].Text, evs[7].Text)
	}
}

// TestChatCut: a file that Gemini CLI is still writing ends in a cut run:
// a torn last line is a warning, not an error, and the reader gives no end
// for the run; so does a run whose model still had tool results to
// answer. The pipeline closes it, with a warning.
func TestChatCut(t *testing.T) {
	base := meta + `{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":"go"}
{"id":"g1","timestamp":"2026-06-10T10:00:02.000Z","type":"gemini","content":"","model":"m","toolCalls":[{"id":"c1","name":"ls","args":{},"status":"success","timestamp":"2026-06-10T10:00:03.000Z","result":[]}]}
`
	for name, in := range map[string]string{
		"torn last line": base + `{"id":"g2","timestamp":"2026-06-10T10:00:04.000Z","type":"gemini","content":"do`,
		"calls answered": base,
		"call running":   meta + `{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":"go"}` + "\n" + `{"id":"g1","timestamp":"2026-06-10T10:00:02.000Z","type":"gemini","content":"","model":"m","toolCalls":[{"id":"c1","name":"ls","args":{},"status":"executing"}]}`,
		"prompt only":    meta + `{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":"go"}`,
	} {
		evs, warn, bad := readChat(t, []byte(in), "")
		if bad != 0 || countOf(evs, formats.RunStart) != 1 || countOf(evs, formats.RunEnd) != 0 {
			t.Errorf("%s: %d bad, kinds %s", name, bad, formatstest.Kinds(evs))
		}
		if (name == "torn last line") != strings.Contains(warn, "the file ends inside a record") {
			t.Errorf("%s: warnings %q", name, warn)
		}
	}
	// A session of notices alone is a run that ended.
	evs, _, _ := readChat(t, []byte(meta+`{"id":"i1","timestamp":"2026-06-10T10:00:01.000Z","type":"info","content":"Loaded cached credentials."}
`), "")
	if got := formatstest.Kinds(evs); got != "run_start notice run_end" {
		t.Errorf("notices alone: %s", got)
	}
	// A cancelled request ends its run as cancelled.
	evs, _, _ = readChat(t, []byte(meta+`{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":"go"}
{"id":"i1","timestamp":"2026-06-10T10:00:02.000Z","type":"info","content":"Request cancelled."}
`), "")
	if end := formatstest.OfKind(evs, formats.RunEnd); len(end) != 1 || end[0].Status != formats.Cancelled {
		t.Errorf("a cancelled request: %s", formatstest.Kinds(evs))
	}
}

// TestChatBadInput: a malformed record with more after it is an error of
// its line (--lenient goes on); a record of a shape not known is kept raw
// and warned about once per type; a message of an unknown type is raw.
func TestChatBadInput(t *testing.T) {
	in := meta + `{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":"go"}
not json
{"$patch":{"x":1}}
{"$patch":{"x":2}}
{"id":"t1","timestamp":"2026-06-10T10:00:02.000Z","type":"telemetry","content":"x"}
{"id":"g1","timestamp":"2026-06-10T10:00:03.000Z","type":"gemini","content":"ok","model":"m"}
`
	evs, _, bad := readChat(t, []byte(in), "")
	if bad != 1 {
		t.Errorf("%d bad records, want 1", bad)
	}
	if got, want := formatstest.Kinds(evs), "run_start user_message raw raw raw message run_end"; got != want {
		t.Errorf("kinds\n got %s\nwant %s", got, want)
	}
}

// TestChatSubagents: a session read by its path reads its subagents' files
// beside it (chats/<session id>/<agent id>.jsonl) and nests each under the
// call that started it; the walk's owner of a subagent's file is its
// session's file; a subagent's file read alone is a run of its own, with
// a warning; a missing subagent file is warned about.
func TestChatSubagents(t *testing.T) {
	dir := t.TempDir()
	chats := filepath.Join(dir, "tmp", "proj", "chats")
	sid := "5e1f0c2a-1111-4222-8333-444455556666"
	agent := "9a8b7c6d-aaaa-4bbb-8ccc-dddddddddddd"
	session := filepath.Join(chats, "session-2026-06-10T10-00-5e1f0c2a.jsonl")
	sub := filepath.Join(chats, sid, agent+".jsonl")
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sess := `{"sessionId":"` + sid + `","projectHash":"h","startTime":"2026-06-10T10:00:00.000Z","lastUpdated":"2026-06-10T10:00:00.000Z","kind":"main"}
{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":[{"text":"investigate"}]}
{"id":"g1","timestamp":"2026-06-10T10:00:02.000Z","type":"gemini","content":"","model":"gemini-3-pro","toolCalls":[{"id":"inv1","name":"codebase_investigator","args":{"objective":"find it"},"agentId":"` + agent + `","status":"success","timestamp":"2026-06-10T10:00:09.000Z","result":[{"functionResponse":{"id":"inv1","name":"codebase_investigator","response":{"output":"found in a.go"}}}],"displayName":"Codebase Investigator Agent"}]}
{"id":"g2","timestamp":"2026-06-10T10:00:10.000Z","type":"gemini","content":"It is in a.go.","model":"gemini-3-pro"}
`
	write(session, sess)
	write(sub, `{"sessionId":"`+agent+`","projectHash":"h","startTime":"2026-06-10T10:00:03.000Z","lastUpdated":"2026-06-10T10:00:03.000Z","kind":"subagent","directories":["/w"]}
{"id":"s1","timestamp":"2026-06-10T10:00:03.000Z","type":"user","content":[{"text":"find it"}]}
{"id":"s2","timestamp":"2026-06-10T10:00:05.000Z","type":"gemini","content":"","model":"gemini-3-flash","tokens":{"input":50,"output":5,"cached":0,"total":55},"toolCalls":[{"id":"g-1","name":"grep","args":{"pattern":"it"},"status":"success","timestamp":"2026-06-10T10:00:06.000Z","result":[{"functionResponse":{"id":"g-1","name":"grep","response":{"output":"a.go:1"}}}]}]}
{"id":"s3","timestamp":"2026-06-10T10:00:08.000Z","type":"gemini","content":"found in a.go","model":"gemini-3-flash"}
`)
	evs, warn, _ := readChat(t, []byte(sess), session)
	want := "run_start user_message tool_call agent_start user_message tool_call usage tool_result message agent_end tool_result message run_end"
	if got := formatstest.Kinds(evs); got != want || warn != "" {
		t.Fatalf("kinds\n got %s\nwant %s\nwarnings %q", got, want, warn)
	}
	start := evs[3]
	if start.Agent != agent || start.AgentInfo.ParentCall != "inv1" || start.AgentInfo.Model != "gemini-3-flash" || start.AgentInfo.Label != "Codebase Investigator Agent" {
		t.Errorf("agent start %+v %+v", start.Agent, start.AgentInfo)
	}
	for _, e := range evs[4:9] {
		if e.Agent != agent {
			t.Errorf("%s of the subagent has agent %q", e.Kind, e.Agent)
		}
	}
	if u := evs[6]; u.Response.Model != "gemini-3-flash" {
		t.Errorf("subagent usage %+v", u.Response)
	}
	if end := evs[9]; end.Status != formats.Completed || end.Text != "found in a.go" {
		t.Errorf("agent end %v %q", end.Status, end.Text)
	}

	if got := Chat.Owner(sub); got != session {
		t.Errorf("owner of the subagent's file: %q, want %q", got, session)
	}
	if got := Chat.Owner(session); got != "" {
		t.Errorf("owner of the session's file: %q", got)
	}
	if got := Chat.Owner(filepath.Join(dir, "projects", "x", "subagents", "agent-1.jsonl")); got != "" {
		t.Errorf("owner of another agent's file: %q", got)
	}

	// Read alone, the subagent's file is a run of its session.
	b, _ := os.ReadFile(sub)
	evs, warn, _ = readChat(t, b, sub)
	if got, want := formatstest.Kinds(evs), "run_start agent_start user_message tool_call usage tool_result message agent_end run_end"; got != want {
		t.Errorf("alone\n got %s\nwant %s", got, want)
	}
	if evs[0].Run.SessionID != sid || !strings.Contains(warn, "read without its session's file") {
		t.Errorf("alone: session %q, warnings %q", evs[0].Run.SessionID, warn)
	}

	// A call the subagent's file leaves running ends with the subagent,
	// as never completed.
	write(sub, `{"sessionId":"`+agent+`","projectHash":"h","kind":"subagent"}
{"id":"s1","timestamp":"2026-06-10T10:00:03.000Z","type":"user","content":"find it"}
{"id":"s2","timestamp":"2026-06-10T10:00:05.000Z","type":"gemini","content":"","model":"m","toolCalls":[{"id":"g-1","name":"grep","args":{},"status":"executing"}]}
`)
	evs, _, _ = readChat(t, []byte(sess), session)
	if got, want := formatstest.Kinds(evs), "run_start user_message tool_call agent_start user_message tool_call tool_result agent_end tool_result message run_end"; got != want {
		t.Errorf("open subagent call\n got %s\nwant %s", got, want)
	} else if c := evs[6].Call; c.ID != "g-1" || c.Status != formats.Cancelled || evs[6].Agent != agent || evs[7].Status != formats.Completed {
		t.Errorf("open subagent call ended as %+v, agent %s", c, evs[7].Status)
	}

	// Without the path, or without the file, the subagent is warned about.
	_, warn, _ = readChat(t, []byte(sess), "")
	if !strings.Contains(warn, "name the file (not standard input)") {
		t.Errorf("on standard input: %q", warn)
	}
	os.Remove(sub)
	evs, warn, _ = readChat(t, []byte(sess), session)
	if !strings.Contains(warn, "its file cannot be read") || countOf(evs, formats.AgentStart) != 0 {
		t.Errorf("missing subagent file: %q", warn)
	}
}

// TestChatParts: content is a string, a Part, or an array of both; an
// array nested in it is none of them and gives nothing (reading it would
// cost the square of its depth).
func TestChatParts(t *testing.T) {
	for in, want := range map[string]string{
		`"a"`: "a", `{"text":"a"}`: "a", `["a",{"text":"b"},{"text":"t","thought":true}]`: "ab",
		`[["a"]]`: "", `[[[{"text":"a"}]]]`: "", `null`: "", `3`: "",
	} {
		if got := partsText(json.RawMessage(in), false); got != want {
			t.Errorf("%s reads as %q, want %q", in, got, want)
		}
	}
}

func TestChatPlaces(t *testing.T) {
	got := Chat.Places(func(k string) string { return map[string]string{"HOME": "/home/u"}[k] })
	if len(got) != 1 || got[0] != filepath.Join("/home/u", ".gemini", "tmp") {
		t.Errorf("places %v", got)
	}
	got = Chat.Places(func(k string) string { return map[string]string{"HOME": "/home/u", "GEMINI_CLI_HOME": "/g"}[k] })
	if len(got) != 1 || got[0] != filepath.Join("/g", ".gemini", "tmp") {
		t.Errorf("places with GEMINI_CLI_HOME %v", got)
	}
	for _, name := range []string{"session-2026-06-10T10-00-5e1f0c2a.jsonl", "session-2025-10-21T20-04-0b23371a.json", "9a8b7c6d-aaaa.jsonl"} {
		if ok, _ := filepath.Match(Chat.DirFiles, name); !ok {
			t.Errorf("a walk does not pick %s", name)
		}
	}
}

// TestChatDetect: session files are gemini-chat, never the stream
// dialects; the stream dialects' fixtures stay theirs.
func TestChatDetect(t *testing.T) {
	for _, name := range []string{"chat-pomodoro-timer.json", "chat-pomodoro-timer-resumed.jsonl", "chat-aim-control-pro-run4.json"} {
		b := formatstest.Fixture(t, "gemini", name)
		head := b[:min(len(b), formats.DetectSize)]
		if s := Chat.Detect(head); s < 80 {
			t.Errorf("%s: gemini-chat scores %d", name, s)
		}
		if s, j := Stream.Detect(head), JSON.Detect(head); s > 0 || j > 0 {
			t.Errorf("%s: gemini-stream scores %d, gemini-json %d", name, s, j)
		}
	}
	for _, name := range []string{"tools-stream.jsonl", "error-result-stream.jsonl", "response.json", "input-error.json", "two-models-tools.json", "gemini-cli-snapshot-tools.jsonl"} {
		b := formatstest.Fixture(t, "gemini", name)
		if s := Chat.Detect(b[:min(len(b), formats.DetectSize)]); s > 0 {
			t.Errorf("%s: gemini-chat scores %d", name, s)
		}
	}
	// A session file without its metadata line still reads as one, less sure.
	if s := Chat.Detect([]byte(`{"id":"u1","timestamp":"t","type":"user","content":"hi"}` + "\n")); s == 0 || s >= 90 {
		t.Errorf("message records alone score %d", s)
	}
}

func FuzzChatReader(f *testing.F) {
	f.Add(formatstest.Fixture(f, "gemini", "chat-pomodoro-timer-resumed.jsonl"))
	f.Add([]byte(meta + `{"id":"u","timestamp":"t","type":"user","content":"x"}` + "\n" + `{"$rewindTo":"u"}` + "\n" +
		`{"$set":{"messages":[{"id":"a","type":"gemini","content":[{"functionCall":{"id":"c","name":"n"}}]}]}}` + "\n" +
		`{"id":"b","type":"user","content":[{"functionResponse":{"id":"c","response":{"error":"e"}}}]}`))
	f.Add([]byte("{\n  \"sessionId\": \"s\",\n  \"projectHash\": \"h\",\n  \"messages\": [{\"id\":\"u\",\"type\":\"user\",\"content\":\"x\"}]\n}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, _, err := formatstest.ReadAll(Chat, data)
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		// What is read writes as gemini-stream and reads back.
		out, err := formatstest.WriteAll(Stream, evs, true)
		if err != nil {
			t.Fatalf("writing what was read: %v", err)
		}
		if _, bad, err := formatstest.ReadAll(Stream, out); err != nil || len(bad) > 0 {
			t.Fatalf("reading back what was written: %v %v\n%s", err, bad, out)
		}
		open := false
		for _, e := range evs {
			switch e.Kind {
			case formats.RunStart:
				if open {
					t.Fatalf("a run starts before the last one ended: %s", formatstest.Kinds(evs))
				}
				open = true
			case formats.RunEnd:
				open = false
			}
		}
	})
}
