package convert

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentconv/agentconv/formats"
)

// The writing side of the pipeline: each event followed in the run view,
// what the target cannot carry reported, and the event written or copied.

// Write passes one event to the writer, opening a run first if the event
// comes outside one, and keeping track of what is open.
func (p *Pipeline) Write(ev *formats.Event) error {
	p.res.Events++
	if !p.view.Open && ev.Kind != formats.RunStart {
		// An event of the pipeline's own, made again for each run unless
		// the writer keeps no event: a run of one answer is an event or
		// two, and an Event is a kilobyte to zero.
		start := &p.start
		if !p.to.KeepsNoEvents {
			start = new(formats.Event)
		}
		*start = formats.Event{Kind: formats.RunStart, Time: ev.Time, Arrived: ev.Arrived, Synthetic: true,
			Source: formats.Source{Dialect: ev.Source.Dialect, LineNo: ev.Source.LineNo}}
		if err := p.emit(start); err != nil {
			return err
		}
	}
	if ev.Kind == formats.RunStart && p.view.Open {
		// A new run begins before the last one ended.
		if err := p.closeRun(formats.Failed, "a new run began before this one completed"); err != nil {
			return err
		}
	}
	return p.emit(ev)
}

// emit follows an event in the run view, reports what the target cannot
// carry of it, and writes it: copied verbatim when it goes back to its own
// dialect, else through the writer.
func (p *Pipeline) emit(ev *formats.Event) error {
	if !p.rawOutput {
		ev.Call.Output.Decode()
	}
	p.warn(ev)
	p.bound(ev)
	if bad := ev.Usage.Negative(); len(bad) > 0 {
		p.opts.Report.Warn(ev.Source.LineNo, "token counts below zero (%s): read as not given", strings.Join(bad, ", "))
	}
	if ev.Kind == formats.RunStart {
		p.copying = p.observer != nil && ev.Source.Dialect == p.target
	}
	p.view.Observe(ev)
	if p.observer != nil && (ev.Source.Dialect == p.target && (ev.Source.Line != nil || ev.Source.NothingToCopy()) ||
		ev.Synthetic && p.copying && !p.interrupted) {
		// Its own dialect: the record goes out as it came. What the pipeline
		// made to start or close a copied cut run is only observed: the
		// source never printed it (the warning said it was closed). A run
		// interrupted by a signal is closed in every dialect: that end is
		// agentconv's own, and a live reader needs it.
		p.observer.Observe(ev, p.view)
		if ev.Source.Line != nil && !ev.Source.Continued && !ev.Synthetic {
			out := p.opts.Out
			if p.copyTo != nil {
				if w := p.copyTo.CopyTo(); w != nil {
					out = w
				}
			}
			if err := formats.WriteRawLine(out, ev.Source.Line); err != nil {
				return &OutputError{err}
			}
		}
	} else {
		if !slices.Contains(p.to.Resends, ev.Source.Dialect) {
			if err := p.lose(ev); err != nil {
				return err
			}
		}
		before := p.opts.Report.Losses()
		if err := p.w.Write(ev, p.view); err != nil {
			return &OutputError{err}
		}
		if p.opts.Strict && p.opts.Report.Losses() > before {
			return &LossError{What: p.opts.Report.LastLoss(), Target: p.target}
		}
	}
	if ev.Kind == formats.RunEnd {
		p.res.Runs++
		p.res.ExitCode = formats.Some(p.view.ExitCode)
		p.copying = false
	}
	return nil
}

// lose reports what the event needs and the target does not carry; under
// --strict, it fails before the event is written.
func (p *Pipeline) lose(ev *formats.Event) error {
	needs := formats.Needs(ev)
	if ev.Kind == formats.UserMessage && ev.Agent == "" && p.view.Prompts > 1 {
		// The view has seen this prompt: it is not the run's first.
		needs |= formats.FollowUpPrompts
	}
	counted := p.counter.Count(ev, needs)
	missing := formats.Missing(needs, p.to.Carries)
	if missing == 0 {
		return nil
	}
	if p.opts.Strict {
		var first formats.Feature
		missing.Each(func(f formats.Feature) {
			if first == 0 {
				first = f
			}
		})
		return &LossError{What: formats.LossName(first, ev), Target: p.target}
	}
	// Counted by the things named (calls, messages, runs), not by events.
	(missing & counted).Each(func(f formats.Feature) { p.opts.Report.Feature(f, ev) })
	return nil
}

