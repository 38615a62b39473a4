package convert

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// The benchmarks measure every reader and writer of the registry on a
// generated stream: go test ./convert -run XXX -bench . -benchmem
// They report MB/s (of the dialect's own bytes) and allocations per event.

const benchSize = 4 << 20

func benchEvents() []*formats.Event {
	g := NewGenerator(1)
	var evs []*formats.Event
	for len(evs) < 5000 {
		for _, e := range g.Run() {
			e.Arrived = e.Time
			evs = append(evs, e)
		}
	}
	return evs
}

func BenchmarkRead(b *testing.B) {
	for _, d := range Readable() {
		if d.NewWriter == nil || d.Remote {
			continue // no way to make its input here
		}
		var in bytes.Buffer
		if err := Generate(&in, d, benchSize, 1, 0); err != nil {
			b.Fatalf("%s: %v", d.Name, err)
		}
		data := in.Bytes()
		b.Run(d.Name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			events := 0
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			for i := 0; i < b.N; i++ {
				r := d.NewReader(bytes.NewReader(data), formats.ReadOptions{Dialect: d.Name, Report: formats.NewReport(io.Discard)})
				for {
					_, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					events++
				}
			}
			runtime.ReadMemStats(&ms1)
			if events > 0 {
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(events), "allocs/event")
			}
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	evs := benchEvents()
	for _, d := range Writable() {
		if d.Remote {
			continue
		}
		b.Run(d.Name, func(b *testing.B) {
			var out countingWriter
			out.w = io.Discard
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			for i := 0; i < b.N; i++ {
				w := d.NewWriter(&out, formats.WriteOptions{Dialect: d.Name, Report: formats.NewReport(io.Discard), Stderr: io.Discard})
				for _, e := range evs {
					if err := w.Write(e); err != nil {
						b.Fatal(err)
					}
				}
				w.Close()
			}
			runtime.ReadMemStats(&ms1)
			b.SetBytes(out.n / int64(b.N))
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(len(evs)*b.N), "allocs/event")
		})
	}
}

// BenchmarkConvert runs the whole pipeline, as the command line does, for
// the conversion the performance targets name, on each generate profile:
// go test ./convert -run '^$' -bench Convert -benchmem
func BenchmarkConvert(b *testing.B) {
	from, _ := Lookup("adal-stream")
	for _, profile := range ProfileNames() {
		var in bytes.Buffer
		if err := GenerateProfile(&in, from, benchSize, 1, 0, profile); err != nil {
			b.Fatal(err)
		}
		data := in.Bytes()
		for _, name := range []string{"malac", "adal-json", "otlp-json"} {
			to, ok := Lookup(name)
			if !ok {
				continue
			}
			b.Run(profile+"/"+from.Name+"→"+to.Name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				events := 0
				for i := 0; i < b.N; i++ {
					rep := formats.NewReport(io.Discard)
					w := to.NewWriter(io.Discard, formats.WriteOptions{Dialect: to.Name, Report: rep, Stderr: io.Discard})
					p := NewPipeline(w, to, Options{From: from, Report: rep})
					if err := p.Convert(context.Background(), Input{Name: "bench", R: bytes.NewReader(data)}); err != nil {
						b.Fatal(err)
					}
					if err := p.Close(); err != nil {
						b.Fatal(err)
					}
					events += p.Result().Events
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(events, 1)), "ns/event")
			})
		}
	}
}
