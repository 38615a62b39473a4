package copilot

import (
	"io"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// line is every field of an event that the reader takes.
type line struct {
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	Timestamp string          `json:"timestamp"`
	AgentID   string          `json:"agentId"`
	// The result's.
	SessionID string `json:"sessionId"`
	ExitCode  *int   `json:"exitCode"`
	Usage     *struct {
		SessionDurationMs *int64 `json:"sessionDurationMs"`
	} `json:"usage"`
}

// data is every field of an event's data that the reader takes.
type data struct {
	// session.start, session.resume
	SessionID      string `json:"sessionId"`
	CopilotVersion string `json:"copilotVersion"`
	SelectedModel  string `json:"selectedModel"`
	Context        *struct {
		Cwd string `json:"cwd"`
	} `json:"context"`
	// user.message, assistant.message, session.error, session.info
	Content      string `json:"content"`
	Message      string `json:"message"`
	ErrorType    string `json:"errorType"`
	WarningType  string `json:"warningType"`
	DeltaContent string `json:"deltaContent"`
	Model        string `json:"model"`
	ReasoningTxt string `json:"reasoningText"`
	ToolRequests []struct {
		ToolCallID       string          `json:"toolCallId"`
		Name             string          `json:"name"`
		Arguments        json.RawMessage `json:"arguments"`
		IntentionSummary string          `json:"intentionSummary"`
	} `json:"toolRequests"`
	// tool.execution_complete
	ToolCallID     string `json:"toolCallId"`
	Success        *bool  `json:"success"`
	ShellExecution *struct {
		ExitCode *int `json:"exitCode"`
	} `json:"shellExecution"`
	// Result is an object (a call's content, a permission's kind); some
	// events the reader does not take have a string.
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
	// permission.requested, permission.completed
	RequestID         string `json:"requestId"`
	PermissionRequest *struct {
		ToolCallID      string `json:"toolCallId"`
		FullCommandText string `json:"fullCommandText"`
		Intention       string `json:"intention"`
	} `json:"permissionRequest"`
	// session.usage_record
	Usage *struct {
		Model        string `json:"model"`
		Input        *int64 `json:"inputTokens"`
		Output       *int64 `json:"outputTokens"`
		CacheRead    *int64 `json:"cacheReadTokens"`
		CacheWrite   *int64 `json:"cacheWriteTokens"`
		Reasoning    *int64 `json:"reasoningTokens"`
		APICallID    string `json:"apiCallId"`
		FinishReason string `json:"finishReason"`
	} `json:"usage"`
	// subagent.started, subagent.completed, subagent.failed
	AgentName        string `json:"agentName"`
	AgentDisplayName string `json:"agentDisplayName"`
	DurationMs       *int64 `json:"durationMs"`
	// session.model_change
	NewModel string `json:"newModel"`
}

type reader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	queue formats.EventQueue

	session, model, cwd, version string
	open                         bool
	// failed: the run had a session.error, whose message is lastError.
	failed          bool
	lastError, code string
	names           map[string]string // call id → tool name
	callAgent       map[string]string // call id → the agent that made it
}

// newReader reads the stream and the events file alike: a run starts at
// the session's start or resume, else at the first event (the stream's),
// and ends at the shutdown or the stream's result.
func newReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &reader{lines: formats.NewLineReader(r), opts: o}
}

func (r *reader) Next() (*formats.Event, error) {
	for r.queue.Len() == 0 {
		b, err := r.lines.Next()
		if err != nil {
			return nil, err
		}
		n := r.lines.Line()
		var l line
		if err := r.opts.Report.UnmarshalObject(n, b, &l); err != nil {
			return nil, err
		}
		var d data
		if interpreted[l.Type] && len(l.Data) > 0 && l.Data[0] == '{' {
			if err := json.Unmarshal(l.Data, &d); err != nil {
				return nil, formats.Errorf(n, "the data of a %q event is not what the Copilot CLI writes: %v", l.Type, err)
			}
		}
		r.record(&l, &d, formats.Source{Dialect: r.opts.Dialect, Type: l.Type, Line: append([]byte(nil), b...), LineNo: n})
	}
	return r.queue.Pop(), nil
}

// interpreted are the event types whose data the reader takes.
var interpreted = map[string]bool{
	"session.start": true, "session.resume": true, "user.message": true, "assistant.message_delta": true,
	"assistant.reasoning_delta": true, "assistant.message": true, "tool.execution_complete": true,
	"permission.requested": true, "permission.completed": true, "session.usage_record": true,
	"session.error": true, "session.warning": true, "session.info": true, "session.model_change": true,
	"subagent.started": true, "subagent.completed": true, "subagent.failed": true,
	"session.tools_updated": true,
}

// result is the data's result object.
type result struct {
	Content *string `json:"content"`
	Kind    string  `json:"kind"`
}

