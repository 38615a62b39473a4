package claude

import (
	"io"

	"github.com/agentconv/agentconv/formats"
)

// jsonWriter writes claude-json: each run's result object, one per line,
// when the run ends.
type jsonWriter struct {
	w   io.Writer
	rep *formats.Report
	run run
}

func newJSONWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return newJSONWriterAs(w, o, Copy{})
}

func newJSONWriterAs(w io.Writer, o formats.WriteOptions, c Copy) formats.Writer {
	j := &jsonWriter{w: w, rep: o.Report}
	j.run.dialect = o.Dialect
	j.run.cacheIn = c.OpenAICounts // Qwen Code's input_tokens count the cache
	return j
}

// Observe follows a record that the pipeline copies as it came: the
// session's running cost goes on.
func (j *jsonWriter) Observe(e *formats.Event, v *formats.RunView) {
	j.run.follow(e, v)
	if e.Kind == formats.RunEnd {
		j.run.sessionCost(v)
		j.run.sessionTokens(v)
	}
}

func (j *jsonWriter) Write(e *formats.Event, v *formats.RunView) error {
	j.run.follow(e, v)
	if e.Kind != formats.RunEnd {
		return nil
	}
	// The answer is the one message a result object holds.
	j.rep.QuirkN(formats.ExtraMessages, v.Messages-1)
	return formats.WriteJSONLine(j.w, j.run.result(e, v, j.rep, nil, false))
}

func (j *jsonWriter) Close() error { return nil }
