package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestRunInfoAndResult(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "gleam-basic-query.ndjson"))
	if got := formatstest.Kinds(evs); got != "run_start usage message answer run_end" {
		t.Fatalf("kinds: %s", got)
	}
	run := evs[0].Run
	if run.SessionID != "1d1e46f9-35c7-4834-b529-846d5bb82288" || run.Model != "claude-opus-4-5-20251101" ||
		run.Cwd != "/home/cyou/claude-agent-sdk-gleam" || run.Provider != "anthropic" || run.AgentName != "claude-code" {
		t.Errorf("run start: %+v", run)
	}
	end := evs[4]
	if end.Status != formats.Completed || end.Run.ExitCode != formats.Some(0) || end.Duration.Milliseconds() != 2360 ||
		end.Usage.OutputTokens != formats.Some[int64](25) || end.Usage.CacheWriteTokens != formats.Some[int64](21570) ||
		end.Usage.CostUSD != formats.Some(0.1354875) {
		t.Errorf("run end: %+v", end)
	}
	if evs[3].Text != "4" {
		t.Errorf("answer %q", evs[3].Text)
	}
}

func TestSubagent(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "subagent-stream.jsonl"))
	starts := formatstest.OfKind(evs, formats.AgentStart)
	if len(starts) != 1 {
		t.Fatalf("agent starts: %d", len(starts))
	}
	s := starts[0]
	if s.Agent != "toolu_task_1" || s.AgentInfo.ParentCall != "toolu_task_1" || s.AgentInfo.Parent != "" || s.AgentInfo.Label != "Explore" {
		t.Errorf("agent start: %+v %+v", s.Agent, s.AgentInfo)
	}
	for _, e := range evs {
		if e.Kind == formats.ToolCall && e.Call.ID == "toolu_sub_grep" && e.Agent != "toolu_task_1" {
			t.Errorf("subagent call on agent %q", e.Agent)
		}
	}
	ends := formatstest.OfKind(evs, formats.AgentEnd)
	if len(ends) != 1 || ends[0].Status != formats.Completed || ends[0].Text != "Retries are in src/net.go, line 42." {
		t.Errorf("agent end: %+v", ends)
	}
	if a := formatstest.OfKind(evs, formats.Answer); len(a) != 1 || a[0].Agent != "" || a[0].Text != "The retry logic is in src/net.go at line 42." {
		t.Errorf("answer: %+v", a)
	}
}

// Deltas stream the text, and the whole message repeats it once: a writer
// that prints deltas and skips streamed wholes prints it once.
func TestPartialMessagesDoNotDuplicate(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "partial-messages-stream.jsonl"))
	var deltas string
	for _, e := range formatstest.OfKind(evs, formats.TextDelta) {
		deltas += e.Text
	}
	msgs := formatstest.OfKind(evs, formats.Message)
	if deltas != "The answer is 4." || len(msgs) != 1 || msgs[0].Text != deltas || msgs[0].Thinking != "Two plus two." {
		t.Fatalf("deltas %q, messages %+v", deltas, msgs)
	}
	if u := formatstest.OfKind(evs, formats.Usage); len(u) != 1 {
		t.Errorf("usage events: %d", len(u))
	}
	// The stripped stream written back streams the deltas as stream_event
	// lines, and holds the whole text once, in the message.
	out, err := formatstest.WriteAll(Stream, evs, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "The answer is 4."); n != 2 { // the message and the result
		t.Errorf("text written %d times:\n%s", n, out)
	}
	if n := strings.Count(string(out), `"type":"stream_event"`); n != 3 {
		t.Errorf("%d deltas written, want 3:\n%s", n, out)
	}
	back := formatstest.Read(t, Stream, out)
	if got, want := formatstest.Compare(back, compared...), formatstest.Compare(evs, compared...); !reflect.DeepEqual(got, want) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, want)
	}
}

