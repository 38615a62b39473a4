package cursor

import (
	"crypto/sha1"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Output lines, with Cursor's field order.

type initOut struct {
	Type           string `json:"type"`
	Subtype        string `json:"subtype"`
	APIKeySource   string `json:"apiKeySource"`
	Cwd            string `json:"cwd"`
	SessionID      string `json:"session_id"`
	Model          string `json:"model"`
	PermissionMode string `json:"permissionMode"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type messageOut struct {
	Role    string      `json:"role"`
	Content []textBlock `json:"content"`
}

type userOut struct {
	Type      string     `json:"type"`
	Message   messageOut `json:"message"`
	SessionID string     `json:"session_id"`
}

type assistantOut struct {
	Type        string     `json:"type"`
	Message     messageOut `json:"message"`
	SessionID   string     `json:"session_id"`
	ModelCallID string     `json:"model_call_id,omitempty"`
	TimestampMS int64      `json:"timestamp_ms"`
}

type thinkingOut struct {
	Type        string `json:"type"`
	Subtype     string `json:"subtype"`
	Text        string `json:"text,omitempty"`
	SessionID   string `json:"session_id"`
	TimestampMS int64  `json:"timestamp_ms"`
}

type toolCallOut struct {
	Type        string                     `json:"type"`
	Subtype     string                     `json:"subtype"`
	CallID      string                     `json:"call_id"`
	ToolCall    map[string]json.RawMessage `json:"tool_call"`
	ModelCallID string                     `json:"model_call_id"`
	SessionID   string                     `json:"session_id"`
	TimestampMS int64                      `json:"timestamp_ms"`
}

type toolBody struct {
	Args   json.RawMessage `json:"args"`
	Result any             `json:"result,omitempty"`
}

// functionBody is a tool whose name cannot be a "<name>ToolCall" key.
type functionBody struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Result    any    `json:"result,omitempty"`
}

type resultOut struct {
	Type          string    `json:"type"`
	Subtype       string    `json:"subtype"`
	DurationMS    int64     `json:"duration_ms"`
	DurationAPIMS int64     `json:"duration_api_ms"`
	IsError       bool      `json:"is_error"`
	Result        string    `json:"result"`
	SessionID     string    `json:"session_id"`
	Usage         *usageOut `json:"usage,omitempty"`
}

type usageOut struct {
	InputTokens      *int64   `json:"inputTokens,omitempty"`
	OutputTokens     *int64   `json:"outputTokens,omitempty"`
	CacheReadTokens  *int64   `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens *int64   `json:"cacheWriteTokens,omitempty"`
	TotalCost        *float64 `json:"totalCost,omitempty"`
}

// writer writes cursor stream-json from any source. The run's meaning
// (outcome, answer, usage, the calls' arguments) comes from the run view;
// what it keeps itself is about its own encoding.
type writer struct {
	w    io.Writer
	opts formats.WriteOptions
	run  *formats.RunView
	err  error

	runs int
	// thinking: thinking deltas were written and their completed line not
	// yet; thought: thinking was streamed since the last whole message.
	thinking, thought bool
	// text is the main agent's streamed text, which a whole assistant line
	// repeats when the agent moves on (as Cursor prints it).
	text   formats.TextTracker
	deltas bool
	// flushed is the streamed text moveOn wrote as a whole line, which a
	// source that ends its message after the message's calls repeats.
	flushed string
	started map[string]bool // calls whose started line was written
	// response is the model_call_id of the model response being written,
	// "" between responses; responses counts them.
	response  string
	responses int
	errors    []string // the main agent's error notices
	// timed is the source's last time; at is the current event's
	// timestamp_ms.
	timed time.Time
	at    int64
}

func newWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	c := &writer{w: w, opts: o}
	c.reset()
	return c
}

func (c *writer) line(v any) {
	if c.err == nil {
		c.err = formats.WriteJSONLine(c.w, v)
	}
}

