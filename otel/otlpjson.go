package otel

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The OTLP/JSON encoding of an ExportTraceServiceRequest, as the OTLP
// specification defines it and the Collector's file exporter writes it:
// lowerCamelCase names, trace and span ids as hex, times and 64-bit
// integers as decimal strings, enums as numbers.

type jsonRequest struct {
	ResourceSpans []jsonResourceSpans `json:"resourceSpans"`
}

type jsonResourceSpans struct {
	Resource   jsonResource     `json:"resource"`
	ScopeSpans []jsonScopeSpans `json:"scopeSpans"`
	SchemaURL  string           `json:"schemaUrl,omitempty"`
}

type jsonResource struct {
	Attributes []jsonKeyValue `json:"attributes,omitempty"`
}

type jsonScopeSpans struct {
	Scope     jsonScope  `json:"scope"`
	Spans     []jsonSpan `json:"spans"`
	SchemaURL string     `json:"schemaUrl,omitempty"`
}

type jsonScope struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

type jsonSpan struct {
	TraceID           string         `json:"traceId"`
	SpanID            string         `json:"spanId"`
	TraceState        string         `json:"traceState,omitempty"`
	ParentSpanID      string         `json:"parentSpanId,omitempty"`
	Flags             uint32         `json:"flags,omitempty"`
	Name              string         `json:"name"`
	Kind              int            `json:"kind"`
	StartTimeUnixNano jsonUint64     `json:"startTimeUnixNano"`
	EndTimeUnixNano   jsonUint64     `json:"endTimeUnixNano"`
	Attributes        []jsonKeyValue `json:"attributes,omitempty"`
	Events            []jsonEvent    `json:"events,omitempty"`
	Links             []jsonLink     `json:"links,omitempty"`
	Status            jsonStatus     `json:"status"`
}

// jsonLink is a link to a span of another trace (a run's root to the
// previous run's of its session).
type jsonLink struct {
	TraceID    string         `json:"traceId"`
	SpanID     string         `json:"spanId"`
	Attributes []jsonKeyValue `json:"attributes,omitempty"`
}

type jsonEvent struct {
	TimeUnixNano jsonUint64     `json:"timeUnixNano"`
	Name         string         `json:"name"`
	Attributes   []jsonKeyValue `json:"attributes,omitempty"`
}

type jsonStatus struct {
	Message string `json:"message,omitempty"`
	Code    int    `json:"code,omitempty"`
}

type jsonKeyValue struct {
	Key   string    `json:"key"`
	Value jsonValue `json:"value"`
}

// jsonValue is an AnyValue; exactly one field is set.
type jsonValue struct {
	StringValue *string     `json:"stringValue,omitempty"`
	BoolValue   *bool       `json:"boolValue,omitempty"`
	IntValue    *jsonInt64  `json:"intValue,omitempty"`
	DoubleValue *float64    `json:"doubleValue,omitempty"`
	ArrayValue  *jsonValues `json:"arrayValue,omitempty"`
}

type jsonValues struct {
	Values []jsonValue `json:"values"`
}

// jsonUint64 is a fixed64 in OTLP/JSON: a decimal string, read from a
// string or a number.
type jsonUint64 uint64

func (u jsonUint64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatUint(uint64(u), 10) + `"`), nil
}

func (u *jsonUint64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseUint(unquote(b), 10, 64)
	if err != nil {
		return fmt.Errorf("not an unsigned integer: %s", b)
	}
	*u = jsonUint64(v)
	return nil
}

// jsonInt64 is an int64 in OTLP/JSON: a decimal string, read from either.
type jsonInt64 int64

func (i jsonInt64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(i), 10) + `"`), nil
}

func (i *jsonInt64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(unquote(b), 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer: %s", b)
	}
	*i = jsonInt64(v)
	return nil
}

func unquote(b []byte) string {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		return string(b[1 : len(b)-1])
	}
	return string(b)
}

func unixNano(t time.Time) jsonUint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return jsonUint64(t.UnixNano())
}

func fromUnixNano(n jsonUint64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(n)).UTC()
}