func TestSplitMessages(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "split-messages-stream.jsonl"))
	if got := formatstest.Kinds(evs); got != "run_start usage message tool_call todos tool_call tool_result tool_result usage message answer run_end" {
		t.Fatalf("kinds: %s", got)
	}
	m := evs[2]
	if m.Text != "Let me plan and read the config." || m.Thinking != "I should read the config first." {
		t.Errorf("merged message: %+v", m)
	}
	// The model's input counts the cache: 100 + 2000 read + 50 written.
	if u := evs[1].Usage; u.InputTokens != formats.Some[int64](2150) || u.CacheReadTokens != formats.Some[int64](2000) ||
		u.CacheWriteTokens != formats.Some[int64](50) {
		t.Errorf("usage: %+v", u)
	}
	if td := evs[4].Todos; len(td) != 2 || td[0].Status != "in_progress" {
		t.Errorf("todos: %+v", td)
	}
}

func TestFailuresDenialsAndSessions(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "failures-stream.jsonl"))
	ends := formatstest.OfKind(evs, formats.RunEnd)
	if len(formatstest.OfKind(evs, formats.RunStart)) != 3 || len(ends) != 3 {
		t.Fatalf("runs: %s", formatstest.Kinds(evs))
	}
	var failed, denied []formats.Call
	for _, e := range formatstest.OfKind(evs, formats.ToolResult) {
		switch e.Call.Status {
		case formats.Failed:
			failed = append(failed, e.Call)
		case formats.Denied:
			denied = append(denied, e.Call)
		}
	}
	// The refused Write has its tool_result and is listed in
	// permission_denials: it ends once, as refused, with its reason.
	if len(failed) != 1 || failed[0].Error != "make: *** [test] Error 2" {
		t.Errorf("failed calls: %+v", failed)
	}
	if len(denied) != 1 || denied[0].ID != "toolu_write" || denied[0].Name != "Write" ||
		!strings.Contains(denied[0].Error, "haven't granted") {
		t.Errorf("denied calls: %+v", denied)
	}
	if a := formatstest.OfKind(evs, formats.PermissionAnswer); len(a) != 0 {
		t.Errorf("a refusal ended by its tool_result is not answered again: %+v", a)
	}
	resultsOf := map[string]int{}
	for _, e := range formatstest.OfKind(evs, formats.ToolResult) {
		resultsOf[e.Call.ID]++
	}
	for _, e := range formatstest.OfKind(evs, formats.ToolCall) {
		if resultsOf[e.Call.ID] != 1 {
			t.Errorf("call %s ends %d times", e.Call.ID, resultsOf[e.Call.ID])
		}
	}
	if ends[0].Status != formats.Completed {
		t.Errorf("run 1: %v", ends[0].Status)
	}
	// is_error with subtype success is a failure; the API error is a notice.
	// Claude Code prints no exit code: the run view settles it.
	if ends[1].Status != formats.Failed || ends[1].Run.ExitCode.OK || !strings.HasPrefix(ends[1].Text, "API Error: 529") {
		t.Errorf("run 2: %+v", ends[1])
	}
	if ends[1].Run.SessionID != "5e55a005-0000-4000-8000-000000000005" {
		t.Errorf("run 2 session: %q", ends[1].Run.SessionID)
	}
	if ends[2].Status != formats.Failed || ends[2].Text != "the run ended with error_max_turns" {
		t.Errorf("run 3: %+v", ends[2])
	}
	for _, e := range formatstest.OfKind(evs, formats.Answer) {
		if e.Text != "The tests fail, and I may not write /etc/hosts." {
			t.Errorf("answer of a failed run: %q", e.Text)
		}
	}
}

// A denial whose call never appeared, as in a stopped run.
func TestDenialWithoutCall(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "takopi-session.jsonl"))
	var d []*formats.Event
	for _, e := range formatstest.OfKind(evs, formats.ToolResult) {
		if e.Call.Status == formats.Denied {
			d = append(d, e)
		}
	}
	if len(d) != 1 || d[0].Call.Error != "Permission denied: cannot write to /root/secret.txt" || d[0].Call.Name != "Write" {
		t.Fatalf("denials: %+v", d)
	}
}

