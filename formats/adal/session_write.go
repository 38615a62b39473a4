package adal

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The session writer writes each session as AdaL 1.8.6 keeps it, so that
// `adal -r ID` resumes it: conversation_<id>.jsonl opens with a metadata
// record; each run is a turn (turn_created), its prompt a user message,
// each model response a step (an assistant message whose metadata.calls
// hold the response's calls with their outputs, in AdaL's "[i/N] name
// [status]:" observation), each model call's usage a usage record (source
// main or subagent), and its end a final message (is_final_answer, with the
// answer and status success, or status error or cancelled). With -o DIR
// each session goes to DIR/conversation_<id>.jsonl, beside the
// <id>_metadata.json AdaL keeps of it (AdaL writes that one again when it
// resumes). AdaL's ids are UUIDs: a session id that is not one gets a
// UUID derived from it.
type sessionWriter struct {
	stream io.Writer
	opts   formats.WriteOptions
	view   *formats.RunView
	files  map[string]*sessionFile
	order  []*sessionFile
	out    *formats.SessionFiles // with -o DIR
	cur    *sessionFile
	runs   int // runs without a session id
	run    sessionRun
	stamps formats.Stamps
	err    error
}

// sessionFile is one conversation file, and what its metadata.json says.
type sessionFile struct {
	id   string
	w    io.Writer
	c    io.Closer
	made bool // a file of its own (-o DIR): its metadata.json is written at the end
	// ids counts the ids made for the file's turns and messages.
	ids                  int
	turns, messages      int
	created, last        time.Time
	first, lastUser      string
	cwd, version, userID string
}

// sessionRun is the state of the run (the turn) being written.
type sessionRun struct {
	turnID   string
	steps    int // the steps written in the turn
	step     *pendingStep
	text     strings.Builder // streamed text not yet in a step
	thinking strings.Builder
	errored  bool              // an error step was written since the last step
	usage    bool              // a usage record was written
	sum      formats.UsageInfo // the usage written
}

// pendingStep is a model response whose calls may still be waiting for
// their results.
type pendingStep struct {
	at       time.Time
	thinking string
	preamble string
	calls    []*stepCall
	results  int
}

type stepCall struct {
	id, name string
	args     json.RawMessage
	done     bool
	status   formats.Status
	output   json.RawMessage // the output value; nil: none
	obs      string          // what the model is told (AdaL's observation)
	preview  bool
}

func newSessionWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	sw := &sessionWriter{stream: w, opts: o, files: map[string]*sessionFile{}}
	if o.Create != nil {
		sw.out = formats.NewSessionFiles(o)
	}
	return sw
}

// The losses of the session writer's own encoding.
var (
	lossUnanswered = formats.NewQuirk("tool calls without a result (written as cancelled calls)")
	lossExitCodes  = formats.NewQuirk("exit codes other than 0, 1 and 2 (a run stopped at a refusal)")
)

// Observe follows a record that the pipeline copies: the file of its
// session takes it (CopyTo), and its metadata.json what it says.
func (w *sessionWriter) Observe(e *formats.Event, v *formats.RunView) {
	w.view = v
	if e.Kind == formats.RunStart {
		w.cur, w.err = w.file(e, false)
	}
	f := w.cur
	if f == nil {
		return
	}
	at := e.TimeOf()
	if !at.IsZero() {
		if f.created.IsZero() {
			f.created = at
		}
		f.last = at
	}
	if e.Source.NothingToCopy() {
		return
	}
	switch e.Source.Type {
	case "metadata":
		f.cwd, f.version = e.Run.Cwd, e.Run.AgentVersion
	case "turn_created":
		f.turns++
	case "message":
		f.messages++
		if e.Kind == formats.UserMessage {
			f.user(e.Prompt())
		}
	}
}

// CopyTo is the file of the session being copied, with -o DIR.
func (w *sessionWriter) CopyTo() io.Writer {
	if w.cur == nil || !w.cur.made {
		return nil
	}
	return w.cur.w
}