// spanData is what the OTLP/JSON encoding of a span takes: the fields of a
// span as it ended, whether the builder made it or an SDK span gives them.
type spanData struct {
	name       string
	traceID    trace.TraceID
	spanID     trace.SpanID
	parentID   trace.SpanID // invalid for a root
	kind       trace.SpanKind
	start, end time.Time
	attrs      []attribute.KeyValue
	events     []sdktrace.Event
	status     sdktrace.Status
	links      []sdktrace.Link
	resource   *resource.Resource
	scope      instrumentation.Scope
}

func readOnlyData(s sdktrace.ReadOnlySpan) spanData {
	return spanData{name: s.Name(), traceID: s.SpanContext().TraceID(), spanID: s.SpanContext().SpanID(),
		parentID: s.Parent().SpanID(), kind: s.SpanKind(), start: s.StartTime(), end: s.EndTime(),
		attrs: s.Attributes(), events: s.Events(), status: s.Status(), links: s.Links(), resource: s.Resource(),
		scope: s.InstrumentationScope()}
}

// snapshot is the span as the SDK exporters take it.
func (d *spanData) snapshot() sdktrace.ReadOnlySpan {
	stub := tracetest.SpanStub{
		Name: d.name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: d.traceID, SpanID: d.spanID,
			TraceFlags: trace.FlagsSampled}),
		SpanKind:             d.kind,
		StartTime:            d.start,
		EndTime:              d.end,
		Attributes:           d.attrs,
		Events:               d.events,
		Links:                d.links,
		Status:               d.status,
		Resource:             d.resource,
		InstrumentationScope: d.scope,
	}
	if d.parentID.IsValid() {
		stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: d.traceID, SpanID: d.parentID, TraceFlags: trace.FlagsSampled})
	}
	return stub.Snapshot()
}

// requestEncoder builds one OTLP/JSON request (an ExportTraceServiceRequest)
// span by span, straight into reused buffers: the spans grouped by resource
// and scope in the order they first appear, byte for byte what encoding the
// jsonRequest structures gives. Its buffers serve request after request.
type requestEncoder struct {
	resources []resourceGroup
	size      int // the bytes of the spans added since the last request
	line      []byte
	scratch   []byte // a resource's attributes, to compare
	err       error  // a value JSON cannot carry (NaN, an infinity)
}

type resourceGroup struct {
	res    *resource.Resource // the last one seen with these attributes
	attrs  []byte             // its attributes, encoded
	scopes []scopeGroup
}

type scopeGroup struct {
	name, version string
	spans         []byte // the encoded spans, comma-separated
}

// empty: no span was added since the last request.
func (r *requestEncoder) empty() bool { return len(r.resources) == 0 }

// add encodes a span into its group.
func (r *requestEncoder) add(s *spanData) {
	sg := r.scopeGroup(r.resourceGroup(s.resource), s.scope)
	if len(sg.spans) > 0 {
		sg.spans = append(sg.spans, ',')
	}
	n := len(sg.spans)
	sg.spans = r.appendSpan(sg.spans, s)
	r.size += len(sg.spans) - n
}

// maxRequestLine is the size past which the otlp-json writer ends a
// request, and begins another, within a run: a run of a million calls is
// many lines that the reader takes back as the one run (it holds a
// trace's spans until its root), each well under the longest line that
// it reads (formats.MaxLine).
var maxRequestLine = 16 << 20

func (r *requestEncoder) resourceGroup(res *resource.Resource) *resourceGroup {
	for i := range r.resources {
		if r.resources[i].res == res {
			return &r.resources[i]
		}
	}
	r.scratch = r.appendAttrs(r.scratch[:0], res.Attributes())
	for i := range r.resources {
		if g := &r.resources[i]; bytes.Equal(g.attrs, r.scratch) {
			g.res = res
			return g
		}
	}
	// A new group, reusing the buffers of an earlier request's.
	if len(r.resources) < cap(r.resources) {
		r.resources = r.resources[:len(r.resources)+1]
	} else {
		r.resources = append(r.resources, resourceGroup{})
	}
	g := &r.resources[len(r.resources)-1]
	g.res, g.attrs, g.scopes = res, append(g.attrs[:0], r.scratch...), g.scopes[:0]
	return g
}

