package copilot

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The losses of the events writer's own encoding.
var (
	lossCancelled = formats.NewQuirk("cancelled tool calls (written as failed calls)")
	lossExitCodes = formats.NewQuirk("exit codes other than 0 and 1 (the CLI exits 1 after a session's error)")
)

// eventsCarries: a session file keeps the conversation (prompts, text,
// reasoning, calls with their results, refusals), each request's usage,
// notices and each run's outcome; a subagent's, marked with its agentId
// as the CLI marks them, between its subagent.started, which names the
// call that spawned it, and its subagent.completed or subagent.failed.
const eventsCarries = formats.Timestamps | formats.WorkingDirs | formats.ModelNames | formats.UserPrompts |
	formats.FollowUpPrompts | formats.AssistantText | formats.Thinking | formats.Turns | formats.ToolCalls |
	formats.Refusals | formats.TokenUsage | formats.PerRequestUsage | formats.CacheWrites | formats.ReasoningTokens |
	formats.InfoNotices | formats.WarningNotices | formats.RunOutcomes |
	formats.Subagents | formats.SubagentCalls | formats.SubagentText | formats.SubagentThinking | formats.SubagentPrompts |
	formats.SubagentTurns | formats.SubagentToolCalls | formats.SubagentNotices

type eventsWriter struct {
	stream io.Writer
	opts   formats.WriteOptions
	view   *formats.RunView
	stamps formats.Stamps
	files  map[string]*eventsFile
	order  []*eventsFile
	out    *formats.SessionFiles // with -o DIR
	cur    *eventsFile
	runs   int
	err    error

	// The open run's, of each agent by its id ("": the main agent).
	turn  map[string]int
	msg   map[string]*pendingMessage
	calls map[string]string // calls written and not yet answered → their agent
	// each subagent's start and calls, for its end
	agentStart map[string]time.Time
	agentCalls map[string]int
	errored    bool                    // a session.error was written
	said       string                  // the last message's text
	asked      map[string]bool         // calls written or pending
	perms      map[string]formats.Call // calls named by permission requests
	started    time.Time
}

// eventsFile is one session's events.jsonl.
type eventsFile struct {
	id     string
	w      io.Writer
	c      io.WriteCloser
	made   bool
	events int
	last   string // the last event's id
}

// pendingMessage is an assistant message whose calls may still come.
type pendingMessage struct {
	at       time.Time
	text     formats.Text
	thinking formats.Text
	calls    []toolRequest
	whole    bool // a whole Message, not deltas, gave it
}

type toolRequest struct {
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Type       string          `json:"type"`
}

func newEventsWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	ew := &eventsWriter{stream: w, opts: o, files: map[string]*eventsFile{}}
	if o.Create != nil {
		ew.out = formats.NewSessionFiles(o)
	}
	return ew
}

// Observe follows a record that the pipeline copies: the file of its
// session takes it (CopyTo).
func (w *eventsWriter) Observe(e *formats.Event, v *formats.RunView) {
	w.view = v
	if e.Kind == formats.RunStart {
		w.cur, w.err = w.file(e)
	}
	if w.cur != nil && !e.Source.Continued && e.Source.Line != nil {
		w.cur.events++
	}
}

// CopyTo is the file of the session being copied, with -o DIR.
func (w *eventsWriter) CopyTo() io.Writer {
	if w.cur == nil || !w.cur.made {
		return nil
	}
	return w.cur.w
}

// sessionUUID is a session's id for the CLI, which resumes a session by
// its folder's name: its own when it is a UUID, else one derived from it.
func sessionUUID(id string) string {
	if formats.IsUUID(id) {
		return strings.ToLower(id)
	}
	return formats.NameUUID("agentconv copilot-events\x00session\x00" + id)
}

