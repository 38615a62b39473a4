package formatstest

import (
	"time"

	"github.com/agentconv/agentconv/formats"
)

// SampleStart is when SubagentRun starts.
var SampleStart = time.Date(2026, 3, 2, 9, 14, 0, 0, time.UTC)

func sampleAt(ms int) time.Time { return SampleStart.Add(time.Duration(ms) * time.Millisecond) }

// SubagentRun is a timed run in the shape malac gives: a turn, a task call
// that starts a subagent whose call fails, a denied call with its
// permission request and answer, notices, a compaction, a model change.
func SubagentRun(session string) []*formats.Event {
	call := func(id, name string) formats.Call {
		return formats.Call{ID: id, Name: name, Args: []byte(`{"command":"npm test"}`)}
	}
	return []*formats.Event{
		{Kind: formats.RunStart, Time: sampleAt(0), Run: formats.RunInfo{SessionID: session, Model: "claude-sonnet-4-5", Provider: "anthropic", AgentName: "malac"}},
		{Kind: formats.TurnStart, Time: sampleAt(100)},
		{Kind: formats.ToolCall, Time: sampleAt(1000), Call: call("call_m1", "task")},
		{Kind: formats.AgentStart, Time: sampleAt(1050), Agent: "sub1", AgentInfo: formats.AgentInfo{Label: "investigator", ParentCall: "call_m1", Model: "claude-haiku-4-5"}},
		{Kind: formats.ToolCall, Time: sampleAt(1100), Agent: "sub1", Call: call("call_s1", "bash")},
		{Kind: formats.ToolResult, Time: sampleAt(3950), Agent: "sub1", Duration: 2800 * time.Millisecond,
			Call: formats.Call{ID: "call_s1", Name: "bash", Status: formats.Failed, Output: formats.TextOutput("FAIL checkout.test.ts"), Error: "exit status 1"}},
		{Kind: formats.Usage, Time: sampleAt(4000), Agent: "sub1", Usage: formats.UsageInfo{InputTokens: formats.Some[int64](100), OutputTokens: formats.Some[int64](20)}},
		{Kind: formats.AgentEnd, Time: sampleAt(4500), Agent: "sub1", Status: formats.Completed, Text: "found it"},
		{Kind: formats.ToolResult, Time: sampleAt(4600), Call: formats.Call{ID: "call_m1", Name: "task", Status: formats.Completed, Output: formats.TextOutput("found it")}},
		{Kind: formats.ToolCall, Time: sampleAt(5000), Call: call("call_m2", "edit")},
		{Kind: formats.PermissionRequest, Time: sampleAt(5010), Permission: formats.Permission{RequestID: "r1"}, Call: formats.Call{ID: "call_m2", Name: "edit"}},
		{Kind: formats.PermissionAnswer, Time: sampleAt(5500), Permission: formats.Permission{RequestID: "r1", Allowed: false, Reason: "user said no"}},
		{Kind: formats.ToolResult, Time: sampleAt(5500), Call: formats.Call{ID: "call_m2", Name: "edit", Status: formats.Denied, Error: "user said no"}},
		{Kind: formats.Notice, Time: sampleAt(6000), Severity: formats.Warning, Text: "retrying"},
		{Kind: formats.ModelChange, Time: sampleAt(6500), Run: formats.RunInfo{Model: "claude-opus-4"}},
		{Kind: formats.Compaction, Time: sampleAt(7000), Text: "summary"},
		{Kind: formats.TurnEnd, Time: sampleAt(8000), Status: formats.Completed},
		{Kind: formats.RunEnd, Time: sampleAt(9000), Status: formats.Completed, Run: formats.RunInfo{ExitCode: formats.Some(0)},
			Usage: formats.UsageInfo{InputTokens: formats.Some[int64](1000), OutputTokens: formats.Some[int64](200), CacheReadTokens: formats.Some[int64](50)}},
	}
}

// memExporter keeps its spans at Shutdown (the SDK's in-memory exporter
// forgets them).