func (f *sessionFile) user(text string) {
	if f.first == "" {
		f.first = text
	}
	f.lastUser = text
}

// newID is a UUID for one of the file's turns or messages, the same for
// the same file each time it is written.
func (f *sessionFile) newID() string {
	f.ids++
	return nameUUID(f.id + "/" + strconv.Itoa(f.ids))
}

// nameUUID is a name-based UUID of s.
func nameUUID(s string) string { return formats.NameUUID("agentconv adal-session\x00" + s) }

// sessionUUID is the conversation id of a session: its own when it is a
// UUID, else one derived from it.
func sessionUUID(id string) string {
	if formats.IsUUID(id) {
		return strings.ToLower(id)
	}
	return nameUUID("session\x00" + id)
}

// file returns the conversation of the run's session, made if new; meta
// writes its metadata record when it is new (a copy has its own).
func (w *sessionWriter) file(e *formats.Event, meta bool) (*sessionFile, error) {
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
	f = &sessionFile{id: id, w: w.stream, userID: "agentconv"}
	if w.out != nil {
		c, err := w.out.Create("conversation_" + id + ".jsonl")
		if err != nil {
			return nil, err
		}
		f.w, f.c, f.made = c, c, true
	}
	w.files[id] = f
	w.order = append(w.order, f)
	if meta {
		at := w.stamps.Next(e)
		f.cwd, f.created = e.Run.Cwd, at
		if e.Run.AgentName == "adal" {
			// Another agent's version is not AdaL's.
			f.version = e.Run.AgentVersion
		}
		var r record
		r.str("type", "metadata").str("conversation_id", id).str("user_id", f.userID).str("created_at", sessionStamp(at)).
			str("platform", "Linux").str("version", f.version).str("project_path", f.cwd)
		if e.Run.SessionID != id && e.Run.SessionID != "" {
			r.str("agentconv_session_id", e.Run.SessionID)
		}
		if err := r.writeTo(f.w); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// sessionStamp is a time as AdaL writes it: local time without a zone
// (read back as UTC), to the microsecond.
func sessionStamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000")
}

func (w *sessionWriter) Write(e *formats.Event, v *formats.RunView) error {
	if w.err != nil {
		return w.err
	}
	w.view = v
	if e.Source.Dialect == w.opts.Dialect && e.Source.NothingToCopy() {
		if e.Kind == formats.RunStart {
			w.cur, w.err = w.file(e, false)
		}
		return w.err
	}
	if e.Kind == formats.RunStart {
		f, err := w.file(e, true)
		if err != nil {
			return err
		}
		w.cur = f
		return w.startTurn(e)
	}
	if w.cur == nil {
		// Outside a run (a writer used without a pipeline): one of its own.
		if err := w.Write(&formats.Event{Kind: formats.RunStart, Time: e.Time, Arrived: e.Arrived}, v); err != nil {
			return err
		}
	}
	if e.Kind == formats.RunEnd {
		return w.endRun(e, v)
	}
	sub := e.Agent != ""
	if sub && e.Kind != formats.Usage {
		// A subagent's work is in its call's output, not the main
		// model's history; the pipeline reports what is not carried.
		return nil
	}
	if e.Kind != formats.TextDelta && e.Kind != formats.ThinkingDelta && e.Kind != formats.Usage && e.Kind != formats.Raw {
		// (A record the reader kept raw, such as a stream's marks
		// between a message's deltas and the message, ends no text.)
		w.flushText(e)
	}
	switch e.Kind {
	case formats.UserMessage:
		if err := w.flushStep(); err != nil {
			return err
		}
		w.cur.user(e.Prompt())
		var meta record
		meta.null("context_str")
		return w.message(e, "user", strPtr(e.Prompt()), meta.bytes())
	case formats.TextDelta:
		w.run.text.WriteString(e.Piece())
	case formats.ThinkingDelta:
		w.run.thinking.WriteString(e.Piece())
	case formats.Message:
		return w.said(e, e.MessageText(), e.Thinking)
	case formats.ToolCall:
		s := w.run.step
		if s != nil && s.results > 0 {
			if err := w.flushStep(); err != nil {
				return err
			}
		}
		s = w.stepFor(e)
		s.calls = append(s.calls, &stepCall{id: e.Call.ID, name: e.Call.Name, args: args(e.Call.Args)})
	case formats.ToolResult:
		s := w.stepFor(e)
		var c *stepCall
		for _, sc := range s.calls {
			if sc.id == e.Call.ID && !sc.done {
				c = sc
				break
			}
		}
		if c == nil {
			name := e.Call.Name
			if tc := v.Calls.Get(e.Call.ID); tc != nil && name == "" {
				name = tc.Name
			}
			c = &stepCall{id: e.Call.ID, name: name, args: args(e.Call.Args)}
			s.calls = append(s.calls, c)
		}
		w.result(c, e)
		s.results++
	case formats.Usage:
		if s := w.run.step; !sub && s != nil && s.results > 0 {
			// After the step's results: the usage of the model call
			// that answers them, which goes after the step.
			if err := w.flushStep(); err != nil {
				return err
			}
		}
		return w.usage(e, sub)
	case formats.Notice:
		if e.Severity == formats.Error {
			return w.errorStep(e, e.NoticeText())
		}
	}
	return nil
}

func strPtr(s string) *string { return &s }

// stepFor is the step being made, begun if none is.
func (w *sessionWriter) stepFor(e *formats.Event) *pendingStep {
	if w.run.step == nil {
		w.run.step = &pendingStep{at: w.stamps.Next(e)}
	}
	return w.run.step
}

// said adds a response's text and reasoning: to the step being made when
// it has no calls yet, else to a new one.
func (w *sessionWriter) said(e *formats.Event, text, thinking string) error {
	if text == "" && thinking == "" {
		return nil
	}
	if s := w.run.step; s != nil && len(s.calls) > 0 {
		if err := w.flushStep(); err != nil {
			return err
		}
	}
	s := w.stepFor(e)
	s.preamble = joinLines(s.preamble, text)
	s.thinking = joinLines(s.thinking, thinking)
	return nil
}

func joinLines(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n" + b
}

// flushText makes streamed text and reasoning a response's.
func (w *sessionWriter) flushText(e *formats.Event) {
	th, tx := w.run.thinking.String(), w.run.text.String()
	w.run.thinking.Reset()
	w.run.text.Reset()
	if e.Kind == formats.Message && e.MessageText() == tx && (e.Thinking == th || th == "") {
		return // the whole message repeats them
	}
	w.said(e, tx, th) //nolint:errcheck // said fails only when a step with calls is flushed, which flushStep reports on the next write
}

// result sets a call's outcome from its ToolResult.
func (w *sessionWriter) result(c *stepCall, e *formats.Event) {
	call := &e.Call
	c.done, c.status, c.preview = true, call.Status, call.Truncated
	if call.Status == formats.Denied {
		c.obs = call.Error
		if c.obs == "" {
			c.obs = "Tool '" + c.name + "' was refused."
		}
		return
	}
	if mergesError(e) {
		w.opts.Report.Quirk(formats.MergedToolErrors)
	}
	c.obs = outputOf(call)
	switch {
	case len(call.Output.Value()) > 0:
		c.output = call.Output.Value()
	case call.Output.Text() == "" && call.Error != "":
		// The error alone: AdaL's observation says it.
	default:
		b, _ := formats.Marshal(call.Output.Text())
		c.output = b
	}
}

// callStatus is a call's status as AdaL's session says it.
func callStatus(s formats.Status) string {
	switch s {
	case formats.Completed, formats.StatusUnknown:
		return "success"
	case formats.Cancelled, formats.Denied:
		return "cancelled"
	}
	return "error"
}

// flushStep writes the step being made: an assistant message whose
// metadata holds its calls, each with its output.
func (w *sessionWriter) flushStep() error {
	s := w.run.step
	if s == nil {
		return nil
	}
	w.run.step = nil
	w.run.errored = false
	var parts []string
	calls := make([][]byte, 0, len(s.calls))
	for i, c := range s.calls {
		if !c.done {
			w.opts.Report.Quirk(lossUnanswered)
			c.status, c.obs = formats.Cancelled, "The call was interrupted before it returned."
		}
		st := callStatus(c.status)
		parts = append(parts, "["+strconv.Itoa(i+1)+"/"+strconv.Itoa(len(s.calls))+"] "+c.name+" ["+st+"]:\n"+c.obs)
		var fn record
		fn.str("id", c.id).str("name", c.name).raw("args", []byte("[]")).raw("kwargs", c.args)
		var out record
		if c.output != nil {
			out.raw("output", c.output)
		} else {
			out.null("output")
		}
		out.str("observation", c.obs).null("display").raw("is_streaming", []byte("false"))
		if c.status == formats.Denied {
			var m record
			m.str("permission", "denied")
			out.raw("metadata", m.bytes())
		} else {
			out.null("metadata")
		}
		out.str("status", st).raw("is_preview", []byte(strconv.FormatBool(c.preview)))
		var cr record
		cr.str("id", c.id).raw("function", fn.bytes()).str("observation", c.obs).raw("output", out.bytes()).str("status", st)
		calls = append(calls, cr.bytes())
	}
	var content *string
	if len(parts) > 0 {
		content = strPtr(strings.Join(parts, "\n---\n"))
	}
	var m record
	m.int("step", int64(w.run.steps)).null("planner_prompt").optStr("thinking", s.thinking).null("thinking_signature").
		optStr("preamble", s.preamble).raw("calls", jsonArray(calls)).optStr("observation", deref(content)).null("ctx").
		optStr("raw_response_str", s.preamble).null("tag_suffix").str("timestamp", sessionStamp(s.at)).
		raw("is_final_answer", []byte("false"))
	w.run.steps++
	if content == nil && s.preamble != "" {
		content = strPtr(s.preamble)
	}
	return w.put(s.at, "assistant", content, m.bytes())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func jsonArray(items [][]byte) []byte {
	return append(append([]byte("["), bytes.Join(items, []byte(", "))...), ']')
}

// errorStep writes an error as AdaL writes a model call that failed: a
// step with no calls whose content and observation are the error.
func (w *sessionWriter) errorStep(e *formats.Event, text string) error {
	if err := w.flushStep(); err != nil {
		return err
	}
	at := w.stamps.Next(e)
	var m record
	m.int("step", int64(w.run.steps)).null("planner_prompt").null("thinking").null("thinking_signature").null("preamble").
		raw("calls", []byte("[]")).str("observation", text).null("ctx").null("raw_response_str").null("tag_suffix").
		str("timestamp", sessionStamp(at)).raw("is_final_answer", []byte("false"))
	w.run.steps++
	w.run.errored = true
	return w.put(at, "assistant", &text, m.bytes())
}

// usage writes one model call's usage. AdaL's input_tokens are
// Anthropic's: without the cache's.
func (w *sessionWriter) usage(e *formats.Event, sub bool) error {
	u := e.Usage
	w.run.usage = true
	w.run.sum.Add(u)
	if !u.InputTokens.OK || !u.OutputTokens.OK {
		w.opts.Report.Quirk(formats.ZeroTokenCounts)
	}
	in := u.InputTokens.V - u.CacheReadTokens.V - u.CacheWriteTokens.V
	if in < 0 {
		in = 0
	}
	model := e.Response.Model
	if model == "" {
		model = w.view.Info.Model
	}
	at := w.stamps.Next(e)
	if s := w.run.step; s != nil && s.at.Before(at) {
		// Written before the step being made, as AdaL writes a model
		// call's usage before its step: at the step's time, that the
		// times read back do not go back.
		at = s.at
	}
	src := "main"
	if sub {
		src = "subagent"
	}
	var r record
	r.str("type", "usage").str("turn_id", w.run.turnID).int("step", int64(w.run.steps)).str("model", model).
		int("input_tokens", in).int("output_tokens", u.OutputTokens.V).int("cached_read_input_tokens", u.CacheReadTokens.V).
		int("cache_creation_tokens", u.CacheWriteTokens.V).int("reasoning_tokens", u.ReasoningTokens.V).str("source", src).
		str("timestamp", sessionStamp(at))
	w.touch(at)
	return r.writeTo(w.cur.w)
}

func (w *sessionWriter) touch(at time.Time) {
	if f := w.cur; f != nil {
		if f.created.IsZero() {
			f.created = at
		}
		f.last = at
	}
}

// startTurn opens the run's turn.
func (w *sessionWriter) startTurn(e *formats.Event) error {
	f := w.cur
	w.run = sessionRun{turnID: f.newID()}
	at := w.stamps.Next(e)
	w.touch(at)
	var r record
	r.str("type", "turn_created").str("turn_id", w.run.turnID).int("turn_index", int64(f.turns)).str("timestamp", sessionStamp(at))
	f.turns++
	return r.writeTo(f.w)
}

// message writes a message record.
func (w *sessionWriter) message(e *formats.Event, role string, content *string, meta []byte) error {
	return w.put(w.stamps.Next(e), role, content, meta)
}

func (w *sessionWriter) put(at time.Time, role string, content *string, meta []byte) error {
	f := w.cur
	f.messages++
	w.touch(at)
	var r record
	r.str("type", "message").str("message_id", f.newID()).str("turn_id", w.run.turnID).str("role", role)
	if content != nil {
		r.str("content", *content)
	} else {
		r.null("content")
	}
	r.raw("metadata", meta).str("timestamp", sessionStamp(at))
	return r.writeTo(f.w)
}

// endRun ends the turn with its final message: the answer on success,
// else the status error, or cancelled for a run that stopped at a refusal
// or was cancelled.
func (w *sessionWriter) endRun(e *formats.Event, v *formats.RunView) error {
	w.flushText(e)
	if v.Prompts == 0 {
		w.opts.Report.Quirk(formats.PromptsNeverGiven)
	}
	if !w.run.usage && v.Requests == 0 && (v.Usage.InputTokens.OK || v.Usage.OutputTokens.OK) {
		// Run totals from a source without per-request usage: one record.
		if err := w.usage(&formats.Event{Kind: formats.Usage, Usage: v.Usage, Time: e.Time, Arrived: e.Arrived}, false); err != nil {
			return err
		}
	}
	if s, u := w.run.sum, v.Usage; s.InputTokens.V != u.InputTokens.V || s.OutputTokens.V != u.OutputTokens.V ||
		s.CacheReadTokens.V != u.CacheReadTokens.V {
		w.opts.Report.Quirk(formats.UnsummedRunUsage)
	}
	code := 1
	switch {
	case v.Status == formats.Completed:
		code = 0
	case v.Status == formats.Denied && v.Stopped:
		code = 2
	}
	if v.ExitCode != code {
		w.opts.Report.Quirk(lossExitCodes)
	}
	var m record
	switch v.Status {
	case formats.Completed:
		answer := v.Answer()
		s := w.run.step
		if s != nil && len(s.calls) == 0 && (answer == "" || s.preamble == answer) {
			// The last response, without calls: the answer itself.
			w.run.step = nil
			if answer == "" {
				answer = s.preamble
			}
			m.str("status", "success").str("raw_response_str", answer)
			if s.thinking != "" {
				m.str("thinking", s.thinking)
			}
			m.raw("is_final_answer", []byte("true"))
			return w.message(e, "assistant", &answer, m.bytes())
		}
		if err := w.flushStep(); err != nil {
			return err
		}
		m.str("status", "success").str("raw_response_str", answer).raw("is_final_answer", []byte("true"))
		return w.message(e, "assistant", &answer, m.bytes())
	case formats.Denied, formats.Cancelled:
		if err := w.flushStep(); err != nil {
			return err
		}
		m.str("status", "cancelled").raw("is_final_answer", []byte("true"))
	default:
		if err := w.flushStep(); err != nil {
			return err
		}
		if !w.run.errored && v.FailureSaid {
			if err := w.errorStep(e, v.Failure); err != nil {
				return err
			}
		}
		m.str("status", "error").raw("is_final_answer", []byte("true"))
	}
	return w.message(e, "assistant", nil, m.bytes())
}

// Close writes each session's metadata.json (with -o DIR) and closes its
// file.
func (w *sessionWriter) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, f := range w.order {
		if f.made && w.opts.Create != nil {
			keep(w.writeMeta(f))
		}
		if f.c != nil {
			keep(f.c.Close())
		}
	}
	w.files, w.order, w.cur = nil, nil, nil
	return first
}

// writeMeta writes <id>_metadata.json as AdaL does: an indented object.
func (w *sessionWriter) writeMeta(f *sessionFile) error {
	c, err := w.opts.Create(f.id + "_metadata.json")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	line := func(k string, v any, last bool) {
		kb, _ := formats.Marshal(k)
		vb, _ := formats.Marshal(v)
		b.WriteString("  ")
		b.Write(kb)
		b.WriteString(": ")
		b.Write(vb)
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("{\n")
	line("conversation_id", f.id, false)
	line("created_at", sessionStamp(f.created), false)
	line("last_accessed", sessionStamp(f.last), false)
	line("last_user_message", f.lastUser, false)
	line("total_messages", f.messages, false)
	line("total_turns", f.turns, false)
	line("project_path", f.cwd, false)
	line("user_id", f.userID, false)
	line("platform", "Linux", false)
	line("version", f.version, false)
	line("last_user_message_scanned", false, false)
	line("first_user_message", f.first, true)
	b.WriteString("}")
	if _, err := c.Write(b.Bytes()); err != nil {
		c.Close()
		return err
	}
	return c.Close()
}

// record is a JSON object written as Python's json.dumps writes it (", "
// and ": " between its items), its keys in the order given.
type record struct {
	b []byte
}

func (r *record) key(k string) {
	if len(r.b) == 0 {
		r.b = append(r.b, '{')
	} else {
		r.b = append(r.b, ", "...)
	}
	r.b = appendJSString(r.b, k)
	r.b = append(r.b, ": "...)
}

func (r *record) str(k, v string) *record {
	r.key(k)
	r.b = appendJSString(r.b, v)
	return r
}

// optStr writes v, or null when it is empty.
func (r *record) optStr(k, v string) *record {
	if v == "" {
		return r.null(k)
	}
	return r.str(k, v)
}

func (r *record) int(k string, v int64) *record {
	r.key(k)
	r.b = strconv.AppendInt(r.b, v, 10)
	return r
}

func (r *record) null(k string) *record {
	r.key(k)
	r.b = append(r.b, "null"...)
	return r
}

// raw writes a JSON value, spaced as Python writes it.
func (r *record) raw(k string, v []byte) *record {
	r.key(k)
	r.b = pySpaced(r.b, v)
	return r
}

func (r *record) bytes() []byte {
	if len(r.b) == 0 {
		return []byte("{}")
	}
	return append(r.b, '}')
}

func (r *record) writeTo(w io.Writer) error {
	_, err := w.Write(append(r.bytes(), '\n'))
	return err
}

// pySpaced appends the JSON value v with a space after each comma and
// colon between tokens, and none elsewhere outside strings.
func pySpaced(b, v []byte) []byte {
	v = bytes.TrimSpace(v)
	in, esc := false, false
	for _, c := range v {
		if in {
			b = append(b, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '"':
			in = true
			b = append(b, c)
		case ',', ':':
			b = append(b, c, ' ')
		default:
			b = append(b, c)
		}
	}
	return b
}
