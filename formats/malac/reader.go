package malac

import (
	"bytes"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// record is every field any malac event has; fields the reader does not
// need stay in the verbatim line.
type record struct {
	Agent         string          `json:"agent"`
	Seq           json.RawMessage `json:"seq"`
	At            string          `json:"at"`
	Type          string          `json:"type"`
	Label         string          `json:"label"`
	Parent        *string         `json:"parent"`
	Model         string          `json:"model"`
	Cwd           string          `json:"cwd"`
	Text          string          `json:"text"`
	Message       json.RawMessage `json:"message"`
	Tool          json.RawMessage `json:"tool"`
	CallID        string          `json:"call_id"`
	Summary       string          `json:"summary"`
	Input         json.RawMessage `json:"input"`
	Output        *string         `json:"output"`
	IsError       bool            `json:"is_error"`
	Millis        *float64        `json:"millis"`
	RequestID     string          `json:"request_id"`
	Allowed       *bool           `json:"allowed"`
	Items         json.RawMessage `json:"items"`
	Turn          json.RawMessage `json:"turn"`
	Total         json.RawMessage `json:"total"`
	ContextTokens *float64        `json:"context_tokens"`
	Level         string          `json:"level"`
	Status        string          `json:"status"`
	Report        string          `json:"report"`
	// ExitCode is not in malac's documentation: this writer adds it to the
	// main agent's agent_finished when the outcome does not imply it.
	ExitCode *float64 `json:"exit_code"`
}

// maxHeld bounds how many update records the reader holds before a run
// begins, waiting for the run they belong to.
const maxHeld = 16

type reader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	queue formats.EventQueue
	// held are agent-less records met before any run, with their events.
	held []heldRecord
	end  formats.EndAtEOF

	run     runState
	lastSeq int64
	hasSeq  bool
}

type heldRecord struct {
	line []byte
	n    int
	evs  []*formats.Event
}

// runState is what the reader follows of one run; it is reset when the run
// ends, so memory is bounded by one run.
type runState struct {
	open bool
	main string // the main agent's malac id
	// subs maps a subagent's id to its parent's id ("" for the main agent).
	subs     map[string]string
	calls    map[string]*callState
	requests map[string]string // request_id → call_id
	warned   map[string]bool   // agents warned about
	totals   map[string]formats.UsageInfo
	// models is each agent's model ("" for the main agent), which sets the
	// convention of its usage counts.
	models map[string]string
	turn   struct {
		seen   bool
		status formats.Status
		text   string
	}
	lastDenied  bool // the last call result of the run was a refusal
	first, last time.Time
}

type callState struct {
	agent  string
	name   string
	open   bool
	denied bool
}

func newReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &reader{lines: formats.NewLineReader(r), opts: o}
}

func (r *reader) Next() (*formats.Event, error) {
	for r.queue.Len() == 0 {
		if r.end.Done() {
			return nil, io.EOF
		}
		if err := r.readRecord(); err != nil {
			if err != io.EOF {
				return nil, err
			}
			r.releaseHeld()
			// The input ended: so does the run.
			r.queue.Push(r.end.End(r.opts.Dialect, r.lines.Line(), r.run.open, func() []*formats.Event { return r.endRun(nil) })...)
		}
	}
	return r.queue.Pop(), nil
}

// readRecord reads one line and queues its events: the first carries the
// line, the others are marked Continued.
func (r *reader) readRecord() error {
	line, err := r.lines.Next()
	if err != nil {
		return err
	}
	n := r.lines.Line()
	var rec record
	if err := r.opts.Report.UnmarshalObject(n, line, &rec); err != nil {
		return err
	}
	line = append([]byte(nil), line...)
	var evs []*formats.Event
	if !r.run.open && rec.Type == "update" && len(r.held) < maxHeld {
		// An update before any run: hold it, so that the run it belongs
		// to can begin first.
		r.checkEnvelope(&rec, n)
		r.held = append(r.held, heldRecord{line, n, r.events(&rec, n)})
		return nil
	}
	if len(r.held) > 0 {
		// This record begins the run: the held records go out with it, in
		// their order, so that a malac writer prints them as they came.
		var joined []byte
		for _, h := range r.held {
			joined = append(append(joined, h.line...), '\n')
		}
		line = append(joined, line...)
		r.checkEnvelope(&rec, n)
		evs = r.events(&rec, n)
		for _, h := range r.held {
			evs = append(evs, h.evs...)
		}
		r.held = nil
	} else {
		r.releaseHeld()
		r.checkEnvelope(&rec, n)
		evs = r.events(&rec, n)
	}
	r.queue.Record(formats.Source{Dialect: r.opts.Dialect, Type: rec.Type, Line: line, LineNo: n}, evs...)
	return nil
}

