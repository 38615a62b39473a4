package otel_test

import (
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestChatMessages: with --otlp-content, each chat span carries what the
// model was given since the agent's previous request (the prompt, tool
// results) and what it answered (reasoning, text, tool calls), whether the
// source gives a request's usage before its answer (Claude, ATIF) or
// after it (malac, ACP); streamed text is one part, not repeated by the
// whole message that follows it; each text is cut at the limit.
func TestChatMessages(t *testing.T) {
	u := formats.UsageInfo{InputTokens: formats.Some[int64](10), OutputTokens: formats.Some[int64](2)}
	call := formats.Call{ID: "c1", Name: "bash", Args: []byte(`{"command":"ls"}`)}
	result := formats.Call{ID: "c1", Name: "bash", Status: formats.Completed, Output: formats.TextOutput("a.go")}
	usageFirst := []*formats.Event{
		{Kind: formats.RunStart, Time: at(0), Run: formats.RunInfo{SessionID: "s1", Model: "claude-sonnet-4-5"}},
		{Kind: formats.UserMessage, Time: at(1), Text: "list the files"},
		{Kind: formats.ThinkingDelta, Time: at(2), Text: "Use "},
		{Kind: formats.ThinkingDelta, Time: at(3), Text: "ls."},
		{Kind: formats.Usage, Time: at(4), Usage: u, Response: formats.Response{ID: "msg_1", StopReason: "tool_use"}},
		{Kind: formats.Message, Time: at(4), Text: "Listing.", Thinking: "Use ls."},
		{Kind: formats.ToolCall, Time: at(5), Call: call},
		{Kind: formats.ToolResult, Time: at(6), Call: result},
		{Kind: formats.Usage, Time: at(7), Usage: u, Response: formats.Response{ID: "msg_2", StopReason: "end_turn"}},
		{Kind: formats.TextDelta, Time: at(7), Text: "One file: "},
		{Kind: formats.TextDelta, Time: at(8), Text: "a.go, and that is all of them."},
		{Kind: formats.Message, Time: at(9), Text: "One file: a.go, and that is all of them."},
		{Kind: formats.RunEnd, Time: at(10), Status: formats.Completed},
	}
	usageLast := []*formats.Event{
		{Kind: formats.RunStart, Time: at(0), Run: formats.RunInfo{SessionID: "s2", Model: "claude-sonnet-4-5"}},
		{Kind: formats.UserMessage, Time: at(1), Text: "list the files"},
		{Kind: formats.Message, Time: at(2), Text: "Listing."},
		{Kind: formats.ToolCall, Time: at(3), Call: call},
		{Kind: formats.ToolResult, Time: at(4), Call: result},
		{Kind: formats.Message, Time: at(5), Text: "One file: a.go, and that is all of them."},
		{Kind: formats.Usage, Time: at(6), Usage: u},
		{Kind: formats.TurnEnd, Time: at(7), Status: formats.Completed},
		{Kind: formats.RunEnd, Time: at(8), Status: formats.Completed},
	}
	prompt := `{"role":"user","parts":[{"type":"text","content":"list the files"}]}`
	toolMsg := `{"role":"tool","parts":[{"type":"tool_call_response","id":"c1","response":"a.go"}]}`
	callPart := `{"type":"tool_call","id":"c1","name":"bash","arguments":{"command":"ls"}}`
	for _, c := range []struct {
		name    string
		evs     []*formats.Event
		limit   string
		in, out []string // of each chat span, in order
	}{
		{"usage first", usageFirst, "4096",
			[]string{"[" + prompt + "]", "[" + toolMsg + "]"},
			[]string{`[{"role":"assistant","parts":[{"type":"reasoning","content":"Use ls."},{"type":"text","content":"Listing."},` + callPart + `],"finish_reason":"tool_call"}]`,
				`[{"role":"assistant","parts":[{"type":"text","content":"One file: a.go, and that is all of them."}],"finish_reason":"stop"}]`}},
		{"usage first, cut", usageFirst, "12",
			[]string{`[{"role":"user","parts":[{"type":"text","content":"list the fil"}]}]`, "[" + toolMsg + "]"},
			[]string{`[{"role":"assistant","parts":[{"type":"reasoning","content":"Use ls."},{"type":"text","content":"Listing."},{"type":"tool_call","id":"c1","name":"bash","arguments":"{\"command\":\""}],"finish_reason":"tool_call"}]`,
				`[{"role":"assistant","parts":[{"type":"text","content":"One file: a."}],"finish_reason":"stop"}]`}},
		{"usage last", usageLast, "4096",
			[]string{"[" + prompt + "," + toolMsg + "]"},
			[]string{`[{"role":"assistant","parts":[{"type":"text","content":"Listing."},` + callPart + `,{"type":"text","content":"One file: a.go, and that is all of them."}],"finish_reason":"stop"}]`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spans, stderr := export(t, c.evs, map[string]string{otel.ParamContent: "true", otel.ParamContentLimit: c.limit})
			var chats []sdktrace.ReadOnlySpan
			for _, s := range spans {
				if s.Name() == "chat claude-sonnet-4-5" {
					chats = append(chats, s)
				}
			}
			if len(chats) != len(c.out) {
				t.Fatalf("%d chat spans, want %d", len(chats), len(c.out))
			}
			for i, s := range chats {
				wantAttr(t, s, "gen_ai.input.messages", c.in[i])
				wantAttr(t, s, "gen_ai.output.messages", c.out[i])
			}
			if cut := c.limit != "4096"; cut != strings.Contains(stderr, "past --otlp-content-limit") || strings.Contains(stderr, "lost: ") && !cut {
				t.Errorf("losses: %s", stderr)
			}
		})
	}
	// Without --otlp-content: no messages, and the text is a loss.
	spans, stderr := export(t, usageFirst, nil)
	for _, s := range spans {
		for _, key := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"} {
			if _, ok := attr(s, key); ok {
				t.Errorf("%s: %s without --otlp-content", s.Name(), key)
			}
		}
	}
	for _, want := range []string{"lost: 4 × assistant text (without --otlp-content)", "lost: 3 × thinking text (without --otlp-content)", "lost: 1 × user prompts"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("no %q in the losses: %s", want, stderr)
		}
	}
}
