package formats

import (
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