func (d *data) result() result {
	var r result
	if len(d.Result) > 0 && d.Result[0] == '{' {
		json.Unmarshal(d.Result, &r) //nolint:errcheck // not an object of these fields: none of them
	}
	return r
}

// record queues the events of one line: the first carries the line, the
// others are Continued.
func (r *reader) record(l *line, d *data, src formats.Source) {
	t := parseTime(l.Timestamp)
	first := true
	emit := func(e *formats.Event) {
		e.Time, e.Source = t, src
		if !first {
			e.Source.Line, e.Source.Continued = nil, true
		}
		first = false
		r.queue.Push(e)
	}
	switch l.Type {
	case "session.start":
		r.closeCut(emit)
		r.session, r.version = d.SessionID, d.CopilotVersion
		r.start(d, emit)
		return
	case "session.resume":
		r.closeCut(emit)
		r.start(d, emit)
		return
	}
	if !r.open {
		// The stream starts without the session's start; a file may
		// start at any event.
		r.start(nil, emit)
	}
	agent := l.AgentID
	switch l.Type {
	case "session.shutdown":
		r.end(emit, formats.Opt[int]{}, 0)
	case "result":
		if l.SessionID != "" {
			r.session = l.SessionID
		}
		var code formats.Opt[int]
		if l.ExitCode != nil {
			code = formats.Some(*l.ExitCode)
		}
		var dur time.Duration
		if l.Usage != nil && l.Usage.SessionDurationMs != nil {
			dur = time.Duration(*l.Usage.SessionDurationMs) * time.Millisecond
		}
		r.end(emit, code, dur)
	case "user.message":
		emit(&formats.Event{Kind: formats.UserMessage, Agent: agent, Text: d.Content})
	case "assistant.turn_start":
		emit(&formats.Event{Kind: formats.TurnStart, Agent: agent})
	case "assistant.turn_end":
		emit(&formats.Event{Kind: formats.TurnEnd, Agent: agent, Status: formats.Completed})
	case "assistant.message_delta":
		emit(&formats.Event{Kind: formats.TextDelta, Agent: agent, Text: d.DeltaContent})
	case "assistant.reasoning_delta":
		emit(&formats.Event{Kind: formats.ThinkingDelta, Agent: agent, Text: d.DeltaContent})
	case "session.tools_updated":
		// The stream's first word of the model (it has no session.start).
		if r.model == "" {
			r.model = d.Model
		}
		emit(&formats.Event{Kind: formats.Raw})
	case "assistant.message":
		if agent == "" && d.Model != "" {
			r.model = d.Model
		}
		if d.Content != "" || d.ReasoningTxt != "" || len(d.ToolRequests) == 0 {
			emit(&formats.Event{Kind: formats.Message, Agent: agent, Text: d.Content, Thinking: d.ReasoningTxt})
		}
		for _, c := range d.ToolRequests {
			r.names[c.ToolCallID] = c.Name
			r.callAgent[c.ToolCallID] = agent
			emit(&formats.Event{Kind: formats.ToolCall, Agent: agent,
				Call: formats.Call{ID: c.ToolCallID, Name: c.Name, Args: c.Arguments, Summary: c.IntentionSummary}})
		}
	case "tool.execution_complete":
		emit(r.toolResult(agent, d))
	case "permission.requested":
		e := &formats.Event{Kind: formats.PermissionRequest, Agent: agent, Permission: formats.Permission{RequestID: d.RequestID}}
		if p := d.PermissionRequest; p != nil {
			e.Call = formats.Call{ID: p.ToolCallID, Name: r.names[p.ToolCallID], Summary: p.FullCommandText}
		}
		emit(e)
	case "permission.completed":
		e := &formats.Event{Kind: formats.PermissionAnswer, Agent: agent, Permission: formats.Permission{RequestID: d.RequestID}}
		e.Call = formats.Call{ID: d.ToolCallID, Name: r.names[d.ToolCallID]}
		if k := d.result().Kind; k != "" {
			// approved…, denied-…: the CLI's kinds of decision.
			e.Permission.Allowed = strings.HasPrefix(k, "approved")
			e.Permission.Reason = k
		}
		emit(e)
	case "session.usage_record":
		if u := d.Usage; u != nil {
			emit(&formats.Event{Kind: formats.Usage, Agent: agent, Usage: usageOf(u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Reasoning),
				Response: formats.Response{ID: u.APICallID, Model: u.Model, StopReason: u.FinishReason}})
		}
	case "session.error":
		if agent == "" {
			r.failed, r.lastError, r.code = true, d.Message, d.ErrorType
		}
		emit(&formats.Event{Kind: formats.Notice, Agent: agent, Severity: formats.Error, Text: d.Message, Code: d.ErrorType})
	case "session.warning":
		emit(&formats.Event{Kind: formats.Notice, Agent: agent, Severity: formats.Warning, Text: d.Message})
	case "session.info":
		emit(&formats.Event{Kind: formats.Notice, Agent: agent, Severity: formats.Info, Text: d.Message})
	case "session.model_change":
		emit(&formats.Event{Kind: formats.ModelChange, Agent: agent, Run: formats.RunInfo{Model: d.NewModel}})
	case "subagent.started":
		label := d.AgentDisplayName
		if label == "" {
			label = d.AgentName
		}
		emit(&formats.Event{Kind: formats.AgentStart, Agent: agent, AgentInfo: formats.AgentInfo{
			Label: label, Parent: r.callAgent[d.ToolCallID], ParentCall: d.ToolCallID, Model: d.Model}})
	case "subagent.completed", "subagent.failed":
		e := &formats.Event{Kind: formats.AgentEnd, Agent: agent, Status: formats.Completed}
		if l.Type == "subagent.failed" {
			e.Status = formats.Failed
			if d.Error != nil {
				e.Text = d.Error.Message
			}
		}
		emit(e)
	default:
		emit(&formats.Event{Kind: formats.Raw})
	}
}

