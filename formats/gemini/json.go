package gemini

import (
	"bytes"
	"io"
	"sort"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// JSON is the gemini-json dialect: the one pretty-printed object of
// `--output-format json`.
var JSON = formats.Dialect{
	Name:        "gemini-json",
	Description: "Gemini CLI `--output-format json`: one pretty-printed object per run (session_id, response, stats, error)",
	NewReader:   newJSONReader,
	NewWriter:   newJSONWriter,
	Detect:      detectJSON,
}

// jsonObject is the fields of the object that this package reads.
type jsonObject struct {
	SessionID *string           `json:"session_id"`
	Response  *string           `json:"response"`
	Stats     *sessionStats     `json:"stats"`
	Error     *errorObject      `json:"error"`
	Warnings  []json.RawMessage `json:"warnings"`
	// Fields of the other dialects' final objects, to tell them apart.
	Type    *json.RawMessage `json:"type"`
	Success *json.RawMessage `json:"success"`
}

type sessionStats struct {
	Models map[string]modelStats `json:"models"`
	Tools  *toolStats            `json:"tools,omitempty"`
}

// toolStats are the tool counts of a run; the event model has no place for
// them, so writers of Gemini's other dialect read them from the object.
type toolStats struct {
	TotalCalls *int64 `json:"totalCalls"`
}

// toolCallsOf is the number of tool calls a gemini-json object counts.
func toolCallsOf(object []byte) formats.Opt[int64] {
	var o struct {
		Stats *sessionStats `json:"stats"`
	}
	if json.Unmarshal(object, &o) != nil || o.Stats == nil || o.Stats.Tools == nil {
		return formats.Opt[int64]{}
	}
	return formats.OptFrom(o.Stats.Tools.TotalCalls)
}

type modelStats struct {
	Tokens tokenStats `json:"tokens"`
}

type tokenStats struct {
	Prompt     *int64 `json:"prompt,omitempty"`
	Candidates *int64 `json:"candidates,omitempty"`
	Total      *int64 `json:"total,omitempty"`
	Cached     *int64 `json:"cached,omitempty"`
}

// detectJSON recognises Gemini's object: a JSON object whose keys are
// among Gemini's and that has none of another dialect's. An object longer
// than the head is judged by its first key, which Gemini prints first.
func detectJSON(head []byte) int {
	v := formats.NewValueReader(bytes.NewReader(head))
	b, _, err := v.Next()
	if err != nil {
		t := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
		if len(t) > 1 && t[0] == '{' {
			t = bytes.TrimLeft(t[1:], " \t\r\n")
			for _, k := range []string{`"session_id"`, `"response"`} {
				if bytes.HasPrefix(t, []byte(k)) {
					return 60
				}
			}
		}
		return 0
	}
	if len(b) == 0 || b[0] != '{' {
		return 0
	}
	var o jsonObject
	if json.Unmarshal(b, &o) != nil || o.Type != nil || o.Success != nil {
		return 0
	}
	if o.Response == nil && o.Error == nil && o.Stats == nil {
		return 0
	}
	return 85
}

func newJSONReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return formats.NewObjectReader(r, o, "object", decodeObject)
}

// decodeObject queues the events of one object: its run.
func decodeObject(q *formats.EventQueue, b []byte, n int) error {
	var o jsonObject
	if err := formats.UnmarshalObject(n, b, &o); err != nil {
		return err
	}
	info := formats.RunInfo{SessionID: formats.Deref(o.SessionID), Model: mainModel(o.Stats), Provider: Provider, AgentName: AgentName}
	q.Add(&formats.Event{Kind: formats.RunStart, Run: info})
	for _, w := range o.Warnings {
		q.Add(&formats.Event{Kind: formats.Notice, Severity: formats.Warning, Text: warningText(w)})
	}
	if o.Response != nil && *o.Response != "" {
		q.Add(&formats.Event{Kind: formats.Answer, Text: *o.Response})
	}
	end := &formats.Event{Kind: formats.RunEnd, Status: formats.Completed, Run: info, Usage: usageOf(o.Stats)}
	if o.Error != nil {
		end.Status, end.Text = formats.Failed, o.Error.Message
	}
	end.Run.ExitCode = exitCode(end.Status, o.Error)
	q.Add(end)
	return nil
}

// mainModel is the model of the run: the one in the stats, or of several
// the one that used the most tokens.
func mainModel(s *sessionStats) string {
	if s == nil {
		return ""
	}
	names := make([]string, 0, len(s.Models))
	for name := range s.Models {
		names = append(names, name)
	}
	sort.Strings(names)
	best, most := "", int64(-1)
	for _, name := range names {
		if t := s.Models[name].Tokens.Total; t == nil && most < 0 || t != nil && *t > most {
			best = name
			if t != nil {
				most = *t
			} else {
				most = 0
			}
		}
	}
	return best
}

