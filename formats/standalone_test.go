package formats_test

import (
	"errors"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// viewWriter keeps what the view said at each event it was given.
type viewWriter struct {
	got    []seen
	views  map[*formats.RunView]bool
	fail   error
	closed bool
}

type seen struct {
	kind   formats.Kind
	open   bool
	answer string
	errors int
	status formats.Status
	code   int
}

func (w *viewWriter) Write(e *formats.Event, v *formats.RunView) error {
	w.views[v] = true
	w.got = append(w.got, seen{e.Kind, v.Open, v.Answer(), len(v.Errors), v.Status, v.ExitCode})
	return w.fail
}

func (w *viewWriter) Close() error {
	w.closed = true
	return nil
}

// TestStandalone: outside a pipeline the wrapper keeps the view, up to
// date with each event before the writer gets it, and an event outside a
// run opens one, so that a run never sees the last one's errors or answer.
func TestStandalone(t *testing.T) {
	w := &viewWriter{views: map[*formats.RunView]bool{}}
	s := formats.Standalone(w)
	for _, e := range []*formats.Event{
		// Two runs, neither with a RunStart (adal-stream prints none).
		{Kind: formats.Notice, Severity: formats.Error, Text: "boom"},
		{Kind: formats.Message, Text: "one"},
		{Kind: formats.RunEnd, Status: formats.Failed},
		{Kind: formats.Message, Text: "two"},
		{Kind: formats.RunEnd, Status: formats.Completed},
	} {
		if err := s.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	want := []seen{
		{formats.Notice, true, "", 1, formats.StatusUnknown, 0},
		{formats.Message, true, "one", 1, formats.StatusUnknown, 0},
		{formats.RunEnd, false, "one", 1, formats.Failed, 1},
		{formats.Message, true, "two", 0, formats.StatusUnknown, 0},
		{formats.RunEnd, false, "two", 0, formats.Completed, 0},
	}
	if len(w.got) != len(want) {
		t.Fatalf("the writer got %d events, want %d (the wrapper writes none of its own): %+v", len(w.got), len(want), w.got)
	}
	for i := range want {
		if w.got[i] != want[i] {
			t.Errorf("event %d: the view said %+v, want %+v", i, w.got[i], want[i])
		}
	}
	if len(w.views) != 1 {
		t.Errorf("the writer was given %d views, want the same one every time", len(w.views))
	}
	if err := s.Close(); err != nil || !w.closed {
		t.Errorf("Close: %v, writer closed %v", err, w.closed)
	}

	// The writer's error is the wrapper's.
	w.fail = errors.New("disk full")
	if err := s.Write(&formats.Event{Kind: formats.RunStart}); !errors.Is(err, w.fail) {
		t.Errorf("Write returned %v, want the writer's error", err)
	}
}
