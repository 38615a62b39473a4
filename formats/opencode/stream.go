package opencode

import (
	"io"
	"slices"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Stream is the opencode dialect: `opencode run --format json`, one JSON
// line per finished part of the session's messages (step_start, text,
// reasoning with --thinking, tool_use, step_finish), each with the type,
// the time in milliseconds, the sessionID and the part; and one error
// line per session error (a failed run, which exits 1). A tool call
// comes with its result in one line; a subagent is the parent's task
// call, whose metadata names the child session (its parts are not
// printed). There is no closing line. Read only.
var Stream = formats.Dialect{
	Name:        "opencode",
	Aliases:     []string{"opencode-stream", "opencode-json"},
	Description: "OpenCode `opencode run --format json`: one line per finished part (step_start, text, reasoning, tool_use with its result, step_finish with tokens and cost) and error lines (read only)",
	NewReader:   newStreamReader,
	Detect:      detectStream,
}

// line is a line of the stream.
type line struct {
	Type      string          `json:"type"`
	Timestamp *int64          `json:"timestamp"`
	SessionID string          `json:"sessionID"`
	Part      *part           `json:"part"`
	Error     json.RawMessage `json:"error"`
}

// sessionError is an error line's error: OpenCode's NamedError, whose
// data has the message (an APIError's also its status code).
type sessionError struct {
	Name string `json:"name"`
	Data *struct {
		Message    string `json:"message"`
		StatusCode *int   `json:"statusCode"`
	} `json:"data"`
}

func (e *sessionError) message() string {
	if e.Data != nil && e.Data.Message != "" {
		return e.Data.Message
	}
	return e.Name
}

// partTypes are the stream's line types of parts, and the part type each
// carries.
var partTypes = map[string]string{"step_start": "step-start", "step_finish": "step-finish", "text": "text", "reasoning": "reasoning", "tool_use": "tool"}

// detectStream claims lines of the stream's envelope: a known type, a
// timestamp, a sessionID, and a part of the matching type (or an error).
func detectStream(head []byte) int {
	return formats.DetectByTypes(head, func(b []byte, typ string) bool {
		var p struct {
			Timestamp *json.RawMessage `json:"timestamp"`
			SessionID *string          `json:"sessionID"`
			Part      *struct {
				Type string `json:"type"`
			} `json:"part"`
			Error *json.RawMessage `json:"error"`
		}
		if json.Unmarshal(b, &p) != nil || p.Timestamp == nil || p.SessionID == nil {
			return false
		}
		if typ == "error" {
			return p.Error != nil
		}
		want, ok := partTypes[typ]
		return ok && p.Part != nil && p.Part.Type == want
	})
}

type streamReader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	queue formats.EventQueue
	end   formats.EndAtEOF
	// results are the results of the open step's calls, held until the
	// step's usage (placeResults).
	results []*formats.Event
	started bool
	session string
	failure string // the last error line's message
	code    string
	last    int64
}

func newStreamReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &streamReader{lines: formats.NewLineReader(r), opts: o}
}

