package malac

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// kinds lists the kinds of events, each with its agent if any.
func kinds(evs []*formats.Event) string {
	var k []string
	for _, e := range evs {
		s := e.Kind.String()
		if e.Agent != "" {
			s += "@" + e.Agent
		}
		k = append(k, s)
	}
	return strings.Join(k, " ")
}

const start = `{"agent":"m","seq":1,"at":"2026-01-01T00:00:00Z","type":"agent_started","label":"malac","parent":null,"model":"m1","cwd":"/w"}` + "\n"

func line(seq int, agent, rest string) string {
	return `{"agent":"` + agent + `","seq":` + itoa(seq) + `,"at":"2026-01-01T00:00:0` + itoa(seq%10) + `Z",` + rest + "}\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestEveryType(t *testing.T) {
	in := start +
		line(2, "m", `"type":"model_changed","model":"m2"`) +
		line(3, "m", `"type":"user_message","text":"hi"`) +
		line(4, "m", `"type":"text_delta","text":"a"`) +
		line(5, "m", `"type":"thinking_delta","text":"b"`) +
		line(6, "m", `"type":"tool_call_streaming","tool":"bash"`) +
		line(7, "m", `"type":"assistant_message","message":{"content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"a"}]}`) +
		line(8, "m", `"type":"tool_started","call_id":"c1","tool":"bash","summary":"ls","input":{"command":"ls"}`) +
		line(9, "m", `"type":"permission_requested","request_id":"p1","call_id":"c1","tool":"bash","summary":"ls","input":{"command":"ls"}`) +
		line(10, "m", `"type":"permission_resolved","request_id":"p1","allowed":true`) +
		line(11, "m", `"type":"tool_finished","call_id":"c1","tool":"bash","output":"x","is_error":false,"millis":12`) +
		line(12, "m", `"type":"todos","items":[{"content":"do","status":"pending"}]`) +
		line(13, "m", `"type":"usage","turn":{"input_tokens":5,"output_tokens":2},"total":{"input_tokens":7,"output_tokens":3,"cost_usd":0.5},"context_tokens":9`) +
		line(14, "m", `"type":"compacted","summary":"s"`) +
		line(15, "m", `"type":"notice","level":"warning","message":"retry"`) +
		line(16, "s", `"type":"agent_started","label":"sub","parent":"m","model":null,"cwd":null`) +
		line(17, "s", `"type":"agent_finished","status":"failed","report":"r"`) +
		line(18, "", `"type":"update","status":"installed"`) +
		line(19, "m", `"type":"turn_finished","status":"completed","text":"done"`)
	evs, warn := formatstest.ReadWarnings(t, Dialect, in)
	if warn != "" {
		t.Errorf("warnings: %s", warn)
	}
	want := "run_start model_change user_message text_delta thinking_delta raw message tool_call permission_request permission_answer tool_result todos usage compaction notice agent_start@s agent_end@s notice turn_end answer run_end"
	if got := kinds(evs); got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	byKind := map[formats.Kind]*formats.Event{}
	for _, e := range evs {
		byKind[e.Kind] = e
	}
	if e := byKind[formats.RunStart]; e.Run.SessionID != "m" || e.Run.Model != "m1" || e.Run.Cwd != "/w" || e.Time.IsZero() {
		t.Errorf("run start %+v", e)
	}
	if e := byKind[formats.Message]; e.Text != "a" || e.Thinking != "t" {
		t.Errorf("message %q %q", e.Text, e.Thinking)
	}
	if e := byKind[formats.ToolResult]; e.Call.Status != formats.Completed || e.Call.Output.Text() != "x" || e.Duration.Milliseconds() != 12 || e.Call.Name != "bash" {
		t.Errorf("result %+v", e)
	}
	if e := byKind[formats.Usage]; e.Usage.InputTokens.V != 5 || e.Usage.ContextTokens.V != 9 {
		t.Errorf("usage %+v", e.Usage)
	}
	if e := byKind[formats.AgentStart]; e.AgentInfo.Parent != "" || e.AgentInfo.Label != "sub" {
		t.Errorf("agent start %+v", e.AgentInfo)
	}
	if e := byKind[formats.AgentEnd]; e.Status != formats.Failed || e.Text != "r" {
		t.Errorf("agent end %+v", e)
	}
	if e := byKind[formats.Todos]; len(e.Todos) != 1 || e.Todos[0].Content != "do" {
		t.Errorf("todos %+v", e.Todos)
	}
	end := byKind[formats.RunEnd]
	if end.Status != formats.Completed || end.Usage.CostUSD.V != 0.5 || end.Run.SessionID != "m" || !end.Source.Made || end.Source.Continued {
		t.Errorf("run end %+v", end)
	}
	if byKind[formats.Answer].Text != "done" {
		t.Errorf("answer %q", byKind[formats.Answer].Text)
	}
}

