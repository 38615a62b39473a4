package otel_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/otel"
)

// writeRuns writes through w a run of one span, then n runs of eight
// (formatstest.SubagentRun, each its own session): a batch of 1,024 spans
// ends in the middle of a run. Each event is a line of the input, which
// the runs' ids derive from.
func writeRuns(t *testing.T, w formats.Writer, n int) error {
	t.Helper()
	sw := formats.Standalone(w)
	evs := []*formats.Event{{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "ses_short"}}, {Kind: formats.RunEnd, Status: formats.Completed}}
	for i := range n {
		evs = append(evs, formatstest.SubagentRun(fmt.Sprintf("ses_%d", i))...)
	}
	for i, e := range evs {
		e.Source.LineNo = i + 1
		if err := sw.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	return sw.Close()
}

// TestResendHoldsTheRunsUnderWay: reading a spool (or any otlp-json) holds
// the spans of the runs whose root has not come, and the ids of those
// traces, never the traces already replayed: what a resend holds does not
// grow with the spool. Before, every trace id stayed (resending 55, 110
// and 149 MB spools peaked at 77, 90 and 108 MB).
func TestResendHoldsTheRunsUnderWay(t *testing.T) {
	const n = 500
	dir := t.TempDir()
	// One line a run, as otlp-json writes them.
	var perRun bytes.Buffer
	if err := writeRuns(t, otel.OTLPJSON.NewWriter(&perRun, formats.WriteOptions{Dialect: otel.OTLPJSON.Name, Report: discardReport(), Stderr: io.Discard}), n); err != nil {
		t.Fatal(err)
	}
	perRunFile := filepath.Join(dir, "runs.otlp.jsonl")
	if err := os.WriteFile(perRunFile, perRun.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// A spool as the sink writes it when nothing listens: batches of up to
	// 1,024 spans, a run split across them.
	spool := filepath.Join(dir, "spool.otlp.jsonl")
	w := otel.OTLP.NewWriter(nil, formats.WriteOptions{Dialect: otel.OTLP.Name, Report: discardReport(), Stderr: io.Discard,
		Params: map[string]string{otel.ParamEndpoint: "http://127.0.0.1:1", otel.ParamTimeout: "100ms", otel.ParamSpool: spool},
		Getenv: func(string) string { return "" }})
	if err := writeRuns(t, w, n); err == nil {
		t.Fatal("delivery to a closed port succeeded")
	}
	for _, in := range []string{perRunFile, spool} {
		t.Run(filepath.Base(in), func(t *testing.T) {
			f, err := os.Open(in)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := otel.OTLPJSON.NewReader(f, formats.ReadOptions{Dialect: otel.OTLPJSON.Name, Report: discardReport()})
			runs, maxTraces, maxOrder, maxSpans := 0, 0, 0, 0
			for {
				e, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if e.Kind == formats.RunEnd {
					runs++
				}
				traces, order, held := otel.ReaderHeld(r)
				maxTraces, maxOrder, maxSpans = max(maxTraces, traces), max(maxOrder, order), max(maxSpans, held)
			}
			// The sink spools its batches in the order they were made,
			// whichever sender gave up first: no run comes back split.
			if runs != n+1 {
				t.Fatalf("%d runs read back, want %d", runs, n+1)
			}
			// A batch line may start a few runs past the one it ends.
			const k = 8
			if maxTraces > k || maxOrder > 2*k+64 {
				t.Errorf("%d runs read; held at most %d traces and %d trace ids, want at most %d and %d", runs, maxTraces, maxOrder, k, 2*k+64)
			}
			t.Logf("%d runs; held at most %d traces, %d ids, %d spans", runs, maxTraces, maxOrder, maxSpans)
		})
	}
}

func discardReport() *formats.Report { return formats.NewReport(io.Discard) }