func (r *streamReader) Next() (*formats.Event, error) {
	for r.queue.Len() == 0 {
		if r.end.Done() {
			return nil, io.EOF
		}
		b, err := r.lines.Next()
		if err == io.EOF {
			r.queue.Push(r.takeResults()...)
			// OpenCode prints no closing line: a run ends with its input.
			r.queue.Push(r.end.End(r.opts.Dialect, r.lines.Line(), r.started, r.endEvents)...)
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := r.record(b); err != nil {
			return nil, err
		}
	}
	return r.queue.Pop(), nil
}

func (r *streamReader) record(b []byte) error {
	n := r.lines.Line()
	var l line
	if err := r.opts.Report.UnmarshalObject(n, b, &l); err != nil {
		return err
	}
	src := formats.Source{Dialect: r.opts.Dialect, Type: l.Type, Line: append([]byte(nil), b...), LineNo: n}
	var t int64
	if l.Timestamp != nil {
		t = *l.Timestamp
		r.last = t
	}
	if !r.started {
		r.started, r.session = true, l.SessionID
		// OpenCode prints no opening line: the run starts with the first.
		r.queue.Push(&formats.Event{Kind: formats.RunStart, Time: ms(t),
			Source: formats.Source{Dialect: r.opts.Dialect, Type: l.Type, LineNo: n, Made: true},
			Run:    formats.RunInfo{SessionID: l.SessionID, AgentName: AgentName}})
	}
	var evs []*formats.Event
	switch {
	case l.Type == "error":
		var e sessionError
		if err := json.Unmarshal(l.Error, &e); err != nil {
			return formats.Errorf(n, "the error is not OpenCode's error object: %v", err)
		}
		r.failure, r.code = e.message(), e.Name
		evs = append(r.takeResults(), &formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: e.message(), Code: e.Name, Time: ms(t)})
	case partTypes[l.Type] != "" && l.Part != nil:
		evs = partEvents(l.Part, "", ms(t), nil)
		streamTimes(l.Part, evs)
		if len(evs) == 0 {
			evs = []*formats.Event{{Kind: formats.Raw, Source: formats.Source{Known: true}}}
		}
		evs = r.placeResults(l.Part.Type, l.Type, n, evs)
	default:
		evs = []*formats.Event{{Kind: formats.Raw}}
		r.opts.Report.Warn(n, "an OpenCode line of type %q, which agentconv does not know; kept for its own dialect only", l.Type)
	}
	r.queue.Record(src, evs...)
	return nil
}

// placeResults puts the results of a step's calls after the step's
// usage. OpenCode prints a call when it has run, its result with it, and
// the step's tokens (step_finish) after its calls; but the results are
// the next request's input, and a Usage goes with its own request's
// output, before them (the formats package's contract). So a result is
// held until the step finishes (or another begins, or the input ends),
// and goes out after its Usage, before the step's TurnEnd, as a part of
// its own record (Continued).
func (r *streamReader) placeResults(part, lineType string, n int, evs []*formats.Event) []*formats.Event {
	switch part {
	case "tool":
		if k := len(evs) - 1; k > 0 && evs[k].Kind == formats.ToolResult {
			res := evs[k]
			res.Source.Type, res.Source.LineNo = lineType, n
			r.results = append(r.results, res)
			evs = evs[:k]
		}
	case "step-finish":
		if len(evs) > 0 && evs[0].Kind == formats.Usage {
			return append(append([]*formats.Event{evs[0]}, r.takeResults()...), evs[1:]...)
		}
	case "step-start":
		return append(r.takeResults(), evs...)
	}
	return evs
}

// takeResults gives the held results of calls, in the order they ended.
func (r *streamReader) takeResults() []*formats.Event {
	res := r.results
	r.results = nil
	slices.SortStableFunc(res, func(a, b *formats.Event) int { return a.Time.Compare(b.Time) })
	return res
}

// streamTimes gives a line's events the times of its part: OpenCode
// prints a part once it is done, its line's timestamp later than the
// part's own times, and a step's lines later than its parts. So text and
// reasoning have their part's start, a call its start and its result its
// end (partEvents), and a step's start, usage and end, which have no time
// of their own, none.
func streamTimes(p *part, evs []*formats.Event) {
	switch p.Type {
	case "step-start", "step-finish":
		for _, e := range evs {
			e.Time = time.Time{}
		}
	case "text", "reasoning":
		if p.Time != nil && p.Time.Start != nil {
			for _, e := range evs {
				e.Time = ms(*p.Time.Start)
			}
		}
	}
}

// endEvents is the RunEnd of the run at the end of the input: OpenCode
// prints no closing line; a run with an error line failed (OpenCode exits
// 1).
func (r *streamReader) endEvents() []*formats.Event {
	e := &formats.Event{Kind: formats.RunEnd, Time: ms(r.last), Status: formats.Completed,
		Run: formats.RunInfo{SessionID: r.session, AgentName: AgentName}}
	if r.failure != "" {
		e.Status, e.Text, e.Code = formats.Failed, r.failure, r.code
		e.Run.ExitCode = formats.Some(1)
	}
	return []*formats.Event{e}
}
