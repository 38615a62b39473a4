package claude

import (
	"bytes"
	"io"
	"strconv"

	"github.com/agentconv/agentconv/formats"
)

// jsonWriter writes claude-json: each run's result object, one per line,
// when the run ends.
type jsonWriter struct {
	w    io.Writer
	opts formats.WriteOptions
	run  runState
	ids  ids
	runs int
	// raw holds the run's claude-json records while every event of the run
	// came from them, so that claude-json → claude-json prints them as
	// they came.
	raw  [][]byte
	pure bool
	// resultRec is the result line of a claude-stream run: the object
	// that --output-format json prints for it.
	resultRec []byte
	messages  int
}

func newJSONWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &jsonWriter{w: w, opts: o}
}

func (j *jsonWriter) Write(e *formats.Event) error {
	own := e.Source.From(j.opts.Dialect) && (e.Source.Line != nil || e.Source.Continued)
	if e.Kind == formats.RunStart {
		j.raw, j.pure, j.resultRec, j.messages = nil, own, nil, 0
	}
	j.pure = j.pure && own
	if own && e.Source.Line != nil {
		j.raw = append(j.raw, e.Source.Line)
	}
	if e.Source.From(Stream.Name) && e.Source.Type == "result" && e.Source.Line != nil {
		rec := e.Source.Line
		if i := bytes.LastIndexByte(rec, '\n'); i >= 0 {
			rec = rec[i+1:]
		}
		j.resultRec = rec
	}
	j.run.observe(e)
	if !e.Source.From(j.opts.Dialect) {
		j.losses(e)
	}
	switch e.Kind {
	case formats.RunStart:
		j.runs++
		j.ids = ids{seed: j.run.session + "\x00" + strconv.Itoa(j.runs)}
	case formats.ToolResult:
		if e.Call.Status == formats.Denied {
			j.run.deny(e)
		} else {
			j.run.calls.Finish(e)
		}
	case formats.RunEnd:
		err := j.end(e)
		j.run = runState{}
		return err
	}
	return nil
}

func (j *jsonWriter) lose(what string) { j.opts.Report.Lose(what) }

// losses reports what a result object cannot hold.
func (j *jsonWriter) losses(e *formats.Event) {
	if !e.Time.IsZero() && !isClaude(e) {
		j.lose("event timestamps")
	}
	switch e.Kind {
	case formats.RunStart:
		if e.Run.Cwd != "" {
			j.lose("working directories")
		}
	case formats.Message:
		if e.Thinking != "" {
			j.lose("thinking text")
		}
		if e.Agent == "" && e.Text != "" {
			j.messages++
		} else if e.Agent != "" {
			j.lose("subagent text")
		}
	case formats.ThinkingDelta:
		j.lose("thinking text")
	case formats.UserMessage:
		j.lose("user prompts")
	case formats.Todos:
		j.lose("todo lists")
	case formats.Compaction:
		j.lose("compactions")
	case formats.ModelChange:
		j.lose("model changes")
	case formats.PermissionRequest:
		j.lose("permission requests")
	case formats.PermissionAnswer:
		j.lose("permission answers")
	case formats.Notice:
		if e.Severity != formats.Error {
			j.lose("notices below error")
		}
	case formats.AgentStart:
		j.lose("subagents")
	case formats.TurnEnd:
		if !isClaude(e) {
			j.lose("turn boundaries")
		}
	case formats.Answer:
		if e.Agent != "" {
			j.lose("subagent answers")
		}
	case formats.Raw:
		j.lose("unknown " + e.Source.Dialect + " events")
	}
}

func (j *jsonWriter) end(e *formats.Event) error {
	if j.pure {
		for _, r := range j.raw {
			if err := formats.WriteRawLine(j.w, r); err != nil {
				return err
			}
		}
		return nil
	}
	if !e.Source.From(j.opts.Dialect) {
		lost := 0
		for _, c := range j.run.calls.All() {
			if c.Status != formats.Denied {
				lost++ // only refusals have a place in the result
			}
		}
		j.opts.Report.LoseN("tool calls", lost)
		n := j.messages
		if n > 0 {
			n-- // the last one is the answer
		}
		j.opts.Report.LoseN("assistant messages besides the answer", n)
	}
	if j.resultRec != nil {
		return formats.WriteRawLine(j.w, j.resultRec)
	}
	o := j.run.result(e, j.ids.uuid(), j.lose)
	return formats.WriteJSONLine(j.w, o)
}

func (j *jsonWriter) Close() error { return nil }
