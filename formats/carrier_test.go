package formats

import "testing"

func TestCarrier(t *testing.T) {
	c := Carrier{Dialect: "d"}
	c.Rec, c.Line, c.Type, c.Carried = []byte(`{"a":1}`), 1, "a", false
	c.Hold()
	c.Hold() // once only
	c.Rec, c.Line, c.Type, c.Carried = []byte(`{"b":2}`), 2, "b", false
	first := c.Stamp(&Event{Kind: Message}, true)
	second := c.Stamp(&Event{Kind: Answer}, true)
	if string(first.Source.Line) != "{\"a\":1}\n{\"b\":2}" || first.Source.Continued || first.Source.LineNo != 2 || first.Source.Type != "b" || first.Source.Dialect != "d" {
		t.Errorf("first event's source %+v", first.Source)
	}
	if second.Source.Line != nil || !second.Source.Continued {
		t.Errorf("second event's source %+v", second.Source)
	}
	if c.HeldLine != 1 || c.HeldType != "a" {
		t.Errorf("held from line %d type %q", c.HeldLine, c.HeldType)
	}
	// An event that ends what came before the record carries the held
	// records only; the record goes with the next.
	c.Rec, c.Line, c.Carried = []byte(`{"c":3}`), 3, false
	c.Hold()
	c.Rec, c.Line, c.Carried = []byte(`{"d":4}`), 4, false
	end := c.Stamp(&Event{Kind: RunEnd}, false)
	next := c.Stamp(&Event{Kind: RunStart}, true)
	if string(end.Source.Line) != `{"c":3}` || string(next.Source.Line) != `{"d":4}` {
		t.Errorf("held only %q, then %q", end.Source.Line, next.Source.Line)
	}
}
