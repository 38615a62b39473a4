package gemini

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// emitter turns the messages of one session (or of one subagent's file)
// into events: each typed prompt starts a run, and the runs share the
// session's id.
type emitter struct {
	r   *chatReader
	q   *formats.EventQueue
	sid string
	// cwd is the session's project: the directory Gemini CLI ran in.
	cwd string
	// dir holds the session's subagents' files; "" when the input has no
	// path.
	dir string
	// agent is the subagent whose file this is; "" for the session.
	agent string
	open  bool
	// before are the records ahead of the first prompt, given in its run.
	before []*entry
	// last is the last message of the run that tells how it ended.
	last *message
	// calls are the calls started and not yet ended, by id.
	calls map[string]*formats.Call
	order []string
	// keys are the run's calls in order, each its name and arguments:
	// Gemini CLI's loop detection compares them.
	keys []string
	// looped: the run ended as Gemini CLI stops a run on a loop.
	looped bool
	depth  int
}

// emit queues the events of a session read whole.
func (r *chatReader) emit(s *session) {
	if !s.started && len(s.entries) == 0 {
		return
	}
	e := &emitter{r: r, q: &r.queue, sid: s.id, cwd: projectOf(s, r.opts.Path)}
	if r.opts.Path != "" && s.id != "" {
		e.dir = filepath.Join(filepath.Dir(r.opts.Path), sanitizeID(s.id))
	}
	if s.kind == "subagent" {
		e.alone(s)
		return
	}
	if p := r.opts.Path; p != "" {
		if o := partOwner(p); o != "" {
			r.opts.Report.Warn(0, "%s is a later part of session %s, whose first file is %s: read that file (or the directory) to convert the session whole", p, s.id, o)
		} else if parts := r.loadParts(p, s.id); len(parts) > 0 {
			joinParts(s, parts)
		}
	}
	s.entries = inlineSubagents(s.entries)
	for i, en := range s.entries {
		e.entry(en, s.entries[i:])
	}
	if !e.open && len(e.before) > 0 && !contextOnly(e.before) {
		e.start(e.before[0], s.entries)
	}
	e.end(true, s.cut)
}

// contextOnly says whether records are Gemini CLI's <session_context>
// alone, which a session resumed without a prompt leaves in a file of its
// own: no run.
func contextOnly(entries []*entry) bool {
	for _, en := range entries {
		if en.msg == nil || en.msg.Type != "user" || userKind(en.msg.Content) != userSession {
			return false
		}
	}
	return true
}

// alone reads a subagent's file on its own, when its session's file is
// not read: a run of its session (named by its directory) holding the
// subagent.
func (e *emitter) alone(s *session) {
	r := e.r
	sid := s.id
	if p := r.opts.Path; p != "" {
		sid = filepath.Base(filepath.Dir(p))
		e.dir = filepath.Dir(p)
		r.opts.Report.Warn(0, "%s is a subagent's file, read without its session's file (session %s): it is converted under a run of its own", p, sid)
	} else {
		r.opts.Report.Warn(0, "a subagent's file (kind subagent), read without its session's file: it is converted under a run of its own")
	}
	e.sid = sid
	t := sessionTime(s)
	e.q.Record(formats.Source{Dialect: r.opts.Dialect, Type: "metadata"},
		&formats.Event{Kind: formats.RunStart, Time: t, Run: e.info(firstModel(s.entries))},
		&formats.Event{Kind: formats.AgentStart, Time: t, Agent: s.id, AgentInfo: formats.AgentInfo{Model: firstModel(s.entries)}})
	e.open, e.agent = true, s.id
	for i, en := range s.entries {
		e.entry(en, s.entries[i:])
	}
	st, text, ok := e.outcome(true, s.cut)
	if !ok {
		return // cut: the pipeline ends it, with a warning
	}
	t = e.lastTime()
	e.q.Record(formats.Source{Dialect: r.opts.Dialect, Type: "end"},
		&formats.Event{Kind: formats.AgentEnd, Time: t, Agent: s.id, Status: st, Text: text},
		&formats.Event{Kind: formats.RunEnd, Time: t, Status: st, Text: text, Run: e.info("")})
}