func TestUnknownTypesKeptRaw(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "unknown-types-stream.jsonl"))
	var raws []string
	for _, e := range formatstest.OfKind(evs, formats.Raw) {
		raws = append(raws, e.Source.Type)
	}
	// A system line's type names its subtype; rate_limit_event is known.
	if strings.Join(raws, ",") != "system/hook_started,conversation_reset" {
		t.Errorf("raw: %v", raws)
	}
	notices := formatstest.OfKind(evs, formats.Notice)
	if len(formatstest.OfKind(evs, formats.Compaction)) != 1 || len(notices) != 2 {
		t.Fatalf("kinds: %s", formatstest.Kinds(evs))
	}
	if n := notices[1]; n.Severity != formats.Info || n.Source.Type != "rate_limit_event" ||
		n.Text != "rate limit (five_hour): allowed, resets at 2026-01-01T00:00:00Z" {
		t.Errorf("rate limit notice: %v %q (%s)", n.Severity, n.Text, n.Source.Type)
	}
}

func TestJSONReader(t *testing.T) {
	evs := formatstest.Read(t, JSON, formatstest.Fixture(t, "claude", "verbose-array.json"))
	if got := formatstest.Kinds(evs); got != "run_start usage tool_call tool_result usage message answer run_end" {
		t.Fatalf("kinds: %s", got)
	}
	if evs[0].Source.Line == nil || evs[1].Source.Line != nil || !evs[1].Source.Continued {
		t.Errorf("the array is carried by the first event only")
	}
	evs = formatstest.Read(t, JSON, formatstest.Fixture(t, "claude", "result-pretty.json"))
	if got := formatstest.Kinds(evs); got != "run_start answer run_end" || evs[1].Text != "4" || evs[0].Run.SessionID != "5e55a008-0000-4000-8000-000000000008" {
		t.Fatalf("result object: %s", got)
	}
}

func TestDetect(t *testing.T) {
	cases := []struct {
		in           string
		stream, json bool
	}{
		{`{"type":"result","subtype":"success","is_error":false,"session_id":"s"}`, false, true},
		{"[\n  {\"type\": \"system\", \"subtype\": \"init\", \"session_id\": \"s\"}", false, true},
		{"{\n  \"type\": \"result\",\n  \"subtype\": \"success\",", false, true},
		{`{"type":"result","timestamp":"2025-01-01T00:00:00Z","status":"success","stats":{}}`, false, false},
		{`{"type":"tool_call","id":"1","name":"x","args":{}}`, false, false},
		{`{"agent":"a","seq":1,"at":"2025-01-01T00:00:00Z","type":"user_message","text":"hi"}`, false, false},
		{`{"type":"assistant","sessionId":"s","timestamp":"t","message":{}}`, false, false},
		{`{"session_id":"s","response":"4","stats":{}}`, false, false},
	}
	for _, c := range cases {
		s, j := Stream.Detect([]byte(c.in)), JSON.Detect([]byte(c.in))
		if (s > j && s >= 50) != c.stream || (j > s && j >= 50) != c.json {
			t.Errorf("%s: stream %d, json %d", c.in, s, j)
		}
	}
	for _, f := range []string{"takopi-session.jsonl", "partial-messages-stream.jsonl", "unknown-types-stream.jsonl",
		"orchestrator-task-tool-output.jsonl", "untether-autocompact-2.1.285.jsonl"} {
		if s, j := Stream.Detect(formatstest.Fixture(t, "claude", f)), JSON.Detect(formatstest.Fixture(t, "claude", f)); s != 100 || j >= s {
			t.Errorf("%s: stream %d, json %d", f, s, j)
		}
	}
}

// Written from events alone, a stream reads back to the same events.
func TestWriteReadsBack(t *testing.T) {
	for _, f := range []string{"subagent-stream.jsonl", "split-messages-stream.jsonl", "failures-stream.jsonl", "takopi-session.jsonl", "partial-messages-stream.jsonl"} {
		t.Run(f, func(t *testing.T) { formatstest.RoundTrip(t, Stream, formatstest.Fixture(t, "claude", f), compared...) })
	}
}

