package adal

import (
	"bytes"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// JSON is the adal-json dialect: `adal -o json`, one final object per run.
var JSON = formats.Dialect{
	Name:        "adal-json",
	Description: "AdaL `-o json`: one final object per run (success, answer, error, exit_code, tool_calls)",
	NewReader:   newJSONReader,
	NewWriter:   newJSONWriter,
	Detect:      detectJSON,
	Params: []formats.Param{{Key: ParamPreviewBytes, Flag: "adal-preview-bytes", Kind: formats.ParamInt,
		Default: strconv.Itoa(DefaultPreviewBytes),
		Usage:   "adal-json keeps only a preview of a tool output longer than `BYTES`, as AdaL does (0: keep every output whole)"}},
}

// ParamPreviewBytes is the writer parameter that sets the preview size.
const ParamPreviewBytes = "adal.preview-bytes"

// DefaultPreviewBytes is the size past which adal-json keeps only a preview
// of a tool's output, as AdaL does. The writer parameter
// "adal.preview-bytes" changes it; 0 keeps every output whole.
const DefaultPreviewBytes = 64 << 10

type finalObject struct {
	Success   bool        `json:"success"`
	Answer    *string     `json:"answer"`
	Error     *string     `json:"error"`
	ExitCode  int         `json:"exit_code"`
	SessionID *string     `json:"session_id"`
	Model     *string     `json:"model"`
	ToolCalls []finalCall `json:"tool_calls"`
}

type finalCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Status string          `json:"status"`
	Output *string         `json:"output"`
	// OutputTruncated says that Output is a preview of a longer result.
	OutputTruncated bool `json:"output_truncated,omitempty"`
}

func detectJSON(head []byte) int {
	v := formats.NewValueReader(bytes.NewReader(head))
	b, _, err := v.Next()
	if err != nil || len(b) == 0 || b[0] != '{' {
		return 0
	}
	var probe struct {
		Success  *bool            `json:"success"`
		ExitCode *json.RawMessage `json:"exit_code"`
		Type     *json.RawMessage `json:"type"`
	}
	if json.Unmarshal(b, &probe) != nil || probe.Type != nil {
		return 0
	}
	if probe.Success != nil && probe.ExitCode != nil {
		return 90
	}
	return 0
}

func newJSONReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return formats.NewObjectReader(r, o, "object", func(q *formats.EventQueue, b []byte, n int) error {
		return decodeObject(q, b, n, o.Report)
	})
}

// decodeObject queues the events of one object: its run.
func decodeObject(q *formats.EventQueue, b []byte, n int, report *formats.Report) error {
	var o finalObject
	if err := formats.Unmarshal(n, b, &o); err != nil {
		return err
	}
	q.Add(&formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: formats.Deref(o.SessionID), Model: formats.Deref(o.Model)}})
	for i, c := range o.ToolCalls {
		call := formats.Call{ID: c.ID, Name: c.Name, Args: c.Args, Output: formats.Deref(c.Output), Truncated: c.OutputTruncated}
		if call.ID == "" {
			call.ID = "call_" + strconv.Itoa(i+1)
		}
		call.Status = formats.ParseStatus(c.Status)
		if call.Status == formats.Denied {
			call.Error = formats.Deref(o.Error)
			q.Add(&formats.Event{Kind: formats.ToolResult, Call: call})
			continue
		}
		q.Add(&formats.Event{Kind: formats.ToolCall, Call: formats.Call{ID: call.ID, Name: call.Name, Args: call.Args}})
		if call.Status == formats.Running || call.Status == formats.StatusUnknown {
			if c.Status != "running" {
				report.Warn(n, "tool call %q has status %q, which AdaL does not define; kept as failed", call.ID, c.Status)
				call.Status = formats.Failed
			} else {
				continue
			}
		}
		q.Add(&formats.Event{Kind: formats.ToolResult, Call: call})
	}
	if o.Answer != nil {
		q.Add(&formats.Event{Kind: formats.Answer, Text: *o.Answer})
	}
	status, code := formats.Completed, o.ExitCode
	if !o.Success {
		if code == 0 {
			// success:false with exit code 0 (or none): AdaL's failure code.
			report.Warn(n, "\"success\" is false but \"exit_code\" is 0; taken as exit code 1")
			code = 1
		}
		status = statusOfExit(&code)
		if o.Error != nil && status != formats.Denied {
			q.Add(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: *o.Error})
		}
	}
	q.Add(&formats.Event{Kind: formats.RunEnd, Status: status, Text: formats.Deref(o.Error),
		Run: formats.RunInfo{SessionID: formats.Deref(o.SessionID), Model: formats.Deref(o.Model), ExitCode: formats.Some(code)}})
	return nil
}

type jsonWriter struct {
	w       io.Writer
	opts    formats.WriteOptions
	calls   formats.CallTracker
	text    formats.TextTracker
	run     runSummary
	preview int
	// raw is the run's source object while every event of the run came
	// from it, so that adal-json → adal-json prints it unchanged.
	raw []byte
}

func newJSONWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	preview := DefaultPreviewBytes
	if v, err := strconv.Atoi(o.Param(ParamPreviewBytes, "")); err == nil {
		preview = v
	}
	return &jsonWriter{w: w, opts: o, preview: preview}
}

func (j *jsonWriter) Write(e *formats.Event) error {
	j.run.observe(e, &j.calls, &j.text, j.opts.Report)
	switch {
	case e.Kind == formats.RunStart && e.Source.From(j.opts.Dialect) && e.Source.Line != nil:
		j.raw = e.Source.Line
	case !(e.Source.From(j.opts.Dialect) && e.Source.Continued):
		j.raw = nil
	}
	if e.Kind != formats.RunEnd {
		return nil
	}
	defer j.reset()
	if j.raw != nil {
		return formats.WriteRawLine(j.w, j.raw)
	}
	r := &j.run
	code := r.exitCode(e)
	o := finalObject{Success: code == 0, ExitCode: code, SessionID: formats.NilIfEmpty(r.sessionID), Model: formats.NilIfEmpty(r.modelName), ToolCalls: []finalCall{}}
	if o.Success {
		if a := r.answerText(); r.answered || a != "" {
			o.Answer = &a
		}
	} else {
		msg := r.failure(e)
		o.Error = &msg
		if r.answered {
			a := r.answer
			o.Answer = &a
		}
	}
	for _, c := range j.calls.All() {
		fc := finalCall{ID: c.ID, Name: c.Name, Args: args(c.Args), Status: c.Status.String(), OutputTruncated: c.Truncated}
		switch c.Status {
		case formats.Completed, formats.Failed, formats.Cancelled, formats.Denied:
		default:
			fc.Status = "cancelled"
		}
		if c.Status != formats.Denied {
			out := outputOf(&c.Call)
			if j.preview > 0 && len(out) > j.preview {
				out = preview(out, j.preview)
				fc.OutputTruncated = true
				j.opts.Report.Lose("tool outputs past the adal-json preview size (kept as a preview)")
			}
			fc.Output = &out
		}
		o.ToolCalls = append(o.ToolCalls, fc)
	}
	return formats.WriteJSONLine(j.w, o)
}

func (j *jsonWriter) reset() {
	j.calls.Reset()
	j.text.Reset()
	j.run = runSummary{}
	j.raw = nil
}

func (j *jsonWriter) Close() error { return nil }

// preview cuts s to at most n bytes on a character boundary.
func preview(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