func (e *emitter) info(model string) formats.RunInfo {
	return formats.RunInfo{SessionID: e.sid, Model: model, Provider: Provider, AgentName: AgentName, Cwd: e.cwd}
}

func sessionTime(s *session) time.Time {
	if t := parseTime(s.start); !t.IsZero() {
		return t
	}
	for _, en := range s.entries {
		if en.msg != nil {
			if t := parseTime(en.msg.Timestamp); !t.IsZero() {
				return t
			}
		}
	}
	return time.Time{}
}

// firstModel is the model of the first gemini message up to the next
// prompt after the first record.
func firstModel(entries []*entry) string {
	for i, en := range entries {
		if en.msg == nil {
			continue
		}
		if i > 0 && en.msg.Type == "user" && userKind(en.msg.Content) == userPrompt {
			break
		}
		if en.msg.Type == "gemini" && en.msg.Model != "" {
			return en.msg.Model
		}
	}
	return ""
}

func (e *emitter) lastTime() time.Time {
	if e.last != nil {
		return parseTime(e.last.Timestamp)
	}
	return time.Time{}
}

func (e *emitter) src(en *entry) formats.Source {
	typ := en.raw
	if en.msg != nil {
		typ = en.msg.Type
	}
	return formats.Source{Dialect: e.r.opts.Dialect, Type: typ, Line: en.line, LineNo: en.lineNo}
}

// start opens a run at the record en; rest are the session's records from
// it on, to find the run's model.
func (e *emitter) start(en *entry, rest []*entry) {
	t := time.Time{}
	if en.msg != nil {
		t = parseTime(en.msg.Timestamp)
	}
	e.q.Push(&formats.Event{Kind: formats.RunStart, Time: t, Run: e.info(firstModel(rest)),
		Source: formats.Source{Dialect: e.r.opts.Dialect, Type: "metadata", LineNo: en.lineNo}})
	e.open, e.last, e.keys = true, nil, nil
	before := e.before
	e.before = nil
	for _, b := range before {
		e.record(b)
	}
}

// entry gives the events of one record of the session.
func (e *emitter) entry(en *entry, rest []*entry) {
	if e.agent == "" && en.msg != nil && en.msg.Type == "user" && userKind(en.msg.Content) == userPrompt {
		if e.open {
			e.end(false, false)
		}
		e.start(en, rest)
	} else if e.agent == "" && !e.open {
		if en.msg == nil || en.msg.Type != "gemini" {
			e.before = append(e.before, en)
			return
		}
		e.start(en, rest) // a model turn without a prompt (after a checkpoint)
	}
	e.record(en)
}

// record gives the events of one record in the open run.
func (e *emitter) record(en *entry) {
	m := en.msg
	if m == nil {
		e.q.Record(e.src(en), &formats.Event{Kind: formats.Raw, Agent: e.agent})
		return
	}
	t := parseTime(m.Timestamp)
	switch m.Type {
	case "user":
		switch userKind(m.Content) {
		case userPrompt:
			e.last = m
			e.q.Record(e.src(en), &formats.Event{Kind: formats.UserMessage, Time: t, Agent: e.agent, Text: partsText(m.Content, false)})
		case userResponses:
			e.responses(en, t)
		case userSession:
			// Gemini CLI's own context, which it makes anew for each
			// session (the date, the system, the workspace): not the
			// conversation; the project is read from it.
		case userLoop:
			// Gemini CLI's own notice to the model that it repeats
			// itself; taken back (undone), Gemini CLI stopped the run
			// on the loop.
			e.last = m
			e.q.Record(e.src(en), &formats.Event{Kind: formats.Notice, Time: t, Agent: e.agent, Text: partsText(m.Content, false),
				Severity: formats.Warning})
		case userSnapshot:
			// The summary that a compression put in place of the history.
			e.q.Record(e.src(en), &formats.Event{Kind: formats.Compaction, Time: t, Agent: e.agent, Text: partsText(m.Content, false)})
		default:
			// Context that Gemini CLI puts before the prompt
			// (<session_context>), or content without text: kept raw.
			src := e.src(en)
			src.Type = "user (context)"
			if strings.TrimSpace(partsText(m.Content, false)) == "" {
				src.Type = "user (no text)"
			}
			e.q.Record(src, &formats.Event{Kind: formats.Raw, Agent: e.agent, Time: t})
		}
	case "gemini":
		e.last = m
		e.gemini(en, t)
	case "info", "warning", "error":
		text := partsText(m.Content, false)
		if m.Type == "error" || m.Type == "info" && text == cancelledText {
			e.last = m
		}
		e.q.Record(e.src(en), &formats.Event{Kind: formats.Notice, Time: t, Agent: e.agent, Text: text,
			Severity: severityOf[m.Type]})
	default:
		e.q.Record(e.src(en), &formats.Event{Kind: formats.Raw, Agent: e.agent, Time: t})
	}
}

