package otel

import (
	"slices"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The OTLP protobuf form of spans, as agentconv's own client sends them.

// maxRequest is the largest request sent: grpc servers refuse messages
// over 4 MiB unless told otherwise, and so do many http collectors.
const maxRequest = 4 << 20

// spanHeadroom is what a span may take of a request at most, leaving room
// for its resource and scope.
const spanHeadroom = 64 << 10

func protoSpan(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:           tid[:],
		SpanId:            sid[:],
		TraceState:        sc.TraceState().String(),
		Name:              s.Name(),
		Kind:              tracepb.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano: unixNanos(s.StartTime().UnixNano()),
		EndTimeUnixNano:   unixNanos(s.EndTime().UnixNano()),
		Attributes:        protoAttrs(s.Attributes()),
		Flags:             uint32(sc.TraceFlags()) | 0x100, // the parent's remoteness is known: not remote
	}
	if parent.SpanID().IsValid() {
		pid := parent.SpanID()
		p.ParentSpanId = pid[:]
	}
	p.DroppedAttributesCount = uint32(s.DroppedAttributes())
	p.DroppedEventsCount = uint32(s.DroppedEvents())
	p.DroppedLinksCount = uint32(s.DroppedLinks())
	for _, e := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{Name: e.Name, TimeUnixNano: unixNanos(e.Time.UnixNano()),
			Attributes: protoAttrs(e.Attributes), DroppedAttributesCount: uint32(e.DroppedAttributeCount)})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{TraceId: ltid[:], SpanId: lsid[:],
			TraceState: l.SpanContext.TraceState().String(), Attributes: protoAttrs(l.Attributes),
			DroppedAttributesCount: uint32(l.DroppedAttributeCount)})
	}
	switch st := s.Status(); st.Code {
	case codes.Ok:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	case codes.Error:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: st.Description}
	}
	return p
}

func unixNanos(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

func protoAttrs(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: protoValue(kv.Value)})
	}
	return out
}

func protoValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		var vs []*commonpb.AnyValue
		for _, b := range v.AsBoolSlice() {
			vs = append(vs, protoValue(attribute.BoolValue(b)))
		}
		return arrayValue(vs)
	case attribute.INT64SLICE:
		var vs []*commonpb.AnyValue
		for _, i := range v.AsInt64Slice() {
			vs = append(vs, protoValue(attribute.Int64Value(i)))
		}
		return arrayValue(vs)
	case attribute.FLOAT64SLICE:
		var vs []*commonpb.AnyValue
		for _, f := range v.AsFloat64Slice() {
			vs = append(vs, protoValue(attribute.Float64Value(f)))
		}
		return arrayValue(vs)
	case attribute.STRINGSLICE:
		var vs []*commonpb.AnyValue
		for _, s := range v.AsStringSlice() {
			vs = append(vs, protoValue(attribute.StringValue(s)))
		}
		return arrayValue(vs)
	case attribute.SLICE:
		var vs []*commonpb.AnyValue
		for _, e := range v.AsSlice() {
			vs = append(vs, protoValue(e))
		}
		return arrayValue(vs)
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: protoAttrs(v.AsMap())}}}
	case attribute.EMPTY:
		return &commonpb.AnyValue{}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.Emit()}}
}

func arrayValue(vs []*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

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
		n += len(r.SchemaURL()) + proto.Size(&resourcepb.Resource{Attributes: protoAttrs(r.Attributes())})
	}
	return n
}

// item is a span on its way: the span, its protobuf form (nil for an
// exporter that takes SDK spans), and the bytes it adds to a request.
type item struct {
	span sdktrace.ReadOnlySpan
	pb   *tracepb.Span
	size int
}

// buildRequest groups spans by resource and scope, in the order they
// first appear.
func buildRequest(items []item) *collpb.ExportTraceServiceRequest {
	req := &collpb.ExportTraceServiceRequest{}
	rsIndex := map[attribute.Distinct]*tracepb.ResourceSpans{}
	ssIndex := map[groupKey]*tracepb.ScopeSpans{}
	for _, it := range items {
		k := keyOf(it.span)
		ss := ssIndex[k]
		if ss == nil {
			rk := k.resource
			rs := rsIndex[rk]
			if rs == nil {
				rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{}, SchemaUrl: k.schema}
				if r := it.span.Resource(); r != nil {
					rs.Resource.Attributes = protoAttrs(r.Attributes())
				}
				rsIndex[rk] = rs
				req.ResourceSpans = append(req.ResourceSpans, rs)
			}
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: k.scope, Version: k.version}}
			ssIndex[k] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		pb := it.pb
		if pb == nil {
			pb = protoSpan(it.span)
		}
		ss.Spans = append(ss.Spans, pb)
	}
	return req
}

// fit makes an item of a span whose protobuf form fits in a request: a
// span bigger than that has its tool arguments and results cut, then, if
// that is not enough, its other longest strings. cut says whether it was.
func fit(s sdktrace.ReadOnlySpan) (it item, cut bool) {
	limit := maxRequest - spanHeadroom
	if n := estimate(s); n <= limit {
		return item{span: s, size: n}, false
	}
	pb := protoSpan(s)
	size := proto.Size(pb)
	if size <= limit {
		return item{span: s, pb: pb, size: size + 8}, false
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
		size = proto.Size(protoSpan(stub.Snapshot()))
	}
	s = stub.Snapshot()
	pb = protoSpan(s)
	return item{span: s, pb: pb, size: proto.Size(pb) + 8}, true
}

// estimate is an upper bound of the bytes a span takes in a request,
// cheaper to reckon than its encoding: every length and tag counted at
// its largest.
func estimate(s sdktrace.ReadOnlySpan) int {
	n := 100 + len(s.Name()) + len(s.Status().Description) + len(s.SpanContext().TraceState().String()) + attrsEstimate(s.Attributes())
	for _, e := range s.Events() {
		n += 40 + len(e.Name) + attrsEstimate(e.Attributes)
	}
	for _, l := range s.Links() {
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
