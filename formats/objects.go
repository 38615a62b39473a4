package formats

import "io"

// NewObjectReader returns the Reader of a dialect whose input is a series
// of JSON values that each give several events (a final object per run).
// decode queues the events of one value with q.Add; the first carries the
// value, with Source.Type typ.
func NewObjectReader(r io.Reader, o ReadOptions, typ string, decode func(q *EventQueue, value []byte, n int) error) Reader {
	return &objectReader{values: NewValueReader(r), opts: o, typ: typ, decode: decode}
}

type objectReader struct {
	values *ValueReader
	opts   ReadOptions
	typ    string
	decode func(q *EventQueue, value []byte, n int) error
	queue  EventQueue
}

func (r *objectReader) Next() (*Event, error) {
	if r.queue.Len() > 0 {
		return r.queue.Pop(), nil
	}
	b, n, err := r.values.Next()
	if err != nil {
		return nil, err
	}
	r.queue.Begin(Source{Dialect: r.opts.Dialect, Type: r.typ, Line: append([]byte(nil), b...), LineNo: n})
	if err := r.decode(&r.queue, b, n); err != nil {
		r.queue.Take() // a malformed value gives no events
		return nil, err
	}
	return r.queue.Pop(), nil
}