func (r *requestEncoder) scopeGroup(g *resourceGroup, scope instrumentation.Scope) *scopeGroup {
	for i := range g.scopes {
		if g.scopes[i].name == scope.Name && g.scopes[i].version == scope.Version {
			return &g.scopes[i]
		}
	}
	if len(g.scopes) < cap(g.scopes) {
		g.scopes = g.scopes[:len(g.scopes)+1]
	} else {
		g.scopes = append(g.scopes, scopeGroup{})
	}
	sg := &g.scopes[len(g.scopes)-1]
	sg.name, sg.version, sg.spans = scope.Name, scope.Version, sg.spans[:0]
	return sg
}

// writeTo writes the request as one line and starts the next one.
func (r *requestEncoder) writeTo(w io.Writer) error {
	if err := r.err; err != nil {
		r.reset()
		return err
	}
	b := append(r.line[:0], `{"resourceSpans":[`...)
	for i, g := range r.resources {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"resource":{`...)
		if len(g.attrs) > 0 {
			b = append(b, `"attributes":[`...)
			b = append(b, g.attrs...)
			b = append(b, ']')
		}
		b = append(b, `},"scopeSpans":[`...)
		for j, sg := range g.scopes {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"scope":{`...)
			if sg.name != "" {
				b = append(b, `"name":`...)
				b = formats.AppendJSONString(b, sg.name)
			}
			if sg.version != "" {
				if sg.name != "" {
					b = append(b, ',')
				}
				b = append(b, `"version":`...)
				b = formats.AppendJSONString(b, sg.version)
			}
			b = append(b, `},"spans":[`...)
			b = append(b, sg.spans...)
			b = append(b, "]}"...)
		}
		b = append(b, "]}"...)
	}
	b = append(b, "]}\n"...)
	r.line = b
	r.reset()
	_, err := w.Write(b)
	return err
}

func (r *requestEncoder) reset() {
	r.resources, r.err, r.size = r.resources[:0], nil, 0
}

