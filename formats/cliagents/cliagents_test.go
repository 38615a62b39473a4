package cliagents

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestReadClaudeRun(t *testing.T) {
	evs, warn := formatstest.ReadWarnings(t, Dialect, formatstest.Fixture(t, "cli-agents", "claude-run.jsonl"))
	if warn != "" {
		t.Errorf("warnings %q", warn)
	}
	want := "run_start thinking_delta text_delta tool_call tool_result tool_call tool_result raw text_delta text_delta turn_end answer run_end"
	if got := formatstest.Kinds(evs); got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	start := evs[0]
	if start.Run.SessionID != "1d1e46f9-35c7-4834-b529-846d5bb82288" || start.Run.Model != "claude-opus-4-5-20251101" ||
		start.Run.Cwd != "/home/cyou/claude-agent-sdk-gleam" || start.Run.Provider != "anthropic" || start.Source.Line == nil {
		t.Errorf("run start %+v", start.Run)
	}
	if r := evs[6]; r.Call.Status != formats.Failed || r.Call.Name != "Bash" || r.Call.Error != "Exit code 1" || r.Call.Output.Text() != "1 test, 1 failure" {
		t.Errorf("failed call %+v", r.Call)
	}
	end := evs[len(evs)-1]
	if end.Status != formats.Completed || end.Run.ExitCode != formats.Some(0) || end.Usage.InputTokens.V != 21580+21570 ||
		end.Usage.CacheReadTokens.V != 21570 || end.Usage.CostUSD.V != 0.1354875 || end.Duration.Milliseconds() != 8360 || !end.Source.Continued {
		t.Errorf("run end %+v", end)
	}
	if a := evs[len(evs)-2]; a.Text != "The test expects \"4\" but query returns \"4\\n\": trim the output before comparing." || a.Source.Line == nil {
		t.Errorf("answer %+v", a)
	}
}

func TestReadProviders(t *testing.T) {
	evs, _ := formatstest.ReadWarnings(t, Dialect, formatstest.Fixture(t, "cli-agents", "codex-run.jsonl"))
	if s := evs[0]; s.Kind != formats.RunStart || s.Run.SessionID != "019a2d7b-7fb8-78e1-8cfa-5bdbe274a3aa" || s.Run.Provider != "openai" {
		t.Errorf("codex start %+v", s)
	}
	if evs[1].Kind != formats.Raw {
		t.Errorf("turn.started is %s", evs[1].Kind)
	}
	evs, _ = formatstest.ReadWarnings(t, Dialect, formatstest.Fixture(t, "cli-agents", "gemini-failed.jsonl"))
	if s := evs[0]; s.Kind != formats.RunStart || s.Run.Model != "gemini-2.5-pro" || s.Run.Provider != "gcp.gemini" {
		t.Errorf("gemini start %+v", s)
	}
	if got := formatstest.Kinds(evs); got != "run_start text_delta tool_call tool_result notice notice notice run_end" {
		t.Errorf("kinds %s", got)
	}
	if w := evs[4]; w.Severity != formats.Warning {
		t.Errorf("warning %+v", w)
	}
	end := evs[len(evs)-1]
	if end.Status != formats.Failed || end.Text != "[API Error: 429 RESOURCE_EXHAUSTED]" || end.Run.ExitCode != formats.Some(1) {
		t.Errorf("failed run %+v", end)
	}
	if n := evs[6]; n.Text != "Error when talking to Gemini API" {
		t.Errorf("stderr %+v", n)
	}
}

func TestReadCancelledAndNextRun(t *testing.T) {
	evs, _ := formatstest.ReadWarnings(t, Dialect, formatstest.Fixture(t, "cli-agents", "cancelled.jsonl"))
	var ends []*formats.Event
	for _, e := range evs {
		if e.Kind == formats.RunEnd {
			ends = append(ends, e)
		}
	}
	if len(ends) != 2 || ends[0].Status != formats.Cancelled || ends[0].Run.ExitCode.OK || ends[1].Status != formats.Completed || ends[1].Run.SessionID != "sess-2" {
		t.Fatalf("runs %+v", ends)
	}
}

func TestReadOddRecords(t *testing.T) {
	in := `{"type":"tool_end","toolId":"x"}` + "\n" + `{"type":"error","message":"m"}` + "\n" + `{"type":"mystery","a":1}` + "\n" + `{"type":"done"}` + "\n"
	evs, warn := formatstest.ReadWarnings(t, Dialect, in)
	if got := formatstest.Kinds(evs); got != "tool_result notice raw run_end" {
		t.Errorf("kinds %s", got)
	}
	if evs[0].Call.Status != formats.Failed || evs[1].Severity != formats.Error || evs[3].Status != formats.Failed {
		t.Errorf("events %+v %+v %+v", evs[0].Call, evs[1], evs[3])
	}
	if !strings.Contains(warn, "tool_end without success") || !strings.Contains(warn, "done without a result") {
		t.Errorf("warnings %q", warn)
	}
}

