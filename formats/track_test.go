package formats

import (
	"strconv"
	"testing"

	"github.com/goccy/go-json"
)

func TestTextTracker(t *testing.T) {
	var tt TextTracker
	if tt.Whole("") || tt.Flush("") != "" {
		t.Fatal("a fresh tracker knows of no text")
	}
	tt.Reset() // harmless before any use

	// Deltas, then the whole message: it was streamed, once.
	tt.Delta("", "Hel")
	tt.Delta("", "lo")
	tt.Delta("sub", "other agent")
	if !tt.Whole("") {
		t.Error("the message was streamed")
	}
	if tt.Whole("") {
		t.Error("the next message was not")
	}
	// The other agent's deltas are its own.
	if got := tt.Flush("sub"); got != "other agent" {
		t.Errorf("Flush(sub) = %q", got)
	}
	if tt.Flush("sub") != "" || tt.Whole("sub") {
		t.Error("Flush forgets")
	}

	// Flush gathers deltas into a message.
	tt.Delta("", "a")
	tt.Delta("", "")
	tt.Delta("", "b")
	if got := tt.Flush(""); got != "ab" {
		t.Errorf("Flush = %q", got)
	}

	// An empty delta still counts as streaming.
	tt.Delta("x", "")
	if !tt.Whole("x") {
		t.Error("an empty delta was streamed text")
	}

	tt.Delta("", "left over")
	tt.Delta("sub", "too")
	tt.Reset()
	if tt.Whole("") || tt.Whole("sub") {
		t.Error("Reset forgets every agent")
	}
}

func call(kind Kind, agent, id, name, args string) *Event {
	e := &Event{Kind: kind, Agent: agent, Call: Call{ID: id, Name: name}}
	if args != "" {
		e.Call.Args = json.RawMessage(args)
	}
	return e
}

func TestCallTracker(t *testing.T) {
	var ct CallTracker
	if ct.Get("x") != nil || len(ct.Open()) != 0 || len(ct.All()) != 0 {
		t.Fatal("a fresh tracker knows of no call")
	}
	a := ct.Start(call(ToolCall, "", "a", "bash", `{"command":"ls"}`))
	b := ct.Start(call(ToolCall, "sub", "b", "read", `{"path":"x"}`))
	c := ct.Start(call(ToolCall, "", "c", "grep", ``))
	if a.Index != 0 || b.Index != 1 || c.Index != 2 || b.Agent != "sub" || ct.Get("b") != b {
		t.Errorf("Start: %+v %+v %+v", a, b, c)
	}

	// b ends first; the result fills in what it knows.
	res := call(ToolResult, "sub", "b", "", ``)
	res.Call.Status, res.Call.Output, res.Call.Error, res.Call.Truncated = Failed, TextOutput("out"), "boom", true
	got, started := ct.Finish(res)
	if got != b || !started || !b.Done || b.Status != Failed || b.Output.Text() != "out" || b.Error != "boom" || !b.Truncated {
		t.Errorf("Finish(b) = %+v, %v", got, started)
	}
	if b.Name != "read" || string(b.Args) != `{"path":"x"}` {
		t.Errorf("the call's name and arguments stay: %+v", b)
	}
	// A result names the call when its start did not.
	res = call(ToolResult, "", "c", "grep2", `{"q":1}`)
	res.Call.Status = Completed
	ct.Finish(res)
	if c.Name != "grep" || string(c.Args) != `{"q":1}` {
		t.Errorf("c: name kept, arguments filled in: %+v", c)
	}

	open := ct.Open()
	if len(open) != 1 || open[0] != a {
		t.Errorf("Open = %v", open)
	}

	// A result without a call is recorded as a finished call.
	res = call(ToolResult, "sub", "d", "write", `{"f":1}`)
	res.Call.Status = Denied
	d, started := ct.Finish(res)
	if started || !d.Done || d.Name != "write" || d.Agent != "sub" || d.Status != Denied || d.Index != 3 {
		t.Errorf("Finish(d) = %+v, %v", d, started)
	}

	all := ct.All()
	if len(all) != 4 || all[0] != a || all[1] != b || all[2] != c || all[3] != d {
		t.Errorf("All = %v", all)
	}

	// A second call with an id already used is the one found by that id,
	// and neither is lost: both are listed.
	a2 := ct.Start(call(ToolCall, "", "a", "bash", `{"command":"pwd"}`))
	if open := ct.Open(); ct.Get("a") != a2 || open[len(open)-1] != a2 || len(ct.All()) != 5 || ct.All()[0] != a {
		t.Errorf("reused id: open %v, all %v", ct.Open(), ct.All())
	}
	// While the first is still open, both are open, in order.
	var ct2 CallTracker
	first := ct2.Start(call(ToolCall, "", "x", "bash", `{}`))
	second := ct2.Start(call(ToolCall, "", "x", "bash", `{}`))
	if open := ct2.Open(); len(open) != 2 || open[0] != first || open[1] != second {
		t.Errorf("two open calls with one id: %v", open)
	}

	ct.Reset()
	if ct.Get("a") != nil || len(ct.All()) != 0 || len(ct.Open()) != 0 {
		t.Error("Reset forgets the run's calls")
	}
	if e := ct.Start(call(ToolCall, "", "z", "x", ``)); e.Index != 0 {
		t.Errorf("the next run counts from 0: %d", e.Index)
	}
}

