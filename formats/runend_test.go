package formats

import "testing"

func TestEndAtEOF(t *testing.T) {
	var cut EndAtEOF
	called := false
	if evs := cut.End("d", 7, false, func() []*Event { called = true; return nil }); evs != nil || called || !cut.Done() {
		t.Errorf("a run that did not finish: got %v, end called %v, done %v; want nothing, not called, done", evs, called, cut.Done())
	}
	var x EndAtEOF
	if x.Done() {
		t.Fatal("done before End")
	}
	evs := x.End("d", 7, true, func() []*Event {
		return []*Event{{Kind: Answer, Source: Source{Type: "turn_finished", Line: []byte("x"), Continued: true}}, {Kind: RunEnd}}
	})
	if len(evs) != 2 || !x.Done() {
		t.Fatalf("got %d events, done %v", len(evs), x.Done())
	}
	for i, want := range []string{"turn_finished", "end"} {
		s := evs[i].Source
		if !s.Made || s.Continued || s.Line != nil || s.Dialect != "d" || s.LineNo != 7 || s.Type != want || !s.NothingToCopy() {
			t.Errorf("event %d source %+v: want Made, of d at line 7, type %q", i, s, want)
		}
	}
}
