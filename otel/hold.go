package otel

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// holdLimit is what the spans a run holds until its end may take in
// memory, for each of what it holds them for (the run's session id, a
// share of the run's cost), reckoned by spanSize: past it they wait, in
// order, in an unlinked temporary file, so that a run's memory follows
// what is open in it, not how many requests and calls it made. A variable,
// so that tests lower it.
var holdLimit = 8 << 20

// spanSize reckons what a held span takes in memory.
func spanSize(d *spanData) int {
	return int(unsafe.Sizeof(*d)) + spanEstimate(d.name, d.status.Description, "", d.attrs, d.events, d.links)
}

// spill holds spans in order, each with a weight, in an unlinked
// temporary file (0600, in os.TempDir()), made at the first of them and
// reused once read back.
type spill struct {
	f   *os.File
	w   *bufio.Writer
	n   int                  // the spans in the file
	res []*resource.Resource // the resources of its spans, by index
	buf []byte               // a record
}

func (s *spill) empty() bool { return s.n == 0 }

// put adds a span and its weight.
func (s *spill) put(d *spanData, weight int64) error {
	if s.f == nil {
		f, err := os.CreateTemp("", "agentconv-held-*.spans")
		if err != nil {
			return fmt.Errorf("holding a run's spans on disk: %w", err)
		}
		os.Remove(f.Name())
		s.f, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	s.buf = s.appendSpan(s.buf[:0], d)
	var head [2 * binary.MaxVarintLen64]byte
	h := binary.AppendVarint(head[:0], weight)
	h = binary.AppendUvarint(h, uint64(len(s.buf)))
	if _, err := s.w.Write(h); err != nil {
		return fmt.Errorf("holding a run's spans on disk: %w", err)
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("holding a run's spans on disk: %w", err)
	}
	s.n++
	return nil
}

// weights gives the weights of the spans in order, leaving them held.
func (s *spill) weights(fn func(int64)) error {
	if s.empty() {
		return nil
	}
	r, err := s.reader()
	if err != nil {
		return s.lost(err)
	}
	for range s.n {
		w, n, err := readHead(r)
		if err == nil {
			_, err = r.Discard(n)
		}
		if err != nil {
			return s.lost(err)
		}
		fn(w)
	}
	return nil
}

// drain gives the spans in order, each with room for room more
// attributes, and empties the file. A span given is fn's.
func (s *spill) drain(room int, fn func(*spanData, int64)) error {
	if s.empty() {
		return nil
	}
	r, err := s.reader()
	if err != nil {
		return s.lost(err)
	}
	for given := 0; given < s.n; given++ {
		w, n, err := readHead(r)
		if err == nil {
			if cap(s.buf) < n {
				s.buf = make([]byte, n)
			}
			_, err = io.ReadFull(r, s.buf[:n])
		}
		var d spanData
		if err == nil {
			d, err = s.decode(s.buf[:n], room)
		}
		if err != nil {
			s.n -= given
			return s.lost(err)
		}
		fn(&d, w)
	}
	return s.reset()
}

// reader flushes what was written and reads the file from its start.
func (s *spill) reader() (*bufio.Reader, error) {
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return bufio.NewReaderSize(s.f, 64<<10), nil
}

func readHead(r *bufio.Reader) (weight int64, n int, err error) {
	if weight, err = binary.ReadVarint(r); err != nil {
		return 0, 0, err
	}
	u, err := binary.ReadUvarint(r)
	if err == nil && u > math.MaxInt32 {
		err = errors.New("a record past its size")
	}
	return weight, int(u), err
}

// lost reports the spans that cannot be read back, and empties the file.
func (s *spill) lost(err error) error {
	n := s.n
	if rerr := s.reset(); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return fmt.Errorf("reading back the %d spans of a run held on disk: %w", n, err)
}

// reset empties the file, for the spans to come.
func (s *spill) reset() error {
	s.n, s.res = 0, s.res[:0]
	if s.f == nil {
		return nil
	}
	s.w.Reset(s.f)
	if err := s.f.Truncate(0); err != nil {
		return err
	}
	_, err := s.f.Seek(0, io.SeekStart)
	return err
}

func (s *spill) close() {
	if s.f != nil {
		s.f.Close()
		*s = spill{}
	}
}

// The encoding of a span: its fields in order, strings and lists
// length-prefixed, numbers as varints, times as seconds and nanoseconds,
// its resource as an index in s.res.

func (s *spill) appendSpan(b []byte, d *spanData) []byte {
	b = appendString(b, d.name)
	b = append(b, d.traceID[:]...)
	b = append(b, d.spanID[:]...)
	b = append(b, d.parentID[:]...)
	b = binary.AppendVarint(b, int64(d.kind))
	b = appendTime(b, d.start)
	b = appendTime(b, d.end)
	b = appendAttrs(b, d.attrs)
	b = binary.AppendUvarint(b, uint64(len(d.events)))
	for _, e := range d.events {
		b = appendString(b, e.Name)
		b = appendTime(b, e.Time)
		b = appendAttrs(b, e.Attributes)
		b = binary.AppendVarint(b, int64(e.DroppedAttributeCount))
	}
	b = binary.AppendVarint(b, int64(d.status.Code))
	b = appendString(b, d.status.Description)
	b = binary.AppendUvarint(b, uint64(len(d.links)))
	for _, l := range d.links {
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = append(b, tid[:]...)
		b = append(b, sid[:]...)
		b = append(b, byte(l.SpanContext.TraceFlags()))
		b = appendString(b, l.SpanContext.TraceState().String())
		b = appendBool(b, l.SpanContext.IsRemote())
		b = appendAttrs(b, l.Attributes)
		b = binary.AppendVarint(b, int64(l.DroppedAttributeCount))
	}
	ri := -1
	for i, r := range s.res {
		if r == d.resource {
			ri = i
		}
	}
	if ri < 0 {
		ri = len(s.res)
		s.res = append(s.res, d.resource)
	}
	b = binary.AppendUvarint(b, uint64(ri))
	b = appendString(b, d.scope.Name)
	b = appendString(b, d.scope.Version)
	b = appendString(b, d.scope.SchemaURL)
	return appendAttrs(b, d.scope.Attributes.ToSlice())
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendTime(b []byte, t time.Time) []byte {
	return binary.AppendUvarint(binary.AppendVarint(b, t.Unix()), uint64(t.Nanosecond()))
}

func appendAttrs(b []byte, kvs []attribute.KeyValue) []byte {
	b = binary.AppendUvarint(b, uint64(len(kvs)))
	for _, kv := range kvs {
		b = appendString(b, string(kv.Key))
		b = appendAttrValue(b, kv.Value)
	}
	return b
}

func appendAttrValue(b []byte, v attribute.Value) []byte {
	b = append(b, byte(v.Type()))
	switch v.Type() {
	case attribute.BOOL:
		b = appendBool(b, v.AsBool())
	case attribute.INT64:
		b = binary.AppendVarint(b, v.AsInt64())
	case attribute.FLOAT64:
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = appendString(b, v.AsString())
	case attribute.BOOLSLICE:
		vs := v.AsBoolSlice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, e := range vs {
			b = appendBool(b, e)
		}
	case attribute.INT64SLICE:
		vs := v.AsInt64Slice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, e := range vs {
			b = binary.AppendVarint(b, e)
		}
	case attribute.FLOAT64SLICE:
		vs := v.AsFloat64Slice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, e := range vs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e))
		}
	case attribute.STRINGSLICE:
		vs := v.AsStringSlice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, e := range vs {
			b = appendString(b, e)
		}
	case attribute.BYTESLICE:
		b = appendString(b, string(v.AsByteSlice()))
	case attribute.SLICE:
		vs := v.AsSlice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, e := range vs {
			b = appendAttrValue(b, e)
		}
	case attribute.MAP:
		b = appendAttrs(b, v.AsMap())
	}
	return b
}

