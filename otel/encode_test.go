package otel

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// testSpans are spans of two resources (interleaved, one of them twice as
// distinct values) and two scopes, with every kind of value.
func testSpans() []spanData {
	resA := resource.NewSchemaless(attribute.String("service.name", "a"), attribute.Int("n", 1))
	resA2 := resource.NewSchemaless(attribute.String("service.name", "a"), attribute.Int("n", 1))
	resB := resource.NewSchemaless(attribute.String("service.name", `b "<&>" `+"\u2028\t\x01ü🙂"))
	scope := instrumentation.Scope{Name: scopeName}
	other := instrumentation.Scope{Name: "other", Version: "1.2"}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	floats := []float64{0, math.Copysign(0, -1), 0.1, 3, -2.5, 1e-6, 1e-7, 1.5e-10, 123456.789, 1e20, 1e21, 1.7e308, 5e-324}
	var attrs []attribute.KeyValue
	for _, f := range floats {
		attrs = append(attrs, attribute.Float64("f", f))
	}
	attrs = append(attrs, attribute.Bool("t", true), attribute.Bool("f", false), attribute.Int64("i", -1<<62),
		attribute.String("s", ""), attribute.String("k\"ey", "line\nbreak\\"), attribute.StringSlice("ss", []string{"x", "y\"z"}),
		attribute.StringSlice("empty", nil), attribute.IntSlice("is", []int{1, 2}))
	id := func(b byte) trace.SpanID { return trace.SpanID{7: b} }
	tid := trace.TraceID{0: 0xab, 15: 0xcd}
	return []spanData{
		{name: "root", traceID: tid, spanID: id(1), start: t0, end: t0.Add(time.Second), attrs: attrs,
			status: sdktrace.Status{Code: codes.Ok}, resource: resA, scope: scope},
		{name: "b1", traceID: tid, spanID: id(2), parentID: id(1), kind: trace.SpanKindClient,
			status: sdktrace.Status{Code: codes.Error, Description: "it <failed>"}, resource: resB, scope: scope,
			events: []sdktrace.Event{{Name: "notice", Time: t0, Attributes: []attribute.KeyValue{attribute.String("x", "y")}}, {Name: "bare"}}},
		{name: "a2", traceID: tid, spanID: id(3), parentID: id(1), start: t0, end: t0,
			status: sdktrace.Status{Code: codes.Error}, resource: resA2, scope: other},
		{name: "a3", traceID: tid, spanID: id(4), resource: resA, scope: scope},
		{name: "before 1970", traceID: tid, spanID: id(5), start: time.Unix(-5, 0), resource: resB, scope: other},
	}
}

func encode(t *testing.T, r *requestEncoder, spans []spanData) []byte {
	t.Helper()
	var out bytes.Buffer
	for i := range spans {
		r.add(&spans[i])
	}
	if err := r.writeTo(&out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestRequestEncoder: the hand-built line is what encoding the jsonRequest
// structures gives, byte for byte, grouped by resource and scope in the
// order they first appear.
func TestRequestEncoder(t *testing.T) {
	var r requestEncoder
	line := encode(t, &r, testSpans())
	var req jsonRequest
	if err := json.Unmarshal(line, &req); err != nil {
		t.Fatalf("%v\n%s", err, line)
	}
	want, err := formats.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSuffix(string(line), "\n"); got != string(want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var groups []string
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			g := attrMap(rs.Resource.Attributes)["service.name"].str()[:1] + "/" + ss.Scope.Name + ":"
			for _, s := range ss.Spans {
				g += " " + s.Name
			}
			groups = append(groups, g)
		}
	}
	if got, want := strings.Join(groups, "; "), "a/"+scopeName+": root a3; a/other: a2; b/"+scopeName+": b1; b/other: before 1970"; got != want {
		t.Errorf("groups: %s, want %s", got, want)
	}

	// The buffers serve the next request as a new encoder would.
	spans := testSpans()[1:]
	if again, fresh := encode(t, &r, spans), encode(t, &requestEncoder{}, spans); !bytes.Equal(again, fresh) {
		t.Errorf("reused encoder:\n%s\nfresh:\n%s", again, fresh)
	}

	// An SDK span (the spool's) encodes as the spanData it was made of.
	for _, d := range testSpans() {
		d.attrs = d.attrs[:min(len(d.attrs), 3)] // the SDK drops duplicate keys
		sdk := readOnlyData(d.snapshot())
		if a, b := encode(t, &r, []spanData{d}), encode(t, &r, []spanData{sdk}); !bytes.Equal(a, b) {
			t.Errorf("snapshot of %s:\n%s\nwant\n%s", d.name, b, a)
		}
	}

	nan := testSpans()[:1]
	nan[0].attrs = []attribute.KeyValue{attribute.Float64("f", math.NaN())}
	r.add(&nan[0])
	if err := r.writeTo(&bytes.Buffer{}); err == nil {
		t.Error("NaN: no error")
	}
	if !r.empty() {
		t.Error("not reset after an error")
	}
}
