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
	Detect:      detectStream,
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
}

type streamReader struct {
	lines   *formats.LineReader
	opts    formats.ReadOptions
	pending []*formats.Event
	// Calls of the older variant have no id: they get one from their
	// position in the run, and results are paired by name, oldest first.
	idless       map[string][]string
	nCalls       int
	warnedIdless bool
	// names are the run's tool names by call id: a result without a name
	// is its call's.
	names map[string]string
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
	// Decode from the event's own copy of the line: the output is kept as a
	// slice of it.
	line = append([]byte(nil), line...)
	var l streamLine
	if err := formats.Unmarshal(n, line, &l); err != nil {
		return nil, err
	}
	ev := &formats.Event{Source: formats.Source{Dialect: r.opts.Dialect, Type: l.Type, Line: line, LineNo: n}}
	switch l.Type {
	case "tool_call":
		ev.Kind = formats.ToolCall
		ev.Call = formats.Call{ID: r.callID(l.ID, l.Name), Name: l.Name, Args: l.Args}
	case "tool_result":
		ev.Kind = formats.ToolResult
		ev.Call = formats.Call{ID: r.resultID(l.ID, l.Name, n), Name: l.Name, Status: formats.ParseStatus(l.Status)}
		switch {
		case len(l.Output) > 0 && l.Output[0] == '"':
			ev.Call.OutputJSON = l.Output
		case len(l.Output) > 0 && string(l.Output) != "null":
			r.opts.Report.Warn(n, "tool_result output is not a string; kept as its JSON text")
			ev.Call.Output = strings.ToValidUTF8(string(l.Output), "\uFFFD")
		}
		if ev.Call.Status == formats.StatusUnknown {
			r.opts.Report.Warn(n, "tool_result status %q is not completed, failed or cancelled; kept as failed", l.Status)
			ev.Call.Status = formats.Failed
		}
	case "permission_denied":
		ev.Kind = formats.ToolResult
		ev.Call = formats.Call{ID: r.callID(l.ID, l.Name), Name: l.Name, Args: l.Args, Status: formats.Denied, Error: l.Reason}
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

type streamWriter struct {
	w     io.Writer
	opts  formats.WriteOptions
	calls formats.CallTracker
	text  formats.TextTracker
	run   runSummary
}

func newStreamWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	s := &streamWriter{w: w, opts: o}
	s.calls.DropOutputs = true
	return s
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

func (s *streamWriter) Write(e *formats.Event) error {
	s.run.observe(e, &s.calls, &s.text, s.opts.Report)
	if e.Source.From(s.opts.Dialect) && (e.Source.Line != nil || e.Source.Continued) {
		// Same dialect: the record goes out as it came.
		if e.Kind == formats.RunEnd {
			s.reset()
		}
		if e.Source.Continued {
			return nil
		}
		return formats.WriteRawLine(s.w, e.Source.Line)
	}
	switch e.Kind {
	case formats.ToolCall:
		return formats.WriteJSONLine(s.w, toolCallLine{"tool_call", e.Call.ID, e.Call.Name, args(e.Call.Args)})
	case formats.ToolResult:
		c := s.calls.Get(e.Call.ID)
		name := e.Call.Name
		if name == "" {
			name = c.Name
		}
		if e.Call.Status == formats.Denied {
			return formats.WriteJSONLine(s.w, deniedLine{"permission_denied", e.Call.ID, name, args(c.Args), e.Call.Error})
		}
		return formats.WriteJSONLine(s.w, toolResultLine{"tool_result", e.Call.ID, name, resultStatus(e.Call.Status), outputJSON(e)})
	case formats.Answer:
		if e.Agent == "" {
			return formats.WriteJSONLine(s.w, textLine{Type: "answer", Content: e.Text})
		}
	case formats.Notice:
		if e.Severity == formats.Error {
			return formats.WriteJSONLine(s.w, textLine{Type: "error", Message: e.Text})
		}
	case formats.RunEnd:
		return s.end(e)
	}
	return nil
}

// end closes a run as adal-stream requires: an answer if the source gave
// its text only as messages, an error for a failed run, then complete.
func (s *streamWriter) end(e *formats.Event) error {
	r := &s.run
	if !r.answered && r.lastText != "" {
		if err := formats.WriteJSONLine(s.w, textLine{Type: "answer", Content: r.lastText}); err != nil {
			return err
		}
	}
	// An error event only when the source says why the run failed: the
	// stream of a run that failed without a word has none either.
	if msg := e.Text; msg != "" && r.exitCode(e) != 0 && !r.errored && !(r.denied != nil && r.exitCode(e) == 2) {
		if err := formats.WriteJSONLine(s.w, textLine{Type: "error", Message: msg}); err != nil {
			return err
		}
	}
	if e.Cut {
		s.opts.Report.Warn(0, "a cut run was closed with an error event and complete with exit_code %d", r.exitCode(e))
	}
	err := formats.WriteJSONLine(s.w, completeLine{"complete", r.exitCode(e), formats.NilIfEmpty(r.sessionID), formats.NilIfEmpty(r.modelName)})
	s.reset()
	return err
}

// reset forgets the run that ended.
func (s *streamWriter) reset() {
	s.calls.Reset()
	s.text.Reset()
	s.run = runSummary{}
}

func (s *streamWriter) Close() error { return nil }

// TakesRawOutput: tool outputs are copied as JSON, undecoded.
func (s *streamWriter) TakesRawOutput() {}

// outputJSON is the call's output as a JSON string, merged with its error
// text when it has one.
func outputJSON(e *formats.Event) json.RawMessage {
	if e.Call.Error != "" {
		e.DecodeOutput()
		b, _ := formats.Marshal(outputOf(&e.Call))
		return b
	}
	return e.Call.AppendOutputJSON(nil)
}

func args(a json.RawMessage) json.RawMessage {
	if len(a) == 0 {
		return json.RawMessage("{}")
	}
	return a
}

// resultStatus maps a call's status to the words tool_result uses.
func resultStatus(s formats.Status) string {
	switch s {
	case formats.Completed:
		return "completed"
	case formats.Cancelled:
		return "cancelled"
	}
	return "failed"
}

// outputOf is what a call returned, with its error text when it has one:
// AdaL has a single output field.
func outputOf(c *formats.Call) string {
	switch {
	case c.Error == "":
		return c.Output
	case c.Output == "":
		return c.Error
	}
	return c.Output + "\n" + c.Error
}