func (r *requestEncoder) appendSpan(b []byte, s *spanData) []byte {
	b = append(b, `{"traceId":"`...)
	b = hex.AppendEncode(b, s.traceID[:])
	b = append(b, `","spanId":"`...)
	b = hex.AppendEncode(b, s.spanID[:])
	if s.parentID.IsValid() {
		b = append(b, `","parentSpanId":"`...)
		b = hex.AppendEncode(b, s.parentID[:])
	}
	b = append(b, `","name":`...)
	b = formats.AppendJSONString(b, s.name)
	b = append(b, `,"kind":`...)
	b = strconv.AppendInt(b, int64(s.kind), 10)
	b = append(b, `,"startTimeUnixNano":`...)
	b = appendUnixNano(b, s.start)
	b = append(b, `,"endTimeUnixNano":`...)
	b = appendUnixNano(b, s.end)
	if len(s.attrs) > 0 {
		b = append(b, `,"attributes":[`...)
		b = r.appendAttrs(b, s.attrs)
		b = append(b, ']')
	}
	for i, ev := range s.events {
		if i == 0 {
			b = append(b, `,"events":[`...)
		} else {
			b = append(b, ',')
		}
		b = append(b, `{"timeUnixNano":`...)
		b = appendUnixNano(b, ev.Time)
		b = append(b, `,"name":`...)
		b = formats.AppendJSONString(b, ev.Name)
		if len(ev.Attributes) > 0 {
			b = append(b, `,"attributes":[`...)
			b = r.appendAttrs(b, ev.Attributes)
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if len(s.events) > 0 {
		b = append(b, ']')
	}
	for i, l := range s.links {
		if i == 0 {
			b = append(b, `,"links":[`...)
		} else {
			b = append(b, ',')
		}
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = append(b, `{"traceId":"`...)
		b = hex.AppendEncode(b, tid[:])
		b = append(b, `","spanId":"`...)
		b = hex.AppendEncode(b, sid[:])
		b = append(b, '"')
		if len(l.Attributes) > 0 {
			b = append(b, `,"attributes":[`...)
			b = r.appendAttrs(b, l.Attributes)
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if len(s.links) > 0 {
		b = append(b, ']')
	}
	// OTLP's status codes: 0 unset, 1 ok, 2 error (the SDK numbers them
	// differently).
	switch s.status.Code {
	case codes.Ok:
		b = append(b, `,"status":{"code":1}}`...)
	case codes.Error:
		b = append(b, `,"status":{`...)
		if s.status.Description != "" {
			b = append(b, `"message":`...)
			b = formats.AppendJSONString(b, s.status.Description)
			b = append(b, ',')
		}
		b = append(b, `"code":2}}`...)
	default:
		b = append(b, `,"status":{}}`...)
	}
	return b
}

// appendUnixNano appends a time as a fixed64: a decimal string, 0 for none.
func appendUnixNano(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, uint64(unixNano(t)), 10)
	return append(b, '"')
}

// appendAttrs appends KeyValues, comma-separated.
func (r *requestEncoder) appendAttrs(b []byte, kvs []attribute.KeyValue) []byte {
	for i, kv := range kvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = formats.AppendJSONString(b, string(kv.Key))
		b = append(b, `,"value":`...)
		b = r.appendValue(b, kv.Value)
		b = append(b, '}')
	}
	return b
}

// appendValue appends an AnyValue. Slices other than of strings are
// strings, as Emit writes them.
func (r *requestEncoder) appendValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		b = append(b, `{"boolValue":`...)
		b = strconv.AppendBool(b, v.AsBool())
	case attribute.INT64:
		b = append(b, `{"intValue":"`...)
		b = strconv.AppendInt(b, v.AsInt64(), 10)
		b = append(b, '"')
	case attribute.FLOAT64:
		b = append(b, `{"doubleValue":`...)
		b = r.appendFloat(b, v.AsFloat64())
	case attribute.STRINGSLICE:
		b = append(b, `{"arrayValue":{"values":`...)
		ss := v.AsStringSlice()
		if len(ss) == 0 {
			b = append(b, "null"...)
		} else {
			for i, s := range ss {
				if i == 0 {
					b = append(b, '[')
				} else {
					b = append(b, ',')
				}
				b = append(b, `{"stringValue":`...)
				b = formats.AppendJSONString(b, s)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	case attribute.STRING:
		b = append(b, `{"stringValue":`...)
		b = formats.AppendJSONString(b, v.AsString())
	default:
		b = append(b, `{"stringValue":`...)
		b = formats.AppendJSONString(b, v.String())
	}
	return append(b, '}')
}

// appendFloat appends a double as encoding/json does (and go-json): the
// shortest decimal, in exponent form below 1e-6 and from 1e21, without a
// leading zero in the exponent. JSON has no NaN nor infinities.
func (r *requestEncoder) appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if r.err == nil {
			r.err = fmt.Errorf("json: unsupported value: %v", f)
		}
		return append(b, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// decodedSpan is a span of a request with its resource and scope.
type decodedSpan struct {
	span     jsonSpan
	resource []jsonKeyValue
	scope    jsonScope
}

// spans lists every span of a request.
func (r *jsonRequest) spans() []decodedSpan {
	var out []decodedSpan
	for _, rs := range r.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				out = append(out, decodedSpan{span: s, resource: rs.Resource.Attributes, scope: ss.Scope})
			}
		}
	}
	return out
}

