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
	run  writerRun
}

// writerRun is what the writer follows of one run, for its done line.
type writerRun struct {
	calls formats.CallTracker
	text  formats.TextTracker
	// Deltas came since the last whole message: it repeats them (a tool
	// call between them does not change that).
	streamedText, streamedThinking bool
	session                        string
	usage                          formats.UsageInfo
	nUsage                         int
	answered                       bool
	answer                         string
	lastText                       string // the main agent's last assistant text
	turnText                       bool   // the main agent wrote text in the current turn
	lastError                      string
	refusal                        string // the reason of the last refused call
	nCalls                         int64
}

func newWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &writer{w: w, opts: o}
}

func (c *writer) lose(what string) { c.opts.Report.Lose(what) }

func (c *writer) Write(e *formats.Event) error {
	if e.Source.From(c.opts.Dialect) && (e.Source.Line != nil || e.Source.Continued) {
		// Same dialect: the record goes out as it came.
		c.follow(e)
		if e.Source.Continued {
			return nil
		}
		return formats.WriteRawLine(c.w, e.Source.Line)
	}
	r := &c.run
	if !e.Time.IsZero() {
		c.lose("event timestamps")
	}
	if e.Agent != "" {
		return c.subagent(e)
	}
	switch e.Kind {
	case formats.RunStart:
		c.follow(e)
		if e.Run.Model != "" {
			c.lose("model names")
		}
		if e.Run.Cwd != "" {
			c.lose("working directories")
		}
	case formats.TextDelta:
		r.text.Delta("", e.Text)
		r.turnText, r.streamedText = true, true
		return c.line(textLine{"text_delta", e.Text})
	case formats.ThinkingDelta:
		r.streamedThinking = true
		return c.line(textLine{"thinking_delta", e.Text})
	case formats.Message:
		return c.message(e)
	case formats.ToolCall:
		c.endText()
		return c.toolStart(&e.Call)
	case formats.ToolResult:
		c.endText()
		return c.toolEnd(e)
	case formats.TurnEnd:
		c.endText()
		if e.Status == formats.Failed || e.Status == formats.Cancelled {
			c.lose("turn statuses")
		}
		if e.Text != "" && !r.turnText {
			// The turn's text came only with its end.
			r.lastText = e.Text
			if err := c.line(textLine{"text_delta", e.Text}); err != nil {
				return err
			}
		}
		r.turnText = false
		return c.line(typeLine{"turn_end"})
	case formats.Notice:
		if e.Severity == formats.Info {
			c.lose("info notices")
			return nil
		}
		if e.Severity == formats.Error {
			r.lastError = e.Text
		}
		return c.line(errorLine{"error", e.Text, e.Severity.String()})
	case formats.Usage:
		c.addUsage(e)
	case formats.Answer:
		r.answered, r.answer = true, e.Text
	case formats.RunEnd:
		return c.done(e)
	case formats.TurnStart:
	default:
		c.loseKind(e)
	}
	return nil
}

// loseKind reports an event that cli-agents has no place for.
func (c *writer) loseKind(e *formats.Event) {
	switch e.Kind {
	case formats.UserMessage:
		c.lose("user prompts")
	case formats.Todos:
		c.lose("todo lists")
	case formats.Compaction:
		c.lose("compactions")
	case formats.ModelChange:
		c.lose("model changes")
	case formats.PermissionRequest:
		c.lose("permission requests")
	case formats.PermissionAnswer:
		c.lose("permission answers")
	case formats.Raw:
		c.lose("unknown " + e.Source.Dialect + " events")
	}
}

// subagent writes what a flat stream can keep of a subagent's event: its
// tool calls, flattened into the run; the rest is reported.
func (c *writer) subagent(e *formats.Event) error {
	switch e.Kind {
	case formats.AgentStart:
		c.lose("subagents (their tool calls are flattened into the run)")
	case formats.AgentEnd:
		if e.Text != "" {
			c.lose("subagent reports")
		}
	case formats.ToolCall:
		return c.toolStart(&e.Call)
	case formats.ToolResult:
		return c.toolEnd(e)
	case formats.TextDelta, formats.Message:
		c.lose("subagent text")
	case formats.ThinkingDelta:
		c.lose("thinking text")
	case formats.Answer:
		c.lose("subagent answers")
	case formats.Notice:
		c.lose("subagent notices")
	case formats.Usage:
		c.addUsage(e)
	case formats.TurnEnd, formats.TurnStart:
	default:
		c.loseKind(e)
	}
	return nil
}