// closeRun ends an open run that its source never ended: every open call is
// ended as cancelled (it never completed), every open subagent with status,
// and the run ends as a cut run with exit code 1 (130 for a signal).
func (p *Pipeline) closeRun(status formats.Status, why string) error {
	v := p.view
	if !v.Open {
		return nil
	}
	p.interrupted = status == formats.Cancelled
	now, last := p.opts.Clock(), v.Last
	for _, c := range v.Calls.Open() {
		ev := &formats.Event{Kind: formats.ToolResult, Agent: c.Agent, Time: last, Arrived: now, Synthetic: true,
			Call: formats.Call{ID: c.ID, Name: c.Name, Status: formats.Cancelled, Error: "not completed: " + why}}
		if err := p.emit(ev); err != nil {
			return err
		}
	}
	for i := len(v.Agents) - 1; i >= 0; i-- {
		if v.Agents[i].Ended {
			continue
		}
		ev := &formats.Event{Kind: formats.AgentEnd, Agent: v.Agents[i].ID, Time: last, Arrived: now, Status: status, Synthetic: true}
		if err := p.emit(ev); err != nil {
			return err
		}
	}
	code := 1
	if status == formats.Cancelled {
		code = 130
	}
	end := &formats.Event{Kind: formats.RunEnd, Time: last, Arrived: now, Status: status, Cut: true, Text: why, Synthetic: true,
		Run: formats.RunInfo{ExitCode: formats.Some(code), SessionID: v.Info.SessionID}}
	return p.emit(end)
}

// Close ends the conversion: it closes a run left open, then the writer.
func (p *Pipeline) Close() error {
	if err := p.closeRun(formats.Failed, "the stream was cut before the run completed"); err != nil {
		return err
	}
	if err := p.w.Close(); err != nil {
		return &OutputError{err}
	}
	return nil
}

// Interrupt closes the open run as cancelled and the writer, after a signal.
func (p *Pipeline) Interrupt() error {
	if err := p.closeRun(formats.Cancelled, "interrupted by a signal"); err != nil {
		return err
	}
	if err := p.w.Close(); err != nil {
		return &OutputError{err}
	}
	return nil
}

// bookkeeping says whether a raw event's record type is one that its
// dialect declares as its agent's own bookkeeping (Dialect.Bookkeeping).
func (p *Pipeline) bookkeeping(src formats.Source) bool {
	if p.books == nil {
		p.books = map[string][]string{}
	}
	types, ok := p.books[src.Dialect]
	if !ok {
		d, _ := Lookup(src.Dialect)
		types = d.Bookkeeping
		p.books[src.Dialect] = types
	}
	return slices.Contains(types, src.Type)
}

// warn says what is odd about an event: a type the model has no place for
// (once per type), a call id used twice, a result without its call.
func (p *Pipeline) warn(ev *formats.Event) {
	rep := p.opts.Report
	switch ev.Kind {
	case formats.Raw:
		if !ev.Source.Known && p.bookkeeping(ev.Source) {
			ev.Source.Known = true
		}
		if ev.Source.Known {
			break // the reader knows it: nothing of the run
		}
		if key := ev.Source.Dialect + "\x00" + ev.Source.Type; !p.unknown[key] {
			if p.unknown == nil {
				p.unknown = map[string]bool{}
			}
			p.unknown[key] = true
			what := fmt.Sprintf("%s event type %q", ev.Source.Dialect, ev.Source.Type)
			if ev.Source.Type == "" {
				what = "a " + ev.Source.Dialect + " event without a type"
			}
			rep.Warn(ev.Source.LineNo, "%s has no place in the event model; kept as it is (reported once per type)", what)
		}
	case formats.ToolCall:
		if c := p.view.Calls.Get(ev.Call.ID); c != nil && !c.Done && ev.Call.ID != "" {
			rep.Warn(ev.Source.LineNo, "tool call id %q is used twice; both calls are kept", ev.Call.ID)
		}
	case formats.ToolResult:
		if c := p.view.Calls.Get(ev.Call.ID); c == nil && ev.Call.Status != formats.Denied && ev.Call.ID != "" {
			rep.Warn(ev.Source.LineNo, "result for tool call %q, which never started; kept", ev.Call.ID)
		}
	}
}