var compared = []formats.Kind{formats.RunStart, formats.RunEnd, formats.AgentStart, formats.AgentEnd, formats.Message,
	formats.TextDelta, formats.ThinkingDelta, formats.ToolCall, formats.ToolResult, formats.Answer, formats.UserMessage,
	formats.Todos, formats.Compaction}

func FuzzStreamReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "claude", "*.jsonl"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) { formatstest.RoundTrip(t, Stream, data, compared...) })
}

func FuzzJSONReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "claude", "*.json"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add(formatstest.Fixture(f, "claude", "takopi-session.jsonl"))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, _, err := formatstest.ReadAll(JSON, data)
		if err != nil {
			t.Fatal(err)
		}
		// claude-json writes results only: the run outcomes survive.
		out, err := formatstest.WriteAll(JSON, evs, true)
		if err != nil {
			t.Fatal(err)
		}
		back, bad, err := formatstest.ReadAll(JSON, out)
		if err != nil || len(bad) > 0 {
			t.Fatalf("reading back: %v %v\n%s", err, bad, out)
		}
		keep := []formats.Kind{formats.RunEnd, formats.Answer}
		if w, g := formatstest.Compare(evs, keep...), formatstest.Compare(back, keep...); !reflect.DeepEqual(w, g) {
			t.Fatalf("round trip:\nwant %+v\ngot  %+v\n%s", w, g, out)
		}
	})
}

// A new session_id while a run is open starts a new run; the pipeline closes
// the old one as cut.
func TestSessionChangeStartsRun(t *testing.T) {
	data := `{"type":"assistant","message":{"id":"m1","model":"x","content":[{"type":"text","text":"one"}]},"parent_tool_use_id":null,"session_id":"s1"}
{"type":"assistant","message":{"id":"m2","model":"x","content":[{"type":"text","text":"two"}]},"parent_tool_use_id":null,"session_id":"s2"}
`
	evs := formatstest.Read(t, Stream, []byte(data))
	if got := formatstest.Kinds(evs); got != "run_start message run_start message" {
		t.Fatalf("kinds: %s", got)
	}
	if evs[0].Run.SessionID != "s1" || evs[2].Run.SessionID != "s2" || evs[1].Text != "one" {
		t.Errorf("runs: %+v %+v", evs[0].Run, evs[2].Run)
	}
}

// Text that only deltas carried is gathered into messages, and the last of
// it answers the run.
func TestWriteFromDeltas(t *testing.T) {
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.TextDelta, Text: "Let me "},
		{Kind: formats.TextDelta, Text: "look."},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "Read", Args: []byte(`{"file_path":"a"}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Status: formats.Completed, Output: formats.TextOutput("x")}},
		{Kind: formats.TextDelta, Text: "Done."},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	for _, d := range []formats.Dialect{Stream, JSON} {
		out, err := formatstest.WriteAll(d, evs, true)
		if err != nil {
			t.Fatal(err)
		}
		back := formatstest.Read(t, d, out)
		if a := formatstest.OfKind(back, formats.Answer); len(a) != 1 || a[0].Text != "Done." {
			t.Errorf("%s: answer %+v\n%s", d.Name, a, out)
		}
		if d.Name == Stream.Name {
			var texts []string
			for _, m := range formatstest.OfKind(back, formats.Message) {
				texts = append(texts, m.Text)
			}
			if strings.Join(texts, "|") != "Let me look.|Done." {
				t.Errorf("messages %q\n%s", texts, out)
			}
		}
	}
}

// Server tools (web search) put their result in the assistant message.
func TestServerToolResult(t *testing.T) {
	data := `{"type":"assistant","message":{"id":"m1","model":"x","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://go.dev","title":"Go"}]},{"type":"text","text":"Found it."}]},"parent_tool_use_id":null,"session_id":"s"}
