package gemini

import (
	"io"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The gemini-stream writer prints a line per event. The run's meaning (its
// outcome, answer, usage and calls) is the run view's; the writer keeps
// only what it has printed of the run.
type streamWriter struct {
	w    io.Writer
	opts formats.WriteOptions
	// open: the run's init is out, with session id and model.
	open           bool
	session, model string
	// calls are the calls announced with a tool_use line.
	calls formats.CallTracker
	// text is the main agent's text streamed in deltas, so that its whole
	// message is not printed again.
	text formats.TextTracker
	// answer is what a reader takes for the answer of what is printed.
	answer answerTracker
	// srcToolCalls is the count of tool calls a gemini-json source gives,
	// whose calls are not events.
	srcToolCalls formats.Opt[int64]
}

func newStreamWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &streamWriter{w: w, opts: o, calls: formats.CallTracker{DropOutputs: true, ForgetEnded: true}}
}

type initLine struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
}

type messageLine struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	Delta     bool   `json:"delta,omitempty"`
}

type toolUseLine struct {
	Type       string          `json:"type"`
	Timestamp  string          `json:"timestamp"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
}

type toolResultLine struct {
	Type      string       `json:"type"`
	Timestamp string       `json:"timestamp"`
	ToolID    string       `json:"tool_id"`
	Status    string       `json:"status"`
	Output    *string      `json:"output,omitempty"`
	Error     *errorObject `json:"error,omitempty"`
}

type errorLine struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
}

type resultLine struct {
	Type      string       `json:"type"`
	Timestamp string       `json:"timestamp"`
	Status    string       `json:"status"`
	Error     *errorObject `json:"error,omitempty"`
	Stats     *streamStats `json:"stats,omitempty"`
}

// Observe follows a record that the pipeline copies from gemini-stream
// as it is: the writer prints nothing of the run, and forgets it at its
// end.
func (s *streamWriter) Observe(e *formats.Event, _ *formats.RunView) {
	if e.Kind == formats.RunStart || e.Kind == formats.RunEnd {
		s.reset()
	}
}

func (s *streamWriter) Write(e *formats.Event, v *formats.RunView) error {
	rep := s.opts.Report
	ts := formatTime(e.TimeOf())
	if e.Kind == formats.RunStart {
		err := s.start(ts, e.Run.SessionID, e.Run.Model)
		s.srcToolCalls = formats.Opt[int64]{}
		if e.Source.From(JSON.Name) && e.Source.Line != nil {
			s.srcToolCalls = toolCallsOf(e.Source.Line)
		}
		return err
	}
	if !s.open {
		if err := s.start(ts, "", ""); err != nil {
			return err
		}
	}
	main := e.Agent == ""
	if main && e.Kind != formats.TextDelta && e.Kind != formats.Message {
		s.text.Flush("") // a message streamed before this event has ended
	}
	switch e.Kind {
	case formats.UserMessage:
		if !main {
			return nil // the pipeline reports it (SubagentPrompts)
		}
		s.answer.other()
		return formats.WriteJSONLine(s.w, messageLine{"message", ts, "user", e.Prompt(), false})
	case formats.TextDelta:
		if main {
			s.text.Delta("", e.Piece())
			s.answer.delta(e.Piece())
			return formats.WriteJSONLine(s.w, messageLine{"message", ts, "assistant", e.Piece(), true})
		}
	case formats.Message:
		// Deltas that carried this very text were its stream; any other
		// message is one of its own.
		if streamed := s.text.Flush(""); main && (streamed == "" || streamed != e.MessageText()) && (e.MessageText() != "" || e.Thinking == "") {
			s.answer.whole(e.MessageText())
			return formats.WriteJSONLine(s.w, messageLine{"message", ts, "assistant", e.MessageText(), false})
		}
	case formats.Answer:
		// Gemini's answer is its last message: one that the reader would
		// not take for it is printed.
		if main && e.AnswerText() != "" && e.AnswerText() != s.answer.text.String() {
			s.answer.whole(e.AnswerText())
			return formats.WriteJSONLine(s.w, messageLine{"message", ts, "assistant", e.AnswerText(), false})
		}
	case formats.ToolCall:
		s.answer.tool()
		c := s.calls.Start(e)
		return formats.WriteJSONLine(s.w, toolUseLine{"tool_use", ts, c.Name, c.ID, args(c.Args)})
	case formats.ToolResult:
		s.answer.tool()
		c, started := s.calls.Finish(e)
		if !started && c.Name != "" {
			// Gemini names a tool only in tool_use.
			if err := formats.WriteJSONLine(s.w, toolUseLine{"tool_use", ts, c.Name, c.ID, args(c.Args)}); err != nil {
				return err
			}
		}
		return formats.WriteJSONLine(s.w, toolResult(ts, &e.Call))
	case formats.Notice:
		s.answer.other()
		sev := "warning"
		if e.Severity == formats.Error {
			sev = "error"
		}
		return formats.WriteJSONLine(s.w, errorLine{"error", ts, sev, e.NoticeText()})
	case formats.RunEnd:
		defer s.reset()
		if e.Run.SessionID != "" && s.session == "" {
			rep.Quirk(formats.LateSessionIDs)
		}
		if e.Run.Model != "" && s.model == "" {
			rep.Quirk(lossLateModels)
		}
		l := result(ts, e, v, s.srcToolCalls)
		if !v.Success() && readExitCode(l.Error, v) != v.ExitCode {
			rep.Quirk(lossExitCodes)
		}
		return formats.WriteJSONLine(s.w, l)
	}
	return nil
}

func (s *streamWriter) start(ts, sessionID, model string) error {
	s.reset()
	s.open, s.session, s.model = true, sessionID, model
	return formats.WriteJSONLine(s.w, initLine{"init", ts, sessionID, model})
}

func toolResult(ts string, c *formats.Call) toolResultLine {
	l := toolResultLine{Type: "tool_result", Timestamp: ts, ToolID: c.ID, Status: "success"}
	if c.Output.Text() != "" || c.Status == formats.Completed {
		out := c.Output.Text()
		l.Output = &out
	}
	switch c.Status {
	case formats.Completed:
		if c.Error != "" {
			l.Error = &errorObject{Type: "error", Message: c.Error}
		}
	case formats.Denied:
		l.Status, l.Error = "error", &errorObject{Type: errDenied, Message: c.Error}
	case formats.Cancelled:
		l.Status, l.Error = "error", &errorObject{Type: errCancelled, Message: c.Error}
	default:
		l.Status = "error"
		if c.Error != "" {
			l.Error = &errorObject{Type: "execution_failed", Message: c.Error}
		}
	}
	return l
}

// result is the run's closing event: the view's outcome, failure and
// usage totals.
// A gemini-json source counts its calls (srcCalls) without giving them.
func result(ts string, e *formats.Event, v *formats.RunView, srcCalls formats.Opt[int64]) resultLine {
	l := resultLine{Type: "result", Timestamp: ts, Status: "success"}
	if !v.Success() {
		l.Status = "error"
		l.Error = &errorObject{Type: errorType(formats.Some(v.ExitCode))}
		if v.FailureSaid {
			l.Error.Message = v.Failure
		}
	}
	if u := v.Usage; !u.Empty() || e.Duration > 0 {
		// stream-json counts the thoughts only in the total: the output
		// tokens leave them out, as Gemini CLI's do.
		c := countsOf(u, true)
		if u.ReasoningTokens.OK && u.InputTokens.OK && u.OutputTokens.OK {
			c.Total = nonNegative(formats.Some(u.InputTokens.V + u.OutputTokens.V)) // the thoughts' only count
		}
		calls := int64(v.Calls.Count())
		if calls == 0 && srcCalls.OK {
			calls = srcCalls.V
		}
		l.Stats = &streamStats{TotalTokens: c.Total, InputTokens: c.Prompt, OutputTokens: c.Candidates,
			Cached: c.Cached, Input: c.Input, ToolCalls: &calls}
		if e.Duration > 0 {
			ms := e.Duration.Milliseconds()
			l.Stats.DurationMs = &ms
		}
	}
	return l
}

// readExitCode is the exit code that a run ending with the result error
// reads back with: its type's, else 2 after a refused call, else 1.
func readExitCode(e *errorObject, v *formats.RunView) int {
	if c := exitCode(formats.Failed, e); c.OK {
		return c.V
	}
	if v.Stopped {
		return 2
	}
	return 1
}

func (s *streamWriter) reset() {
	s.open, s.session, s.model = false, "", ""
	s.calls.Reset()
	s.text.Reset()
	s.answer = answerTracker{}
}

func (s *streamWriter) Close() error { return nil }

func args(a json.RawMessage) json.RawMessage {
	if len(a) == 0 {
		return json.RawMessage("{}")
	}
	return a
}
