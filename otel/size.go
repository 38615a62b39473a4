package otel

import (
	"slices"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// What spans take of an OTLP request, reckoned from upper bounds, so that
// batches fit under maxRequest before the exporter encodes them.

// spanHeadroom is what a span may take of a request at most, leaving room
// for its resource and scope.
const spanHeadroom = 64 << 10

// groupKey is what spans share a ResourceSpans and ScopeSpans by.
type groupKey struct {
	resource attribute.Distinct
	schema   string
	scope    string
	version  string
}

func keyOf(s sdktrace.ReadOnlySpan) groupKey {
	k := groupKey{scope: s.InstrumentationScope().Name, version: s.InstrumentationScope().Version}
	if r := s.Resource(); r != nil {
		k.resource, k.schema = r.Equivalent(), r.SchemaURL()
	}
	return k
}

// groupSize is an upper bound of what the resource and scope of a group
// add to a request.
func groupSize(s sdktrace.ReadOnlySpan) int {
	n := 32 + len(s.InstrumentationScope().Name) + len(s.InstrumentationScope().Version)
	if r := s.Resource(); r != nil {
		n += len(r.SchemaURL()) + attrsEstimate(r.Attributes())
	}
	return n
}

// item is a span on its way, and an upper bound of the bytes it adds to a
// request.
type item struct {
	span sdktrace.ReadOnlySpan
	size int
}

// fit makes an item of a span that fits in a request: a span whose upper
// bound is over that has its tool arguments and results cut, then, if
// that is not enough, its other longest strings. cut says whether it was.
// The bound is over the span's encoding by some tens of bytes an
// attribute, so a span within those of the limit is cut too.
func fit(s sdktrace.ReadOnlySpan) (it item, cut bool) {
	limit := maxRequest - spanHeadroom
	size := estimate(s)
	if size <= limit {
		return item{span: s, size: size}, false
	}
	stub := tracetest.SpanStubFromReadOnlySpan(s)
	stub.Attributes = slices.Clone(stub.Attributes)
	stub.Events = slices.Clone(stub.Events)
	for i := range stub.Events {
		stub.Events[i].Attributes = slices.Clone(stub.Events[i].Attributes)
	}
	type str struct {
		v   string
		set func(string)
	}
	content := func(k attribute.Key) bool { return k == keyToolArgs || k == keyToolResult }
	for pass := 0; pass < 2 && size > limit; pass++ {
		// The strings that may be cut, longest first.
		var strs []str
		add := func(kvs []attribute.KeyValue) {
			for i := range kvs {
				if kvs[i].Value.Type() == attribute.STRING && (pass == 1 || content(kvs[i].Key)) {
					kv := &kvs[i]
					strs = append(strs, str{kv.Value.AsString(), func(v string) { *kv = attribute.String(string(kv.Key), v) }})
				}
			}
		}
		add(stub.Attributes)
		if pass == 1 {
			for i := range stub.Events {
				add(stub.Events[i].Attributes)
			}
			strs = append(strs, str{stub.Status.Description, func(v string) { stub.Status.Description = v }})
		}
		slices.SortFunc(strs, func(a, b str) int { return len(b.v) - len(a.v) })
		for _, p := range strs {
			if size <= limit {
				break
			}
			keep := max(0, len(p.v)-(size-limit)-1024)
			for keep > 0 && !utf8.RuneStart(p.v[keep]) {
				keep--
			}
			size -= len(p.v) - keep
			p.set(p.v[:keep] + "…")
		}
		size = estimate(stub.Snapshot())
	}
	s = stub.Snapshot()
	return item{span: s, size: estimate(s)}, true
}

// estimate is an upper bound of the bytes a span takes in a request,
// cheaper to reckon than its encoding: every length and tag counted at
// its largest.
func estimate(s sdktrace.ReadOnlySpan) int {
	return spanEstimate(s.Name(), s.Status().Description, s.SpanContext().TraceState().String(), s.Attributes(), s.Events(), s.Links())
}

func spanEstimate(name, status, traceState string, attrs []attribute.KeyValue, events []sdktrace.Event, links []sdktrace.Link) int {
	n := 100 + len(name) + len(status) + len(traceState) + attrsEstimate(attrs)
	for _, e := range events {
		n += 40 + len(e.Name) + attrsEstimate(e.Attributes)
	}
	for _, l := range links {
		n += 80 + attrsEstimate(l.Attributes)
	}
	return n
}

func attrsEstimate(kvs []attribute.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		n += 24 + len(kv.Key) + valueEstimate(kv.Value)
	}
	return n
}

func valueEstimate(v attribute.Value) int {
	switch v.Type() {
	case attribute.STRING:
		return len(v.AsString())
	case attribute.BYTESLICE:
		return len(v.AsByteSlice())
	case attribute.BOOLSLICE:
		return 8 * len(v.AsBoolSlice())
	case attribute.INT64SLICE:
		return 16 * len(v.AsInt64Slice())
	case attribute.FLOAT64SLICE:
		return 16 * len(v.AsFloat64Slice())
	case attribute.STRINGSLICE:
		n := 0
		for _, e := range v.AsStringSlice() {
			n += 12 + len(e)
		}
		return n
	case attribute.SLICE:
		n := 0
		for _, e := range v.AsSlice() {
			n += 12 + valueEstimate(e)
		}
		return n
	case attribute.MAP:
		return 12 + attrsEstimate(v.AsMap())
	}
	return 16
}