func TestSeqGapsAndDisorderWarnAndKeep(t *testing.T) {
	evs, warn := formatstest.ReadWarnings(t, Dialect, formatstest.Fixture(t, "malac", "failed-turn.jsonl"))
	for _, w := range []string{"line 4: seq jumps from 3 to 5 (1 events missing)", "line 5: seq 4 comes after seq 5 (out of order)"} {
		if !strings.Contains(warn, w) {
			t.Errorf("no warning %q in %q", w, warn)
		}
	}
	lines := 0
	for _, e := range evs {
		if e.Source.Line != nil {
			lines++
		}
	}
	if lines != 10 {
		t.Errorf("%d records kept, want 10", lines)
	}
}

func TestRunOutcomes(t *testing.T) {
	tests := []struct {
		file   string
		status []formats.Status
	}{
		{"denied.jsonl", []formats.Status{formats.Denied}},
		{"two-runs.jsonl", []formats.Status{formats.Cancelled, formats.Completed}},
		{"failed-turn.jsonl", []formats.Status{formats.Failed}},
		{"subagents.jsonl", []formats.Status{formats.Completed}},
	}
	for _, tc := range tests {
		evs, _ := formatstest.ReadWarnings(t, Dialect, formatstest.Fixture(t, "malac", tc.file))
		var got []formats.Status
		for _, e := range evs {
			if e.Kind == formats.RunEnd {
				got = append(got, e.Status)
			}
		}
		if len(got) != len(tc.status) {
			t.Errorf("%s: runs %v, want %v", tc.file, got, tc.status)
			continue
		}
		for i := range got {
			if got[i] != tc.status[i] {
				t.Errorf("%s: run %d is %s, want %s", tc.file, i, got[i], tc.status[i])
			}
		}
	}
}

func TestRefusals(t *testing.T) {
	// A refusal the run went on after: the call is denied, the run is not.
	evs, _ := formatstest.ReadWarnings(t, Dialect, formatstest.Fixture(t, "malac", "two-runs.jsonl"))
	for _, e := range evs {
		if e.Kind == formats.ToolResult && e.Call.ID == "r2c1" && (e.Call.Status != formats.Denied || e.Call.Error != "Permission denied by user") {
			t.Errorf("refused call %+v", e.Call)
		}
	}
	// A refusal with no tool_finished: the call ends at the run's end.
	in := start +
		line(2, "m", `"type":"tool_started","call_id":"c1","tool":"bash","input":{}`) +
		line(3, "m", `"type":"permission_requested","request_id":"p","call_id":"c1","tool":"bash","input":{}`) +
		line(4, "m", `"type":"permission_resolved","request_id":"p","allowed":false`) +
		line(5, "m", `"type":"turn_finished","status":"failed","text":""`)
	evs, _ = formatstest.ReadWarnings(t, Dialect, in)
	if got := kinds(evs); got != "run_start tool_call permission_request permission_answer turn_end tool_result run_end" {
		t.Fatalf("kinds %s", got)
	}
	if r := evs[5]; r.Call.Status != formats.Denied || r.Call.ID != "c1" || evs[6].Status != formats.Denied {
		t.Errorf("refusal %+v, run %s", r.Call, evs[6].Status)
	}
}

func TestSubagentsNestAndInterleave(t *testing.T) {
	evs, _ := formatstest.ReadWarnings(t, Dialect, formatstest.Fixture(t, "malac", "subagents.jsonl"))
	parents := map[string]formats.AgentInfo{}
	for _, e := range evs {
		if e.Kind == formats.AgentStart {
			parents[e.Agent] = e.AgentInfo
		}
	}
	if p := parents["ses_9Ab4sub"]; p.Parent != "" || p.ParentCall != "call_m1" {
		t.Errorf("first subagent %+v", p)
	}
	if p := parents["ses_Cc81deep"]; p.Parent != "ses_9Ab4sub" || p.ParentCall != "call_s2" {
		t.Errorf("nested subagent %+v", p)
	}
	for _, e := range evs {
		if e.Kind == formats.ToolResult && e.Call.ID == "call_s1" && e.Agent != "ses_9Ab4sub" {
			t.Errorf("call_s1 belongs to %q", e.Agent)
		}
		if e.Kind == formats.Answer && e.Text != "Fixed: total() in src/cart.ts now rounds with round2()." {
			t.Errorf("answer %q", e.Text)
		}
	}
}