// TestCallTrackerForgetEnded: a tracker that forgets the calls that ended
// finds a call with its result and for RecentCalls more ends, knows the
// open calls at a cost of their number, and counts every call.
func TestCallTrackerForgetEnded(t *testing.T) {
	ct := CallTracker{ForgetEnded: true}
	long := ct.Start(call(ToolCall, "", "long", "bash", `{"command":"sleep 9"}`))
	const n = 10 * RecentCalls
	for i := range n {
		id := "c" + strconv.Itoa(i)
		ct.Start(call(ToolCall, "", id, "read", `{"path":"x"}`))
		res := call(ToolResult, "", id, "", ``)
		res.Call.Status = Completed
		c, started := ct.Finish(res)
		// With its result: the writer finds its name and arguments.
		if !started || ct.Get(id) != c || c.Name != "read" || string(c.Args) != `{"path":"x"}` || !c.Done {
			t.Fatalf("%s at its result: %+v, %v", id, ct.Get(id), started)
		}
		if got := ct.Open(); len(got) != 1 || got[0] != long || ct.OpenCount() != 1 {
			t.Fatalf("after %s: open %v", id, got)
		}
		if len(ct.open) > 2*16+2 {
			t.Fatalf("after %s: %d calls in the open list", id, len(ct.open))
		}
	}
	if ct.Count() != n+1 || ct.Last() == nil || ct.Last().ID != "c"+strconv.Itoa(n-1) || ct.Last().Index != n {
		t.Errorf("Count %d, Last %+v", ct.Count(), ct.Last())
	}
	// The open call and the last RecentCalls that ended are kept, no more.
	if ct.calls.Len() != RecentCalls+1 || ct.Get("long") != long {
		t.Errorf("%d calls kept", ct.calls.Len())
	}
	if ct.Get("c"+strconv.Itoa(n-RecentCalls)) == nil || ct.Get("c"+strconv.Itoa(n-RecentCalls-1)) != nil {
		t.Error("the last RecentCalls that ended are kept, the one before is not")
	}
	// A result repeated soon after finds its call: it had started.
	if c, started := ct.Finish(call(ToolResult, "", "c"+strconv.Itoa(n-3), "", ``)); !started || c.Name != "read" || ct.Count() != n+1 {
		t.Errorf("a repeated result: %+v, %v", c, started)
	}
	defer func() {
		if recover() == nil {
			t.Error("All without every call panics")
		}
	}()
	ct.All()
}

func TestCallMap(t *testing.T) {
	var m CallMap[int]
	m.Set("open", 1)
	for i := range RecentCalls {
		m.Set("e"+strconv.Itoa(i), i)
		m.End("e" + strconv.Itoa(i))
	}
	if m.Len() != RecentCalls+1 {
		t.Fatalf("%d entries", m.Len())
	}
	// An id set again after its end is a new entry, which the end of the
	// first does not take away.
	m.Set("e0", 100)
	m.Set("e1", 101)
	m.End("e1")
	m.End("e1") // ended already: nothing
	if v, ok := m.Get("e0"); !ok || v != 100 {
		t.Errorf("e0 = %d, %v", v, ok)
	}
	for i := range RecentCalls {
		m.Set("f"+strconv.Itoa(i), i)
		m.End("f" + strconv.Itoa(i))
	}
	if _, ok := m.Get("e1"); ok {
		t.Error("e1 ended RecentCalls ends ago")
	}
	if v, ok := m.Get("open"); !ok || v != 1 {
		t.Error("an open entry stays")
	}
	if v, ok := m.Get("e0"); !ok || v != 100 {
		t.Error("e0, open again, stays")
	}
	if m.Len() != RecentCalls+2 {
		t.Errorf("%d entries", m.Len())
	}
	m.Reset()
	if m.Len() != 0 {
		t.Error("Reset")
	}
	k := CallMap[int]{Keep: true}
	for i := range 3 * RecentCalls {
		k.Set(strconv.Itoa(i), i)
		k.End(strconv.Itoa(i))
	}
	if k.Len() != 3*RecentCalls {
		t.Errorf("Keep: %d entries", k.Len())
	}
}
