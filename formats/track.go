package formats

import "strings"

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
// which calls are still open. Memory is bounded by one run.
type CallTracker struct {
	calls map[string]*TrackedCall
	order []*TrackedCall
	// DropOutputs: Finish keeps a call's status and error but not its
	// output, for users that never read it back, so that a run's outputs
	// are not held until the run ends.
	DropOutputs bool
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
	if t.calls == nil {
		t.calls = map[string]*TrackedCall{}
	}
	if len(t.slab) == cap(t.slab) {
		t.slab = make([]TrackedCall, 0, 16)
	}
	t.slab = t.slab[:len(t.slab)+1]
	c := &t.slab[len(t.slab)-1]
	*c = TrackedCall{Call: e.Call, Agent: e.Agent, Index: len(t.order)}
	t.calls[e.Call.ID] = c
	t.order = append(t.order, c)
	return c
}

// Get returns a call by id, or nil.
func (t *CallTracker) Get(id string) *TrackedCall { return t.calls[id] }

// Finish marks a call ended from a ToolResult, recording the call first if
// no ToolCall announced it. It returns the call and whether it had started.
func (t *CallTracker) Finish(e *Event) (c *TrackedCall, started bool) {
	c = t.calls[e.Call.ID]
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
	c.Done = true
	return c, started
}

// Open returns the calls without a result, in the order they started.
func (t *CallTracker) Open() []*TrackedCall {
	var out []*TrackedCall
	for _, c := range t.order {
		if !c.Done {
			out = append(out, c)
		}
	}
	return out
}

// All returns every call of the run in the order they started.
func (t *CallTracker) All() []*TrackedCall { return t.order }

// Reset forgets the run's calls.
func (t *CallTracker) Reset() {
	clear(t.calls)
	clear(t.order)
	t.order = t.order[:0]
	// The calls given out stay as they are; the next run's are new.
	t.slab = nil
}