// file returns the events file of the run's session, made if new.
func (w *eventsWriter) file(e *formats.Event) (*eventsFile, error) {
	sid := e.Run.SessionID
	if sid == "" {
		w.runs++
		sid = "agentconv:run-" + strconv.Itoa(w.runs)
	}
	id := sessionUUID(sid)
	f := w.files[id]
	if w.out != nil {
		// The files of the sessions before are put in place (reopened
		// if they are written again).
		var keep *formats.SessionFile
		if f != nil {
			keep, _ = f.c.(*formats.SessionFile)
		}
		if err := w.out.Park(keep); err != nil {
			return nil, err
		}
	}
	if f != nil {
		return f, nil
	}
	f = &eventsFile{id: id, w: w.stream}
	if w.out != nil {
		c, err := w.out.Create(id + "/events.jsonl")
		if err != nil {
			return nil, err
		}
		f.w, f.c, f.made = c, c, true
	}
	w.files[id] = f
	w.order = append(w.order, f)
	return f, nil
}

// put writes one event of the current file: its id (name-based, the same
// each time the session is written), timestamp and parentId, the event
// before it.
func (w *eventsWriter) put(at time.Time, typ string, data any) error {
	return w.putAgent(at, typ, "", data)
}

// putAgent writes an event of agent ("": the main agent's), marked with
// agentId as the CLI marks a subagent's.
func (w *eventsWriter) putAgent(at time.Time, typ, agent string, data any) error {
	f := w.cur
	f.events++
	id := formats.NameUUID("agentconv copilot-events\x00" + f.id + "\x00" + strconv.Itoa(f.events))
	b, err := formats.Marshal(data)
	if err != nil {
		return err
	}
	var j formats.JSONLine
	j.Begin().Str("type", typ).Raw("data", b)
	if agent != "" {
		j.Str("agentId", agent)
	}
	j.Str("id", id).Str("timestamp", stamp(at))
	if f.last == "" {
		j.Null("parentId")
	} else {
		j.Str("parentId", f.last)
	}
	f.last = id
	_, err = j.WriteTo(f.w)
	return err
}

// stamp is a time as the CLI writes it (JavaScript's toISOString).
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (w *eventsWriter) Write(e *formats.Event, v *formats.RunView) error {
	if w.err != nil {
		return w.err
	}
	w.view = v
	if e.Source.Dialect == w.opts.Dialect && e.Source.NothingToCopy() {
		if e.Kind == formats.RunStart {
			w.cur, w.err = w.file(e)
		}
		return w.err
	}
	if e.Kind == formats.RunStart {
		return w.startRun(e)
	}
	if w.cur == nil {
		// Outside a run (a writer used without a pipeline): one of its own.
		if err := w.Write(&formats.Event{Kind: formats.RunStart, Time: e.Time, Arrived: e.Arrived}, v); err != nil {
			return err
		}
	}
	at := w.stamps.Next(e)
	a := e.Agent
	switch e.Kind {
	case formats.RunEnd:
		return w.endRun(at, v)
	case formats.AgentStart:
		return w.startAgent(at, e)
	case formats.AgentEnd:
		return w.endAgent(at, e)
	case formats.UserMessage:
		if err := w.flush(at, a); err != nil {
			return err
		}
		return w.putAgent(at, "user.message", a, map[string]any{"content": e.Prompt()})
	case formats.TurnStart:
		if err := w.flush(at, a); err != nil {
			return err
		}
		return w.putAgent(at, "assistant.turn_start", a, map[string]any{"turnId": strconv.Itoa(w.turn[a])})
	case formats.TurnEnd:
		if err := w.flush(at, a); err != nil {
			return err
		}
		w.turn[a]++
		return w.putAgent(at, "assistant.turn_end", a, map[string]any{"turnId": strconv.Itoa(w.turn[a] - 1)})
	case formats.TextDelta:
		m := w.message(at, a)
		m.text.Add(e.Piece())
	case formats.ThinkingDelta:
		m := w.message(at, a)
		m.thinking.Add(e.Piece())
	case formats.Message:
		// A whole message repeats what its deltas streamed; after calls,
		// or after another whole message, it is a message of its own.
		if m := w.msg[a]; m != nil && (len(m.calls) > 0 || m.whole) {
			if err := w.flush(at, a); err != nil {
				return err
			}
		}
		m := w.message(at, a)
		m.text.Set(e.MessageText())
		m.thinking.Set(e.Thinking)
		m.whole = true
	case formats.ToolCall:
		w.request(at, a, e.Call)
	case formats.PermissionRequest:
		// A call some sources give only in the request to approve it.
		if e.Call.ID != "" && w.perms[e.Call.ID].ID == "" {
			w.perms[e.Call.ID] = e.Call
		}
	case formats.ToolResult:
		if !w.asked[e.Call.ID] {
			// A result whose call the source did not give on its own (a
			// refusal): the call is the model's, before it.
			c := w.perms[e.Call.ID]
			c.ID = e.Call.ID
			if c.Name == "" {
				c.Name = e.Call.Name
			}
			if len(c.Args) == 0 {
				c.Args = e.Call.Args
			}
			w.request(at, a, c)
		}
		if err := w.flush(at, a); err != nil {
			return err
		}
		return w.result(at, a, e.Call)
	case formats.Answer:
		// The answer, when no message of the run said it (a source that
		// gives it only at the end); a subagent's is its last message.
		if m := w.msg[a]; a == "" && e.AnswerText() != "" && e.AnswerText() != w.said && (m == nil || m.text.String() != e.AnswerText()) {
			if err := w.flush(at, a); err != nil {
				return err
			}
			w.message(at, a).text.Set(e.AnswerText())
		}
	case formats.Usage:
		return w.usage(at, e)
	case formats.Notice:
		return w.notice(at, e)
	}
	return nil
}

