package formats

import "testing"

func TestEventQueue(t *testing.T) {
	var q EventQueue
	if q.Pop() != nil || q.Peek() != nil || q.Len() != 0 {
		t.Fatal("an empty queue gave an event")
	}
	line := []byte(`{"type":"x"}`)
	a, b, c := &Event{Kind: TextDelta}, &Event{Kind: Answer, Source: Source{Type: "own", LineNo: 9}}, &Event{Kind: RunEnd}
	q.Record(Source{Dialect: "d", Type: "x", Line: line, LineNo: 3}, a, b)
	q.Push(c)
	want := []Source{
		{Dialect: "d", Type: "x", Line: line, LineNo: 3},
		{Dialect: "d", Type: "own", LineNo: 9, Continued: true},
		{},
	}
	if q.Len() != 3 || q.Peek() != a {
		t.Fatalf("Len %d, Peek %v", q.Len(), q.Peek())
	}
	for i, w := range want {
		e := q.Pop()
		if e.Source.Dialect != w.Dialect || e.Source.Type != w.Type || string(e.Source.Line) != string(w.Line) ||
			e.Source.LineNo != w.LineNo || e.Source.Continued != w.Continued {
			t.Errorf("event %d: Source %+v, want %+v", i, e.Source, w)
		}
	}
	if q.Pop() != nil {
		t.Fatal("an event after the last")
	}
	q.Push(a, b)
	if evs := q.Take(); len(evs) != 2 || q.Len() != 0 {
		t.Fatalf("Take gave %d events, left %d", len(evs), q.Len())
	}
}
