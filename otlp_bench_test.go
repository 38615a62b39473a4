package main

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/otel"
)

// BenchmarkJSONWriter measures the otlp-json writer alone on an
// event-dense generated stream (as `generate --max-output 100` makes):
// go test . -run XXX -bench JSONWriter -benchmem
func BenchmarkJSONWriter(b *testing.B) {
	g := convert.NewGenerator(1)
	g.MaxOutput = 100
	var evs []*formats.Event
	for len(evs) < 20000 {
		for _, e := range g.Run() {
			e.Arrived = e.Time
			evs = append(evs, e)
		}
	}
	var out bytes.Buffer
	runs := 0
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		w := formats.Standalone(otel.OTLPJSON.NewWriter(&out, formats.WriteOptions{Dialect: otel.OTLPJSON.Name,
			Report: formats.NewReport(io.Discard), Stderr: io.Discard}))
		for _, e := range evs {
			if err := w.Write(e); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	spans := bytes.Count(out.Bytes(), []byte(`"spanId"`)) * runs
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkDeliverySlowCollector measures delivery to a collector that
// takes 100 ms to answer each request, in-process on 127.0.0.1:
// go test . -run XXX -bench DeliverySlowCollector
var benchDelay = 100 * time.Millisecond

func BenchmarkDeliverySlowCollector(b *testing.B) {
	g := convert.NewGenerator(1)
	g.MaxOutput = 100
	var evs []*formats.Event
	for len(evs) < 60000 {
		for _, e := range g.Run() {
			e.Arrived = e.Time
			evs = append(evs, e)
		}
	}
	for _, p := range []string{"grpc", "http/protobuf"} {
		b.Run(protoName(p), func(b *testing.B) {
			c := newCollector(b, p, func(c *fakeCollector) { c.delay = benchDelay })
			opts := formats.WriteOptions{Dialect: otel.OTLP.Name, Report: formats.NewReport(io.Discard), Stderr: io.Discard,
				Params: map[string]string{otel.ParamEndpoint: c.endpoint, otel.ParamProtocol: p, otel.ParamSpool: filepath.Join(b.TempDir(), "spool")},
				Getenv: func(string) string { return "" }}
			var writing, closing time.Duration
			for b.Loop() {
				t0 := time.Now()
				w := formats.Standalone(otel.OTLP.NewWriter(nil, opts))
				for _, e := range evs {
					if err := w.Write(e); err != nil {
						b.Fatal(err)
					}
				}
				t1 := time.Now()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				writing += t1.Sub(t0)
				closing += time.Since(t1)
			}
			c.mu.Lock()
			n := 0
			for _, k := range c.spans {
				n += k
			}
			c.mu.Unlock()
			b.Logf("%d spans in %d requests, at most %d at once; writing %v, closing %v", n, c.requests, c.maxConc, writing, closing)
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}