func TestStreamWithoutMainStart(t *testing.T) {
	in := line(1, "x", `"type":"text_delta","text":"hi"`) + line(2, "y", `"type":"text_delta","text":"sub"`)
	evs, warn := formatstest.ReadWarnings(t, Dialect, in)
	// No turn_finished of the main agent: no RunEnd, the pipeline closes
	// the run as cut.
	if got := kinds(evs); got != "run_start text_delta agent_start@y text_delta@y" {
		t.Errorf("kinds %s", got)
	}
	if !strings.Contains(warn, `agent "x" is taken as the main agent`) || !strings.Contains(warn, `agent "y", which never started`) {
		t.Errorf("warnings %q", warn)
	}
}

func TestUsageShapes(t *testing.T) {
	for in, want := range map[string]formats.UsageInfo{
		`{"input":3,"cached":1,"output":2}`: {InputTokens: formats.Some[int64](3), CacheReadTokens: formats.Some[int64](1), OutputTokens: formats.Some[int64](2)},
		`{"inputTokens":3,"cost":0.25}`:     {InputTokens: formats.Some[int64](3), CostUSD: formats.Some(0.25)},
		`{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9,"cache_creation_input_tokens":7}`: {InputTokens: formats.Some[int64](4), OutputTokens: formats.Some[int64](5), TotalTokens: formats.Some[int64](9), CacheWriteTokens: formats.Some[int64](7)},
		`{"input_tokens":"many","output_tokens":2}`:                                                  {OutputTokens: formats.Some[int64](2)},
		`42`:   {},
		`null`: {},
	} {
		if got, _, _ := parseUsage([]byte(in)); got != want {
			t.Errorf("%s: got %+v want %+v", in, got, want)
		}
	}
}

func TestWriteAdalRefusal(t *testing.T) {
	evs := []*formats.Event{
		{Kind: formats.RunStart},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "read_file", Args: []byte(`{"p":1}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Status: formats.Completed, Output: formats.TextOutput("ok")}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c2", Name: "bash", Args: []byte(`{"command":"rm"}`), Status: formats.Denied, Error: "needs approval"}},
		{Kind: formats.RunEnd, Status: formats.Denied, Run: formats.RunInfo{SessionID: "s1", ExitCode: formats.Some(2)}},
	}
	out, rep := formatstest.WriteReport(t, Dialect, evs)
	for _, want := range []string{
		`{"agent":"agent-1","seq":1,"at":"2000-01-01T00:00:00.000Z","type":"agent_started","label":"main","parent":null,"model":null,"cwd":null}`,
		`"type":"tool_started","call_id":"c2","tool":"bash","summary":"","input":{"command":"rm"}}`,
		`"type":"permission_requested","request_id":"perm-c2","call_id":"c2"`,
		`"type":"permission_resolved","request_id":"perm-c2","allowed":false}`,
		`"type":"tool_finished","call_id":"c2","tool":"bash","output":"needs approval","is_error":true,"millis":null}`,
		`"seq":8,"at":"2000-01-01T00:00:00.004Z","type":"turn_finished","status":"cancelled","text":""}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if !strings.Contains(rep, "session ids given only at the run's end") {
		t.Errorf("report %q", rep)
	}
	back, _ := formatstest.ReadWarnings(t, Dialect, out)
	if end := back[len(back)-1]; end.Kind != formats.RunEnd || end.Status != formats.Denied {
		t.Errorf("read back: %+v", end)
	}
}

