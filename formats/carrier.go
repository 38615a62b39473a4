package formats

import (
	"bytes"
	"time"
)

// Carrier gives the events a record makes their source, for dialects in
// which one record makes several events, or none: the first event carries
// the record's text, after the records held before it that made none; the
// others are Continued. So a same-dialect writer prints every record once,
// in order.
type Carrier struct {
	Dialect string
	// The current record: its text (nil when there is none, or an earlier
	// event carried it), line, type and time.
	Rec     []byte
	Line    int
	Type    string
	Time    time.Time
	Carried bool
	// Held: records that made no event, carried by the next one; the type
	// and line of the first.
	Held     [][]byte
	HeldType string
	HeldLine int
}

// Begin makes rec, at line, the current record, of no type or time yet;
// a nil rec is one that an earlier record carried.
func (c *Carrier) Begin(rec []byte, line int) {
	c.Rec, c.Line, c.Type, c.Time, c.Carried = rec, line, "", time.Time{}, false
}

// Stamp gives e the current record's source. With withRec false, e ends
// what came before the record, and carries the held records only.
func (c *Carrier) Stamp(e *Event, withRec bool) *Event {
	e.Source.Dialect = c.Dialect
	if e.Source.Type == "" {
		e.Source.Type = c.Type
	}
	if e.Source.LineNo == 0 {
		e.Source.LineNo = c.Line
	}
	if e.Time.IsZero() {
		e.Time = c.Time
	}
	var line []byte
	if len(c.Held) > 0 {
		line = bytes.Join(c.Held, []byte{'\n'})
		c.Held = nil
	}
	if withRec && !c.Carried && c.Rec != nil {
		if line != nil {
			line = append(line, '\n')
		}
		line = append(line, c.Rec...)
		c.Carried = true
	}
	if line != nil {
		e.Source.Line = line
	} else {
		e.Source.Continued = true
	}
	return e
}

// Hold keeps the current record for the next event.
func (c *Carrier) Hold() {
	if c.Carried || c.Rec == nil {
		return
	}
	if len(c.Held) == 0 {
		c.HeldType, c.HeldLine = c.Type, c.Line
	}
	c.Held = append(c.Held, append([]byte(nil), c.Rec...))
	c.Carried = true
}