// startAgent writes a subagent's start, after its parent's message that
// holds the call that spawned it, as the CLI writes it.
func (w *eventsWriter) startAgent(at time.Time, e *formats.Event) error {
	if err := w.flush(at, e.AgentInfo.Parent); err != nil {
		return err
	}
	name := e.AgentInfo.Label
	if name == "" {
		name = "subagent"
	}
	// The fields the CLI writes, which it wants back when it resumes.
	d := map[string]any{"toolCallId": e.AgentInfo.ParentCall, "agentName": name, "agentDisplayName": name,
		"agentDescription": name, "resumable": false, "agentType": name, "executionMode": "sync"}
	if e.AgentInfo.Model != "" {
		d["model"] = e.AgentInfo.Model
	}
	w.agentStart[e.Agent] = at
	return w.putAgent(at, "subagent.started", e.Agent, d)
}

// endAgent writes what the subagent still holds, and its end.
func (w *eventsWriter) endAgent(at time.Time, e *formats.Event) error {
	if err := w.flush(at, e.Agent); err != nil {
		return err
	}
	delete(w.msg, e.Agent)
	a := w.view.Agent(e.Agent)
	name, call := "subagent", ""
	if a != nil {
		call = a.ParentCall
		if a.Label != "" {
			name = a.Label
		}
	}
	d := map[string]any{"toolCallId": call, "agentName": name, "agentDisplayName": name}
	if a != nil && a.Model != "" {
		d["model"] = a.Model
	}
	if e.Status.OK() {
		tokens := int64(0)
		if a != nil {
			tokens = a.Usage.Total().V
		}
		d["totalToolCalls"], d["totalTokens"] = w.agentCalls[e.Agent], tokens
		d["durationMs"] = max(at.Sub(w.agentStart[e.Agent]).Milliseconds(), 0)
		return w.putAgent(at, "subagent.completed", e.Agent, d)
	}
	msg := e.Text
	if msg == "" {
		msg = e.Status.String()
	}
	d["error"] = map[string]any{"message": msg}
	return w.putAgent(at, "subagent.failed", e.Agent, d)
}