func TestWriteFlattensSubagentsAndRefusals(t *testing.T) {
	out, rep := formatstest.WriteReport(t, Dialect, []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s", Model: "m"}},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "t1", Name: "Task", Args: []byte(`{"p":1}`)}},
		{Kind: formats.AgentStart, Agent: "a1", AgentInfo: formats.AgentInfo{ParentCall: "t1"}},
		{Kind: formats.TextDelta, Agent: "a1", Text: "sub says"},
		{Kind: formats.ToolCall, Agent: "a1", Call: formats.Call{ID: "t2", Name: "grep"}},
		{Kind: formats.ToolResult, Agent: "a1", Call: formats.Call{ID: "t2", Status: formats.Completed, Output: formats.TextOutput("hit")}},
		{Kind: formats.Usage, Agent: "a1", Usage: formats.UsageInfo{InputTokens: formats.Some[int64](10), OutputTokens: formats.Some[int64](1)}},
		{Kind: formats.AgentEnd, Agent: "a1", Status: formats.Completed, Text: "report"},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "t1", Status: formats.Completed, Output: formats.TextOutput("report")}},
		{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](5), OutputTokens: formats.Some[int64](2), CostUSD: formats.Some(0.5)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "t3", Name: "bash", Status: formats.Denied, Error: "no approval"}},
		{Kind: formats.RunEnd, Status: formats.Denied, Run: formats.RunInfo{ExitCode: formats.Some(2)}},
	})
	want := `{"type":"tool_start","toolName":"Task","toolId":"t1","args":{"p":1}}
{"type":"tool_start","toolName":"grep","toolId":"t2"}
{"type":"tool_end","toolId":"t2","success":true,"output":"hit"}
{"type":"tool_end","toolId":"t1","success":true,"output":"report"}
{"type":"tool_start","toolName":"bash","toolId":"t3"}
{"type":"tool_end","toolId":"t3","success":false,"error":"no approval"}
{"type":"done","result":{"success":false,"text":"no approval","exitCode":2,"stats":{"inputTokens":15,"outputTokens":3,"totalTokens":18,"cachedTokens":null,"durationMs":null,"toolCalls":3},"sessionId":"s","stderr":null,"costUsd":0.5}}
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if rep != "" {
		t.Errorf("the writer reported losses the pipeline reports from Carries:\n%s", rep)
	}
}

func TestWriteTextOnlyOnce(t *testing.T) {
	out, _ := formatstest.WriteReport(t, Dialect, []*formats.Event{
		{Kind: formats.RunStart},
		{Kind: formats.TextDelta, Text: "a"},
		{Kind: formats.TextDelta, Text: "b"},
		{Kind: formats.Message, Text: "ab"},
		{Kind: formats.TurnEnd, Status: formats.Completed, Text: "ab"},
		{Kind: formats.Message, Text: "second"},
		{Kind: formats.TurnEnd, Status: formats.Cancelled},
		{Kind: formats.RunEnd, Status: formats.Cancelled},
	})
	want := `{"type":"text_delta","text":"a"}
{"type":"text_delta","text":"b"}
{"type":"turn_end"}
{"type":"text_delta","text":"second"}
{"type":"turn_end"}
{"type":"done","result":{"success":false,"text":"Cancelled.","exitCode":1,"stats":{"inputTokens":null,"outputTokens":null,"totalTokens":null,"cachedTokens":null,"durationMs":null,"toolCalls":0},"sessionId":null,"stderr":null,"costUsd":null}}
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

// FuzzReader: tool calls and answers are left out of the comparison: the
// writer announces a call that ended unannounced, and gives done the last
// text as its answer when the source had none.
func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "cli-agents", "*"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, Dialect, data, formats.ToolResult, formats.TextDelta,
			formats.ThinkingDelta, formats.TurnEnd)
	})
}

func TestWriteMessageAfterItsToolCall(t *testing.T) {
	// Some sources end a message after the tool calls it holds: the
	// message repeats text that deltas already carried.
	out, _ := formatstest.WriteReport(t, Dialect, []*formats.Event{
		{Kind: formats.RunStart},
		{Kind: formats.ThinkingDelta, Text: "hm"},
		{Kind: formats.TextDelta, Text: "Reading it."},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c", Name: "Read"}},
		{Kind: formats.Message, Text: "Reading it.", Thinking: "hm"},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c", Status: formats.Completed}},
		{Kind: formats.RunEnd, Status: formats.Completed},
	})
	if n := strings.Count(out, "Reading it."); n != 2 || strings.Count(out, `"hm"`) != 1 {
		t.Errorf("text written %d times (want once, and once in done):\n%s", n, out)
	}
}

// TestLive: on a pipe, each event comes as soon as its line does.
func TestLive(t *testing.T) {
	pr, pw := io.Pipe()
	r := newReader(pr, formats.ReadOptions{Dialect: Dialect.Name, Report: formats.NewReport(io.Discard)})
	for _, l := range []string{`{"type":"text_delta","text":"a"}`, `{"type":"tool_start","toolName":"Bash","toolId":"t"}`, `{"type":"turn_end"}`} {
		go pw.Write([]byte(l + "\n"))
		if ev := formatstest.Next(t, r); ev == nil || ev.Source.Line == nil {
			t.Fatalf("no event for %s", l)
		}
	}
	pw.Close()
}
