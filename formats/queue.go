package formats

// EventQueue holds the events a reader has made but not yet returned, in
// order. A record of the input often yields several events: Begin and Add
// stamp their Source so that the first carries the record and the others
// are marked Continued, and a same-dialect writer copies the record once.
type EventQueue struct {
	evs     []*Event
	head    int
	src     Source
	carried bool
}

// Len is the number of events not yet popped.
func (q *EventQueue) Len() int { return len(q.evs) - q.head }

// Begin starts a record: src holds the Dialect, Type, Line and LineNo that
// Add gives its events. Line must not change afterwards (pass a copy of a
// reader's buffer).
func (q *EventQueue) Begin(src Source) { q.src, q.carried = src, false }

// Add queues an event of the current record. It gets the record's dialect,
// and its type and line number unless it names its own; the first event
// added since Begin carries the record's Line, the others are Continued.
func (q *EventQueue) Add(e *Event) {
	e.Source.Dialect = q.src.Dialect
	if e.Source.Type == "" {
		e.Source.Type = q.src.Type
	}
	if e.Source.LineNo == 0 {
		e.Source.LineNo = q.src.LineNo
	}
	if q.carried {
		e.Source.Line, e.Source.Continued = nil, true
	} else {
		e.Source.Line, e.Source.Continued = q.src.Line, false
		q.carried = true
	}
	q.evs = append(q.evs, e)
}

// Record queues the events of one record: Begin(src), then Add each.
func (q *EventQueue) Record(src Source, evs ...*Event) {
	q.Begin(src)
	for _, e := range evs {
		q.Add(e)
	}
}

// Push queues events whose Source is already set.
func (q *EventQueue) Push(evs ...*Event) { q.evs = append(q.evs, evs...) }

// Peek returns the next event without removing it, or nil.
func (q *EventQueue) Peek() *Event {
	if q.Len() == 0 {
		return nil
	}
	return q.evs[q.head]
}

// Pop removes and returns the next event, or nil when there is none.
func (q *EventQueue) Pop() *Event {
	if q.Len() == 0 {
		return nil
	}
	e := q.evs[q.head]
	q.evs[q.head] = nil // the reader no longer holds it
	q.head++
	if q.head == len(q.evs) {
		q.evs, q.head = q.evs[:0], 0
	}
	return e
}

// Take removes and returns every queued event.
func (q *EventQueue) Take() []*Event {
	evs := q.evs[q.head:]
	q.evs, q.head = nil, 0
	return evs
}