// spanDecoder reads a record that appendSpan wrote.
type spanDecoder struct {
	b   []byte
	err error
}

var errShortRecord = errors.New("a record cut short")

func (s *spill) decode(rec []byte, room int) (spanData, error) {
	r := &spanDecoder{b: rec}
	var d spanData
	d.name = r.string()
	r.bytes(d.traceID[:])
	r.bytes(d.spanID[:])
	r.bytes(d.parentID[:])
	d.kind = trace.SpanKind(r.varint())
	d.start = r.time()
	d.end = r.time()
	d.attrs = r.attrs(room)
	if n := r.count(); n > 0 {
		d.events = make([]sdktrace.Event, n)
		for i := range d.events {
			e := &d.events[i]
			e.Name = r.string()
			e.Time = r.time()
			e.Attributes = r.attrs(0)
			e.DroppedAttributeCount = int(r.varint())
		}
	}
	d.status.Code = codes.Code(r.varint())
	d.status.Description = r.string()
	if n := r.count(); n > 0 {
		d.links = make([]sdktrace.Link, n)
		for i := range d.links {
			var c trace.SpanContextConfig
			r.bytes(c.TraceID[:])
			r.bytes(c.SpanID[:])
			c.TraceFlags = trace.TraceFlags(r.byte())
			if ts := r.string(); ts != "" {
				st, err := trace.ParseTraceState(ts)
				if err != nil && r.err == nil {
					r.err = err
				}
				c.TraceState = st
			}
			c.Remote = r.byte() == 1
			d.links[i] = sdktrace.Link{SpanContext: trace.NewSpanContext(c), Attributes: r.attrs(0), DroppedAttributeCount: int(r.varint())}
		}
	}
	if ri := r.count(); ri < len(s.res) {
		d.resource = s.res[ri]
	} else if r.err == nil {
		r.err = errShortRecord
	}
	d.scope.Name = r.string()
	d.scope.Version = r.string()
	d.scope.SchemaURL = r.string()
	if kvs := r.attrs(0); len(kvs) > 0 {
		d.scope.Attributes = attribute.NewSet(kvs...)
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = errors.New("a record longer than its span")
	}
	return d, r.err
}

