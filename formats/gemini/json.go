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
	Carries: formats.AllFeatures &^ (formats.ToolOutputValues | formats.SystemPrompts | formats.Timestamps | formats.WorkingDirs | formats.UserPrompts | formats.Thinking |
		formats.Turns | formats.TurnStatuses | formats.ToolCalls | formats.SubagentToolCalls | formats.ToolDurations | formats.CancelledCalls |
		formats.Refusals | formats.Subagents | formats.SubagentCalls | formats.SubagentText | formats.SubagentReports |
		formats.SubagentAnswers | formats.SubagentNotices | formats.PermissionRequests | formats.PermissionAnswers |
		formats.TodoLists | formats.Compactions | formats.CompactionSummaries | formats.ModelChanges | formats.InfoNotices |
		formats.PerRequestUsage | formats.CacheWrites | formats.Costs | formats.RunDurations |
		formats.RawEvents),
	Quirks: []formats.Quirk{formats.ExtraMessages, lossErrors, lossUnmeteredModels},
}

// The losses of the JSON object's own encoding.
var (
	lossErrors          = formats.NewQuirk("error notices besides the run's error")
	lossUnmeteredModels = formats.NewQuirk("model names of runs without token counts")
)

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
	Thoughts   *int64 `json:"thoughts,omitempty"`
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
	if formats.Unmarshal(0, b, &o) != nil || o.Type != nil || o.Success != nil {
		return 0
	}
	if o.Response == nil && o.Error == nil && o.Stats == nil {
		return 0
	}
	return 85
}

func newJSONReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return formats.NewObjectReader(r, o, "object", func(q *formats.EventQueue, b []byte, n int) error {
		return decodeObject(q, b, n, o.Report)
	})
}

// decodeObject queues the events of one object: its run.
func decodeObject(q *formats.EventQueue, b []byte, n int, report *formats.Report) error {
	var o jsonObject
	if err := report.UnmarshalObject(n, b, &o); err != nil {
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
		u.Add(usageOfCounts(t.Prompt, t.Candidates, t.Total, t.Cached, t.Thoughts))
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

// The gemini-json writer prints one object per run, at its end. The run's
// meaning (its outcome, answer, usage and model) is the run view's; the
// writer keeps only the warnings it will print.
type jsonWriter struct {
	w        io.Writer
	opts     formats.WriteOptions
	warnings []string
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

// Observe follows the events of an object that the pipeline copies from
// gemini-json as it is.
func (j *jsonWriter) Observe(e *formats.Event, _ *formats.RunView) {
	if e.Kind == formats.RunStart || e.Kind == formats.RunEnd {
		j.warnings = nil
	}
}

func (j *jsonWriter) Write(e *formats.Event, v *formats.RunView) error {
	switch e.Kind {
	case formats.RunStart:
		j.warnings = nil
	case formats.Notice:
		if e.Severity == formats.Warning {
			j.warnings = append(j.warnings, e.NoticeText())
		}
	case formats.RunEnd:
		defer func() { j.warnings = nil }()
		return j.end(v)
	}
	return nil
}

func (j *jsonWriter) end(v *formats.RunView) error {
	rep := j.opts.Report
	o := outObject{SessionID: v.Info.SessionID, Warnings: j.warnings}
	answer := v.Answer()
	if n := v.Messages; n > 0 {
		if answer != "" && answer == v.LastText {
			n-- // the last message is the response
		}
		rep.QuirkN(formats.ExtraMessages, n)
	}
	if v.Success() || answer != "" {
		o.Response = &answer
	}
	msg := ""
	if !v.Success() {
		if v.FailureSaid {
			msg = v.Failure // a source that said nothing gets no made-up words
		}
		o.Error = &errorObject{Type: errorType(formats.Some(v.ExitCode)), Message: msg}
		o.Error.Code, _ = formats.Marshal(v.ExitCode)
	}
	for _, t := range v.Errors {
		if t != msg {
			rep.Quirk(lossErrors)
		}
	}
	u := v.Usage
	if u.Empty() && v.Info.Model != "" {
		rep.Quirk(lossUnmeteredModels)
	}
	if !u.Empty() {
		name := v.Info.Model
		if name == "" {
			name = "unknown"
		}
		c := countsOf(u, true)
		o.Stats = &outStats{Models: map[string]modelStats{name: {Tokens: tokenStats{Prompt: c.Prompt,
			Candidates: c.Candidates, Total: c.Total, Cached: c.Cached, Thoughts: c.Thoughts}}}}
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

func (j *jsonWriter) Close() error { return nil }
