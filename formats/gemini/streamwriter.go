package gemini

import (
	"io"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

type streamWriter struct {
	w     io.Writer
	opts  formats.WriteOptions
	calls formats.CallTracker
	text  formats.TextTracker
	run   writeRun
}

// writeRun is what the writers keep of the run being written.
type writeRun struct {
	open bool
	// same: the run came from a gemini-stream input and is copied.
	same      bool
	sessionID string
	model     string
	answer    answerTracker
	usage     formats.UsageInfo
	usageSeen bool
	toolCalls int64
	// srcToolCalls is the count of tool calls a gemini-json source gives,
	// whose calls are not events.
	srcToolCalls formats.Opt[int64]
	lastError    string
	warnings     []string
	messages     int // assistant messages, for gemini-json's losses
	// answerApart: the answer is not the last message, which is lost.
	answerApart bool
	denied      string // the reason of the last refused call
}

func newStreamWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &streamWriter{w: w, opts: o}
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

func (s *streamWriter) Write(e *formats.Event) error {
	if e.Source.From(s.opts.Dialect) {
		// Same dialect: records go out as they came; events the pipeline
		// made up print nothing.
		switch e.Kind {
		case formats.RunStart:
			s.reset()
			s.run.open, s.run.same, s.run.sessionID = true, true, e.Run.SessionID
		case formats.ToolCall:
			s.calls.Start(e)
		case formats.RunEnd:
			s.reset()
		}
		if e.Source.Line != nil && !e.Source.Continued {
			return formats.WriteRawLine(s.w, e.Source.Line)
		}
		return nil
	}
	rep := s.opts.Report
	if s.run.same {
		// What the pipeline adds to close a copied, cut run loses nothing.
		rep = nil
	}
	reportLosses(e, rep, true)
	ts := formatTime(e.TimeOf())
	if e.Kind == formats.RunStart {
		err := s.start(ts, e.Run.SessionID, e.Run.Model)
		if e.Source.From(JSON.Name) && e.Source.Line != nil {
			s.run.srcToolCalls = toolCallsOf(e.Source.Line)
		}
		return err
	}
	if !s.run.open {
		if err := s.start(ts, "", ""); err != nil {
			return err
		}
	}
	r := &s.run
	main := e.Agent == ""
	if main && e.Kind != formats.TextDelta && e.Kind != formats.Message {
		s.text.Flush("") // a message streamed before this event has ended
	}
	switch e.Kind {
	case formats.UserMessage:
		if main {
			r.answer.other()
			return formats.WriteJSONLine(s.w, messageLine{"message", ts, "user", e.Text, false})
		}
	case formats.TextDelta:
		if main {
			s.text.Delta("", e.Text)
			r.answer.delta(e.Text)
			return formats.WriteJSONLine(s.w, messageLine{"message", ts, "assistant", e.Text, true})
		}
	case formats.Message:
		// Deltas that carried this very text were its stream; any other
		// message is one of its own.
		if streamed := s.text.Flush(""); main && (streamed == "" || streamed != e.Text) && (e.Text != "" || e.Thinking == "") {
			r.answer.whole(e.Text)
			return formats.WriteJSONLine(s.w, messageLine{"message", ts, "assistant", e.Text, false})
		}
	case formats.Answer:
		if main && e.Text != "" && e.Text != r.answer.text {
			r.answer.whole(e.Text)
			return formats.WriteJSONLine(s.w, messageLine{"message", ts, "assistant", e.Text, false})
		}
	case formats.ToolCall:
		r.answer.tool()
		r.toolCalls++
		c := s.calls.Start(e)
		return formats.WriteJSONLine(s.w, toolUseLine{"tool_use", ts, c.Name, c.ID, args(c.Args)})
	case formats.ToolResult:
		r.answer.tool()
		c, started := s.calls.Finish(e)
		if c.Status == formats.Denied {
			r.denied = c.Error
		}
		if !started && c.Name != "" {
			// Gemini names a tool only in tool_use.
			r.toolCalls++
			if err := formats.WriteJSONLine(s.w, toolUseLine{"tool_use", ts, c.Name, c.ID, args(c.Args)}); err != nil {
				return err
			}
		}
		return formats.WriteJSONLine(s.w, toolResult(ts, &e.Call))
	case formats.Notice:
		r.answer.other()
		sev := "warning"
		if e.Severity == formats.Error {
			sev = "error"
			r.lastError = e.Text
		}
		return formats.WriteJSONLine(s.w, errorLine{"error", ts, sev, e.Text})
	case formats.Usage:
		r.usage.Add(e.Usage)
		r.usageSeen = true
	case formats.RunEnd:
		defer s.reset()
		if e.Run.SessionID != "" && r.sessionID == "" {
			rep.Lose("session ids given only at the run's end")
		}
		return formats.WriteJSONLine(s.w, s.result(ts, e))
	}
	return nil
}

func (s *streamWriter) start(ts, sessionID, model string) error {
	s.reset()
	s.run.open, s.run.sessionID, s.run.model = true, sessionID, model
	return formats.WriteJSONLine(s.w, initLine{"init", ts, sessionID, model})
}

func toolResult(ts string, c *formats.Call) toolResultLine {
	l := toolResultLine{Type: "tool_result", Timestamp: ts, ToolID: c.ID, Status: "success"}
	if c.Output != "" || c.Status == formats.Completed {
		out := c.Output
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

// result is the run's closing event: its outcome, error and stats.
func (s *streamWriter) result(ts string, e *formats.Event) resultLine {
	r := &s.run
	l := resultLine{Type: "result", Timestamp: ts, Status: "success"}
	if ok, msg := outcome(e, r); !ok {
		l.Status = "error"
		if typ := errorType(e.Run.ExitCode); msg != "" || typ != "Error" {
			l.Error = &errorObject{Type: typ, Message: msg}
		}
	}
	u := e.Usage
	if u.Empty() && r.usageSeen {
		u = r.usage
	}
	if !u.Empty() || e.Duration > 0 {
		tc := r.toolCalls
		if tc == 0 && r.srcToolCalls.OK {
			tc = r.srcToolCalls.V
		}
		l.Stats = &streamStats{TotalTokens: u.Total().Ptr(), InputTokens: u.InputTokens.Ptr(), OutputTokens: u.OutputTokens.Ptr(),
			Cached: u.CacheReadTokens.Ptr(), ToolCalls: &tc}
		if u.InputTokens.OK && u.CacheReadTokens.OK {
			in := u.InputTokens.V - u.CacheReadTokens.V
			l.Stats.Input = &in
		}
		if e.Duration > 0 {
			ms := e.Duration.Milliseconds()
			l.Stats.DurationMs = &ms
		}
	}
	return l
}

// outcome says whether a run succeeded, and its error message if not, as
// far as the events say it.
func outcome(e *formats.Event, r *writeRun) (bool, string) {
	ok := e.Status == formats.Completed ||
		(e.Status == formats.StatusUnknown && (!e.Run.ExitCode.OK || e.Run.ExitCode.V == 0))
	if ok {
		return true, ""
	}
	switch {
	case e.Text != "":
		return false, e.Text
	case r.lastError != "":
		return false, r.lastError
	case r.denied != "":
		return false, r.denied
	}
	return false, ""
}

func (s *streamWriter) reset() {
	s.calls.Reset()
	s.text.Reset()
	s.run = writeRun{}
}

func (s *streamWriter) Close() error { return nil }

func args(a json.RawMessage) json.RawMessage {
	if len(a) == 0 {
		return json.RawMessage("{}")
	}
	return a
}

// reportLosses counts what Gemini CLI's output has no place for. stream:
// the target is gemini-stream, which carries tool calls, notices, prompts
// and timestamps that gemini-json does not.
func reportLosses(e *formats.Event, rep *formats.Report, stream bool) {
	switch e.Kind {
	case formats.RunStart:
		if e.Run.Cwd != "" {
			rep.Lose("working directories")
		}
	case formats.ThinkingDelta:
		rep.Lose("thinking text")
	case formats.Message:
		if e.Thinking != "" {
			rep.Lose("thinking text")
		}
		if e.Agent != "" {
			rep.Lose("subagent text")
		}
	case formats.TextDelta:
		if e.Agent != "" {
			rep.Lose("subagent text")
		}
	case formats.UserMessage:
		if !stream || e.Agent != "" {
			rep.Lose("user prompts")
		}
	case formats.Answer:
		if e.Agent != "" {
			rep.Lose("subagent answers")
		}
	case formats.TurnEnd:
		rep.Lose("turn boundaries")
	case formats.Todos:
		rep.Lose("todo lists")
	case formats.Compaction:
		rep.Lose("compactions")
	case formats.ModelChange:
		rep.Lose("model changes")
	case formats.PermissionRequest:
		rep.Lose("permission requests")
	case formats.PermissionAnswer:
		rep.Lose("permission answers")
	case formats.AgentStart:
		if stream {
			rep.Lose("subagents (their tool calls are flattened into the run)")
		} else {
			rep.Lose("subagents")
		}
	case formats.AgentEnd:
		if e.Text != "" {
			rep.Lose("subagent reports")
		}
	case formats.ToolCall:
		if !stream {
			rep.Lose("tool calls")
		}
	case formats.ToolResult:
		if stream && e.Duration > 0 {
			rep.Lose("tool call durations")
		}
	case formats.Notice:
		if !stream && e.Severity != formats.Warning {
			rep.Lose("notices besides warnings")
		}
	case formats.Usage:
		if e.Usage.CostUSD.OK {
			rep.Lose("costs")
		}
		if e.Usage.CacheWriteTokens.V > 0 {
			rep.Lose("cache write token counts")
		}
	case formats.Raw:
		rep.Lose("unknown " + e.Source.Dialect + " events")
	case formats.RunEnd:
		if e.Usage.CostUSD.OK {
			rep.Lose("costs")
		}
		if !stream && e.Duration > 0 {
			rep.Lose("run durations")
		}
		if c := e.Run.ExitCode; stream && c.OK && c.V != 0 && c.V != 1 && errorType(c) == "Error" {
			rep.Lose("exit codes Gemini CLI does not use")
		}
	}
	if !stream && !e.Time.IsZero() {
		rep.Lose("event timestamps")
	}
}
