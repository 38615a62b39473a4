package convert

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
				w := formats.Standalone(d.NewWriter(&out, formats.WriteOptions{Dialect: d.Name, Report: formats.NewReport(io.Discard), Stderr: io.Discard}))
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

// BenchmarkManyFiles converts a directory of small trajectories (atif, a
// dialect that reads directories) to otlp-json, against one file holding
// the same bytes: go test ./convert -run XXX -bench ManyFiles
// (testdata/bench/many.sh does the same with 10,000 files and the binary).
func BenchmarkManyFiles(b *testing.B) {
	const n = 1000
	src, err := os.ReadFile(filepath.Join("..", "testdata", "atif", "rfc-0001-example.json"))
	if err != nil {
		b.Fatal(err)
	}
	id := []byte("025B810F-B3A2-4C67-93C0-FE7A142A947A")
	if !bytes.Contains(src, id) {
		b.Fatal("the fixture's session id changed")
	}
	dir := b.TempDir()
	var one bytes.Buffer
	for i := range n {
		doc := bytes.ReplaceAll(src, id, fmt.Appendf(nil, "bench-%04d", i))
		one.Write(doc)
		p := filepath.Join(dir, "files", fmt.Sprintf("%02d", i/100), fmt.Sprintf("s%04d.json", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, doc, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	onePath := filepath.Join(dir, "one.json")
	if err := os.WriteFile(onePath, one.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, input string }{{"dir", filepath.Join(dir, "files")}, {"onefile", onePath}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(one.Len()))
			for i := 0; i < b.N; i++ {
				var errb bytes.Buffer
				code := Run([]string{"agentconv", "--to", "otlp-json", c.input}, Sys{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb})
				if code != 0 {
					b.Fatalf("exit %d: %s", code, errb.String())
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}

// manySessions writes n small session files of four dialects (Claude Code
// sessions, Codex rollouts, ATIF trajectories, pi sessions; each with a
// session id of its own, a thousand to a directory) under dir, as
// testdata/bench/sessions-many.sh does with the binary.
func manySessionFiles(tb testing.TB, dir string, n int) {
	tb.Helper()
	id := []byte("00000000-0000-4000-8000-000000000001")
	type kind struct {
		dialect string
		name    func(sid string) string
		tpl     [][]byte
	}
	kinds := []*kind{
		{dialect: "claude-session", name: func(sid string) string { return sid + ".jsonl" }},
		{dialect: "codex-rollout", name: func(sid string) string { return "rollout-2026-01-01T00-00-00-" + sid + ".jsonl" }},
		{dialect: "atif", name: func(sid string) string { return sid + ".json" }},
		{dialect: "pi-session", name: func(sid string) string { return sid + ".jsonl" }},
	}
	for _, k := range kinds {
		d, ok := Lookup(k.dialect)
		if !ok {
			tb.Fatalf("no dialect %s", k.dialect)
		}
		for seed := range uint64(8) {
			var b bytes.Buffer
			if err := Generate(&b, d, 1000, seed+1, 300); err != nil {
				tb.Fatal(err)
			}
			if !bytes.Contains(b.Bytes(), id) {
				tb.Fatalf("%s: the generated session id changed", k.dialect)
			}
			k.tpl = append(k.tpl, b.Bytes())
		}
	}
	for i := range n {
		k := kinds[i%len(kinds)]
		sid := fmt.Sprintf("%08x-%04x-4000-8000-%012x", i, i%4, i)
		sub := filepath.Join(dir, fmt.Sprintf("%03d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		doc := bytes.ReplaceAll(k.tpl[(i/len(kinds))%len(k.tpl)], id, []byte(sid))
		if err := os.WriteFile(filepath.Join(sub, k.name(sid)), doc, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSessions lists a directory of small session files with
// `agentconv sessions --json`, beside converting the same files to
// otlp-json, at two sizes: the time per file of sessions stays the same as
// the files grow tenfold, and under that of converting them. go test
// ./convert -run XXX -bench Sessions -benchtime 3x
func BenchmarkSessions(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		dir := b.TempDir()
		manySessionFiles(b, dir, n)
		for _, c := range []struct{ name string }{{"sessions"}, {"convert"}} {
			b.Run(fmt.Sprintf("%s/files=%d", c.name, n), func(b *testing.B) {
				args := []string{"agentconv", "sessions", "--json", dir}
				if c.name == "convert" {
					args = []string{"agentconv", "--to", "otlp-json", dir}
				}
				for range b.N {
					var errb bytes.Buffer
					code := Run(args, Sys{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb, Getenv: func(string) string { return "" }})
					if code != 0 {
						b.Fatalf("exit %d: %s", code, errb.String())
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/file")
			})
		}
	}
}

// BenchmarkSmallInput converts a small input (a few events) through the
// whole command line, in memory: what a run costs besides its events (the
// flags, detection, the pipeline), which tests that convert many small
// inputs pay at each.
func BenchmarkSmallInput(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "acp", "acplazybridge-codex-hello.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	for _, from := range []string{"acp", ""} {
		name := "from=" + from
		if from == "" {
			name = "detected"
		}
		b.Run(name, func(b *testing.B) {
			args := []string{"agentconv", "--to", "adal-json", "--deterministic"}
			if from != "" {
				args = append(args, "--from", from)
			}
			for b.Loop() {
				sys := Sys{Stdin: bytes.NewReader(data), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
				if code := Run(args, sys); code != ExitOK {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}

// BenchmarkDetect detects the dialect of the head of each fixture under
// testdata/ (its first DetectSize bytes), as a conversion of many small
// files does at each.
func BenchmarkDetect(b *testing.B) {
	var heads [][]byte
	for _, p := range fixtures(b) {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		heads = append(heads, data[:min(len(data), formats.DetectSize)])
	}
	for b.Loop() {
		for _, h := range heads {
			Detect(h)
		}
	}
}