// Observe follows a record that the pipeline copies verbatim.
func (c *writer) Observe(e *formats.Event, v *formats.RunView) {
	c.run = v
	if e.Kind == formats.RunStart {
		c.reset()
	}
}

func (c *writer) reset() {
	c.thinking, c.thought, c.deltas, c.flushed = false, false, false, ""
	c.text.Reset()
	c.started = map[string]bool{}
	c.response, c.responses = "", 0
	c.errors = c.errors[:0]
}

func (c *writer) session() string { return c.run.Info.SessionID }

// ms is the time of the event being written as timestamp_ms.
func (c *writer) ms() int64 { return c.at }

// stamp sets the time of event e's lines: the source's; for an event
// the source left without one, the source's last time, so that the
// lines, read back, do not go back in time (a final assistant line of
// Cursor's own has none); in a source without times, when it was read;
// 0 when nothing is known.
func (c *writer) stamp(e *formats.Event) {
	t := e.Arrived
	switch {
	case !e.Time.IsZero():
		c.timed, t = e.Time, e.Time
	case !c.timed.IsZero():
		t = c.timed
	}
	c.at = 0
	if !t.IsZero() && t.UnixMilli() > 0 {
		c.at = t.UnixMilli()
	}
}

// modelCall is the model_call_id of the response an event belongs to,
// derived from the session and a counter, so the same input gives the
// same ids.
func (c *writer) modelCall() string {
	if c.response == "" {
		c.responses++
		h := sha1.Sum([]byte(c.session() + "\x00" + strconv.Itoa(c.runs) + "\x00" + strconv.Itoa(c.responses)))
		c.response = fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	}
	return c.response
}

func (c *writer) Write(e *formats.Event, v *formats.RunView) error {
	c.run = v
	c.stamp(e)
	if e.Kind != formats.ThinkingDelta || e.Agent != "" {
		c.endThinking(e)
	}
	stamped := !e.Time.IsZero() && !e.Synthetic
	if e.Agent != "" {
		c.subagent(e)
		return c.err
	}
	switch e.Kind {
	case formats.RunStart:
		c.reset()
		c.runs++
		if stamped {
			c.opts.Report.Quirk(lostTimes)
		}
		c.line(initOut{Type: "system", Subtype: "init", APIKeySource: "login", Cwd: e.Run.Cwd, SessionID: c.session(),
			Model: e.Run.Model, PermissionMode: "default"})
	case formats.UserMessage:
		c.moveOn(e)
		c.response, c.flushed = "", ""
		if stamped {
			c.opts.Report.Quirk(lostTimes)
		}
		c.line(userOut{Type: "user", Message: message("user", e.Prompt()), SessionID: c.session()})
	case formats.ThinkingDelta:
		if e.Piece() == "" {
			break
		}
		c.thinking, c.thought = true, true
		c.line(thinkingOut{Type: "thinking", Subtype: "delta", Text: e.Piece(), SessionID: c.session(), TimestampMS: c.ms()})
	case formats.TextDelta:
		if e.Piece() == "" {
			break
		}
		c.modelCall()
		c.text.Delta("", e.Piece())
		c.deltas = true
		c.line(assistantOut{Type: "assistant", Message: message("assistant", e.Piece()), SessionID: c.session(), TimestampMS: c.ms()})
	case formats.Message:
		c.text.Whole("")
		c.deltas = false
		if e.Thinking != "" && !c.thought {
			c.line(thinkingOut{Type: "thinking", Subtype: "delta", Text: e.Thinking, SessionID: c.session(), TimestampMS: c.ms()})
			c.line(thinkingOut{Type: "thinking", Subtype: "completed", SessionID: c.session(), TimestampMS: c.ms()})
		}
		c.thought = false
		if e.MessageText() != "" && e.MessageText() != c.flushed {
			c.assistant(e, e.MessageText())
		}
		c.flushed = ""
	case formats.ToolCall:
		c.moveOn(e)
		c.started[e.Call.ID] = true
		c.toolLine(e, "started", e.Call.Name, e.Call.Args, nil)
	case formats.ToolResult:
		c.moveOn(e)
		c.toolResult(e, v)
		c.response = ""
	case formats.TurnEnd:
		c.moveOn(e)
		c.response = ""
	case formats.Notice:
		if e.Severity == formats.Error && e.NoticeText() != "" {
			c.errors = append(c.errors, e.NoticeText())
		}
	case formats.RunEnd:
		c.moveOn(e)
		if stamped {
			c.opts.Report.Quirk(lostTimes)
		}
		c.result(e, v)
	}
	return c.err
}