var severityOf = map[string]formats.Severity{"info": formats.Info, "warning": formats.Warning, "error": formats.Error}

// gemini gives the events of a model response: its reasoning, text, tool
// calls, usage, the subagents its calls started, and the calls' results.
func (e *emitter) gemini(en *entry, t time.Time) {
	m := en.msg
	e.q.Begin(e.src(en))
	if th := thinkingOf(m); th != "" {
		e.q.Add(&formats.Event{Kind: formats.ThinkingDelta, Time: t, Agent: e.agent, Text: th})
	}
	if text := partsText(m.Content, false); text != "" {
		e.q.Add(&formats.Event{Kind: formats.Message, Time: t, Agent: e.agent, Text: text})
	}
	recorded := map[string]bool{}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		tc.ID = modelCallID(tc.Name, tc.ID)
		recorded[tc.ID] = true
		e.call(formats.Call{ID: tc.ID, Name: tc.Name, Args: rawArgs(tc.Args), Summary: tc.Description}, t)
	}
	// Calls in the content that no tool call record holds: a later user
	// record may answer them.
	for _, fc := range functionCalls(m.Content) {
		fc.ID = modelCallID(fc.Name, fc.ID)
		if fc.ID == "" || !recorded[fc.ID] {
			recorded[fc.ID] = true
			e.call(formats.Call{ID: fc.ID, Name: fc.Name, Args: rawArgs(fc.Args)}, t)
		}
	}
	if m.Tokens != nil {
		e.q.Add(&formats.Event{Kind: formats.Usage, Time: t, Agent: e.agent, Usage: chatUsage(m.Tokens),
			Response: formats.Response{Model: m.Model}})
	}
	for _, tc := range m.ToolCalls {
		if tc.AgentID != "" {
			e.subagent(&tc, t, e.src(en))
		}
		st := callStatusWords[tc.Status]
		if st == formats.StatusUnknown {
			continue // still running when the file was written
		}
		out, errText := resultOf(tc.Result, tc.ResultDisplay, st)
		e.endCall(tc.ID)
		e.q.Add(&formats.Event{Kind: formats.ToolResult, Time: orTime(parseTime(tc.Timestamp), t), Agent: e.agent,
			Call: formats.Call{ID: tc.ID, Name: tc.Name, Status: st, Output: formats.TextOutput(out), Error: errText}})
	}
}

// modelCallID is the id the model gave a call: Gemini CLI 0.61 keeps it
// as <tool>__<id> in its files and stream (0.20 kept the model's id as it
// was), and the model's is the conversation's, which another agent gets.
func modelCallID(name, id string) string {
	if rest, ok := strings.CutPrefix(id, name+"__"); ok && name != "" && rest != "" {
		return rest
	}
	return id
}

func orTime(t, or time.Time) time.Time {
	if t.IsZero() {
		return or
	}
	return t
}

func (e *emitter) call(c formats.Call, t time.Time) {
	if e.calls == nil {
		e.calls = map[string]*formats.Call{}
	}
	if _, ok := e.calls[c.ID]; !ok {
		e.order = append(e.order, c.ID)
	}
	cc := c
	e.calls[c.ID] = &cc
	e.keys = append(e.keys, c.Name+"\x00"+string(c.Args))
	e.q.Add(&formats.Event{Kind: formats.ToolCall, Time: t, Agent: e.agent, Call: c})
}