// releaseHeld queues the held records as they came.
func (r *reader) releaseHeld() {
	held := r.held
	r.held = nil
	for _, h := range held {
		r.queue.Record(formats.Source{Dialect: r.opts.Dialect, Type: formats.TypeOf(h.line), Line: h.line, LineNo: h.n}, h.evs...)
	}
}

// checkEnvelope warns about seq out of order or with gaps, and bad times.
func (r *reader) checkEnvelope(rec *record, n int) {
	newRun := rec.Type == "agent_started" && (rec.Parent == nil || *rec.Parent == "")
	if len(rec.Seq) > 0 && string(rec.Seq) != "null" {
		seq, err := strconv.ParseInt(string(rec.Seq), 10, 64)
		switch {
		case err != nil:
			r.opts.Report.Warn(n, "seq %s is not an integer; kept", rec.Seq)
		case r.hasSeq && seq <= r.lastSeq && !newRun:
			r.opts.Report.Warn(n, "seq %d comes after seq %d (out of order); kept", seq, r.lastSeq)
		case r.hasSeq && seq > r.lastSeq+1:
			r.opts.Report.Warn(n, "seq jumps from %d to %d (%d events missing); kept", r.lastSeq, seq, seq-r.lastSeq-1)
		}
		if err == nil && (!r.hasSeq || seq > r.lastSeq || newRun) {
			r.lastSeq, r.hasSeq = seq, true
		}
	} else {
		r.opts.Report.Warn(n, "an event without a seq; kept")
	}
	if rec.Type == "" {
		r.opts.Report.Warn(n, "an event without a \"type\"; kept as an unknown event")
	}
}

func (r *reader) time(rec *record, n int) time.Time {
	if rec.At == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, rec.At)
	if err != nil {
		r.opts.Report.Warn(n, "at %q is not an RFC 3339 time; the event is kept without a time", rec.At)
		return time.Time{}
	}
	return t
}

