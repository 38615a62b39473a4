package otel

import (
	"fmt"
	"strconv"
	"time"

	"github.com/goccy/go-json"
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
	Status            jsonStatus     `json:"status"`
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

// encodeRequest turns spans into one request, grouped by resource and scope
// in the order they first appear.
func encodeRequest(spans []sdktrace.ReadOnlySpan) jsonRequest {
	var req jsonRequest
	for _, s := range spans {
		res := encodeAttrs(s.Resource().Attributes())
		scope := jsonScope{Name: s.InstrumentationScope().Name, Version: s.InstrumentationScope().Version}
		var rs *jsonResourceSpans
		for i := range req.ResourceSpans {
			if sameAttrs(req.ResourceSpans[i].Resource.Attributes, res) {
				rs = &req.ResourceSpans[i]
				break
			}
		}
		if rs == nil {
			req.ResourceSpans = append(req.ResourceSpans, jsonResourceSpans{Resource: jsonResource{Attributes: res}})
			rs = &req.ResourceSpans[len(req.ResourceSpans)-1]
		}
		var ss *jsonScopeSpans
		for i := range rs.ScopeSpans {
			if rs.ScopeSpans[i].Scope == scope {
				ss = &rs.ScopeSpans[i]
				break
			}
		}
		if ss == nil {
			rs.ScopeSpans = append(rs.ScopeSpans, jsonScopeSpans{Scope: scope})
			ss = &rs.ScopeSpans[len(rs.ScopeSpans)-1]
		}
		ss.Spans = append(ss.Spans, encodeSpan(s))
	}
	return req
}

func encodeSpan(s sdktrace.ReadOnlySpan) jsonSpan {
	sc := s.SpanContext()
	js := jsonSpan{
		TraceID:           sc.TraceID().String(),
		SpanID:            sc.SpanID().String(),
		Name:              s.Name(),
		Kind:              int(s.SpanKind()),
		StartTimeUnixNano: unixNano(s.StartTime()),
		EndTimeUnixNano:   unixNano(s.EndTime()),
		Attributes:        encodeAttrs(s.Attributes()),
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		js.ParentSpanID = p.SpanID().String()
	}
	for _, ev := range s.Events() {
		js.Events = append(js.Events, jsonEvent{TimeUnixNano: unixNano(ev.Time), Name: ev.Name, Attributes: encodeAttrs(ev.Attributes)})
	}
	st := s.Status()
	// OTLP's status codes: 0 unset, 1 ok, 2 error (the SDK numbers them
	// differently).
	switch st.Code {
	case codes.Ok:
		js.Status.Code = 1
	case codes.Error:
		js.Status.Code = 2
		js.Status.Message = st.Description
	}
	return js
}

func encodeAttrs(kvs []attribute.KeyValue) []jsonKeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]jsonKeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, jsonKeyValue{Key: string(kv.Key), Value: encodeValue(kv.Value)})
	}
	return out
}

func encodeValue(v attribute.Value) jsonValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return jsonValue{BoolValue: &b}
	case attribute.INT64:
		i := jsonInt64(v.AsInt64())
		return jsonValue{IntValue: &i}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return jsonValue{DoubleValue: &f}
	case attribute.STRINGSLICE:
		var vs jsonValues
		for _, s := range v.AsStringSlice() {
			vs.Values = append(vs.Values, encodeValue(attribute.StringValue(s)))
		}
		return jsonValue{ArrayValue: &vs}
	}
	s := v.Emit()
	return jsonValue{StringValue: &s}
}

func sameAttrs(a, b []jsonKeyValue) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, _ := json.Marshal(a[i])
		y, _ := json.Marshal(b[i])
		if string(x) != string(y) {
			return false
		}
	}
	return true
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
			ss = append(ss, decodeValue(e).Emit())
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