// subagent writes what a flat stream keeps of a subagent's event: its tool
// calls, as the run's. The pipeline reports the rest, but for models and
// working directories, which the stream has only for the main agent.
func (c *writer) subagent(e *formats.Event) {
	switch e.Kind {
	case formats.AgentStart:
		if e.AgentInfo.Model != "" || e.AgentInfo.Cwd != "" {
			c.opts.Report.Quirk(lostSubInfo)
		}
	case formats.ToolCall:
		c.started[e.Call.ID] = true
		c.toolLine(e, "started", e.Call.Name, e.Call.Args, nil)
	case formats.ToolResult:
		c.toolResult(e, c.run)
		c.response = ""
	}
}

func message(role, text string) messageOut {
	return messageOut{Role: role, Content: []textBlock{{Type: "text", Text: text}}}
}

// assistant writes a whole assistant message of the current response.
func (c *writer) assistant(e *formats.Event, text string) {
	c.line(assistantOut{Type: "assistant", Message: message("assistant", text), SessionID: c.session(),
		ModelCallID: c.modelCall(), TimestampMS: c.ms()})
}

// endThinking writes the completed line of streamed thinking.
func (c *writer) endThinking(e *formats.Event) {
	if !c.thinking {
		return
	}
	c.thinking = false
	c.line(thinkingOut{Type: "thinking", Subtype: "completed", SessionID: c.session(), TimestampMS: c.ms()})
}

// moveOn writes the whole message of text the main agent streamed without
// one, before what it does next.
func (c *writer) moveOn(e *formats.Event) {
	c.thought = false
	if !c.deltas {
		return
	}
	c.deltas = false
	if t := c.text.Flush(""); t != "" {
		c.assistant(e, t)
		c.flushed = t
	}
}

// toolName matches a name that a "<name>ToolCall" key can hold.
var toolName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

func (c *writer) toolLine(e *formats.Event, subtype, name string, args json.RawMessage, result any) {
	if len(args) == 0 || !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	var key string
	var body any
	if toolName.MatchString(name) {
		key, body = name+"ToolCall", toolBody{Args: args, Result: result}
	} else {
		key, body = "function", functionBody{Name: name, Arguments: string(args), Result: result}
	}
	b, err := formats.Marshal(body)
	if err != nil {
		c.err = err
		return
	}
	c.line(toolCallOut{Type: "tool_call", Subtype: subtype, CallID: e.Call.ID, ToolCall: map[string]json.RawMessage{key: b},
		ModelCallID: c.modelCall(), SessionID: c.session(), TimestampMS: c.ms()})
}

// toolResult writes a call's completed line, with its started line first
// when none was written (a refusal that never ran, in AdaL).
func (c *writer) toolResult(e *formats.Event, v *formats.RunView) {
	call := e.Call
	if t := v.Calls.Get(call.ID); t != nil {
		if call.Name == "" {
			call.Name = t.Name
		}
		if len(call.Args) == 0 {
			call.Args = t.Args
		}
	}
	if !c.started[call.ID] {
		c.started[call.ID] = true
		c.toolLine(e, "started", call.Name, call.Args, nil)
	}
	c.toolLine(e, "completed", call.Name, call.Args, resultOf(&call))
}

