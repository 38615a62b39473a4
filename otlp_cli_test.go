package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/otel"
	"github.com/goccy/go-json"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// runCLI runs agentconv in memory.
func runCLI(t *testing.T, stdin io.Reader, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code := convert.Run(append([]string{"agentconv"}, args...), convert.Sys{Stdin: stdin, Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

func fixture(name string) string { return filepath.Join("testdata", name) }

type jsonReq struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []struct {
				Key   string
				Value map[string]any
			}
		}
		ScopeSpans []struct {
			Spans []struct {
				TraceID, SpanID, ParentSpanID, Name string
				StartTimeUnixNano, EndTimeUnixNano  string
				Status                              struct {
					Code    int
					Message string
				}
			}
		}
	}
}

func decodeJSON(t *testing.T, out string) []jsonReq {
	t.Helper()
	var reqs []jsonReq
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r jsonReq
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("not JSON: %v: %s", err, l)
		}
		reqs = append(reqs, r)
	}
	return reqs
}

func TestUntimedAdalRun(t *testing.T) {
	code, out, stderr := runCLI(t, nil, nil, "--deterministic", "--to", "otlp-json", fixture("adal/seed-stream.ndjson"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	reqs := decodeJSON(t, out)
	if len(reqs) != 1 {
		t.Fatalf("%d lines, want 1 per run", len(reqs))
	}
	spans := reqs[0].ResourceSpans[0].ScopeSpans[0].Spans
	if len(spans) != 3 || spans[2].Name != "invoke_agent adal-stream" || spans[0].ParentSpanID != spans[2].SpanID {
		t.Fatalf("spans %+v", spans)
	}
	if len(spans[0].TraceID) != 32 || len(spans[0].SpanID) != 16 || spans[2].StartTimeUnixNano != "946684800001000000" {
		t.Errorf("ids or times not as OTLP/JSON writes them: %+v", spans[2])
	}
	// The same input again: the same bytes.
	_, again, _ := runCLI(t, nil, nil, "--deterministic", "--to", "otlp-json", fixture("adal/seed-stream.ndjson"))
	if again != out {
		t.Errorf("a second export differs")
	}
}

func TestOTLPJSONReadBack(t *testing.T) {
	in := filepath.Join(t.TempDir(), "run.ndjson")
	var lines []string
	for _, f := range []string{"adal/seed-stream.ndjson", "adal/refused-stream.ndjson", "adal/multi-run-stream.ndjson"} {
		_, out, _ := runCLI(t, nil, nil, "--deterministic", "--to", "otlp-json", fixture(f))
		lines = append(lines, out)
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, back, stderr := runCLI(t, nil, nil, "--to", "otlp-json", in)
	if code != 0 || back != strings.Join(lines, "") || strings.Contains(stderr, "lost") {
		t.Fatalf("otlp-json → otlp-json changed it (exit %d): %s\n%s", code, stderr, back)
	}
	// Read into events, the runs come back: AdaL gets its calls and results.
	code, adal, stderr := runCLI(t, nil, nil, "--from", "otlp-json", "--to", "adal-json", in)
	adal = formatstest.OneLine(adal) // AdaL pretty-prints its objects
	if code != 0 || strings.Count(adal, "\n") != 5 || !strings.Contains(adal, `"status":"denied"`) || !strings.Contains(adal, `"session_id":"a1b2c3d4-..."`) {
		t.Fatalf("otlp-json → adal-json (exit %d): %s\n%s", code, stderr, adal)
	}
}

func TestInterruptCancelsOpenSpans(t *testing.T) {
	pr, pw := io.Pipe()
	sigs := make(chan os.Signal, 1)
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- convert.Run([]string{"agentconv", "--from", "adal-stream", "--to", "otlp-json"}, convert.Sys{
			Stdin: pr, Stdout: &out, Stderr: &errb, Signals: sigs, Getenv: func(string) string { return "" }})
	}()
	// Detection reads the first 64 KiB (or to the end) before converting.
	io.WriteString(pw, `{"type":"tool_call","id":"c1","name":"bash","args":{"command":"sleep 100","pad":"`+strings.Repeat("x", formats.DetectSize)+`"}}`+"\n")
	time.Sleep(100 * time.Millisecond)
	sigs <- syscall.SIGINT
	var code int
	select {
	case code = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGINT")
	}
	pw.Close()
	if code != convert.ExitInterrupted {
		t.Fatalf("exit %d, want 130: %s", code, errb.String())
	}
	reqs := decodeJSON(t, out.String())
	spans := reqs[0].ResourceSpans[0].ScopeSpans[0].Spans
	if len(spans) != 2 || spans[0].Status.Code != 2 || spans[1].Status.Code != 2 || !strings.Contains(out.String(), `"cancelled"`) {
		t.Errorf("open spans not ended as cancelled: %s", out.String())
	}
}

func TestDeadCollectorSpools(t *testing.T) {
	formatstest.Long(t)
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
			spool := filepath.Join(t.TempDir(), "spool.jsonl")
			start := time.Now()
			// Port 1 on loopback: nothing listens, connections are refused.
			code, _, stderr := runCLI(t, nil, map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": proto, "OTEL_EXPORTER_OTLP_TIMEOUT": "1500"},
				"--to", "otlp", "--otlp-endpoint", "http://127.0.0.1:1", "--otlp-spool", spool, fixture("adal/multi-run-stream.ndjson"))
			if took := time.Since(start); took > 8*time.Second {
				t.Errorf("took %v with a 1.5 s timeout", took)
			}
			if code != convert.ExitOutput || !strings.Contains(stderr, spool) || !strings.Contains(stderr, "--from otlp-json --to otlp") {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			// The spool holds every span, and resends as they were.
			f, err := os.Open(spool)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			exp := tracetest.NewInMemoryExporter()
			rep := formats.NewReport(io.Discard)
			p := convert.NewPipeline(otel.ExportWriter(memExporter{exp}, formats.WriteOptions{Report: rep, Getenv: func(string) string { return "" }}), otel.OTLP, convert.Options{From: otel.OTLPJSON, Report: rep})
			if err := p.Convert(context.Background(), convert.Input{Name: spool, R: f}); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			_, direct, _ := runCLI(t, nil, nil, "--to", "otlp-json", fixture("adal/multi-run-stream.ndjson"))
			want := 0
			for _, r := range decodeJSON(t, direct) {
				want += len(r.ResourceSpans[0].ScopeSpans[0].Spans)
			}
			got := exp.GetSpans()
			if len(got) != want {
				t.Fatalf("resent %d spans, want %d", len(got), want)
			}
			for _, s := range got {
				if !strings.Contains(direct, s.SpanContext.SpanID().String()) {
					t.Errorf("resent span %s has an id the export does not", s.Name)
				}
			}
		})
	}
}

// memExporter keeps its spans at Shutdown (the SDK's in-memory exporter
// forgets them).
type memExporter struct{ *tracetest.InMemoryExporter }

func (memExporter) Shutdown(context.Context) error { return nil }
