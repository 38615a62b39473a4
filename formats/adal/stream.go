// Package adal reads and writes the three output formats of the AdaL CLI:
// adal-stream (-o stream-json), adal-json (-o json) and adal-text (-o text).
package adal

import (
	"io"
	"strconv"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Stream is the adal-stream dialect: `adal -o stream-json`.
var Stream = formats.Dialect{
	Name:        "adal-stream",
	Aliases:     []string{"adal", "adal-stream-json"},
	Description: "AdaL `-o stream-json`: NDJSON tool_call, tool_result, permission_denied, answer, error, complete",
	NewReader:   newStreamReader,
	NewWriter:   newStreamWriter,
	// The writer keeps values of an event, never the event.
	KeepsNoEvents: true,
	Detect:        detectStream,
	Carries:       carries,
	Quirks:        []formats.Quirk{lossPreviews, formats.MergedToolErrors, formats.ExtraMessages, lossWentOn, lossStopAnswers},
	Params:        []formats.Param{previewParam},
}

var streamTypes = map[string]bool{
	"tool_call": true, "tool_result": true, "permission_denied": true,
	"answer": true, "error": true, "complete": true,
}

func detectStream(head []byte) int {
	return formats.DetectByTypes(head, func(line []byte, typ string) bool {
		if !streamTypes[typ] {
			return false
		}
		// Other dialects use "error" and "tool_call" too; AdaL's carry
		// neither an envelope nor camelCase ids.
		var probe struct {
			Seq       *json.RawMessage `json:"seq"`
			ToolID    *json.RawMessage `json:"toolId"`
			Timestamp *json.RawMessage `json:"timestamp"`
			Severity  *json.RawMessage `json:"severity"`
		}
		json.Unmarshal(line, &probe)
		return probe.Seq == nil && probe.ToolID == nil && probe.Timestamp == nil && probe.Severity == nil
	})
}

// streamLine is every field any adal-stream event has.
type streamLine struct {
	Type      string          `json:"type"`
	ID        *string         `json:"id"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Status    string          `json:"status"`
	Output    json.RawMessage `json:"output"`
	Reason    string          `json:"reason"`
	Content   string          `json:"content"`
	Message   string          `json:"message"`
	ExitCode  *int            `json:"exit_code"`
	SessionID string          `json:"session_id"`
	Model     string          `json:"model"`
	// id and exit are where scan keeps ID and ExitCode.
	id   string
	exit int
	// argsCompact: scan found Args valid and without white space.
	argsCompact bool
	// names interns tool names, if set.
	names *formats.Interner
	// valid: the line is known to be valid UTF-8.
	valid bool
}

// streamFields are the keys of streamLine: a key that only folds to one of
// them is left to the decoder, which matches keys without regard to case.
var streamFields = []string{"type", "id", "name", "args", "status", "output", "reason", "content", "message", "exit_code", "session_id", "model"}

// scan fills l from line in one pass, as the decoder would. It returns
// false, leaving the line to the decoder, for anything it does not settle
// alike: a null or a value of another type in a field, a key that is not
// a field's own spelling but folds to one, an escaped or non-ASCII key,
// invalid UTF-8 or a surrogate escape, and any line that is not valid JSON.
func (l *streamLine) scan(line []byte) bool {
	s := formats.JSONScanner{B: line, ValidUTF8: l.valid}
	if !s.Expect('{') {
		return false
	}
	if s.Space() == '}' {
		s.I++
		return s.End()
	}
	for {
		key, esc, high, ok := s.String()
		if !ok || esc || high || !s.Expect(':') {
			return false
		}
		switch string(key) {
		case "type":
			ok = scanString(&s, &l.Type, "tool_call", "tool_result", "permission_denied", "answer", "error", "complete")
		case "id":
			if ok = scanString(&s, &l.id); ok {
				l.ID = &l.id
			}
		case "name":
			ok = scanName(&s, &l.Name, l.names)
		case "status":
			ok = scanString(&s, &l.Status, "completed", "failed", "cancelled")
		case "reason":
			ok = scanString(&s, &l.Reason)
		case "content":
			ok = scanString(&s, &l.Content)
		case "message":
			ok = scanString(&s, &l.Message)
		case "session_id":
			ok = scanString(&s, &l.SessionID)
		case "model":
			ok = scanString(&s, &l.Model)
		case "args":
			l.Args, l.argsCompact, ok = scanRawCompact(&s)
		case "output":
			l.Output, ok = scanRaw(&s)
		case "exit_code":
			var n []byte
			if n, ok = s.Number(); ok {
				l.exit, ok = atoi(n)
				l.ExitCode = &l.exit
			}
		default:
			for _, f := range streamFields {
				if strings.EqualFold(string(key), f) {
					return false
				}
			}
			ok = s.Skip()
		}
		if !ok {
			return false
		}
		switch s.Space() {
		case ',':
			s.I++
		case '}':
			s.I++
			return s.End()
		default:
			return false
		}
	}
}

// scanString reads a string field; a value among known is given as the
// constant, without a copy.
func scanString(s *formats.JSONScanner, dst *string, known ...string) bool {
	content, esc, high, ok := s.String()
	if !ok {
		return false
	}
	if !esc {
		for _, k := range known {
			if string(content) == k {
				*dst = k
				return true
			}
		}
	}
	*dst, ok = formats.Unquote(content, esc, high && !s.ValidUTF8)
	return ok
}

// scanName reads a tool name: the same names come again and again, so a
// plain one is interned.
func scanName(s *formats.JSONScanner, dst *string, names *formats.Interner) bool {
	content, esc, high, ok := s.String()
	if !ok {
		return false
	}
	if !esc && !high && names != nil {
		*dst = names.String(content)
		return true
	}
	*dst, ok = formats.Unquote(content, esc, high && !s.ValidUTF8)
	return ok
}

// scanRaw reads a field kept as JSON: a slice of the line. A null is left
// to the decoder.
func scanRaw(s *formats.JSONScanner) ([]byte, bool) {
	raw, _, ok := scanRawCompact(s)
	return raw, ok
}

// scanRawCompact is scanRaw that also says whether the value has no white
// space between its tokens.
func scanRawCompact(s *formats.JSONScanner) (raw []byte, compact, ok bool) {
	if s.Space() == 'n' {
		return nil, false, false
	}
	spaced := s.Spaced
	s.Spaced = false
	start := s.I
	ok = s.Skip()
	compact = ok && !s.Spaced
	s.Spaced = spaced || s.Spaced
	if !ok {
		return nil, false, false
	}
	return s.B[start:s.I:s.I], compact, true
}

// atoi reads an integer as the decoder reads an int: digits only, in range.
func atoi(n []byte) (int, bool) {
	for _, c := range n {
		if c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(string(n))
	return v, err == nil
}

type streamReader struct {
	lines     *formats.LineReader
	arena     formats.LineArena
	l         streamLine
	toolNames formats.Interner
	opts      formats.ReadOptions
	// Calls of the older variant have no id: they get one from their
	// position in the run, and results are paired by name, oldest first.
	idless       map[string][]string
	nCalls       int
	warnedIdless bool
	// names are the run's tool names by call id: a result without a name
	// is its call's.
	names map[string]string
	// pool: the events the pipeline handed back, reused.
	pool formats.EventPool
	// lend: an event's line and output are the line reader's buffer, not
	// a copy (formats.Lender); its arguments are still copied.
	lend bool
}

// Recycle takes back an event the pipeline is done with.
func (r *streamReader) Recycle(e *formats.Event) { r.pool.Put(e) }

// LendLines: from now on the pipeline is done with each event before it
// asks for the next.
func (r *streamReader) LendLines() { r.lend = true }

// args are a call's arguments for the event: a copy when the line is lent.
func (r *streamReader) args(a []byte) []byte {
	if r.lend && a != nil {
		return r.arena.Copy(a)
	}
	return a
}

func newStreamReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &streamReader{lines: formats.NewLineReader(r), opts: o}
}

func (r *streamReader) Next() (*formats.Event, error) {
	line, err := r.lines.Next()
	if err != nil {
		return nil, err
	}
	n := r.lines.Line()
	// Decode from the event's own copy of the line, unless it is lent: the
	// output is kept as a slice of it.
	if !r.lend {
		line = r.arena.Copy(line)
	}
	// One record, reused: every field is copied out of it below.
	l := &r.l
	*l = streamLine{names: &r.toolNames, valid: r.lines.ValidUTF8()}
	if !l.scan(line) {
		*l = streamLine{}
		if err := r.opts.Report.Unmarshal(n, line, l); err != nil {
			return nil, err
		}
	}
	ev := r.pool.New()
	ev.Source = formats.Source{Dialect: r.opts.Dialect, Type: l.Type, Line: line, LineNo: n}
	switch l.Type {
	case "tool_call":
		ev.Kind = formats.ToolCall
		ev.Call = formats.Call{ID: r.callID(l.ID, l.Name), Name: l.Name}
		ev.Call.SetArgs(r.args(l.Args), l.argsCompact)
	case "tool_result":
		ev.Kind = formats.ToolResult
		ev.Call = formats.Call{ID: r.resultID(l.ID, l.Name, n), Name: l.Name, Status: statusWords.Parse(l.Status)}
		switch {
		case len(l.Output) > 0 && l.Output[0] == '"':
			ev.Call.Output = formats.JSONOutput(l.Output)
			ev.Call.Truncated = rawIsPreview(l.Output)
		case len(l.Output) > 0 && string(l.Output) != "null":
			// Any other JSON value (AdaL's file tools return objects),
			// kept as it is: a copy, compacted.
			text, value, ok := outputValue(l.Output)
			if !ok {
				return nil, formats.Errorf(n, "tool_result output is not valid JSON")
			}
			ev.Call.Output = formats.ValueOutput(value, text)
		}
		if ev.Call.Status == formats.StatusUnknown {
			r.opts.Report.Warn(n, "tool_result status %q is not completed, failed or cancelled; kept as failed", l.Status)
			ev.Call.Status = formats.Failed
		}
	case "permission_denied":
		ev.Kind = formats.ToolResult
		ev.Call = formats.Call{ID: r.callID(l.ID, l.Name), Name: l.Name, Status: formats.Denied, Error: l.Reason}
		ev.Call.SetArgs(r.args(l.Args), l.argsCompact)
	case "answer":
		ev.Kind = formats.Answer
		ev.Text = l.Content
	case "error":
		ev.Kind = formats.Notice
		ev.Severity = formats.Error
		ev.Text = l.Message
	case "complete":
		ev.Kind = formats.RunEnd
		ev.Run = formats.RunInfo{SessionID: l.SessionID, Model: l.Model, ExitCode: formats.OptFrom(l.ExitCode)}
		ev.Status = statusOfExit(l.ExitCode)
		r.idless, r.nCalls = nil, 0
		clear(r.names)
	default:
		ev.Kind = formats.Raw
		if l.Type == "" {
			r.opts.Report.Warn(n, "an event without a \"type\"; kept as an unknown event")
		}
	}
	if ev.Kind == formats.ToolCall || ev.Kind == formats.ToolResult {
		r.name(ev)
	}
	return ev, nil
}

// name remembers a call's tool name (a new call with the same id replaces
// it), or gives it to a result without one.
func (r *streamReader) name(ev *formats.Event) {
	if r.names == nil {
		r.names = map[string]string{}
	}
	c := &ev.Call
	switch known := r.names[c.ID]; {
	case ev.Kind == formats.ToolCall:
		r.names[c.ID] = c.Name
	case c.Name == "":
		c.Name = known
	case known == "":
		r.names[c.ID] = c.Name
	}
}

// statusOfExit reads AdaL's exit codes: 0 success, 2 stopped on a refused
// call, anything else failure.
func statusOfExit(code *int) formats.Status {
	switch {
	case code == nil:
		return formats.StatusUnknown
	case *code == 0:
		return formats.Completed
	case *code == 2:
		return formats.Denied
	}
	return formats.Failed
}

func (r *streamReader) callID(id *string, name string) string {
	r.nCalls++
	if id != nil {
		return *id
	}
	syn := "call_" + strconv.Itoa(r.nCalls)
	if r.idless == nil {
		r.idless = map[string][]string{}
		if !r.warnedIdless {
			r.warnedIdless = true
			r.opts.Report.Warn(r.lines.Line(), "tool events without ids (the older AdaL format): results are paired with their calls by name, oldest first")
		}
	}
	r.idless[name] = append(r.idless[name], syn)
	return syn
}

func (r *streamReader) resultID(id *string, name string, line int) string {
	if id != nil {
		return *id
	}
	if q := r.idless[name]; len(q) > 0 {
		r.idless[name] = q[1:]
		return q[0]
	}
	r.nCalls++
	return "call_" + strconv.Itoa(r.nCalls)
}

// The adal-stream writer.

// streamWriter writes AdaL's stream from the events of another dialect;
// the pipeline copies adal-stream records itself and only shows them to
// Observe.
type streamWriter struct {
	w    io.Writer
	opts formats.WriteOptions
	run  *formats.RunView
	// lines says what was written of each call of the run: its tool_call
	// line, its result line (of a call that ended, for a while).
	lines formats.CallMap[uint8]
	// errs are the error texts written in the run.
	errs map[string]bool
	// held is a refusal and the answers after it, kept until the run shows
	// whether it stopped there. permission_denied says that the run
	// stopped: a run that goes on after a refusal (any other line comes)
	// gets the call as a failed tool_result instead, written before that
	// line, so that a live pipe waits for one refusal at most; a run that
	// ends there without success gets permission_denied and no answer
	// after it.
	held    []heldLine
	holding bool
	// preview is the size past which an output is kept as AdaL's preview.
	preview int
}

// heldLine is a line held after a refusal: the line, or the refusal.
type heldLine struct {
	line    []byte
	answer  bool
	refusal *refusal
}

const (
	wroteCall uint8 = 1 << iota
	wroteResult
)

type refusal struct {
	id, name, reason string
	args             json.RawMessage
	// called, resulted: the call had its tool_call line, a result line.
	called, resulted bool
}

func newStreamWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &streamWriter{w: w, opts: o, errs: map[string]bool{}, preview: previewLimit(o)}
}

type toolCallLine struct {
	Type string          `json:"type"`
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type toolResultLine struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
}

type deniedLine struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Reason string          `json:"reason"`
}

type completeLine struct {
	Type      string  `json:"type"`
	ExitCode  int     `json:"exit_code"`
	SessionID *string `json:"session_id"`
	Model     *string `json:"model"`
}

type textLine struct {
	Type    string `json:"type"`
	Content string `json:"content,omitempty"`
	Message string `json:"message,omitempty"`
}

// Observe follows a record that the pipeline copies: the writer keeps
// nothing of it.
func (s *streamWriter) Observe(_ *formats.Event, v *formats.RunView) { s.run = v }

func (s *streamWriter) Write(e *formats.Event, v *formats.RunView) error {
	s.run = v
	if e.Kind == formats.RunStart {
		s.reset()
	}
	switch e.Kind {
	case formats.ToolCall:
		s.wrote(e.Call.ID, wroteCall)
		return s.line(toolCallLine{"tool_call", e.Call.ID, e.Call.Name, args(e.Call.Args)}, false)
	case formats.ToolResult:
		name, a := e.Call.Name, e.Call.Args
		if c := v.Calls.Get(e.Call.ID); c != nil {
			if name == "" {
				name = c.Name
			}
			if len(a) == 0 {
				a = c.Args
			}
		}
		if e.Call.Status == formats.Denied {
			s.holding = true
			wrote, _ := s.lines.Get(e.Call.ID)
			s.held = append(s.held, heldLine{refusal: &refusal{id: e.Call.ID, name: name, reason: e.Call.Error, args: a,
				called: wrote&wroteCall != 0, resulted: wrote&wroteResult != 0}})
			s.wrote(e.Call.ID, wroteCall|wroteResult)
			return nil
		}
		if mergesError(e) {
			s.opts.Report.Quirk(formats.MergedToolErrors)
		}
		s.wrote(e.Call.ID, wroteResult)
		return s.line(toolResultLine{"tool_result", e.Call.ID, name, resultStatus(e.Call.Status), s.outputJSON(e)}, false)
	case formats.Answer:
		if e.Agent == "" {
			return s.line(textLine{Type: "answer", Content: e.AnswerText()}, true)
		}
	case formats.Notice:
		if e.Severity == formats.Error && e.Agent == "" {
			return s.error(e.NoticeText())
		}
	case formats.RunEnd:
		return s.end(e, v)
	}
	return nil
}

// line writes a line, or holds an answer after a refusal. Any other
// line says that the run went on after the refusal.
func (s *streamWriter) line(v any, answer bool) error {
	if s.holding && !answer {
		if err := s.release(s.run, true); err != nil {
			return err
		}
	}
	if !s.holding {
		return formats.WriteJSONLine(s.w, v)
	}
	b, err := formats.Marshal(v)
	if err != nil {
		return err
	}
	s.held = append(s.held, heldLine{line: b, answer: answer})
	return nil
}

func (s *streamWriter) error(msg string) error {
	s.errs[msg] = true
	return s.line(textLine{Type: "error", Message: msg}, false)
}

// release writes what was held since a refusal, now that the run shows
// whether it stopped there: if it went on (wentOn) or succeeded, each
// refusal as a failed tool_result (permission_denied would say that it
// stopped); if it stopped on its last refusal (exit code 2), no answer
// after it.
func (s *streamWriter) release(v *formats.RunView, wentOn bool) error {
	if !s.holding {
		return nil
	}
	s.holding = false
	last := -1
	for i, h := range s.held {
		if h.refusal != nil {
			last = i
		}
	}
	stop := !wentOn && v.ExitCode == 2 && v.Stopped
	for i, h := range s.held {
		r := h.refusal
		switch {
		case r == nil && stop && h.answer && i > last:
			s.opts.Report.Quirk(lossStopAnswers)
		case r == nil:
			if err := formats.WriteRawLine(s.w, h.line); err != nil {
				return err
			}
		case !wentOn && !v.Success():
			if err := formats.WriteJSONLine(s.w, deniedLine{"permission_denied", r.id, r.name, args(r.args), r.reason}); err != nil {
				return err
			}
		default:
			s.opts.Report.Quirk(lossWentOn)
			if r.resulted {
				break // the call's own result said it failed
			}
			if !r.called {
				if err := formats.WriteJSONLine(s.w, toolCallLine{"tool_call", r.id, r.name, args(r.args)}); err != nil {
					return err
				}
			}
			out, _ := formats.Marshal(r.reason)
			if err := formats.WriteJSONLine(s.w, toolResultLine{"tool_result", r.id, r.name, "failed", out}); err != nil {
				return err
			}
		}
	}
	s.held = s.held[:0]
	return nil
}

// end closes a run as adal-stream requires: what was held since a
// refusal, the answer if the source gave its text only as messages (not
// after a refusal the run stopped at), an error for a failure whose source
// says why, then complete.
func (s *streamWriter) end(e *formats.Event, v *formats.RunView) error {
	defer s.reset()
	stop := v.ExitCode == 2 && v.Stopped
	if err := s.release(v, false); err != nil {
		return err
	}
	if stop {
		s.errs[v.Refusals[len(v.Refusals)-1].Reason] = true // permission_denied says why
	}
	wroteAnswer := v.Answered()
	if !v.Answered() && v.LastText != "" && !stop {
		wroteAnswer = true
		if err := formats.WriteJSONLine(s.w, textLine{Type: "answer", Content: v.LastText}); err != nil {
			return err
		}
	}
	// An error event only when the source says why the run failed (the
	// stream of a run that failed without a word has none either), and
	// not again what was said.
	if !v.Success() && e.ErrorText() != "" && !s.errs[e.ErrorText()] {
		if err := s.error(e.ErrorText()); err != nil {
			return err
		}
	}
	if e.Cut {
		s.opts.Report.Warn(0, "a cut run was closed with an error event and complete with exit_code %d", v.ExitCode)
	}
	s.opts.Report.QuirkN(formats.ExtraMessages, messagesLost(v, wroteAnswer))
	return formats.WriteJSONLine(s.w, completeLine{"complete", v.ExitCode, formats.NilIfEmpty(v.Info.SessionID), formats.NilIfEmpty(v.Info.Model)})
}

// wrote adds to what was written of a call; a result line ends it.
func (s *streamWriter) wrote(id string, what uint8) {
	had, _ := s.lines.Get(id)
	s.lines.Set(id, had|what)
	if what&wroteResult != 0 {
		s.lines.End(id)
	}
}

// reset forgets the run.
func (s *streamWriter) reset() {
	s.lines.Reset()
	clear(s.errs)
	clear(s.held)
	s.held, s.holding = s.held[:0], false
}

// Close writes a refusal still held: a stream that ends there without an
// end (outside a pipeline, which closes every run) stopped at it.
func (s *streamWriter) Close() error { return s.release(s.run, false) }

// TakesRawOutput: tool outputs are copied as JSON, undecoded.
func (s *streamWriter) TakesRawOutput() {}

// outputJSON is the call's output as JSON: its value when it is one, else
// a string, merged with its error text when it has one, and cut to AdaL's
// preview when it is longer than that.
func (s *streamWriter) outputJSON(e *formats.Event) json.RawMessage {
	if e.Call.Error == "" && len(e.Call.Output.Value()) > 0 {
		return e.Call.Output.Value()
	}
	// A literal no longer than the preview size holds no more
	// characters than that.
	if e.Call.Error == "" && (s.preview <= 0 || e.Call.Output.SizeBound() <= s.preview) && (e.Call.Output.Undecoded() || len(e.Call.Output.Text()) <= s.preview) {
		return e.Call.Output.AppendJSON(nil)
	}
	e.Call.Output.Decode()
	out, cut := cutPreview(outputOf(&e.Call), s.preview)
	if cut {
		s.opts.Report.Quirk(lossPreviews)
	}
	b, _ := formats.Marshal(out)
	return b
}
