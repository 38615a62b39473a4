package cliagents

import (
	"io"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The lines the writer prints, with the crate's field names and order.
type textLine struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolStartLine struct {
	Type     string          `json:"type"`
	ToolName string          `json:"toolName"`
	ToolID   string          `json:"toolId"`
	Args     json.RawMessage `json:"args,omitempty"`
}

type toolEndLine struct {
	Type    string  `json:"type"`
	ToolID  string  `json:"toolId"`
	Success bool    `json:"success"`
	Output  *string `json:"output,omitempty"`
	Error   *string `json:"error,omitempty"`
}

type typeLine struct {
	Type string `json:"type"`
}

type errorLine struct {
	Type     string `json:"type"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
}

type doneLine struct {
	Type   string     `json:"type"`
	Result doneResult `json:"result"`
}

// doneResult is RunResult as the crate serializes it: every field present,
// null when unknown.
type doneResult struct {
	Success   bool     `json:"success"`
	Text      *string  `json:"text"`
	ExitCode  *int     `json:"exitCode"`
	Stats     runStats `json:"stats"`
	SessionID *string  `json:"sessionId"`
	Stderr    *string  `json:"stderr"`
	CostUSD   *float64 `json:"costUsd"`
}

type writer struct {
	w    io.Writer
	opts formats.WriteOptions
	run  encoding
}

// encoding is what the writer keeps of the lines it wrote for one run; the
// run's meaning (outcome, answer, calls, usage) is the run view's.
type encoding struct {
	announced map[string]bool // calls with a tool_start line
	// Deltas came since the last whole message: it repeats them (a tool
	// call between them does not change that).
	streamedText, streamedThinking bool
	turnText                       bool // the main agent wrote text in the current turn
}

// Quirks are the losses of cli-agents' own encoding, which the writer
// reports itself.
var Quirks = []formats.Quirk{formats.FailedRunAnswers}

func newWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &writer{w: w, opts: o}
}

// Observe follows a record the pipeline copies verbatim; nothing of it is
// needed to write what comes after.
func (c *writer) Observe(*formats.Event, *formats.RunView) {}

func (c *writer) Write(e *formats.Event, v *formats.RunView) error {
	r := &c.run
	if r.announced == nil || e.Kind == formats.RunStart {
		*r = encoding{announced: map[string]bool{}}
	}
	if e.Agent != "" {
		return c.subagent(e)
	}
	switch e.Kind {
	case formats.TextDelta:
		r.turnText, r.streamedText = true, true
		return c.line(textLine{"text_delta", e.Piece()})
	case formats.ThinkingDelta:
		r.streamedThinking = true
		return c.line(textLine{"thinking_delta", e.Piece()})
	case formats.Message:
		return c.message(e)
	case formats.ToolCall:
		return c.toolStart(&e.Call)
	case formats.ToolResult:
		return c.toolEnd(e)
	case formats.TurnEnd:
		if e.FinalText() != "" && !r.turnText {
			// The turn's text came only with its end.
			if err := c.line(textLine{"text_delta", e.FinalText()}); err != nil {
				return err
			}
		}
		r.turnText = false
		return c.line(typeLine{"turn_end"})
	case formats.Notice:
		if e.Severity == formats.Info {
			return nil
		}
		return c.line(errorLine{"error", e.NoticeText(), e.Severity.String()})
	case formats.RunEnd:
		return c.done(e, v)
	}
	return nil
}

// subagent writes what a flat stream can keep of a subagent's event: its
// tool calls, flattened into the run.
func (c *writer) subagent(e *formats.Event) error {
	switch e.Kind {
	case formats.ToolCall:
		return c.toolStart(&e.Call)
	case formats.ToolResult:
		return c.toolEnd(e)
	}
	return nil // the pipeline reports a subagent's thinking (SubagentThinking)
}

func (c *writer) line(v any) error { return formats.WriteJSONLine(c.w, v) }

// message writes a whole message as deltas unless deltas carried it.
func (c *writer) message(e *formats.Event) error {
	r := &c.run
	streamedText, streamedThinking := r.streamedText, r.streamedThinking
	r.streamedText, r.streamedThinking = false, false
	if e.Thinking != "" && !streamedThinking {
		if err := c.line(textLine{"thinking_delta", e.Thinking}); err != nil {
			return err
		}
	}
	if streamedText || e.MessageText() == "" {
		return nil
	}
	r.turnText = true
	return c.line(textLine{"text_delta", e.MessageText()})
}

func (c *writer) toolStart(call *formats.Call) error {
	c.run.announced[call.ID] = true
	var args json.RawMessage
	if len(call.Args) > 0 {
		args = call.Args
	}
	return c.line(toolStartLine{"tool_start", call.Name, call.ID, args})
}

// toolEnd writes a call's end; a call no tool_start announced (an AdaL
// refusal) is announced first.
func (c *writer) toolEnd(e *formats.Event) error {
	if !c.run.announced[e.Call.ID] {
		if err := c.toolStart(&e.Call); err != nil {
			return err
		}
	}
	return c.line(toolEndLine{"tool_end", e.Call.ID, e.Call.Status.OK(), formats.NilIfEmpty(e.Call.Output.Text()), formats.NilIfEmpty(e.Call.Error)})
}

// done writes the run's RunResult from the run view. The stats are in the
// convention the reader takes for a stream that names no provider (it
// never names one): input tokens include cached ones.
func (c *writer) done(e *formats.Event, v *formats.RunView) error {
	c.run = encoding{}
	code := v.ExitCode
	res := doneResult{Success: v.Success(), ExitCode: &code, SessionID: formats.NilIfEmpty(v.Info.SessionID)}
	switch {
	case v.Success():
		text := v.Answer()
		res.Text = &text
	case v.Status == formats.Cancelled:
		text := cancelledText
		res.Text = &text
	default:
		res.Text = formats.NilIfEmpty(v.Failure)
		if v.Answered() && v.Answer() != "" {
			c.opts.Report.Quirk(formats.FailedRunAnswers)
		}
	}
	u := v.Usage
	calls := int64(v.Calls.Count())
	res.Stats = runStats{u.InputTokens.Ptr(), u.OutputTokens.Ptr(), u.Total().Ptr(), u.CacheReadTokens.Ptr(), nil, &calls}
	if e.Duration > 0 {
		ms := e.Duration.Milliseconds()
		res.Stats.DurationMs = &ms
	}
	res.CostUSD = u.CostUSD.Ptr()
	return c.line(doneLine{"done", res})
}

func (c *writer) Close() error { return nil }