`
	evs := formatstest.Read(t, Stream, []byte(data))
	if got := formatstest.Kinds(evs); got != "run_start tool_call tool_result message" {
		t.Fatalf("kinds: %s", got)
	}
	if r := evs[2].Call; r.ID != "srvtoolu_1" || r.Name != "web_search" || r.Status != formats.Completed || !strings.Contains(r.Output.Text(), "https://go.dev") {
		t.Errorf("result: %+v", r)
	}
}

// A subagent that says nothing has no record in claude-stream: it is
// reported, not dropped in silence.
func TestWriteReportsSilentSubagent(t *testing.T) {
	_, rep := formatstest.WriteReport(t, Stream, []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "t1", Name: "Task"}},
		{Kind: formats.AgentStart, Agent: "a1", AgentInfo: formats.AgentInfo{ParentCall: "t1"}},
		{Kind: formats.AgentEnd, Agent: "a1", Status: formats.Completed},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "t1", Status: formats.Completed, Output: formats.TextOutput("done")}},
		{Kind: formats.RunEnd, Status: formats.Completed},
	})
	if !strings.Contains(rep, "1 × subagents that say nothing") {
		t.Errorf("report:\n%s", rep)
	}
}

// duration_ms comes from the source's times when both ends have one, and
// never from a source time and a read time mixed: an archive read today
// did not run until today.
func TestResultDuration(t *testing.T) {
	src := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	read := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name       string
		start, end formats.Event
		want       string
	}{
		{"source times", formats.Event{Time: src, Arrived: read}, formats.Event{Time: src.Add(5 * time.Second), Arrived: read}, `"duration_ms":5000`},
		{"read times", formats.Event{Arrived: read}, formats.Event{Arrived: read.Add(time.Second)}, `"duration_ms":1000`},
		{"mixed", formats.Event{Time: src, Arrived: read}, formats.Event{Arrived: read}, `"duration_ms":0`},
	} {
		start, end := c.start, c.end
		start.Kind, end.Kind, end.Status = formats.RunStart, formats.RunEnd, formats.Completed
		out, _ := formatstest.WriteReport(t, Stream, []*formats.Event{&start, &end})
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: want %s in\n%s", c.name, c.want, out)
		}
	}
}

// TestSystemLinesBeforeInit: a SessionStart hook's response before init
// belongs to the run that init starts: one run, which succeeds, with the
// hook's line kept raw after its start and named by its subtype.
func TestSystemLinesBeforeInit(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "orchestrator-task-tool-output.jsonl"))
	starts, ends := formatstest.OfKind(evs, formats.RunStart), formatstest.OfKind(evs, formats.RunEnd)
	if len(starts) != 1 || len(ends) != 1 || ends[0].Status != formats.Completed || ends[0].Cut {
		t.Fatalf("runs: %d starts, %d ends %+v", len(starts), len(ends), ends)
	}
	if evs[0].Kind != formats.RunStart || evs[0].Run.Cwd != `c:\Projects\Claude-Orchestrator` || evs[0].Source.LineNo != 2 {
		t.Errorf("first event: %+v", evs[0])
	}
	if !bytes.HasPrefix(evs[0].Source.Line, []byte(`{"type": "system", "subtype": "hook_response"`)) || bytes.Count(evs[0].Source.Line, []byte{'\n'}) != 1 {
		t.Errorf("the run's start does not carry the hook's line and init's: %.120s", evs[0].Source.Line)
	}
	if r := evs[1]; r.Kind != formats.Raw || r.Source.Type != "system/hook_response" || r.Source.LineNo != 1 || !r.Source.Continued {
		t.Errorf("second event: %v %+v", r.Kind, r.Source)
	}
	// A retry before init is a warning of that run; a hook line with no run
	// after it is kept.
	in := `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":3,"session_id":"s","uuid":"u1"}
{"type":"system","subtype":"init","session_id":"s","model":"m","cwd":"/w"}
{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}
{"type":"system","subtype":"hook_response","session_id":"s","uuid":"u2"}
`
	evs = formatstest.Read(t, Stream, in)
	if got := formatstest.Kinds(evs); got != "run_start notice answer run_end raw" {
		t.Fatalf("kinds: %s", got)
	}
	if evs[1].Severity != formats.Warning || evs[1].Source.LineNo != 1 || evs[4].Source.Type != "system/hook_response" ||
		string(evs[4].Source.Line) != strings.Split(in, "\n")[3] {
		t.Errorf("events: %+v\n%+v", evs[1], evs[4])
	}
	if out := copied(evs); out != in {
		t.Errorf("claude-stream → claude-stream:\n%s", out)
	}
	// So do a rate limit and a type of a newer version before init.
	in = `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","rateLimitType":"five_hour"},"uuid":"u0","session_id":"s"}
{"type":"conversation_reset","uuid":"u1","session_id":"s"}
{"type":"system","subtype":"init","session_id":"s","model":"m","cwd":"/w"}
{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}
`
	evs = formatstest.Read(t, Stream, in)
	if got := formatstest.Kinds(evs); got != "run_start notice raw answer run_end" {
		t.Fatalf("kinds: %s", got)
	}
	if evs[1].Source.LineNo != 1 || evs[2].Source.LineNo != 2 || evs[2].Source.Type != "conversation_reset" {
		t.Errorf("events: %+v\n%+v", evs[1].Source, evs[2].Source)
	}
	if out := copied(evs); out != in {
		t.Errorf("claude-stream → claude-stream:\n%s", out)
	}
}

// TestTimestamps: the timestamp newer Claude Code prints on its lines is
// the time of their events; lines without one give events without a time.
func TestTimestamps(t *testing.T) {
	data := formatstest.Fixture(t, "claude", "untether-autocompact-2.1.285.jsonl")
	stamps := map[int]time.Time{}
	for i, l := range strings.Split(string(data), "\n") {
		var v struct{ Timestamp string }
		if json.Unmarshal([]byte(l), &v) == nil && v.Timestamp != "" {
			ts, err := time.Parse(time.RFC3339Nano, v.Timestamp)
			if err != nil {
				t.Fatal(err)
			}
			stamps[i+1] = ts
		}
	}
	evs := formatstest.Read(t, Stream, data)
	timed := 0
	for _, e := range evs {
		// A line without a timestamp (init, result, rate_limit_event,
		// system/status) has the time of the last line before it that had
		// one (issue 23 #10), none before the first.
		var want time.Time
		for l := e.Source.LineNo; l > 0; l-- {
			if ts, ok := stamps[l]; ok {
				want = ts
				break
			}
		}
		if !e.Time.Equal(want) {
			t.Errorf("%v of line %d at %v, want %v", e.Kind, e.Source.LineNo, e.Time, want)
		}
		if !e.Time.IsZero() {
			timed++
		}
	}
	if timed < 15 {
		t.Errorf("only %d events have a time", timed)
	}
	calls := formatstest.OfKind(evs, formats.ToolCall)
	if len(calls) == 0 || !calls[0].Time.Equal(time.Date(2026, 9, 30, 15, 53, 30, 709e6, time.UTC)) {
		t.Errorf("first call: %+v", calls)
	}
}

// TestResultError: result.error is the run's error text, a string or an
// object with a message.
func TestResultError(t *testing.T) {
	for _, e := range []string{`"Claude AI usage limit reached"`, `{"type":"rate_limit_error","message":"Claude AI usage limit reached"}`} {
		in := `{"type":"system","subtype":"init","session_id":"s"}
{"type":"result","subtype":"error_during_execution","is_error":true,"error":` + e + `,"errors":["other"],"session_id":"s"}
`
		end := formatstest.OfKind(formatstest.Read(t, Stream, in), formats.RunEnd)
		if len(end) != 1 || end[0].Status != formats.Failed || end[0].Text != "Claude AI usage limit reached" {
			t.Errorf("%s: %+v", e, end)
		}
	}
}

// TestSessionCostIsARunningTotal: in a session of several prompts, each
// result's total_cost_usd is the session's running total (the Claude Code
// 2.1.285 capture): a run's own cost is what it adds, so that the runs'
// costs sum to the session's, not to several times it. Another session's
// first run costs what it says.
func TestSessionCostIsARunningTotal(t *testing.T) {
	var costs []float64
	for _, f := range []string{"untether-autocompact-2.1.285.jsonl", "takopi-session.jsonl"} {
		for _, e := range formatstest.OfKind(formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", f)), formats.RunEnd) {
			costs = append(costs, e.Usage.CostUSD.V)
		}
	}
	want := []float64{0.0640664, 0.0542771, 0.0771457, 0.0048121, 0.012345, 0.001}
	if len(costs) != len(want) {
		t.Fatalf("costs %v", costs)
	}
	for i := range want {
		if d := costs[i] - want[i]; d > 1e-9 || d < -1e-9 {
			t.Errorf("run %d costs %v, want %v", i+1, costs[i], want[i])
		}
	}
}

// copied is what the pipeline prints of a stream it copies into its own
// dialect: the record each event carries, once.
func copied(evs []*formats.Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		if e.Source.Line != nil && !e.Source.Continued {
			formats.WriteRawLine(&b, e.Source.Line)
		}
	}
	return b.String()
}

// The result's permission denials of a subagent's calls are said where
// the subagent runs: in it while it is open (before the result ends it),
// by the run once it ended.
func TestSubagentDenials(t *testing.T) {
	data := `{"type":"system","subtype":"init","session_id":"s","model":"m"}
{"type":"assistant","message":{"id":"m1","model":"m","content":[{"type":"tool_use","id":"task_1","name":"Task","input":{"prompt":"look","subagent_type":"helper"}}]},"parent_tool_use_id":null,"session_id":"s"}
{"type":"assistant","message":{"id":"m2","model":"m","content":[{"type":"tool_use","id":"bash_1","name":"Bash","input":{"command":"rm x"}}]},"parent_tool_use_id":"task_1","session_id":"s"}
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","permission_denials":[{"tool_name":"Bash","tool_use_id":"bash_1","tool_input":{"command":"rm x"}}]}
`
	evs := formatstest.Read(t, Stream, data)
	ended := map[string]bool{}
	var denied *formats.Event
	for _, e := range evs {
		if e.Agent != "" && ended[e.Agent] {
			t.Errorf("a %s of agent %s after its end", e.Kind, e.Agent)
		}
		switch e.Kind {
		case formats.AgentEnd:
			ended[e.Agent] = true
		case formats.ToolResult:
			denied = e
		}
	}
	if denied == nil || denied.Call.ID != "bash_1" || denied.Call.Status != formats.Denied || denied.Agent != "task_1" {
		t.Errorf("the subagent's refused call: %+v (%s)", denied, formatstest.Kinds(evs))
	}
	// A subagent that ended: its refusal's answer is the run's.
	evs = formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "orchestrator-task-tool-output.jsonl"))
	answers := formatstest.OfKind(evs, formats.PermissionAnswer)
	if len(answers) != 2 {
		t.Fatalf("%d permission answers, want the 2 denials", len(answers))
	}
	for _, a := range answers {
		if a.Agent != "" || a.Call.ID == "" {
			t.Errorf("answer of call %s given to agent %q, which ended", a.Call.ID, a.Agent)
		}
	}
}

// A message id seen again after its agent's calls' results is another
// request (agent-stream-fmt-stream.jsonl gives every message msg_test):
// its usage counts, as the lines of one message count once.
func TestMessageIDAgainAfterResults(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "claude", "agent-stream-fmt-stream.jsonl"))
	var got []string
	for _, e := range evs {
		switch e.Kind {
		case formats.Usage:
			got = append(got, fmt.Sprintf("usage:%d/%d", e.Usage.InputTokens.V, e.Usage.OutputTokens.V))
		case formats.ToolResult:
			got = append(got, "tool_result")
		}
	}
	if s, want := strings.Join(got, " "), "usage:10/12 tool_result usage:72/65"; s != want {
		t.Errorf("got %s\nwant %s", s, want)
	}
}

// A tool result whose call the session never gave (a file cut out of its
// session) ends no call: it is kept as it is, an unknown event.
func TestSessionResultWithoutCall(t *testing.T) {
	evs := formatstest.Read(t, Session, formatstest.Fixture(t, "claude/sessions", "claude-code-log-sidechain-integrated.jsonl"))
	const orphan = "toolu_011V1hetiJ3pC79EoLTY53Ni"
	kept := false
	for _, e := range evs {
		if e.Kind == formats.ToolResult && e.Call.ID == orphan {
			t.Errorf("a result of call %s, which the session never made: %+v", orphan, e.Call)
		}
		if e.Kind == formats.Raw && e.Source.LineNo == 5 && e.Source.Line != nil && strings.Contains(e.Source.Type, "without its call") {
			kept = true
		}
	}
	if !kept {
		t.Errorf("the result's record is not kept as an unknown event that says what it is: %s", formatstest.Kinds(evs))
	}
	if len(formatstest.OfKind(evs, formats.ToolResult)) != 1 {
		t.Errorf("the Task's result is read: %s", formatstest.Kinds(evs))
	}
}

// TestMessageThatIsAString: 2.1's system/permission_denied line has a
// message that is a string, where every other record's is an object. The
// stream reader gives it as the refusal's reason; neither reader calls the
// line one of unexpected types, and the fields after the message are read
// (the session's second pass reads the line as the first did).
func TestMessageThatIsAString(t *testing.T) {
	const sid = `"session_id":"5e55a001-0000-4000-8000-000000000002"`
	stream := `{"type":"system","subtype":"init","cwd":"/w",` + sid + `,"tools":["Bash"],"model":"claude-sonnet-4-5"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"touch x"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":2}},"parent_tool_use_id":null,` + sid + `}
{"type":"system","subtype":"permission_denied","tool_name":"Bash","message": "touch x needs approval","tool_use_id":"toolu_1",` + sid + `}
{"type":"result","subtype":"success","is_error":false,"result":"done",` + sid + `}
`
	evs, warnings := formatstest.ReadWarnings(t, Stream, stream)
	a := formatstest.OfKind(evs, formats.PermissionAnswer)
	if len(a) != 1 || a[0].Permission.Reason != "touch x needs approval" || a[0].Call.ID != "toolu_1" {
		t.Errorf("the refusal: %+v (%s)", a, formatstest.Kinds(evs))
	}
	if warnings != "" {
		t.Errorf("warnings: %s", warnings)
	}

	const s = `"sessionId":"5e55a001-0000-4000-8000-000000000003","cwd":"/w","version":"2.1.332"`
	session := `{"parentUuid":null,"isSidechain":false,` + s + `,"type":"user","message":{"role":"user","content":"go"},"uuid":"u1","timestamp":"2026-03-02T09:14:00.000Z"}
{"parentUuid":"u1","isSidechain":false,` + s + `,"message":{"model":"claude-sonnet-4-5","id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2}},"type":"assistant","uuid":"a1","timestamp":"2026-03-02T09:14:01.000Z"}
{"parentUuid":"a1","isSidechain":false,` + s + `,"type":"system","subtype":"permission_denied","message":"touch x needs approval","uuid":"s1","timestamp":"2026-03-02T09:14:05.000Z"}
`
	evs, warnings = formatstest.ReadWarnings(t, Session, session)
	if warnings != "" {
		t.Errorf("session warnings: %s", warnings)
	}
	last := evs[len(evs)-1]
	if last.Kind != formats.RunEnd || !last.Time.Equal(time.Date(2026, 3, 2, 9, 14, 5, 0, time.UTC)) {
		t.Errorf("the run ends %s at %v, want at the last line's time (%s)", last.Kind, last.Time, formatstest.Kinds(evs))
	}
}
