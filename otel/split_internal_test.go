package otel

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// bigRun is a run of n tool calls, and a second run after it.
func bigRun(n int) []*formats.Event {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	evs := []*formats.Event{
		{Kind: formats.RunStart, Time: at(0), Run: formats.RunInfo{SessionID: "big", Model: "m"}},
		{Kind: formats.UserMessage, Time: at(1), Text: "go"},
	}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		evs = append(evs,
			&formats.Event{Kind: formats.ToolCall, Time: at(10 + 3*i), Call: formats.Call{ID: id, Name: "bash", Args: []byte(`{"command":"ls"}`)}},
			&formats.Event{Kind: formats.ToolResult, Time: at(11 + 3*i), Call: formats.Call{ID: id, Name: "bash", Status: formats.Completed, Output: formats.TextOutput("out " + id)}})
	}
	end := 20 + 3*n
	return append(evs,
		&formats.Event{Kind: formats.RunEnd, Time: at(end), Status: formats.Completed},
		&formats.Event{Kind: formats.RunStart, Time: at(end + 1), Run: formats.RunInfo{SessionID: "next", Model: "m"}},
		&formats.Event{Kind: formats.UserMessage, Time: at(end + 2), Text: "again"},
		&formats.Event{Kind: formats.RunEnd, Time: at(end + 3), Status: formats.Completed})
}

// TestLargeRunSplit: a run whose spans pass maxRequestLine is written as
// several requests, each line about that size at most, which read back
// as the one run, as the run written on one line does.
func TestLargeRunSplit(t *testing.T) {
	evs := bigRun(3000)
	whole := writeAll(t, evs)
	defer func(n int) { maxRequestLine = n }(maxRequestLine)
	maxRequestLine = 32 << 10
	split := writeAll(t, evs)
	if n := bytes.Count(whole, []byte("\n")); n != 2 {
		t.Fatalf("the runs written on %d lines, not 2", n)
	}
	lines := bytes.Split(bytes.TrimSuffix(split, []byte("\n")), []byte("\n"))
	if len(lines) < 10 {
		t.Fatalf("a run of %d bytes split into %d lines", len(whole), len(lines))
	}
	for i, l := range lines {
		if len(l) > 2*maxRequestLine {
			t.Errorf("line %d: %d bytes", i+1, len(l))
		}
	}
	a, b := readAll(t, whole), readAll(t, split)
	if len(formatstest.OfKind(b, formats.RunEnd)) != 2 || len(formatstest.OfKind(b, formats.ToolResult)) != 3000 {
		t.Fatalf("read back: %d runs, %d results", len(formatstest.OfKind(b, formats.RunEnd)), len(formatstest.OfKind(b, formats.ToolResult)))
	}
	if sa, sb := shape(a), shape(b); sa != sb {
		t.Errorf("the split run reads back otherwise than the whole one")
	}
	if ka, kb := formatsKinds(a), formatsKinds(b); ka != kb {
		t.Errorf("the events read back differ")
	}
}

func formatsKinds(evs []*formats.Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s %s %s\n", e.Kind, e.Call.ID, e.Text, e.TimeOf().Format(time.RFC3339Nano))
	}
	return b.String()
}