// endCall forgets an ended call.
func (e *emitter) endCall(id string) {
	delete(e.calls, id)
}

// responses gives the results of calls that only the content named, from
// a user record of functionResponse parts (Gemini CLI records the tool
// responses it sends; those of tool call records are theirs already).
func (e *emitter) responses(en *entry, t time.Time) {
	e.q.Begin(e.src(en))
	for _, p := range parts(en.msg.Content) {
		fr := p.FunctionResponse
		if fr == nil {
			continue
		}
		fr.ID = modelCallID(fr.Name, fr.ID)
		c, ok := e.calls[fr.ID]
		if !ok {
			continue
		}
		st := formats.Completed
		out, errText := responseText(fr.Response)
		if errText != "" {
			st = formats.Failed
		}
		e.endCall(fr.ID)
		e.q.Add(&formats.Event{Kind: formats.ToolResult, Time: t, Agent: e.agent,
			Call: formats.Call{ID: c.ID, Name: c.Name, Status: st, Output: formats.TextOutput(out), Error: errText}})
	}
}

// subagent gives the events of the subagent a call started, from its file
// beside the session's: chats/<session id>/<agent id>.jsonl.
func (e *emitter) subagent(tc *toolCallRecord, t time.Time, src formats.Source) {
	r := e.r
	if tc.inline != nil {
		e.subagentOf(tc, &session{entries: tc.inline}, t, src)
		return
	}
	if e.dir == "" {
		if !r.warned {
			r.warned = true
			r.opts.Report.Warn(0, "call %s started subagent %s, whose file is beside the session's file: name the file (not standard input) to convert its subagents too", tc.ID, tc.AgentID)
		}
		return
	}
	path := filepath.Join(e.dir, sanitizeID(tc.AgentID)+".jsonl")
	if e.depth > 16 || !r.first(path) {
		return
	}
	s, err := r.load(path)
	if err != nil {
		r.opts.Report.Warn(0, "call %s started subagent %s, but its file cannot be read (%v): its events are not converted", tc.ID, tc.AgentID, err)
		return
	}
	e.subagentOf(tc, s, t, src)
}

// subagentOf gives the events of the subagent that the call tc started,
// whose records are s's.
func (e *emitter) subagentOf(tc *toolCallRecord, s *session, t time.Time, src formats.Source) {
	r := e.r
	label := tc.DisplayName
	var a struct {
		AgentName string `json:"agent_name"`
	}
	if json.Unmarshal(tc.Args, &a) == nil && a.AgentName != "" {
		label = a.AgentName
	}
	if label == "" {
		label = tc.Name
	}
	model := firstModel(s.entries)
	e.q.Push(&formats.Event{Kind: formats.AgentStart, Time: orTime(sessionTime(s), t), Agent: tc.AgentID,
		AgentInfo: formats.AgentInfo{Label: label, Parent: e.agent, ParentCall: tc.ID, Model: model},
		Source:    formats.Source{Dialect: r.opts.Dialect, Type: "subagent"}})
	sub := &emitter{r: r, q: e.q, sid: e.sid, cwd: e.cwd, dir: e.dir, agent: tc.AgentID, open: true, depth: e.depth + 1}
	for i, en := range s.entries {
		sub.entry(en, s.entries[i:])
	}
	st, text, ok := sub.outcome(true, s.cut)
	if !ok {
		st = callStatusWords[tc.Status]
	}
	if st == formats.StatusUnknown {
		// Its call still runs: so does the subagent.
		src.Line = nil
		e.q.Begin(src)
		return
	}
	sub.closeCalls(sub.lastTime(), "not completed: the subagent's file leaves it open")
	if out, _ := resultOf(tc.Result, tc.ResultDisplay, formats.Completed); out != "" {
		text = out
	}
	e.q.Push(&formats.Event{Kind: formats.AgentEnd, Time: orTime(parseTime(tc.Timestamp), t), Agent: tc.AgentID,
		Status: st, Text: text, Source: formats.Source{Dialect: r.opts.Dialect, Type: "subagent"}})
	// The call's result goes on with the response's record.
	src.Line = nil
	e.q.Begin(src)
}