// events turns one record into events, updating the run's state.
func (r *reader) events(rec *record, n int) []*formats.Event {
	var evs []*formats.Event
	at := r.time(rec, n)
	add := func(e *formats.Event) *formats.Event {
		if e.Time.IsZero() {
			e.Time = at
		}
		evs = append(evs, e)
		return e
	}
	run := &r.run
	if rec.Type == "agent_started" && (rec.Parent == nil || *rec.Parent == "") {
		if run.open {
			evs = append(evs, r.endRun(nil)...)
		}
		r.startRun(rec.Agent)
		run.models[""] = rec.Model
		add(&formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{
			SessionID: rec.Agent, Model: rec.Model, Cwd: rec.Cwd, AgentName: "malac"}})
		r.stamp(at)
		return evs
	}
	if !run.open && rec.Type != "update" {
		r.opts.Report.Warn(n, "the run does not begin with the main agent's agent_started; agent %q is taken as the main agent", rec.Agent)
		r.startRun(rec.Agent)
		add(&formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: rec.Agent, AgentName: "malac"}, Source: formats.Source{Type: "agent_started"}})
	}
	r.stamp(at)
	agent := r.agentOf(rec, n, add)
	ev := &formats.Event{Agent: agent}
	switch rec.Type {
	case "agent_started":
		parent := r.agentID(*rec.Parent)
		run.subs[rec.Agent] = parent
		run.models[agent] = rec.Model
		ev.Kind = formats.AgentStart
		ev.AgentInfo = formats.AgentInfo{Label: rec.Label, Parent: parent, ParentCall: r.spawningCall(*rec.Parent), Model: rec.Model, Cwd: rec.Cwd}
	case "agent_finished":
		if agent == "" {
			return append(evs, r.endRun(rec)...)
		}
		evs = append(evs, r.closeDenied(agent)...)
		ev.Kind, ev.Status, ev.Text = formats.AgentEnd, statusWords.Parse(rec.Status), rec.Report
	case "model_changed":
		ev.Kind, ev.Run.Model = formats.ModelChange, rec.Model
		run.models[agent] = rec.Model
	case "user_message":
		ev.Kind, ev.Text = formats.UserMessage, rec.Text
	case "text_delta":
		ev.Kind, ev.Text = formats.TextDelta, rec.Text
	case "thinking_delta":
		ev.Kind, ev.Text = formats.ThinkingDelta, rec.Text
	case "assistant_message":
		ev.Kind = formats.Message
		ev.Text, ev.Thinking = messageText(rec.Message)
	case "tool_started":
		ev.Kind = formats.ToolCall
		ev.Call = formats.Call{ID: rec.CallID, Name: stringOf(rec.Tool), Args: rec.Input, Summary: rec.Summary}
		c := &callState{agent: agent, name: ev.Call.Name, open: true}
		if old := run.calls[rec.CallID]; old != nil && old.denied {
			c.denied = true // refused before it started: its result is the refusal
		}
		run.calls[rec.CallID] = c
	case "tool_finished":
		ev.Kind = formats.ToolResult
		ev.Call = formats.Call{ID: rec.CallID, Name: stringOf(rec.Tool), Status: formats.Completed}
		if rec.Output != nil {
			ev.Call.Output = formats.TextOutput(*rec.Output)
		}
		if rec.Millis != nil && *rec.Millis > 0 {
			ev.Duration = time.Duration(*rec.Millis * float64(time.Millisecond))
		}
		c := run.calls[rec.CallID]
		switch {
		case c != nil && c.denied:
			ev.Call.Status, ev.Call.Error, ev.Call.Output = formats.Denied, ev.Call.Output.Text(), formats.TextOutput("")
			if ev.Call.Error == "" {
				ev.Call.Error = "permission denied"
			}
		case rec.IsError:
			ev.Call.Status = formats.Failed
		}
		if c != nil {
			c.open = false
			if ev.Call.Name == "" {
				ev.Call.Name = c.name // a result without its tool is its call's
			}
		}
		run.lastDenied = ev.Call.Status == formats.Denied
	case "permission_requested":
		ev.Kind = formats.PermissionRequest
		ev.Permission.RequestID = rec.RequestID
		ev.Call = formats.Call{ID: rec.CallID, Name: stringOf(rec.Tool), Args: rec.Input, Summary: rec.Summary}
		run.requests[rec.RequestID] = rec.CallID
	case "permission_resolved":
		ev.Kind = formats.PermissionAnswer
		ev.Permission = formats.Permission{RequestID: rec.RequestID, Allowed: rec.Allowed != nil && *rec.Allowed}
		if id, ok := run.requests[rec.RequestID]; ok {
			ev.Call.ID = id
			c := run.calls[id]
			if c == nil && !ev.Permission.Allowed {
				// A refusal of a call not started yet: its result, when it
				// comes, is the refusal's.
				c = &callState{agent: agent, open: true}
				run.calls[id] = c
			}
			if c != nil {
				ev.Call.Name = c.name
				c.denied = !ev.Permission.Allowed
			}
		}
		if !ev.Permission.Allowed {
			run.lastDenied = true
		}
	case "todos":
		ev.Kind = formats.Todos
		ev.Todos = todoItems(rec.Items)
		if ev.Todos == nil {
			ev.Todos = []formats.Todo{}
		}
	case "usage":
		ev.Kind = formats.Usage
		ev.Usage = readUsage(r.opts.Report, n, rec.Turn, run.models[agent])
		ev.Aggregate = true // "turn": the counts of the turn's requests together
		if rec.ContextTokens != nil {
			ev.Usage.ContextTokens = formats.Some(int64(*rec.ContextTokens))
		}
		if t := readUsage(r.opts.Report, n, rec.Total, run.models[agent]); !t.Empty() {
			run.totals[rec.Agent] = t
		}
	case "compacted":
		ev.Kind, ev.Text = formats.Compaction, rec.Summary
	case "notice":
		ev.Kind, ev.Severity, ev.Text = formats.Notice, severityWords.Parse(rec.Level), stringOf(rec.Message)
	case "turn_finished":
		ev.Kind, ev.Status, ev.Text = formats.TurnEnd, statusWords.Parse(rec.Status), rec.Text
		if agent == "" {
			run.turn.seen, run.turn.status, run.turn.text = true, ev.Status, rec.Text
		}
	case "update":
		ev.Kind, ev.Severity, ev.Text = formats.Notice, formats.Info, "malac update: "+rec.Status
	default:
		// tool_call_streaming (a progress signal: the call comes again as
		// tool_started) and types newer than this reader.
		ev.Kind = formats.Raw
	}
	add(ev)
	return evs
}