// usageOf sums the token counts of every model.
func usageOf(s *sessionStats) formats.UsageInfo {
	var u formats.UsageInfo
	if s == nil {
		return u
	}
	for _, m := range s.Models {
		t := m.Tokens
		u.Add(formats.UsageInfo{InputTokens: formats.OptFrom(t.Prompt), OutputTokens: formats.OptFrom(t.Candidates),
			CacheReadTokens: formats.OptFrom(t.Cached), TotalTokens: formats.OptFrom(t.Total)})
	}
	return u
}

// warningText reads a warning, which is a string or an object with a
// message.
func warningText(w json.RawMessage) string {
	var s string
	if json.Unmarshal(w, &s) == nil {
		return s
	}
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(w, &m) == nil && m.Message != "" {
		return m.Message
	}
	return string(w)
}

// The gemini-json writer prints one object per run, at its end.
type jsonWriter struct {
	w    io.Writer
	opts formats.WriteOptions
	text formats.TextTracker
	run  writeRun
	// raw is the run's source object while every event of the run came
	// from it, so that gemini-json → gemini-json prints it unchanged.
	raw []byte
}

func newJSONWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &jsonWriter{w: w, opts: o}
}

type outObject struct {
	SessionID string       `json:"session_id,omitempty"`
	Response  *string      `json:"response,omitempty"`
	Stats     *outStats    `json:"stats,omitempty"`
	Error     *errorObject `json:"error,omitempty"`
	Warnings  []string     `json:"warnings,omitempty"`
}

type outStats struct {
	Models map[string]modelStats `json:"models"`
}

func (j *jsonWriter) Write(e *formats.Event) error {
	same := e.Source.From(j.opts.Dialect)
	switch {
	case e.Kind == formats.RunStart && same && e.Source.Line != nil:
		j.raw = e.Source.Line
	case !(same && e.Source.Continued):
		j.raw = nil
	}
	if !same {
		reportLosses(e, j.opts.Report, false)
	}
	r := &j.run
	main := e.Agent == ""
	if main && e.Kind != formats.TextDelta && e.Kind != formats.Message {
		j.text.Flush("") // a message streamed before this event has ended
	}
	switch e.Kind {
	case formats.RunStart:
		j.run = writeRun{sessionID: e.Run.SessionID, model: e.Run.Model}
	case formats.TextDelta:
		if main {
			if !r.answer.streaming {
				r.messages++
			}
			j.text.Delta("", e.Text)
			r.answer.delta(e.Text)
		}
	case formats.Message:
		// Deltas that carried this very text were its stream.
		if streamed := j.text.Flush(""); main && (streamed == "" || streamed != e.Text) && e.Text != "" {
			r.messages++
			r.answer.whole(e.Text)
		}
	case formats.Answer:
		if main {
			r.answerApart = e.Text != r.answer.text
			r.answer.whole(e.Text)
		}
	case formats.ToolCall:
		r.answer.tool()
	case formats.ToolResult:
		r.answer.tool()
		if e.Call.Status == formats.Denied {
			r.denied = e.Call.Error
		}
	case formats.Notice:
		if e.Severity == formats.Error {
			r.lastError = e.Text
		} else if e.Severity == formats.Warning {
			r.warnings = append(r.warnings, e.Text)
		}
	case formats.Usage:
		r.usage.Add(e.Usage)
		r.usageSeen = true
	case formats.ModelChange:
		if main {
			r.model = e.Run.Model
		}
	case formats.RunEnd:
		defer j.reset()
		if j.raw != nil {
			return formats.WriteRawLine(j.w, j.raw)
		}
		return j.end(e)
	}
	return nil
}

func (j *jsonWriter) end(e *formats.Event) error {
	r := &j.run
	if e.Run.SessionID != "" {
		r.sessionID = e.Run.SessionID
	}
	if e.Run.Model != "" {
		r.model = e.Run.Model
	}
	o := outObject{SessionID: r.sessionID, Warnings: r.warnings}
	if n := r.messages; n > 0 && !e.Source.From(j.opts.Dialect) {
		if r.answer.text != "" && !r.answerApart {
			n-- // the last message is the response
		}
		j.opts.Report.LoseN("assistant messages besides the answer", n)
	}
	ok, msg := outcome(e, r)
	if ok || r.answer.text != "" {
		a := r.answer.text
		o.Response = &a
	}
	if !ok {
		o.Error = &errorObject{Type: errorType(e.Run.ExitCode), Message: msg}
		if e.Run.ExitCode.OK {
			o.Error.Code, _ = formats.Marshal(e.Run.ExitCode.V)
		}
	}
	u := e.Usage
	if u.Empty() && r.usageSeen {
		u = r.usage
	}
	if !u.Empty() {
		name := r.model
		if name == "" {
			name = "unknown"
		}
		o.Stats = &outStats{Models: map[string]modelStats{name: {Tokens: tokenStats{Prompt: u.InputTokens.Ptr(),
			Candidates: u.OutputTokens.Ptr(), Total: u.Total().Ptr(), Cached: u.CacheReadTokens.Ptr()}}}}
	}
	b, err := formats.Marshal(o)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = j.w.Write(out.Bytes())
	return err
}

func (j *jsonWriter) reset() {
	j.text.Reset()
	j.run = writeRun{}
	j.raw = nil
}

func (j *jsonWriter) Close() error { return nil }
