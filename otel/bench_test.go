package otel_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/otel"
)

// BenchmarkJSONWriter measures the otlp-json writer alone on an
// event-dense generated stream (as `generate --max-output 100` makes):
// go test ./otel -run XXX -bench JSONWriter -benchmem
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
		w := otel.OTLPJSON.NewWriter(&out, formats.WriteOptions{Dialect: otel.OTLPJSON.Name,
			Report: formats.NewReport(io.Discard), Stderr: io.Discard})
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
