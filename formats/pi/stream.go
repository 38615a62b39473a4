package pi

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// Stream is the pi dialect: `pi --mode json -p PROMPT`, JSON lines. The
// first is the session header (type session: the session id, its cwd, the
// file format's version); then pi's agent events: agent_start, turn_start,
// message_start, message_update (each a delta, with the whole partial
// message again), message_end (the message, final: a user prompt, an
// assistant answer with its model, usage and cost and stopReason, or a
// tool's result), tool_execution_start/update/end, turn_end, agent_end;
// and the session's: auto_retry_start/end around a retried request (after
// the failed attempt's agent_end, a new agent_start), compaction_start/end,
// queue_update. Only the final messages are read; the deltas and the tool
// executions repeat them. There is no closing line: the run ends with the
// stream. A run whose last answer stopped with stopReason error failed,
// though pi exits 0 in json mode: the reader says so. Read only.
var Stream = formats.Dialect{
	Name:        "pi",
	Aliases:     []string{"pi-stream", "pi-json"},
	Description: "pi `--mode json`: the session header, then agent, turn, message (deltas repeat the partial message; message_end is final), tool-execution and retry events (read only)",
	NewReader:   newStreamReader,
	Detect:      detectStream,
	Bookkeeping: []string{"agent_start", "agent_end", "message_start", "message_update", "tool_execution_start",
		"tool_execution_update", "tool_execution_end", "queue_update", "compaction_start"},
}

// streamTypes are the event types of pi's json mode.
var streamTypes = map[string]bool{
	"agent_start": true, "agent_end": true, "turn_start": true, "turn_end": true, "message_start": true,
	"message_update": true, "message_end": true, "tool_execution_start": true, "tool_execution_update": true,
	"tool_execution_end": true, "auto_retry_start": true, "auto_retry_end": true, "compaction_start": true,
	"compaction_end": true, "queue_update": true,
}

// detectStream: the session header, then pi's agent events.
func detectStream(head []byte) int {
	return detect(head, func(_ []byte, typ string) bool { return streamTypes[typ] })
}

// streamRecord is every field of a stream line that the reader takes.
type streamRecord struct {
	Type    string   `json:"type"`
	Message *message `json:"message"`
	// auto_retry_start and auto_retry_end
	Attempt      int    `json:"attempt"`
	MaxAttempts  int    `json:"maxAttempts"`
	DelayMs      int64  `json:"delayMs"`
	ErrorMessage string `json:"errorMessage"`
	Success      *bool  `json:"success"`
	FinalError   string `json:"finalError"`
	// compaction_end
	Result *struct {
		Summary string `json:"summary"`
	} `json:"result"`
	Aborted bool   `json:"aborted"`
	Reason  string `json:"reason"`
}

type streamReader struct {
	lines  *formats.LineReader
	opts   formats.ReadOptions
	queue  []*formats.Event
	x      events
	line   []byte
	lineNo int
	first  bool // the next event is the line's first

	open bool
	run  formats.RunInfo
	last time.Time
	// ended: the last event of the agent was agent_end (or the end of
	// its retries): the stream may end there.
	ended bool
	end   formats.EndAtEOF
}

func newStreamReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	s := &streamReader{lines: formats.NewLineReader(r), opts: o}
	s.x.emit = s.push
	return s
}

func (s *streamReader) push(e *formats.Event) {
	e.Source.Dialect = s.opts.Dialect
	e.Source.LineNo = s.lineNo
	if e.Source.Type == "" {
		e.Source.Type = formats.TypeOf(s.line)
	}
	if s.first {
		e.Source.Line, s.first = s.line, false
	} else {
		e.Source.Continued = true
	}
	if !e.Time.IsZero() {
		s.last = e.Time
	}
	s.queue = append(s.queue, e)
}