// follow keeps the run's state for an event written verbatim.
func (c *writer) follow(e *formats.Event) {
	switch e.Kind {
	case formats.RunStart:
		c.run = writerRun{session: e.Run.SessionID}
	case formats.ToolCall:
		c.run.calls.Start(e)
	case formats.ToolResult:
		c.run.calls.Finish(e)
	case formats.RunEnd:
		c.run = writerRun{}
	}
}

func (c *writer) line(v any) error { return formats.WriteJSONLine(c.w, v) }

// message writes a whole message as deltas unless deltas carried it.
func (c *writer) message(e *formats.Event) error {
	r := &c.run
	streamedText, streamedThinking := r.streamedText, r.streamedThinking
	r.streamedText, r.streamedThinking = false, false
	r.text.Whole("")
	if e.Thinking != "" && !streamedThinking {
		if err := c.line(textLine{"thinking_delta", e.Thinking}); err != nil {
			return err
		}
	}
	if e.Text != "" {
		r.lastText = e.Text
	}
	if streamedText || e.Text == "" {
		return nil
	}
	r.turnText = true
	return c.line(textLine{"text_delta", e.Text})
}

func (c *writer) endText() {
	if t := c.run.text.Flush(""); t != "" {
		c.run.lastText = t
	}
}

func (c *writer) toolStart(call *formats.Call) error {
	c.run.nCalls++
	c.run.calls.Start(&formats.Event{Kind: formats.ToolCall, Call: *call})
	var args json.RawMessage
	if len(call.Args) > 0 {
		args = call.Args
	}
	return c.line(toolStartLine{"tool_start", call.Name, call.ID, args})
}

// toolEnd writes a call's end; a call no tool_start announced (an AdaL
// refusal) is announced first.
func (c *writer) toolEnd(e *formats.Event) error {
	if t := c.run.calls.Get(e.Call.ID); t == nil {
		if err := c.toolStart(&e.Call); err != nil {
			return err
		}
	}
	c.run.calls.Finish(e)
	switch e.Call.Status {
	case formats.Denied:
		c.run.refusal = e.Call.Error
		c.lose("refused calls (written as failed tool calls)")
	case formats.Cancelled:
		c.lose("cancelled tool calls (written as failed)")
	}
	if e.Duration > 0 {
		c.lose("tool call durations")
	}
	return c.line(toolEndLine{"tool_end", e.Call.ID, e.Call.Status.OK(), formats.NilIfEmpty(e.Call.Output), formats.NilIfEmpty(e.Call.Error)})
}

func (c *writer) addUsage(e *formats.Event) {
	c.run.usage.Add(e.Usage)
	c.run.nUsage++
}

// done writes the run's RunResult.
func (c *writer) done(e *formats.Event) error {
	r := &c.run
	c.endText()
	defer func() { c.run = writerRun{} }()
	success := e.Status.OK() || (e.Status == formats.StatusUnknown && (!e.Run.ExitCode.OK || e.Run.ExitCode.V == 0) && r.lastError == "")
	res := doneResult{Success: success, ExitCode: e.Run.ExitCode.Ptr(), SessionID: formats.NilIfEmpty(r.session)}
	if e.Run.SessionID != "" {
		res.SessionID = formats.NilIfEmpty(e.Run.SessionID)
	}
	switch {
	case success:
		text := r.lastText
		if r.answered {
			text = r.answer
		}
		res.Text = &text
	case e.Status == formats.Cancelled:
		text := cancelledText
		res.Text = &text
	default:
		text := e.Text
		if text == "" && e.Status == formats.Denied {
			text = r.refusal
		}
		if text == "" {
			text = r.lastError
		}
		res.Text = formats.NilIfEmpty(text)
		if r.answered && r.answer != "" {
			c.lose("answers of failed runs")
		}
	}
	// The source's run totals, else the sum of its per-request counts.
	u := e.Usage
	if u.Empty() {
		u = r.usage
	}
	c.opts.Report.LoseN("per-request token usage (only the run's totals are kept)", r.nUsage)
	if u.CacheWriteTokens.OK {
		c.lose("cache write token counts")
	}
	res.Stats = runStats{u.InputTokens.Ptr(), u.OutputTokens.Ptr(), u.Total().Ptr(), u.CacheReadTokens.Ptr(), nil, &r.nCalls}
	if e.Duration > 0 {
		ms := e.Duration.Milliseconds()
		res.Stats.DurationMs = &ms
	}
	res.CostUSD = u.CostUSD.Ptr()
	return c.line(doneLine{"done", res})
}

func (c *writer) Close() error { return nil }