// request adds a call to the agent's pending message.
func (w *eventsWriter) request(at time.Time, agent string, c formats.Call) {
	m := w.message(at, agent)
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	w.asked[c.ID] = true
	if agent != "" {
		w.agentCalls[agent]++
	}
	m.calls = append(m.calls, toolRequest{ToolCallID: c.ID, Name: c.Name, Arguments: args, Type: "function"})
}

func (w *eventsWriter) message(at time.Time, agent string) *pendingMessage {
	m := w.msg[agent]
	if m == nil {
		m = &pendingMessage{at: at}
		w.msg[agent] = m
	}
	return m
}

// flush writes the agent's pending assistant message with its calls.
func (w *eventsWriter) flush(at time.Time, agent string) error {
	m := w.msg[agent]
	if m == nil {
		return nil
	}
	w.msg[agent] = nil
	text, thinking := m.text.String(), m.thinking.String()
	if text != "" && agent == "" {
		w.said = text
	}
	calls := m.calls
	if calls == nil {
		calls = []toolRequest{}
	}
	d := map[string]any{"messageId": formats.NameUUID("agentconv copilot-events\x00message\x00" + w.cur.id + strconv.Itoa(w.cur.events)),
		"content": text, "toolRequests": calls}
	if thinking != "" {
		d["reasoningText"] = thinking
	}
	for _, c := range m.calls {
		w.calls[c.ToolCallID] = agent
	}
	return w.putAgent(m.at, "assistant.message", agent, d)
}

// result writes a call's end: success, a refusal (error code denied, as
// the CLI writes one it could not ask for), or a failure.
func (w *eventsWriter) result(at time.Time, agent string, c formats.Call) error {
	// What is kept of a call goes with its end: a run's memory is its
	// open calls.
	delete(w.calls, c.ID)
	delete(w.asked, c.ID)
	delete(w.perms, c.ID)
	d := map[string]any{"toolCallId": c.ID}
	switch c.Status {
	case formats.Completed:
		d["success"] = true
		d["result"] = map[string]any{"content": c.Output.Text()}
	default:
		if c.Status == formats.Cancelled {
			w.opts.Report.Quirk(lossCancelled)
		}
		code := "failure"
		if c.Status == formats.Denied {
			code = "denied"
		}
		msg := c.Error
		if msg == "" {
			msg = c.Output.Text()
		}
		d["success"] = false
		d["error"] = map[string]any{"message": msg, "code": code}
	}
	if c.ExitCode.OK {
		d["shellExecution"] = map[string]any{"exitCode": c.ExitCode.V}
	}
	return w.putAgent(at, "tool.execution_complete", agent, d)
}

// usage writes a request's counts as a usage record. It goes before the
// request's message, as the CLI writes it; so, while the agent's message
// is held, it takes the message's time, that the times read back do not
// go back.
func (w *eventsWriter) usage(at time.Time, e *formats.Event) error {
	if m := w.msg[e.Agent]; m != nil && m.at.Before(at) {
		at = m.at
	}
	u := e.Usage
	rec := map[string]any{}
	put := func(k string, o formats.Opt[int64]) {
		if o.OK {
			rec[k] = o.V
		}
	}
	model := e.Response.Model
	if model == "" {
		model = w.view.Info.Model
	}
	rec["model"] = model
	put("inputTokens", u.InputTokens)
	put("outputTokens", u.OutputTokens)
	put("cacheReadTokens", u.CacheReadTokens)
	put("cacheWriteTokens", u.CacheWriteTokens)
	put("reasoningTokens", u.ReasoningTokens)
	if e.Response.ID != "" {
		rec["apiCallId"] = e.Response.ID
	}
	if e.Response.StopReason != "" {
		rec["finishReason"] = e.Response.StopReason
	}
	return w.putAgent(at, "session.usage_record", e.Agent, map[string]any{"usage": rec})
}

