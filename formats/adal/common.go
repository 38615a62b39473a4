package adal

import (
	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// carries is what every AdaL writer that lists tool calls can carry: the
// run's model, its answer, its tool calls with their statuses (refusals
// included) and its outcome with its exit code.
const carries = formats.ModelNames | formats.AssistantText | formats.ToolCalls | formats.SubagentToolCalls | formats.CancelledCalls |
	formats.Refusals | formats.RunOutcomes

// The losses of AdaL's own encodings, as the writers report them and the
// dialects' Quirks list them.
const (
	lossToolErrors  = "tool error texts (merged into the output)"
	lossMessages    = "assistant messages besides the answer"
	lossPreviews    = "tool outputs past the adal-json preview size (kept as a preview)"
	lossErrors      = "errors besides the run's failure"
	lossWentOn      = "refusals in runs that went on after them (written as failed tool calls)"
	lossStopAnswers = "answers after the refusal a run stopped at"
)

// messagesLost counts the main agent's assistant messages that an AdaL
// output has no place for: all of them but the last, when the answer
// written is that message's text (or no answer event said otherwise).
func messagesLost(v *formats.RunView, wroteAnswer bool) int {
	n := v.Messages
	if n > 0 && wroteAnswer && (!v.Answered() || v.Answer() == v.LastText) {
		n--
	}
	return n
}

// mergesError reports whether a result's error text is merged into its
// output, which AdaL has a single field for.
func mergesError(e *formats.Event) bool {
	return e.Call.Status != formats.Denied && e.Call.Error != "" && (e.Call.Output != "" || len(e.Call.OutputJSON) > 0)
}

func args(a json.RawMessage) json.RawMessage {
	if len(a) == 0 {
		return json.RawMessage("{}")
	}
	return a
}

// resultStatus maps a call's status to the words tool_result uses.
func resultStatus(s formats.Status) string {
	switch s {
	case formats.Completed:
		return "completed"
	case formats.Cancelled:
		return "cancelled"
	}
	return "failed"
}

// outputOf is what a call returned, with its error text when it has one:
// AdaL has a single output field.
func outputOf(c *formats.Call) string {
	switch {
	case c.Error == "":
		return c.Output
	case c.Output == "":
		return c.Error
	}
	return c.Output + "\n" + c.Error
}