func (s *streamReader) Next() (*formats.Event, error) {
	for len(s.queue) == 0 {
		if s.end.Done() {
			return nil, io.EOF
		}
		b, err := s.lines.Next()
		if err == io.EOF {
			s.line, s.first = nil, false
			s.queue = append(s.queue, s.end.End(s.opts.Dialect, s.lineNo, s.open && s.ended, s.endEvents)...)
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		s.line, s.lineNo, s.first = bytes.Clone(b), s.lines.Line(), true
		if le := s.record(); le != nil {
			return nil, le
		}
	}
	e := s.queue[0]
	s.queue = s.queue[1:]
	return e, nil
}

// record makes the events of the current line.
func (s *streamReader) record() *formats.LineError {
	typ := formats.TypeOf(s.line)
	switch typ {
	case "message_update", "message_start", "tool_execution_start", "tool_execution_update", "tool_execution_end",
		"queue_update", "compaction_start", "agent_start":
		// The deltas repeat what message_end gives whole; the tool
		// executions what the toolResult message does.
		if typ == "agent_start" {
			s.ended = false
		}
		s.push(&formats.Event{Kind: formats.Raw})
		return nil
	}
	var r streamRecord
	if le := s.opts.Report.UnmarshalObject(s.lineNo, s.line, &r); le != nil {
		return le
	}
	if typ == "session" {
		var h header
		if le := s.opts.Report.UnmarshalObject(s.lineNo, s.line, &h); le != nil {
			return le
		}
		s.endRun()
		s.open, s.ended = true, false
		s.x = events{emit: s.push}
		s.run = formats.RunInfo{SessionID: h.ID, Cwd: h.Cwd, AgentName: AgentName}
		at, _ := time.Parse(time.RFC3339Nano, h.Timestamp)
		s.push(&formats.Event{Kind: formats.RunStart, Time: at, Run: s.run})
		return nil
	}
	if !s.open {
		// pi's events without its header (a stream cut at its start):
		// the pipeline opens the run.
		s.open = true
	}
	switch typ {
	case "turn_start":
		s.push(&formats.Event{Kind: formats.TurnStart, Time: s.last})
	case "message_end":
		if r.Message == nil {
			s.push(&formats.Event{Kind: formats.Raw})
			break
		}
		s.x.message(r.Message, time.Time{})
	case "turn_end":
		st := formats.Completed
		switch {
		case r.Message == nil:
		case r.Message.StopReason == "error":
			st = formats.Failed
		case r.Message.StopReason == "aborted":
			st = formats.Cancelled
		}
		s.push(&formats.Event{Kind: formats.TurnEnd, Time: s.last, Status: st})
	case "agent_end":
		s.ended = true
		s.push(&formats.Event{Kind: formats.Raw})
	case "auto_retry_start":
		s.ended = false
		s.push(&formats.Event{Kind: formats.Notice, Time: s.last, Severity: formats.Warning, Code: codeOf(r.ErrorMessage),
			Text: fmt.Sprintf("retrying the request (attempt %d of %d, in %d ms): %s", r.Attempt, r.MaxAttempts, r.DelayMs, r.ErrorMessage)})
	case "auto_retry_end":
		s.ended = true
		if r.Success != nil && !*r.Success {
			s.push(&formats.Event{Kind: formats.Notice, Time: s.last, Severity: formats.Error, Code: codeOf(r.FinalError),
				Text: fmt.Sprintf("the request failed after %d attempts: %s", r.Attempt, r.FinalError)})
		} else {
			s.push(&formats.Event{Kind: formats.Notice, Time: s.last, Severity: formats.Info, Text: fmt.Sprintf("the request succeeded at attempt %d", r.Attempt)})
		}
	case "compaction_end":
		switch {
		case r.Result != nil:
			s.push(&formats.Event{Kind: formats.Compaction, Time: s.last, Text: r.Result.Summary})
		case r.ErrorMessage != "" || r.Aborted:
			s.push(&formats.Event{Kind: formats.Notice, Time: s.last, Severity: formats.Warning, Text: "the compaction did not complete: " + r.ErrorMessage})
		default:
			s.push(&formats.Event{Kind: formats.Raw})
		}
	default:
		s.push(&formats.Event{Kind: formats.Raw})
	}
	return nil
}

// endRun ends the open run at the next session header, when pi's agent
// ended; a stream cut before that is left for the pipeline to close as
// cut.
func (s *streamReader) endRun() {
	if s.open && s.ended {
		s.x.end(s.last, s.run)
		s.failed()
	}
	s.open = false
}

// endEvents are the events that end the run at the end of the input, pi's
// agent having ended.
func (s *streamReader) endEvents() []*formats.Event {
	var evs []*formats.Event
	s.x.emit = func(e *formats.Event) { evs = append(evs, e) }
	s.x.end(s.last, s.run)
	s.x.emit = s.push
	s.open = false
	s.failed()
	return evs
}

// failed warns of a run that failed, which pi's exit code does not say.
func (s *streamReader) failed() {
	if s.x.stop == "error" && s.opts.Report != nil {
		s.opts.Report.Warn(s.lineNo, "pi's run failed (its last answer stopped with an error: %s), though pi exits 0 in json mode: the run's outcome is the failure", firstLine(s.x.errMsg))
	}
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
