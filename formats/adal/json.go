package adal

import (
	"bytes"
	stdjson "encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// JSON is the adal-json dialect: `adal -o json`, one final object per run,
// pretty-printed as AdaL prints it.
var JSON = formats.Dialect{
	Name:        "adal-json",
	Description: "AdaL `-o json`: one final object per run (success, answer, error, tool_calls, model, thinking_effort, session_id, exit_code)",
	NewReader:   newJSONReader,
	NewWriter:   newJSONWriter,
	Detect:      detectJSON,
	Carries:     carries,
	Quirks:      []formats.Quirk{lossPreviews, formats.MergedToolErrors, formats.ExtraMessages, lossErrors},
	// The final object is built from every event: as much work as
	// reading them.
	ReadAhead: true,
	// The object lists every call of the run, which the view keeps for it
	// until the run ends.
	HoldsRun: true,
	Params:   []formats.Param{previewParam},
}

// finalObject is what the reader takes of AdaL's final object.
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
	// Output is any JSON value: AdaL's file tools return objects.
	Output json.RawMessage `json:"output"`
	// OutputTruncated says that Output is a preview of a longer result
	// (the documented variant; AdaL 1.8.6 has no such field).
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
	if err := report.Unmarshal(n, b, &o); err != nil {
		return err
	}
	q.Add(&formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: formats.Deref(o.SessionID), Model: formats.Deref(o.Model)}})
	for i, c := range o.ToolCalls {
		call := formats.Call{ID: c.ID, Name: c.Name, Args: c.Args, Truncated: c.OutputTruncated}
		if call.ID == "" {
			call.ID = "call_" + strconv.Itoa(i+1)
		}
		text, value, ok := outputValue(c.Output)
		if !ok {
			return formats.Errorf(n, "tool call %q: output is not valid JSON", call.ID)
		}
		call.Output = formats.ValueOutput(value, text)
		if value == nil && isPreview(text) {
			call.Truncated = true
		}
		call.Status = statusWords.Parse(c.Status)
		// AdaL prints a refused call's tool_call before it says that it
		// was refused.
		q.Add(&formats.Event{Kind: formats.ToolCall, Call: formats.Call{ID: call.ID, Name: call.Name, Args: call.Args}})
		if call.Status == formats.Denied {
			// The output of a refused call is the refusal's reason.
			call.Error, call.Output = text, formats.Output{}
			if call.Error == "" {
				call.Error = formats.Deref(o.Error)
			}
			q.Add(&formats.Event{Kind: formats.ToolResult, Call: call})
			continue
		}
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

// outputValue reads a call's output: a string is its text; null is no
// output; any other JSON value is kept as it is (compacted), with its JSON
// text as the text.
func outputValue(raw json.RawMessage) (text string, value json.RawMessage, ok bool) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil, true
	case raw[0] == '"':
		return text, nil, json.Unmarshal(raw, &text) == nil
	}
	value, ok = formats.AppendCompact(nil, raw)
	if !ok {
		return "", nil, false
	}
	return strings.ToValidUTF8(string(value), "\uFFFD"), value, true
}

// jsonWriter writes one final object per run, at its end, from the run
// view, as AdaL prints it: pretty-printed, its keys in AdaL's order. The
// pipeline copies an adal-json object itself.
type jsonWriter struct {
	w       io.Writer
	opts    formats.WriteOptions
	preview int
	// outputs are the outputs of the run's calls, which the view does not
	// keep, with their error texts merged in: only their previews, when
	// they are longer, so that a run of big outputs is not held whole.
	outputs map[*formats.TrackedCall]keptOutput
	buf     []byte
	pretty  bytes.Buffer
}

// keptOutput is what the writer keeps of a call's output.
type keptOutput struct {
	text string
	// value: the output is this JSON value, not text.
	value json.RawMessage
	// cut: text is the preview of a longer output.
	cut bool
}

func newJSONWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &jsonWriter{w: w, opts: o, preview: previewLimit(o), outputs: map[*formats.TrackedCall]keptOutput{}}
}