// loadParts reads the later parts of the session sid whose file is path
// (partsOf).
func (r *chatReader) loadParts(path, sid string) []*session {
	var out []*session
	for _, p := range partsOf(path, sid) {
		if !r.first(p) {
			continue
		}
		s, err := r.load(p)
		if err != nil {
			r.opts.Report.Warn(0, "%s holds more of session %s, but cannot be read (%v): its records are not converted", p, sid, err)
			continue
		}
		out = append(out, s)
	}
	return out
}

// first marks the file at path read, and says whether it was not yet: no
// file is read twice.
func (r *chatReader) first(path string) bool {
	if r.seen[path] {
		return false
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[path] = true
	return true
}

// load reads a subagent's file whole.
func (r *chatReader) load(path string) (*session, error) {
	f, err := formats.OpenFound(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sub := &chatReader{opts: r.opts, br: bufferOf(f), seen: r.seen}
	sub.opts.Path = path
	where := r.opts.Report.SetWhere(func(line int) string { return path + ":" + strconv.Itoa(line) + ": " })
	defer func() { r.opts.Report.SetWhere(where) }()
	var got *session
	sub.sink = func(s *session) {
		if got == nil {
			got = s
		}
	}
	for !sub.done {
		if err := sub.read(); err != nil {
			if le, ok := err.(*formats.LineError); ok {
				r.opts.Report.Warn(le.Line, "%s; left out", le.Msg)
				continue
			}
			return nil, err
		}
	}
	if got == nil {
		got = &session{}
	}
	return got, nil
}

// outcome says how the open run (or subagent) ended, from its last
// message: ok is false when it did not end (the file was cut, or the model
// still had to answer), so the run is left open.
func (e *emitter) outcome(eof, cut bool) (st formats.Status, text string, ok bool) {
	if cut {
		return 0, "", false
	}
	m := e.last
	switch {
	case m == nil:
		// Notices alone: nothing was asked, nothing is left to answer.
		return formats.StatusUnknown, "", true
	case m.undone && m.Type == "user" && userKind(m.Content) == userLoop, e.loopStopped(eof):
		// Gemini CLI stopped the run on a loop: it ends so, as a success.
		e.looped = true
		return formats.Completed, "", true
	case m.undone:
		return formats.Failed, undoneText, true
	case m.Type == "user":
		return formats.StatusUnknown, "", !eof
	case m.Type == "error":
		return formats.Failed, partsText(m.Content, false), true
	case m.Type == "info":
		return formats.Cancelled, "", true
	}
	if len(e.calls) > 0 || len(m.ToolCalls) > 0 || len(functionCalls(m.Content)) > 0 {
		cancelled := len(m.ToolCalls) > 0
		for _, tc := range m.ToolCalls {
			cancelled = cancelled && tc.Status == "cancelled"
		}
		if cancelled && len(e.calls) == 0 {
			return formats.Cancelled, "", true
		}
		return formats.StatusUnknown, "", !eof
	}
	return formats.Completed, "", true
}

// loopThreshold is the number of identical calls in a row (the same
// tool, the same arguments) at which Gemini CLI detects a loop
// (TOOL_CALL_LOOP_THRESHOLD in loopDetectionService.ts). It does not run
// the last one, nor record the response that asked for it: 0.2x stops
// the run there; later versions tell the model of the loop (userLoop),
// and stop at the next identical call, taking the notice back.
const loopThreshold = 5

// loopStopped says whether the run ends, at the end of the file, on the
// calls Gemini CLI ran before it stopped the run on a loop: its last
// response's calls all ended, and its last loopThreshold-1 calls are the
// same call. The file records nothing else of the stop (0.2x).
func (e *emitter) loopStopped(eof bool) bool {
	m := e.last
	if !eof || m == nil || m.Type != "gemini" || len(m.ToolCalls) == 0 || len(e.calls) > 0 || len(e.keys) < loopThreshold-1 {
		return false
	}
	for _, tc := range m.ToolCalls {
		if callStatusWords[tc.Status] == formats.StatusUnknown {
			return false
		}
	}
	last := e.keys[len(e.keys)-loopThreshold+1:]
	for _, k := range last {
		if k != last[0] {
			return false
		}
	}
	return true
}

// loopText is what Gemini CLI says when it stops a run on a loop (its
// stream-json's warning, its json's warnings).
const loopText = "Loop detected, stopping execution"

// undoneText is the failure of a turn that Gemini CLI took back from the
// session, as it does when the turn fails: the file says no more.
const undoneText = "Gemini CLI took this turn back from the session, as it does when a turn fails (the session file does not say why)"

// end closes the open run: at the next prompt (eof false) or at the end of
// the session. A run whose end the file does not show is left open: the
// pipeline ends it as cut, with a warning.
func (e *emitter) end(eof, cut bool) {
	if !e.open {
		return
	}
	st, text, ok := e.outcome(eof, cut)
	if !ok {
		return
	}
	t := e.lastTime()
	e.closeCalls(t, "not completed: the next prompt came first")
	if e.looped {
		e.looped = false
		e.q.Push(&formats.Event{Kind: formats.Notice, Time: t, Agent: e.agent, Text: loopText, Severity: formats.Warning,
			Source: formats.Source{Dialect: e.r.opts.Dialect, Type: "end"}})
	}
	e.q.Push(&formats.Event{Kind: formats.RunEnd, Time: t, Status: st, Text: text, Run: e.info(""),
		Source: formats.Source{Dialect: e.r.opts.Dialect, Type: "end"}})
	e.open = false
}

// closeCalls ends the calls the file leaves without an end: they never
// completed.
func (e *emitter) closeCalls(t time.Time, why string) {
	for _, id := range e.order {
		if c, open := e.calls[id]; open {
			e.q.Push(&formats.Event{Kind: formats.ToolResult, Time: t, Agent: e.agent,
				Call:   formats.Call{ID: c.ID, Name: c.Name, Status: formats.Cancelled, Error: why},
				Source: formats.Source{Dialect: e.r.opts.Dialect, Type: "end"}})
		}
	}
	e.calls, e.order = nil, nil
}

// Content: a PartListUnion, a string, a Part or an array of both.

type part struct {
	Text             *string           `json:"text"`
	Thought          bool              `json:"thought"`
	FunctionCall     *functionCall     `json:"functionCall"`
	FunctionResponse *functionResponse `json:"functionResponse"`
}

type functionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResponse struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// parts reads a PartListUnion: a string, a Part, or an array of both (an
// array in the array is none of them, and is left out).
func parts(c json.RawMessage) []part {
	c = bytes.TrimSpace(c)
	if len(c) > 0 && c[0] == '[' {
		var items []json.RawMessage
		json.Unmarshal(c, &items)
		var out []part
		for _, it := range items {
			if p, ok := partUnion(it); ok {
				out = append(out, p)
			}
		}
		return out
	}
	if p, ok := partUnion(c); ok {
		return []part{p}
	}
	return nil
}

// partUnion reads a PartUnion: a string or a Part.
func partUnion(c json.RawMessage) (part, bool) {
	c = bytes.TrimSpace(c)
	if len(c) == 0 {
		return part{}, false
	}
	switch c[0] {
	case '"':
		var s string
		json.Unmarshal(c, &s)
		return part{Text: &s}, true
	case '{':
		var p part
		json.Unmarshal(c, &p)
		return p, true
	}
	return part{}, false
}

// partsText joins the text of the parts, the thoughts or the rest.
func partsText(c json.RawMessage, thoughts bool) string {
	var b strings.Builder
	for _, p := range parts(c) {
		if p.Text != nil && p.Thought == thoughts {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

func functionCalls(c json.RawMessage) []functionCall {
	var out []functionCall
	for _, p := range parts(c) {
		if p.FunctionCall != nil {
			out = append(out, *p.FunctionCall)
		}
	}
	return out
}

const (
	userPrompt = iota
	userResponses
	userSnapshot
	userSession
	userLoop
	userOther
)

// loopNotice starts the message Gemini CLI sends the model when it detects
// a loop (_recoverFromLoop in client.ts): its own, not a prompt.
const loopNotice = "System: Potential loop detected."

// userKind tells a typed prompt from the tool responses and the context
// that Gemini CLI records as user messages.
func userKind(c json.RawMessage) int {
	ps := parts(c)
	responses, text := 0, ""
	for _, p := range ps {
		if p.FunctionResponse != nil {
			responses++
		}
		if p.Text != nil && !p.Thought {
			text += *p.Text
		}
	}
	switch t := strings.TrimSpace(text); {
	case responses > 0 && t == "":
		return userResponses
	case strings.HasPrefix(t, "<session_context>"):
		return userSession
	case strings.HasPrefix(t, loopNotice):
		return userLoop
	case t == "" || strings.HasPrefix(t, "<hook_context>"):
		return userOther
	case strings.Contains(t, "<state_snapshot>") && strings.Contains(t, "</state_snapshot>"):
		return userSnapshot
	}
	return userPrompt
}

// thinkingOf is a response's reasoning: its thought summaries, each as
// Gemini CLI parsed it from "**Subject** description", and thought parts.
func thinkingOf(m *message) string {
	var ts []thought
	json.Unmarshal(m.Thoughts, &ts)
	var out []string
	for _, t := range ts {
		s := t.Description
		if t.Subject != "" {
			s = "**" + t.Subject + "**"
			if t.Description != "" {
				s += "\n" + t.Description
			}
		}
		if s != "" {
			out = append(out, s)
		}
	}
	if th := partsText(m.Content, true); th != "" {
		out = append(out, th)
	}
	return strings.Join(out, "\n\n")
}

// rawArgs is a call's arguments, compact (a legacy document indents them).
func rawArgs(a json.RawMessage) json.RawMessage {
	a = bytes.TrimSpace(a)
	if len(a) == 0 || string(a) == "null" {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, a) != nil {
		return append(json.RawMessage(nil), a...)
	}
	return b.Bytes()
}

// resultOf reads a call's result parts: the output its function responses
// carry (response.output, else the response as JSON) and text parts, and
// the error (response.error, else the result display of a call that did
// not succeed).
func resultOf(result, display json.RawMessage, st formats.Status) (out, errText string) {
	var outs []string
	for _, p := range parts(result) {
		switch {
		case p.FunctionResponse != nil:
			o, e := responseText(p.FunctionResponse.Response)
			if o != "" {
				outs = append(outs, o)
			}
			if e != "" && errText == "" {
				errText = e
			}
		case p.Text != nil && !p.Thought:
			outs = append(outs, *p.Text)
		}
	}
	if errText == "" && st != formats.Completed {
		var s string
		if json.Unmarshal(display, &s) == nil {
			errText = s
		}
	}
	return strings.Join(outs, "\n"), errText
}

// responseText reads a function response: {"output": …} or {"error": …},
// else the whole response as JSON.
func responseText(resp json.RawMessage) (out, errText string) {
	var r struct {
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	if len(bytes.TrimSpace(resp)) == 0 || json.Unmarshal(resp, &r) != nil {
		return string(resp), ""
	}
	str := func(b json.RawMessage) string {
		var s string
		if json.Unmarshal(b, &s) == nil {
			return s
		}
		return string(b)
	}
	switch {
	case r.Output != nil:
		out = str(r.Output)
	case r.Error == nil:
		out = string(resp)
	}
	if r.Error != nil {
		errText = str(r.Error)
	}
	return out, errText
}

// chatUsage is one response's tokens in the model's meaning: Gemini's input
// (promptTokenCount) includes the cached tokens, as the model's does; the
// tool-use prompt tokens are input too (the total counts them apart); the
// output (candidates) leaves out the thoughts, which the model's includes.
func chatUsage(t *tokensSummary) formats.UsageInfo {
	u := usageOfCounts(t.Input, t.Output, t.Total, t.Cached, t.Thoughts)
	if tool := count(t.Tool); tool.OK && tool.V > 0 {
		u.InputTokens = u.InputTokens.Plus(tool)
	}
	return u
}