// resultOf is a call's result as Cursor gives it: shell's stdout, stderr
// and exitCode, else content; a failure as an error with its message; a
// refusal as rejected with its reason.
func resultOf(call *formats.Call) any {
	type shellOut struct {
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
		ExitCode int    `json:"exitCode"`
	}
	type contentOut struct {
		Content string `json:"content"`
	}
	type errorOut struct {
		ErrorMessage string `json:"errorMessage"`
		Content      string `json:"content,omitempty"`
	}
	type rejectedOut struct {
		Reason     string `json:"reason"`
		IsReadonly bool   `json:"isReadonly"`
	}
	shell := call.Name == "shell"
	switch call.Status {
	case formats.Denied:
		reason := call.Error
		if reason == "" {
			reason = "the tool call was rejected"
		}
		return map[string]any{"rejected": rejectedOut{Reason: reason}}
	case formats.Failed, formats.Cancelled:
		msg := call.Error
		if msg == "" {
			msg = "the tool call failed"
			if call.Status == formats.Cancelled {
				msg = "the tool call was cancelled"
			}
		}
		if shell {
			return map[string]any{"failure": shellOut{Stdout: call.Output.Text(), Stderr: msg, ExitCode: 1}}
		}
		return map[string]any{"error": errorOut{ErrorMessage: msg, Content: call.Output.Text()}}
	}
	if shell {
		return map[string]any{"success": shellOut{Stdout: call.Output.Text()}}
	}
	return map[string]any{"success": contentOut{Content: call.Output.Text()}}
}

// result writes the run's result line, from the run view: outcome,
// answer or failure, usage and duration.
func (c *writer) result(e *formats.Event, v *formats.RunView) {
	o := resultOut{Type: "result", Subtype: "success", Result: v.Answer(), SessionID: c.session()}
	if !v.Success() {
		o.Subtype, o.IsError, o.Result = "error", true, v.Failure
		if v.Answered() && v.Answer() != "" {
			c.opts.Report.Quirk(formats.FailedRunAnswers)
		}
	}
	want := 0
	switch {
	case v.Success():
	case v.Stopped:
		want = 2
	default:
		want = 1
	}
	if v.ExitCode != want {
		c.opts.Report.Quirk(formats.ExitCodesBeyondRefusal)
	}
	if v.Status == formats.Cancelled {
		c.opts.Report.Quirk(formats.CancelledRunsAsErrors)
	}
	for _, t := range c.errors {
		if v.Success() || t != v.Failure {
			c.opts.Report.Quirk(lostErrors)
		}
	}
	dur := e.Duration
	if dur <= 0 && !v.Start.IsZero() && v.Last.After(v.Start) {
		dur = v.Last.Sub(v.Start)
	}
	o.DurationMS = dur.Milliseconds()
	o.DurationAPIMS = o.DurationMS
	u := v.Usage
	if u.InputTokens.OK || u.OutputTokens.OK || u.CacheReadTokens.OK || u.CacheWriteTokens.OK || u.CostUSD.OK {
		uo := &usageOut{OutputTokens: u.OutputTokens.Ptr(), CacheReadTokens: u.CacheReadTokens.Ptr(),
			CacheWriteTokens: u.CacheWriteTokens.Ptr(), TotalCost: u.CostUSD.Ptr()}
		if u.InputTokens.OK {
			// Cursor counts cache reads and writes apart from input.
			in := max(u.InputTokens.V-u.CacheReadTokens.V-u.CacheWriteTokens.V, 0)
			uo.InputTokens = &in
		}
		o.Usage = uo
	}
	c.line(o)
}

// Close writes text still streaming when the input ended without ending
// its run (the pipeline ends every run, but a writer may be used without
// it).
func (c *writer) Close() error {
	c.moveOn(&formats.Event{})
	if c.thinking {
		c.endThinking(&formats.Event{})
	}
	return c.err
}