func (r *spanDecoder) fail() {
	if r.err == nil {
		r.err = errShortRecord
	}
	r.b = nil
}

func (r *spanDecoder) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *spanDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count is a length, at most what is left of the record.
func (r *spanDecoder) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *spanDecoder) byte() byte {
	if len(r.b) < 1 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *spanDecoder) bytes(to []byte) {
	if len(r.b) < len(to) {
		r.fail()
		return
	}
	r.b = r.b[copy(to, r.b):]
}

func (r *spanDecoder) string() string {
	n := r.count()
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *spanDecoder) float() float64 {
	if len(r.b) < 8 {
		r.fail()
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return f
}

func (r *spanDecoder) time() time.Time {
	sec := r.varint()
	nsec := r.uvarint()
	return time.Unix(sec, int64(nsec)).UTC()
}

func (r *spanDecoder) attrs(room int) []attribute.KeyValue {
	n := r.count()
	if n == 0 && room == 0 {
		return nil
	}
	kvs := make([]attribute.KeyValue, n, n+room)
	for i := range kvs {
		kvs[i] = attribute.KeyValue{Key: attribute.Key(r.string()), Value: r.value()}
	}
	return kvs
}

func (r *spanDecoder) value() attribute.Value {
	switch attribute.Type(r.byte()) {
	case attribute.BOOL:
		return attribute.BoolValue(r.byte() == 1)
	case attribute.INT64:
		return attribute.Int64Value(r.varint())
	case attribute.FLOAT64:
		return attribute.Float64Value(r.float())
	case attribute.STRING:
		return attribute.StringValue(r.string())
	case attribute.BOOLSLICE:
		vs := make([]bool, r.count())
		for i := range vs {
			vs[i] = r.byte() == 1
		}
		return attribute.BoolSliceValue(vs)
	case attribute.INT64SLICE:
		vs := make([]int64, r.count())
		for i := range vs {
			vs[i] = r.varint()
		}
		return attribute.Int64SliceValue(vs)
	case attribute.FLOAT64SLICE:
		vs := make([]float64, r.count())
		for i := range vs {
			vs[i] = r.float()
		}
		return attribute.Float64SliceValue(vs)
	case attribute.STRINGSLICE:
		vs := make([]string, r.count())
		for i := range vs {
			vs[i] = r.string()
		}
		return attribute.StringSliceValue(vs)
	case attribute.BYTESLICE:
		return attribute.ByteSliceValue([]byte(r.string()))
	case attribute.SLICE:
		vs := make([]attribute.Value, r.count())
		for i := range vs {
			vs[i] = r.value()
		}
		return attribute.SliceValue(vs...)
	case attribute.MAP:
		return attribute.MapValue(r.attrs(0)...)
	case attribute.EMPTY:
		return attribute.Value{}
	}
	r.fail()
	return attribute.Value{}
}
