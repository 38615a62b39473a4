package formats

// EndAtEOF ends the last run of an input whose dialect prints no run end
// (Codex's exec --json, OpenCode's and pi's JSON modes, malac), the one
// way: the reader's Next, when its records run out, queues what End gives
// and, from then on (Done), returns io.EOF.
type EndAtEOF struct{ done bool }

// Done reports whether End was called: the reader has nothing more.
func (x *EndAtEOF) Done() bool { return x.done }

// End ends the input at line, its last record. finished says whether the
// source showed the run done (its last turn ended, its agent ended, an
// error ended it); end makes the events that close it: its RunEnd, and
// what the reader gives before it (an Answer, the ends of its subagents).
// A run that did not finish is left open, and End gives nothing: the
// pipeline closes it as a cut run, with a warning; a reader never makes a
// Cut RunEnd. The events End gives are marked Made (MadeAt).
func (x *EndAtEOF) End(dialect string, line int, finished bool, end func() []*Event) []*Event {
	x.done = true
	if !finished {
		return nil
	}
	evs := end()
	for _, e := range evs {
		MadeAt(e, dialect, line)
	}
	return evs
}

// MadeAt marks e as made by the reader of dialect, with no record of its
// own (Source.Made), at line: the record it follows, or the one it comes
// before. Its Source.Type stays, "end" when it has none.
func MadeAt(e *Event, dialect string, line int) *Event {
	typ := e.Source.Type
	if typ == "" {
		typ = "end"
	}
	e.Source = Source{Dialect: dialect, Type: typ, LineNo: line, Made: true}
	return e
}