func TestWriteSubagentsAndStableIDs(t *testing.T) {
	mk := func() []*formats.Event {
		return []*formats.Event{
			{Kind: formats.RunStart},
			{Kind: formats.ToolCall, Call: formats.Call{ID: "t1", Name: "Task"}},
			{Kind: formats.AgentStart, Agent: "toolu_1", AgentInfo: formats.AgentInfo{Label: "explore", ParentCall: "t1"}},
			{Kind: formats.AgentStart, Agent: "toolu_2", AgentInfo: formats.AgentInfo{Label: "deep", Parent: "toolu_1"}},
			{Kind: formats.TextDelta, Agent: "toolu_2", Text: "x"},
			{Kind: formats.AgentEnd, Agent: "toolu_2", Status: formats.Completed, Text: "r2"},
			{Kind: formats.AgentEnd, Agent: "toolu_1", Status: formats.Failed, Text: "r1"},
			{Kind: formats.ToolResult, Call: formats.Call{ID: "t1", Status: formats.Completed}},
			{Kind: formats.TextDelta, Text: "answer"},
			{Kind: formats.RunEnd, Status: formats.Completed},
			{Kind: formats.RunStart},
			{Kind: formats.RunEnd, Status: formats.Failed, Text: "boom"},
		}
	}
	out, rep := formatstest.WriteReport(t, Dialect, mk())
	again, _ := formatstest.WriteReport(t, Dialect, mk())
	if out != again {
		t.Error("the same input gave different output")
	}
	for _, want := range []string{
		`"agent":"toolu_1","seq":3,"at":"2000-01-01T00:00:00.002Z","type":"agent_started","label":"explore","parent":"agent-1"`,
		`"agent":"toolu_2","seq":4,"at":"2000-01-01T00:00:00.003Z","type":"agent_started","label":"deep","parent":"toolu_1"`,
		`"agent":"toolu_1","seq":7,"at":"2000-01-01T00:00:00.006Z","type":"agent_finished","status":"failed","report":"r1"}`,
		`"agent":"agent-1","seq":10,"at":"2000-01-01T00:00:00.009Z","type":"turn_finished","status":"completed","text":"answer"}`,
		`"agent":"agent-2","seq":12,"at":"2000-01-01T00:00:00.011Z","type":"notice","level":"error","message":"boom"}`,
		`"agent":"agent-2","seq":13,"at":"2000-01-01T00:00:00.011Z","type":"turn_finished","status":"failed","text":""}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if rep != "" {
		t.Errorf("the writer reported losses the pipeline reports from Carries: %q", rep)
	}
	back, _ := formatstest.ReadWarnings(t, Dialect, out)
	if got := kinds(back); got != "run_start tool_call agent_start@toolu_1 agent_start@toolu_2 text_delta@toolu_2 agent_end@toolu_2 agent_end@toolu_1 tool_result text_delta turn_end answer run_end run_start notice turn_end run_end" {
		t.Errorf("read back: %s", got)
	}
}

func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "malac", "*"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(start + line(2, "m", `"type":"tool_finished","call_id":"zz","is_error":true`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, Dialect, data, formats.ToolResult, formats.TextDelta, formats.ThinkingDelta,
			formats.UserMessage, formats.Compaction, formats.AgentStart, formats.AgentEnd)
	})
}

// TestLive: on a pipe, each event comes as soon as its line does; the run
// ends when the input does.
func TestLive(t *testing.T) {
	pr, pw := io.Pipe()
	r := newReader(pr, formats.ReadOptions{Dialect: Dialect.Name, Report: formats.NewReport(io.Discard)})
	go pw.Write([]byte(start))
	if ev := formatstest.Next(t, r); ev.Kind != formats.RunStart {
		t.Fatalf("first event %s", ev.Kind)
	}
	go pw.Write([]byte(line(2, "m", `"type":"tool_started","call_id":"c","tool":"bash","input":{}`)))
	if ev := formatstest.Next(t, r); ev.Kind != formats.ToolCall {
		t.Fatalf("second event %s", ev.Kind)
	}
	go pw.Write([]byte(line(3, "m", `"type":"turn_finished","status":"completed","text":"ok"`)))
	if ev := formatstest.Next(t, r); ev.Kind != formats.TurnEnd {
		t.Fatalf("third event %s", ev.Kind)
	}
	pw.Close()
	if ev := formatstest.Next(t, r); ev.Kind != formats.Answer {
		t.Fatalf("at the end: %s", ev.Kind)
	}
}

func TestMainAgentFinishedEndsTheRun(t *testing.T) {
	in := start +
		line(2, "m", `"type":"agent_finished","status":"failed","report":"gave up"`) +
		line(3, "m", `"type":"text_delta","text":"late"`)
	evs, _ := formatstest.ReadWarnings(t, Dialect, in)
	if got := kinds(evs); got != "run_start run_end run_start text_delta" {
		t.Fatalf("kinds %s", got)
	}
	if end := evs[1]; end.Status != formats.Failed || end.Text != "gave up" || end.Source.Line == nil {
		t.Errorf("run end %+v", end)
	}
}

// TestUsageConventions: a Claude model's input_tokens leave out cache
// reads and writes, and the reader adds them; other models' include them;
// the writer writes each back in its model's convention.
func TestUsageConventions(t *testing.T) {
	usage := `"type":"usage","turn":{"input_tokens":100,"output_tokens":5,"cached_tokens":900,"cache_write_tokens":50},"total":{"input_tokens":100,"output_tokens":5,"cached_tokens":900,"cache_write_tokens":50}`
	for model, want := range map[string]int64{"claude-sonnet-4-5": 1050, "gpt-5": 100, "": 100} {
		in := `{"agent":"m","seq":1,"at":"2026-01-01T00:00:00Z","type":"agent_started","label":"malac","parent":null,"model":"` + model + `","cwd":null}` + "\n" +
			line(2, "m", usage) + line(3, "m", `"type":"turn_finished","status":"completed","text":"ok"`)
		evs := formatstest.Read(t, Dialect, in)
		u := formatstest.OfKind(evs, formats.Usage)[0].Usage
		end := formatstest.OfKind(evs, formats.RunEnd)[0].Usage
		if u.InputTokens.V != want || end.InputTokens.V != want || u.CacheReadTokens.V != 900 || u.CacheWriteTokens.V != 50 {
			t.Errorf("%q: usage %+v, run %+v; want input %d", model, u, end, want)
		}
		out, err := formatstest.WriteAll(Dialect, evs, true)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), `"turn":{"input_tokens":100,`) {
			t.Errorf("%q: written back as\n%s", model, out)
		}
	}
	// Counts that break the rule (fewer input tokens than cached) are kept
	// under prompt_tokens, which counts cached tokens whatever the model.
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{Model: "claude-opus-4"}},
		{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](10), CacheWriteTokens: formats.Some[int64](500)}},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	out, err := formatstest.WriteAll(Dialect, evs, true)
	if err != nil {
		t.Fatal(err)
	}
	back := formatstest.OfKind(formatstest.Read(t, Dialect, out), formats.Usage)
	if len(back) == 0 || back[0].Usage.InputTokens.V != 10 || back[0].Usage.CacheWriteTokens.V != 500 {
		t.Errorf("read back %+v from\n%s", back, out)
	}
}

// TestExitCodeOnMainAgentFinished: an exit code the outcome does not
// imply goes on the main agent's agent_finished, and comes back.
func TestExitCodeOnMainAgentFinished(t *testing.T) {
	for _, code := range []int{42, 130} {
		evs := []*formats.Event{
			{Kind: formats.RunStart},
			{Kind: formats.RunEnd, Status: formats.Failed, Text: "boom", Run: formats.RunInfo{ExitCode: formats.Some(code)}},
		}
		out, err := formatstest.WriteAll(Dialect, evs, true)
		if err != nil {
			t.Fatal(err)
		}
		end := formatstest.OfKind(formatstest.Read(t, Dialect, out), formats.RunEnd)[0]
		if end.Status != formats.Failed || !end.Run.ExitCode.OK || end.Run.ExitCode.V != code {
			t.Errorf("exit %d read back as %+v from\n%s", code, end, out)
		}
	}
	evs := []*formats.Event{{Kind: formats.RunStart}, {Kind: formats.RunEnd, Status: formats.Failed, Text: "boom"}}
	out, _ := formatstest.WriteAll(Dialect, evs, true)
	if strings.Contains(string(out), "exit_code") {
		t.Errorf("an implied exit code was written:\n%s", out)
	}
}

// Each run's calls are its own: a second run that reuses the first's call
// ids (a refused call, announced by the writer at its result) gets its
// own tool_started and permission lines, though the writer reuses its
// maps from run to run.
func TestWriteRunsReuseCallIDs(t *testing.T) {
	run := func(session string) []*formats.Event {
		return []*formats.Event{
			{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: session, Model: "m-" + session}},
			{Kind: formats.ToolResult, Call: formats.Call{ID: "c2", Name: "bash", Args: []byte(`{}`), Status: formats.Denied, Error: "no"}},
			{Kind: formats.RunEnd, Status: formats.Denied, Run: formats.RunInfo{SessionID: session}},
		}
	}
	out, _ := formatstest.WriteReport(t, Dialect, append(run("s1"), run("s2")...))
	for _, want := range []string{`"type":"tool_started","call_id":"c2"`, `"type":"permission_requested","request_id":"perm-c2"`, `"type":"permission_resolved","request_id":"perm-c2"`} {
		if n := strings.Count(out, want); n != 2 {
			t.Errorf("%d lines of %s, want one a run:\n%s", n, want, out)
		}
	}
}