// stub turns a decoded span back into what the SDK exporters take, ids and
// times unchanged.
func (d decodedSpan) stub() (tracetest.SpanStub, error) {
	s := d.span
	tid, err := trace.TraceIDFromHex(s.TraceID)
	if err != nil {
		return tracetest.SpanStub{}, fmt.Errorf("span %q: bad traceId %q", s.Name, s.TraceID)
	}
	sid, err := trace.SpanIDFromHex(s.SpanID)
	if err != nil {
		return tracetest.SpanStub{}, fmt.Errorf("span %q: bad spanId %q", s.Name, s.SpanID)
	}
	stub := tracetest.SpanStub{
		Name: s.Name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(s.Flags) | trace.FlagsSampled}),
		SpanKind:             trace.SpanKind(s.Kind),
		StartTime:            fromUnixNano(s.StartTimeUnixNano),
		EndTime:              fromUnixNano(s.EndTimeUnixNano),
		Attributes:           decodeAttrs(s.Attributes),
		Resource:             resource.NewSchemaless(decodeAttrs(d.resource)...),
		InstrumentationScope: instrumentation.Scope{Name: d.scope.Name, Version: d.scope.Version},
	}
	if s.ParentSpanID != "" {
		pid, err := trace.SpanIDFromHex(s.ParentSpanID)
		if err != nil {
			return tracetest.SpanStub{}, fmt.Errorf("span %q: bad parentSpanId %q", s.Name, s.ParentSpanID)
		}
		stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, TraceFlags: trace.FlagsSampled})
	}
	for _, ev := range s.Events {
		stub.Events = append(stub.Events, sdktrace.Event{Name: ev.Name, Time: fromUnixNano(ev.TimeUnixNano), Attributes: decodeAttrs(ev.Attributes)})
	}
	for _, l := range s.Links {
		ltid, err1 := trace.TraceIDFromHex(l.TraceID)
		lsid, err2 := trace.SpanIDFromHex(l.SpanID)
		if err1 != nil || err2 != nil {
			return tracetest.SpanStub{}, fmt.Errorf("span %q: bad link %s/%s", s.Name, l.TraceID, l.SpanID)
		}
		stub.Links = append(stub.Links, sdktrace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: ltid, SpanID: lsid, TraceFlags: trace.FlagsSampled}), Attributes: decodeAttrs(l.Attributes)})
	}
	switch s.Status.Code {
	case 1:
		stub.Status = sdktrace.Status{Code: codes.Ok}
	case 2:
		stub.Status = sdktrace.Status{Code: codes.Error, Description: s.Status.Message}
	}
	return stub, nil
}

func decodeAttrs(kvs []jsonKeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, attribute.KeyValue{Key: attribute.Key(kv.Key), Value: decodeValue(kv.Value)})
	}
	return out
}

func decodeValue(v jsonValue) attribute.Value {
	switch {
	case v.BoolValue != nil:
		return attribute.BoolValue(*v.BoolValue)
	case v.IntValue != nil:
		return attribute.Int64Value(int64(*v.IntValue))
	case v.DoubleValue != nil:
		return attribute.Float64Value(*v.DoubleValue)
	case v.ArrayValue != nil:
		var ss []string
		for _, e := range v.ArrayValue.Values {
			ss = append(ss, decodeValue(e).String())
		}
		return attribute.StringSliceValue(ss)
	case v.StringValue != nil:
		return attribute.StringValue(*v.StringValue)
	}
	return attribute.StringValue("")
}

// attrMap indexes a span's attributes by key.
func attrMap(kvs []jsonKeyValue) map[string]jsonValue {
	m := make(map[string]jsonValue, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

func (v jsonValue) str() string {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		return strconv.FormatInt(int64(*v.IntValue), 10)
	}
	return ""
}

func (v jsonValue) int() (int64, bool) {
	switch {
	case v.IntValue != nil:
		return int64(*v.IntValue), true
	case v.DoubleValue != nil:
		return int64(*v.DoubleValue), true
	case v.StringValue != nil:
		i, err := strconv.ParseInt(*v.StringValue, 10, 64)
		return i, err == nil
	}
	return 0, false
}

func (v jsonValue) float() (float64, bool) {
	if v.DoubleValue != nil {
		return *v.DoubleValue, true
	}
	i, ok := v.int()
	return float64(i), ok
}

func (v jsonValue) bool() bool { return v.BoolValue != nil && *v.BoolValue }