func (r *reader) startRun(main string) {
	r.run = runState{open: true, main: main, subs: map[string]string{}, calls: map[string]*callState{},
		requests: map[string]string{}, warned: map[string]bool{}, totals: map[string]formats.UsageInfo{}, models: map[string]string{}}
}

func (r *reader) stamp(at time.Time) {
	if at.IsZero() {
		return
	}
	if r.run.first.IsZero() {
		r.run.first = at
	}
	r.run.last = at
}

// agentID maps a malac agent id onto the model's: "" for the main agent.
func (r *reader) agentID(id string) string {
	if id == r.run.main {
		return ""
	}
	return id
}

// agentOf maps the record's agent, announcing an agent that never started
// as a subagent of the main agent, so that writers see a consistent tree.
func (r *reader) agentOf(rec *record, n int, add func(*formats.Event) *formats.Event) string {
	if rec.Type == "update" {
		return "" // about malac itself, of no agent (its agent is empty)
	}
	id := r.agentID(rec.Agent)
	if id == "" || rec.Type == "agent_started" {
		return id
	}
	if _, ok := r.run.subs[id]; !ok {
		r.opts.Report.Warn(n, "events of agent %q, which never started; kept as a subagent of the main agent", id)
		if r.run.subs == nil {
			r.run.subs = map[string]string{} // an event before any run
		}
		r.run.subs[id] = ""
		add(&formats.Event{Kind: formats.AgentStart, Agent: id, Source: formats.Source{Type: "agent_started"}})
	}
	return id
}

// spawningCall is the call of the parent agent that started a subagent,
// when that is unambiguous: the parent has exactly one call open.
func (r *reader) spawningCall(parent string) string {
	found := ""
	for id, c := range r.run.calls {
		if c.open && !c.denied && c.agent == r.agentID(parent) {
			if found != "" {
				return ""
			}
			found = id
		}
	}
	return found
}

// closeDenied ends the refused calls of an agent that never got a
// tool_finished: malac sends the refusal back to the model, so the call
// ended there.
func (r *reader) closeDenied(agent string) []*formats.Event {
	var evs []*formats.Event
	for id, c := range r.run.calls {
		if c.open && c.denied && c.agent == agent {
			c.open = false
			evs = append(evs, &formats.Event{Kind: formats.ToolResult, Agent: agent, Source: formats.Source{Type: "permission_resolved"},
				Call: formats.Call{ID: id, Name: c.name, Status: formats.Denied, Error: "permission denied"}})
		}
	}
	sortByCallID(evs)
	return evs
}

