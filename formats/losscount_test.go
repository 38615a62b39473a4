package formats_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// TestLossCounter: a call is counted at its start, a subagent at its
// start, a streamed message at its first delta (the whole message after
// it is the same one), and a run's totals only when its requests did not
// carry the same counts.
func TestLossCounter(t *testing.T) {
	u := formats.UsageInfo{InputTokens: formats.Some[int64](10)}
	evs := []*formats.Event{
		{Kind: formats.RunStart},
		{Kind: formats.TextDelta, Text: "a"},
		{Kind: formats.TextDelta, Text: "b"},
		{Kind: formats.Message, Text: "ab"},
		{Kind: formats.Usage, Usage: u},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "1"}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "1"}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "2"}}, // never started: a call of its own
		{Kind: formats.AgentStart, Agent: "s"},
		{Kind: formats.AgentEnd, Agent: "s"},
		{Kind: formats.Message, Text: "c"},
		{Kind: formats.RunEnd, Usage: u},
		{Kind: formats.RunStart},
		{Kind: formats.RunEnd, Usage: u}, // totals only: counted
	}
	var c formats.LossCounter
	got := map[formats.Feature]int{}
	for _, e := range evs {
		counted := c.Count(e, formats.Needs(e))
		for _, f := range []formats.Feature{formats.AssistantText, formats.ToolCalls, formats.Subagents, formats.TokenUsage} {
			if counted&f != 0 {
				got[f]++
			}
		}
	}
	want := map[formats.Feature]int{formats.AssistantText: 2, formats.ToolCalls: 2, formats.Subagents: 1, formats.TokenUsage: 2}
	for f, n := range want {
		if got[f] != n {
			t.Errorf("%s: %d, want %d", f.Name(), got[f], n)
		}
	}
}