func (w *eventsWriter) notice(at time.Time, e *formats.Event) error {
	switch e.Severity {
	case formats.Error:
		if e.Agent == "" {
			w.errored = true
		}
		code := e.Code
		if code == "" {
			code = "error"
		}
		return w.putAgent(at, "session.error", e.Agent, map[string]any{"errorType": code, "message": e.NoticeText()})
	case formats.Warning:
		return w.putAgent(at, "session.warning", e.Agent, map[string]any{"warningType": "agentconv", "message": e.NoticeText()})
	}
	return w.putAgent(at, "session.info", e.Agent, map[string]any{"infoType": "agentconv", "message": e.NoticeText()})
}

// startRun writes the session's start, or its resume when the session has
// a run in this output already.
func (w *eventsWriter) startRun(e *formats.Event) error {
	f, err := w.file(e)
	if err != nil {
		return err
	}
	w.cur = f
	w.turn, w.msg, w.calls, w.errored, w.said = map[string]int{}, map[string]*pendingMessage{}, map[string]string{}, false, ""
	w.asked, w.perms = map[string]bool{}, map[string]formats.Call{}
	w.agentStart, w.agentCalls = map[string]time.Time{}, map[string]int{}
	at := w.stamps.Next(e)
	w.started = at
	// The CLI wants a cwd, if empty.
	ctx := map[string]any{"cwd": e.Run.Cwd}
	if f.events == 0 {
		version := ""
		if e.Run.AgentName == AgentName {
			version = e.Run.AgentVersion // another agent's version is not the CLI's
		}
		return w.put(at, "session.start", map[string]any{"sessionId": f.id, "version": 1, "producer": "agentconv",
			"copilotVersion": version, "startTime": stamp(at), "selectedModel": e.Run.Model, "context": ctx})
	}
	return w.put(at, "session.resume", map[string]any{"resumeTime": stamp(at), "eventCount": f.events,
		"selectedModel": e.Run.Model, "context": ctx})
}

// endRun answers the calls left without a result, says the run's failure
// if no error did, and closes the run with the session's shutdown.
func (w *eventsWriter) endRun(at time.Time, v *formats.RunView) error {
	if err := w.flush(at, ""); err != nil {
		return err
	}
	// In the order they started, as the view keeps the open calls.
	for _, c := range v.Calls.Open() {
		if agent, written := w.calls[c.ID]; written {
			w.opts.Report.Quirk(formats.UnansweredCallsFailed)
			if err := w.result(at, agent, formats.Call{ID: c.ID, Status: formats.Failed, Error: "the call has no result"}); err != nil {
				return err
			}
		}
	}
	if !v.Success() && !w.errored {
		// The failure is what reads back as one: a session.error.
		if err := w.put(at, "session.error", map[string]any{"errorType": "error", "message": v.Failure}); err != nil {
			return err
		}
	}
	if c := v.ExitCode; c != 0 && c != 1 {
		w.opts.Report.Quirk(lossExitCodes)
	}
	if u, req := v.Usage, v.RequestUsage(); u.InputTokens.V > req.InputTokens.V || u.OutputTokens.V > req.OutputTokens.V ||
		u.CacheReadTokens.V > req.CacheReadTokens.V || u.CacheWriteTokens.V > req.CacheWriteTokens.V {
		// The run's totals say more than its requests (a source that gives
		// totals only, or a request it does not print).
		w.opts.Report.Quirk(formats.UnsummedRunUsage)
	}
	// The fields the CLI wants of a shutdown, as it writes them for a
	// session that failed before its first answer.
	return w.put(at, "session.shutdown", map[string]any{"shutdownType": "routine", "totalPremiumRequests": 0,
		"totalApiDurationMs": 0, "sessionStartTime": w.started.UnixMilli(),
		"codeChanges":  map[string]any{"linesAdded": 0, "linesRemoved": 0, "filesModified": []string{}},
		"modelMetrics": map[string]any{}})
}

// Close closes each session's file.
func (w *eventsWriter) Close() error {
	var first error
	for _, f := range w.order {
		if f.c != nil {
			if err := f.c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	w.files, w.order, w.cur = nil, nil, nil
	return first
}
