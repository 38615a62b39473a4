package otel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func bigSpans(n, each int) []sdktrace.ReadOnlySpan {
	var ss []sdktrace.ReadOnlySpan
	for i := range n {
		d := testSpan(i)
		d.attrs = append(d.attrs, attribute.String(keyToolResult, strings.Repeat("x", each)))
		ss = append(ss, d.snapshot())
	}
	return ss
}

// TestExporterRefusesLargeRequests: the SDK exporters, as newTransport
// makes them, refuse a request over maxRequest before sending it, with the
// words tooLarge knows.
func TestExporterRefusesLargeRequests(t *testing.T) {
	for _, p := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(p, "/", "-"), func(t *testing.T) {
			cfg := &config{protocol: p, endpoint: "http://127.0.0.1:1", timeout: 5 * time.Second}
			if p == "http/protobuf" {
				cfg.endpoint += "/v1/traces"
			}
			up, err := newTransport(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer up.shutdown(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			err = up.exp.ExportSpans(ctx, bigSpans(5, 1<<20))
			if err == nil || !tooLarge(err) {
				t.Fatalf("error %v, want the exporter's refusal of a request over %d bytes", err, maxRequest)
			}
			if time.Since(start) > time.Second {
				t.Errorf("the refusal took %v: was something sent?", time.Since(start))
			}
		})
	}
}

// splitExporter refuses, as the OTLP exporters do, requests of more than
// max spans, and counts the requests it takes.
type splitExporter struct {
	max      int
	requests []int
}

func (e *splitExporter) ExportSpans(_ context.Context, ss []sdktrace.ReadOnlySpan) error {
	if len(ss) > e.max {
		return fmt.Errorf("traces export: request message too large: exceeded %d bytes", maxRequest)
	}
	e.requests = append(e.requests, len(ss))
	return nil
}
func (e *splitExporter) Shutdown(context.Context) error { return nil }

// TestRefusedLargeRequestIsSplit: a batch the exporter finds too large
// goes in halves, each span once.
func TestRefusedLargeRequestIsSplit(t *testing.T) {
	exp := &splitExporter{max: 3}
	up := &exporterUploader{exp: exp, capped: true}
	var items []item
	for _, s := range bigSpans(10, 10) {
		items = append(items, item{span: s})
	}
	if _, _, err := up.upload(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range exp.requests {
		n += r
	}
	if n != 10 || len(exp.requests) < 4 {
		t.Errorf("requests of %v spans, want 10 spans in at least 4", exp.requests)
	}
}

// TestPartialSuccessOutOfAnError: rejected spans and messages are read out
// of the exporter's error; any other error is a failure.
func TestPartialSuccessOutOfAnError(t *testing.T) {
	if r, m, err := partialSuccess(nil); r != 0 || m != "" || err != nil {
		t.Errorf("nil: %d %q %v", r, m, err)
	}
	other := errors.New("boom")
	if r, _, err := partialSuccess(fmt.Errorf("traces export: %w", other)); r != 0 || !errors.Is(err, other) {
		t.Errorf("other error: %d %v", r, err)
	}
}