// Observe follows the events of an object that the pipeline copies.
func (j *jsonWriter) Observe(e *formats.Event, _ *formats.RunView) {
	clear(j.outputs)
}

func (j *jsonWriter) Write(e *formats.Event, v *formats.RunView) error {
	switch e.Kind {
	case formats.RunStart:
		clear(j.outputs)
	case formats.ToolResult:
		if e.Call.Status == formats.Denied {
			break
		}
		if mergesError(e) {
			j.opts.Report.Quirk(formats.MergedToolErrors)
		}
		if c := v.Calls.Get(e.Call.ID); c != nil {
			if len(e.Call.Output.Value()) > 0 && e.Call.Error == "" {
				j.outputs[c] = keptOutput{value: bytes.Clone(e.Call.Output.Value())}
				break
			}
			out := keptOutput{text: outputOf(&e.Call)}
			if p, cut := cutPreview(out.text, j.preview); cut {
				// A copy, so that the whole output is not kept for it.
				out = keptOutput{text: strings.Clone(p), cut: true}
			}
			j.outputs[c] = out
		}
	case formats.RunEnd:
		defer clear(j.outputs)
		return j.end(v)
	}
	return nil
}

// end writes the run's object: success, answer, error, tool_calls, model,
// thinking_effort (which no other dialect says: null, as AdaL writes it
// when none is set), session_id, exit_code.
func (j *jsonWriter) end(v *formats.RunView) error {
	success := v.Success()
	b := append(j.buf[:0], `{"success":`...)
	b = strconv.AppendBool(b, success)
	b = append(b, `,"answer":`...)
	answered := false
	if a := v.Answer(); v.Answered() || success && a != "" {
		answered = true
		b = appendJSString(b, a)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"error":`...)
	failure := ""
	if success {
		b = append(b, "null"...)
	} else {
		failure = v.Failure
		b = appendJSString(b, failure)
	}
	j.opts.Report.QuirkN(formats.ExtraMessages, messagesLost(v, answered))
	j.opts.Report.QuirkN(lossErrors, errorsBesides(v.Errors, failure))
	b = append(b, `,"tool_calls":[`...)
	for i, c := range v.Calls.All() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendJSString(b, c.ID)
		b = append(b, `,"name":`...)
		b = appendJSString(b, c.Name)
		b = append(b, `,"args":`...)
		var ok bool
		if b, ok = formats.AppendCompact(b, args(c.Args)); !ok {
			b = append(b, "{}"...)
		}
		status := c.Status.String()
		switch c.Status {
		case formats.Completed, formats.Failed, formats.Cancelled, formats.Denied:
		default:
			status = "cancelled"
		}
		b = append(b, `,"status":`...)
		b = appendJSString(b, status)
		b = append(b, `,"output":`...)
		kept := j.outputs[c]
		switch {
		case c.Status == formats.Denied:
			// AdaL gives the refusal's reason as a refused call's output.
			b = appendJSString(b, c.Error)
		case kept.value != nil:
			b = append(b, kept.value...)
		default:
			if kept.cut {
				j.opts.Report.Quirk(lossPreviews)
			}
			b = appendJSString(b, kept.text)
		}
		if c.Truncated && !kept.cut && c.Status != formats.Denied && !isPreview(kept.text) {
			// A preview in another dialect's words: AdaL has no field
			// for it.
			b = append(b, `,"output_truncated":true`...)
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	if v.Info.Model != "" {
		b = appendJSString(b, v.Info.Model)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"thinking_effort":null,"session_id":`...)
	if v.Info.SessionID != "" {
		b = appendJSString(b, v.Info.SessionID)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"exit_code":`...)
	b = strconv.AppendInt(b, int64(v.ExitCode), 10)
	b = append(b, '}')
	j.buf = b
	j.pretty.Reset()
	if err := stdjson.Indent(&j.pretty, b, "", "  "); err != nil {
		return err
	}
	j.pretty.WriteByte('\n')
	_, err := j.w.Write(j.pretty.Bytes())
	return err
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

// statusWords are AdaL's words for a call's status besides the model's
// own: the older documented variant says success and error.
var statusWords = formats.StatusWords{"success": formats.Completed, "error": formats.Failed}
