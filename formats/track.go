package formats

import (
	"slices"
	"strings"
)

// TextTracker keeps writers from printing assistant text twice when a
// source both streams deltas and repeats the whole message, and lets
// writers of whole-message dialects gather deltas into messages. State is
// per agent and is cleared by Reset at the end of each run.
type TextTracker struct {
	pending map[string]*strings.Builder
}

// Delta records streamed text for an agent.
func (t *TextTracker) Delta(agent, text string) {
	if t.pending == nil {
		t.pending = map[string]*strings.Builder{}
	}
	b := t.pending[agent]
	if b == nil {
		b = &strings.Builder{}
		t.pending[agent] = b
	}
	b.WriteString(text)
}

// Whole is called for a whole Message of an agent. It reports whether
// deltas already carried the message's text, and forgets them.
func (t *TextTracker) Whole(agent string) (streamed bool) {
	b := t.pending[agent]
	if b == nil {
		return false
	}
	delete(t.pending, agent)
	return true
}

// Flush returns the text streamed for an agent since the last Whole or
// Flush, and forgets it.
func (t *TextTracker) Flush(agent string) string {
	b := t.pending[agent]
	if b == nil {
		return ""
	}
	delete(t.pending, agent)
	return b.String()
}

// Reset forgets everything, at the end of a run.
func (t *TextTracker) Reset() { clear(t.pending) }

// CallTracker remembers the tool calls of a run by id, so that a writer can
// find a call's name, arguments and agent when its result comes, and knows
// which calls are still open.
//
// It keeps every call of the run until Reset, for All, unless ForgetEnded
// is set: then what it keeps is bounded by what stays live in a run, not
// by its number of calls. It keeps the open calls, and of the calls that
// ended only the last RecentCalls (CallMap), so that Get finds a call
// with its result and a near repeat of an id is told apart from a call
// that never started.
type CallTracker struct {
	// ForgetEnded forgets the calls that ended but the recent ones: the
	// pipeline sets it for every writer that does not read a run's calls
	// back (one that does declares Dialect.HoldsRun). Set it before the
	// run's first call.
	ForgetEnded bool
	// DropOutputs: Finish keeps a call's status and error but not its
	// output, for users that never read it back, so that a run's outputs
	// are not held until the run ends.
	DropOutputs bool

	// calls are the open calls and those kept of the ended ones, by id.
	calls CallMap[*TrackedCall]
	// open are the calls started and not yet ended, in the order they
	// started, and ended calls not yet taken out (ended of them).
	open  []*TrackedCall
	ended int
	// order is every call of the run, without ForgetEnded.
	order []*TrackedCall
	// count is the number of calls of the run; last the last one started.
	count int
	last  *TrackedCall
	// slab is where the run's next calls are made, a few at a time.
	slab []TrackedCall
}

// TrackedCall is what CallTracker keeps of a call.
type TrackedCall struct {
	Call
	Agent string
	Done  bool
	// Index is the call's position in the run, from 0.
	Index int
}

// Start records a ToolCall event and returns what it keeps. A call that
// reuses the id of an earlier one replaces it for Get, but both stay in
// Open and All, so that neither is lost.
func (t *CallTracker) Start(e *Event) *TrackedCall {
	t.calls.Keep = !t.ForgetEnded
	if len(t.slab) == cap(t.slab) {
		// 4, 4, 8, 16, 16, …: most runs make a call or two, and a
		// TrackedCall is a few hundred bytes to zero.
		t.slab = make([]TrackedCall, 0, min(max(t.count, 4), 16))
	}
	t.slab = t.slab[:len(t.slab)+1]
	c := &t.slab[len(t.slab)-1]
	*c = TrackedCall{Call: e.Call, Agent: e.Agent, Index: t.count}
	t.calls.Set(e.Call.ID, c)
	if t.ended > 16 && t.ended > len(t.open)/2 {
		t.compact()
	}
	t.open = append(t.open, c)
	if !t.ForgetEnded {
		t.order = append(t.order, c)
	}
	t.count++
	t.last = c
	return c
}

// Get returns a call by id, or nil: an open call, or one that ended
// recently (always the last one that ended, so that a writer finds a call
// with its result), or without ForgetEnded any call of the run.
func (t *CallTracker) Get(id string) *TrackedCall {
	c, _ := t.calls.Get(id)
	return c
}

// Finish marks a call ended from a ToolResult, recording the call first if
// no ToolCall announced it. It returns the call and whether it had started.
func (t *CallTracker) Finish(e *Event) (c *TrackedCall, started bool) {
	c = t.Get(e.Call.ID)
	if c == nil || c.Done && e.Call.Name != "" && c.Name != "" && e.Call.Name != c.Name {
		// No call, or a result of another tool for an id already done: a
		// call that reused the id and was never announced.
		c = t.Start(e)
	} else {
		started = true
	}
	c.Status, c.Error, c.Truncated = e.Call.Status, e.Call.Error, e.Call.Truncated
	if !t.DropOutputs {
		c.Output = e.Call.Output
	}
	if c.Name == "" {
		c.Name = e.Call.Name
	}
	if len(e.Call.Args) > 0 {
		// What the call did in the end (a search's query is known when it
		// completes).
		c.Args, c.compactArgs = e.Call.Args, e.Call.compactArgs
	}
	if !c.Done {
		c.Done = true
		t.ended++
		t.calls.End(e.Call.ID)
	}
	return c, started
}

// compact takes the calls that ended out of open.
func (t *CallTracker) compact() {
	n := 0
	for _, c := range t.open {
		if !c.Done {
			t.open[n] = c
			n++
		}
	}
	clear(t.open[n:])
	t.open, t.ended = t.open[:n], 0
}

// Open returns the calls without a result, in the order they started (a
// slice of the caller's own). It costs as much as the calls open, not as
// the run's calls.
func (t *CallTracker) Open() []*TrackedCall {
	if t.ended > 0 {
		t.compact()
	}
	if len(t.open) == 0 {
		return nil
	}
	return slices.Clone(t.open)
}

// OpenCount is len(Open()), without making the slice.
func (t *CallTracker) OpenCount() int { return len(t.open) - t.ended }

// All returns every call of the run in the order they started. A tracker
// that ForgetEnded does not keep them: All panics (Count and Last are
// what it knows of the calls that ended).
func (t *CallTracker) All() []*TrackedCall {
	if t.ForgetEnded {
		panic("formats: CallTracker.All with ForgetEnded (a writer that reads a run's calls back declares Dialect.HoldsRun)")
	}
	return t.order
}

// Count is the number of calls of the run (len(All())).
func (t *CallTracker) Count() int { return t.count }

// Last is the call of the run that started last, or nil.
func (t *CallTracker) Last() *TrackedCall { return t.last }

// Reset forgets the run's calls.
func (t *CallTracker) Reset() {
	t.calls.Reset()
	clear(t.order)
	t.order = t.order[:0]
	clear(t.open)
	t.open, t.ended = t.open[:0], 0
	t.count, t.last = 0, nil
	// The calls given out stay as they are; the next run's are new.
	t.slab = nil
}