// endRun closes the run: refused calls left open, the answer (the main
// agent's last turn text), and RunEnd with the outcome of the main agent's
// last turn. fin is the main agent's agent_finished, if that ended it.
func (r *reader) endRun(fin *record) []*formats.Event {
	run := &r.run
	var evs []*formats.Event
	for id := range run.subs {
		evs = append(evs, r.closeDenied(id)...)
	}
	sortByCallID(evs)
	evs = append(evs, r.closeDenied("")...)
	if run.turn.text != "" {
		evs = append(evs, &formats.Event{Kind: formats.Answer, Text: run.turn.text, Source: formats.Source{Type: "turn_finished"}})
	}
	end := &formats.Event{Kind: formats.RunEnd, Run: formats.RunInfo{SessionID: run.main, AgentName: "malac"}}
	switch {
	case run.turn.seen:
		end.Status = run.turn.status
	case fin != nil && statusWords.Parse(fin.Status) != formats.StatusUnknown:
		end.Status = statusWords.Parse(fin.Status)
	default:
		// The main agent never finished a turn: the stream was cut. The
		// pipeline closes such a run, its open calls and subagents.
		r.run = runState{}
		return evs
	}
	if !end.Status.OK() && run.lastDenied {
		// The run stopped at a refused call: AdaL's exit 2.
		end.Status = formats.Denied
	}
	if fin != nil && !end.Status.OK() {
		end.Text = fin.Report
	}
	if fin != nil && fin.ExitCode != nil && *fin.ExitCode >= 0 && *fin.ExitCode <= 255 {
		end.Run.ExitCode = formats.Some(int(*fin.ExitCode))
	}
	for _, t := range run.totals {
		end.Usage.Add(t)
	}
	if !run.first.IsZero() && run.last.After(run.first) {
		end.Duration = run.last.Sub(run.first)
	}
	r.run = runState{}
	return append(evs, end)
}

// sortByCallID orders the events made from a map, so that the same input
// always gives the same output.
func sortByCallID(evs []*formats.Event) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Call.ID < evs[j].Call.ID })
}

// stringOf reads a JSON string; anything else gives its JSON text.
func stringOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.ToValidUTF8(string(raw), "\uFFFD")
}

// messageText reads the text and reasoning of an assistant_message, whose
// shape is undocumented: a string, an object with text, or an object whose
// content is a string or a list of text and thinking blocks.
func messageText(raw json.RawMessage) (text, thinking string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", ""
	}
	if raw[0] == '"' {
		return stringOf(raw), ""
	}
	var m struct {
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		Content  json.RawMessage `json:"content"`
	}
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return "", ""
	}
	var t, th formats.Text
	t.Add(m.Text)
	th.Add(m.Thinking)
	c := bytes.TrimSpace(m.Content)
	switch {
	case len(c) > 0 && c[0] == '"':
		t.Add(stringOf(c))
	case len(c) > 0 && c[0] == '[':
		var blocks []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Thinking string `json:"thinking"`
		}
		_ = json.Unmarshal(c, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "text", "output_text":
				t.Add(b.Text)
			case "thinking", "reasoning":
				th.Add(b.Thinking)
				th.Add(b.Text)
			}
		}
	}
	return t.String(), th.String()
}

// todoItems reads todos.items: each item has content and status; other
// fields stay in the verbatim line.
func todoItems(raw json.RawMessage) []formats.Todo {
	var items []struct {
		Content json.RawMessage `json:"content"`
		Status  json.RawMessage `json:"status"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	out := make([]formats.Todo, len(items))
	for i, it := range items {
		out[i] = formats.Todo{Content: stringOf(it.Content), Status: stringOf(it.Status)}
	}
	return out
}

// statusWords and severityWords are the words malac's records use, as
// this reader has always taken them.
var (
	statusWords = formats.StatusWords{"success": formats.Completed, "succeeded": formats.Completed, "ok": formats.Completed,
		"done": formats.Completed, "error": formats.Failed, "failure": formats.Failed, "canceled": formats.Cancelled,
		"interrupted": formats.Cancelled, "aborted": formats.Cancelled, "declined": formats.Denied, "refused": formats.Denied,
		"rejected": formats.Denied, "in_progress": formats.Running, "pending": formats.Running, "started": formats.Running}
	severityWords = formats.SeverityWords{"warn": formats.Warning, "fatal": formats.Error}
)