// toolResult is a call's end: success, else a refusal (error code
// denied), else a failure.
func (r *reader) toolResult(agent string, d *data) *formats.Event {
	e := &formats.Event{Kind: formats.ToolResult, Agent: agent, Call: formats.Call{ID: d.ToolCallID, Name: r.names[d.ToolCallID]}}
	switch {
	case d.Success != nil && *d.Success:
		e.Call.Status = formats.Completed
	case d.Error != nil && d.Error.Code == "denied":
		e.Call.Status = formats.Denied
	default:
		e.Call.Status = formats.Failed
	}
	if c := d.result().Content; c != nil {
		e.Call.Output = formats.TextOutput(*c)
	}
	if d.Error != nil {
		e.Call.Error = d.Error.Message
	}
	if s := d.ShellExecution; s != nil && s.ExitCode != nil {
		e.Call.ExitCode = formats.Some(*s.ExitCode)
	}
	return e
}

// start opens a run: d is the session's start or resume, nil for a
// stream, which names the session only at its end.
func (r *reader) start(d *data, emit func(*formats.Event)) {
	r.open, r.failed, r.lastError, r.code = true, false, "", ""
	r.names, r.callAgent = map[string]string{}, map[string]string{}
	if d != nil {
		r.model = d.SelectedModel
		if d.Context != nil {
			r.cwd = d.Context.Cwd
		}
	}
	emit(&formats.Event{Kind: formats.RunStart, Run: r.info()})
}

func (r *reader) info() formats.RunInfo {
	return formats.RunInfo{SessionID: r.session, Model: r.model, Cwd: r.cwd, AgentName: AgentName, AgentVersion: r.version}
}

// end closes the run: failed after a session.error of the main agent, or
// with an exit code other than 0 (the result's); the CLI exits 1 after a
// session.error, else 0.
func (r *reader) end(emit func(*formats.Event), code formats.Opt[int], dur time.Duration) {
	e := &formats.Event{Kind: formats.RunEnd, Run: r.info(), Status: formats.Completed, Duration: dur}
	if r.failed || code.OK && code.V != 0 {
		e.Status, e.Text, e.Code = formats.Failed, r.lastError, r.code
	}
	switch {
	case code.OK:
		e.Run.ExitCode = code
	case e.Status == formats.Failed:
		e.Run.ExitCode = formats.Some(1)
	default:
		e.Run.ExitCode = formats.Some(0)
	}
	emit(e)
	r.open = false
}

// closeCut ends a run that a new process's start follows without its
// shutdown (the process was killed): the run is cut.
func (r *reader) closeCut(emit func(*formats.Event)) {
	if !r.open {
		return
	}
	emit(&formats.Event{Kind: formats.RunEnd, Run: r.info(), Status: formats.Failed, Cut: true,
		Text: "the Copilot CLI ended without closing its session"})
	r.open = false
}

// usageOf: the CLI counts as the OpenTelemetry GenAI conventions do:
// inputTokens include the cache's reads (1200 for a reply of 1000
// uncached and 200 cached prompt tokens, in the agents' tests),
// outputTokens the reasoning.
func usageOf(in, out, cacheRead, cacheWrite, reasoning *int64) formats.UsageInfo {
	opt := func(p *int64) formats.Opt[int64] {
		if p == nil || *p < 0 {
			return formats.Opt[int64]{}
		}
		return formats.Some(*p)
	}
	return formats.UsageInfo{InputTokens: opt(in), OutputTokens: opt(out), CacheReadTokens: opt(cacheRead),
		CacheWriteTokens: opt(cacheWrite), ReasoningTokens: opt(reasoning)}
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
