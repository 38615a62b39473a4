package adal

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"strings"
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
	Carries:     carries,
	Quirks:      []string{lossPreviews, lossToolErrors, lossMessages, lossErrors},
	// The final object is built from every event: as much work as
	// reading them.
	ReadAhead: true,
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
		call.Status = statusWords.Parse(c.Status)
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

// jsonWriter writes one final object per run, at its end, from the run
// view; the pipeline copies an adal-json object itself.
type jsonWriter struct {
	w       io.Writer
	opts    formats.WriteOptions
	run     *formats.RunFollower
	preview int
	// outputs are the outputs of the run's calls, which the view does not
	// keep, with their error texts merged in: only their previews, when
	// they are longer, so that a run of big outputs is not held whole.
	outputs map[*formats.TrackedCall]keptOutput
}

// keptOutput is what the writer keeps of a call's output.
type keptOutput struct {
	text string
	// cut: text is the preview of a longer output.
	cut bool
}

func newJSONWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	preview := DefaultPreviewBytes
	if v, err := strconv.Atoi(o.Param(ParamPreviewBytes, "")); err == nil {
		preview = v
	}
	return &jsonWriter{w: w, opts: o, run: formats.ViewFor(o), preview: preview, outputs: map[*formats.TrackedCall]keptOutput{}}
}

// Observe follows the events of an object that the pipeline copies.
func (j *jsonWriter) Observe(e *formats.Event) {
	j.run.Follow(e)
	clear(j.outputs)
}

func (j *jsonWriter) Write(e *formats.Event) error {
	v := j.run.Follow(e)
	switch e.Kind {
	case formats.RunStart:
		clear(j.outputs)
	case formats.ToolResult:
		if e.Call.Status == formats.Denied {
			break
		}
		if mergesError(e) {
			j.opts.Report.Lose(lossToolErrors)
		}
		if c := v.Calls.Get(e.Call.ID); c != nil {
			out := keptOutput{text: outputOf(&e.Call)}
			if j.preview > 0 && len(out.text) > j.preview {
				// A copy, so that the whole output is not kept for it.
				out = keptOutput{text: strings.Clone(preview(out.text, j.preview)), cut: true}
			}
			j.outputs[c] = out
		}
	case formats.RunEnd:
		defer clear(j.outputs)
		return j.end(v)
	}
	return nil
}

func (j *jsonWriter) end(v *formats.RunView) error {
	o := finalObject{Success: v.Success(), ExitCode: v.ExitCode, SessionID: formats.NilIfEmpty(v.Info.SessionID),
		Model: formats.NilIfEmpty(v.Info.Model), ToolCalls: []finalCall{}}
	if a := v.Answer(); v.Answered() || o.Success && a != "" {
		o.Answer = &a
	}
	if !o.Success {
		msg := v.Failure
		o.Error = &msg
	}
	j.opts.Report.LoseN(lossMessages, messagesLost(v, o.Answer != nil))
	j.opts.Report.LoseN(lossErrors, errorsBesides(v.Errors, formats.Deref(o.Error)))
	for _, c := range v.Calls.All() {
		fc := finalCall{ID: c.ID, Name: c.Name, Args: args(c.Args), Status: c.Status.String(), OutputTruncated: c.Truncated}
		switch c.Status {
		case formats.Completed, formats.Failed, formats.Cancelled, formats.Denied:
		default:
			fc.Status = "cancelled"
		}
		if c.Status != formats.Denied {
			kept := j.outputs[c]
			out := kept.text
			if kept.cut {
				fc.OutputTruncated = true
				j.opts.Report.Lose(lossPreviews)
			}
			fc.Output = &out
		}
		o.ToolCalls = append(o.ToolCalls, fc)
	}
	return formats.WriteJSONLine(j.w, o)
}

// errorsBesides counts the run's error texts that are not its one error
// field's: adal-json has no place for them. The same text twice is one.
func errorsBesides(errs []string, kept string) int {
	n := 0
	for i, e := range errs {
		if e != kept && !slices.Contains(errs[:i], e) {
			n++
		}
	}
	return n
}

func (j *jsonWriter) Close() error { return nil }

// preview cuts s to at most n bytes on a character boundary.
func preview(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// statusWords are AdaL's words for a call's status besides the model's
// own: the older documented variant says success and error.
var statusWords = formats.StatusWords{"success": formats.Completed, "error": formats.Failed}
