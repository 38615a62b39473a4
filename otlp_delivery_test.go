package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats/formatstest"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/otel"
	"github.com/goccy/go-json"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func protoName(p string) string { return strings.ReplaceAll(p, "/", "-") }

// send runs --to otlp against a fake collector, with a spool in a
// temporary directory.
func send(t *testing.T, c *fakeCollector, env map[string]string, args ...string) (code int, stderr, spool string) {
	t.Helper()
	spool = filepath.Join(t.TempDir(), "spool.otlp.jsonl")
	all := append([]string{"--to", "otlp", "--otlp-protocol", c.proto, "--otlp-endpoint", c.endpoint, "--otlp-spool", spool}, args...)
	code, _, stderr = runCLI(t, nil, env, all...)
	return code, stderr, spool
}

// TestPartialSuccessIsPartial: spans a collector rejects are counted and
// reported with its message; the rest go on being sent, and nothing is
// spooled that the collector accepted.
func TestPartialSuccessIsPartial(t *testing.T) {
	in, ids := spanInput(t, 3<<20, 200)
	if len(ids) < 3*1024 {
		t.Fatalf("only %d spans in the input", len(ids))
	}
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			first := true
			c := newCollector(t, p, func(c *fakeCollector) {
				c.reject = func(n int) (int64, string) {
					if first {
						first = false
						return 7, "7 spans are too old"
					}
					return 0, ""
				}
			})
			code, stderr, spool := send(t, c, nil, "--from", "otlp-json", in)
			if code != convert.ExitOutput || !strings.Contains(stderr, "rejected 7 of the") || !strings.Contains(stderr, "7 spans are too old") {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
			if strings.Contains(stderr, "could not be delivered") {
				t.Errorf("a partial success made a delivery failure:\n%s", stderr)
			}
			checkAccounts(t, ids, c.accepted(), spanIDsOfFile(t, spool))
		})
	}
	t.Run("a warning with nothing rejected", func(t *testing.T) {
		c := newCollector(t, "grpc", func(c *fakeCollector) {
			c.reject = func(int) (int64, string) { return 0, "deprecated attribute" }
		})
		code, stderr, spool := send(t, c, nil, "--from", "otlp-json", in)
		if code != 0 || !strings.Contains(stderr, "with a warning: deprecated attribute") {
			t.Errorf("exit %d, stderr:\n%s", code, stderr)
		}
		checkAccounts(t, ids, c.accepted(), spanIDsOfFile(t, spool))
	})
}

// TestTimeoutBoundsTheDelivery: --otlp-timeout bounds the whole delivery;
// batches go a few at a time, and what is not sent in time is spooled.
func TestTimeoutBoundsTheDelivery(t *testing.T) {
	formatstest.Long(t)
	in, ids := spanInput(t, 6<<20, 200)
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			// The first two requests are answered at once, the others would
			// take 30 s: the timeout (5 s, so that a request answered at once
			// is not cut as it ends, on a slow machine under the race
			// detector) cuts them in their middle, far from the moment a
			// request ends, which a client cannot tell delivered or not
			// (at-least-once). Without the bound the delivery would take
			// 30 s and more; the bound allows 10 s for the slow machine.
			c := newCollector(t, p, func(c *fakeCollector) { c.delay, c.fast = 30*time.Second, 2 })
			start := time.Now()
			code, stderr, spool := send(t, c, nil, "--otlp-timeout", "5s", "--from", "otlp-json", in)
			took := time.Since(start)
			t.Logf("took %v; stderr:\n%s", took, stderr)
			if code != convert.ExitOutput || !strings.Contains(stderr, "delivery timeout") || !strings.Contains(stderr, spool) {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
			if took > 5*time.Second+10*time.Second {
				t.Errorf("took %v with a 5 s timeout", took)
			}
			delivered, spooled := c.accepted(), spanIDsOfFile(t, spool)
			if len(delivered) == 0 || len(spooled) == 0 {
				t.Errorf("%d delivered, %d spooled: want some of each", len(delivered), len(spooled))
			}
			if c.maxConc < 2 {
				t.Errorf("requests went one at a time")
			}
			checkAccounts(t, ids, delivered, spooled)
		})
	}
}

// TestHTTPRetriesARefusedConnection: a collector that comes up late gets
// every span, over http as over grpc.
func TestHTTPRetriesARefusedConnection(t *testing.T) {
	formatstest.Long(t)
	in, ids := spanInput(t, 200<<10, 200)
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			c := newCollector(t, p, func(c *fakeCollector) { c.late = 1500 * time.Millisecond })
			code, stderr, spool := send(t, c, nil, "--from", "otlp-json", in)
			if code != 0 {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
			checkAccounts(t, ids, c.accepted(), spanIDsOfFile(t, spool))
			if _, err := os.Stat(spool); err == nil {
				t.Errorf("a spool was written")
			}
		})
	}
}

// bigOutputs is an adal-stream run whose calls have outputs of the sizes
// given, in bytes.
func bigOutputs(sizes ...int) string {
	var b strings.Builder
	for i, n := range sizes {
		id := fmt.Sprintf("c%d", i)
		fmt.Fprintf(&b, `{"type":"tool_call","id":"%s","name":"bash","args":{"command":"cat big"}}`+"\n", id)
		fmt.Fprintf(&b, `{"type":"tool_result","id":"%s","name":"bash","status":"completed","output":"%s"}`+"\n", id, strings.Repeat("é", n/2))
	}
	b.WriteString(`{"type":"complete","exit_code":0,"session_id":"big-1"}` + "\n")
	return b.String()
}

// TestRequestsAreCapped: no request is over 4 MiB, however large the
// spans with --otlp-content; a span over that has its content cut, which
// is reported.
func TestRequestsAreCapped(t *testing.T) {
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			c := newCollector(t, p, nil)
			in := filepath.Join(t.TempDir(), "big.ndjson")
			// Twelve calls of 1.5 MB: 18 MB of content in one run, and a
			// call of 6 MB, over the cap on its own.
			sizes := []int{6 << 20}
			for range 12 {
				sizes = append(sizes, 1500<<10)
			}
			if err := os.WriteFile(in, []byte(bigOutputs(sizes...)), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stderr, spool := send(t, c, nil, "--otlp-content", "--otlp-content-limit", "8000000", in)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "over the 4 MiB OTLP request limit, cut to fit") {
				t.Errorf("the cut span is not reported:\n%s", stderr)
			}
			if c.biggest > 4<<20 {
				t.Errorf("a request of %d bytes, over 4 MiB", c.biggest)
			}
			// The run, its 13 calls.
			if n := len(c.accepted()); n != 14 || c.requests < 5 {
				t.Errorf("%d spans delivered in %d requests, want 14 in at least 5", n, c.requests)
			}
			if _, err := os.Stat(spool); err == nil {
				t.Errorf("a spool was written")
			}
		})
	}
}

// TestHeadersArriveAsWritten: the variable's values are percent-decoded
// with + kept; a flag's value is taken as it is, commas included.
func TestHeadersArriveAsWritten(t *testing.T) {
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			c := newCollector(t, p, nil)
			env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Basic%20YQ+b/c==,x-tenant=a%2Cb"}
			code, stderr, _ := send(t, c, env, "--otlp-header", "x-list=a,b", "--otlp-header", "x-raw=100%", fixture("adal/seed-stream.ndjson"))
			if code != 0 || len(c.headers) == 0 {
				t.Fatalf("exit %d, %d requests; stderr:\n%s", code, len(c.headers), stderr)
			}
			for k, want := range map[string]string{"authorization": "Basic YQ+b/c==", "x-tenant": "a,b", "x-list": "a,b", "x-raw": "100%"} {
				if got := c.headers[0][k]; got != want {
					t.Errorf("header %s: %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestExplicitSchemeWins: an http:// endpoint is plain text even with
// OTEL_EXPORTER_OTLP_CERTIFICATE set.
func TestExplicitSchemeWins(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, selfSignedPEM(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			c := newCollector(t, p, nil)
			code, stderr, _ := send(t, c, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": ca, "OTEL_EXPORTER_OTLP_TIMEOUT": "3000"}, fixture("adal/seed-stream.ndjson"))
			if code != 0 || len(c.accepted()) == 0 {
				t.Errorf("exit %d, %d spans delivered; stderr:\n%s", code, len(c.accepted()), stderr)
			}
		})
	}
}

func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestCutLastLineOfASpool: reading a spool skips a last line that was cut
// short, with a warning; a cut line elsewhere is an error without --lenient.
func TestCutLastLineOfASpool(t *testing.T) {
	in, _ := spanInput(t, 300<<10, 200)
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	last := strings.LastIndexByte(string(data[:len(data)-1]), '\n') + 1
	cut := data[:last+(len(data)-last)/2]
	dir := t.TempDir()
	cutFile := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(cutFile, cut, 0o644)
	c := newCollector(t, "grpc", nil)
	code, stderr, spool := send(t, c, nil, "--from", "otlp-json", cutFile)
	if code != 0 || !strings.Contains(stderr, "the last line is cut short") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	checkAccounts(t, spanIDsOf(t, cut), c.accepted(), spanIDsOfFile(t, spool))

	// The same cut line, followed by another: malformed.
	middle := filepath.Join(dir, "middle.jsonl")
	os.WriteFile(middle, append(append(cut[:len(cut):len(cut)], '\n'), data[:last]...), 0o644)
	code, _, stderr = runCLI(t, nil, nil, "--from", "otlp-json", "--to", "otlp-json", middle)
	if code != convert.ExitInput || !strings.Contains(stderr, "--lenient") {
		t.Errorf("a cut line before the last: exit %d, stderr:\n%s", code, stderr)
	}
}

// withoutRoot is an OTLP/JSON line with its root span taken out: the spans
// of a run whose root has not come yet.
func withoutRoot(t *testing.T, line []byte) []byte {
	t.Helper()
	var req map[string]any
	if err := json.Unmarshal(line, &req); err != nil {
		t.Fatal(err)
	}
	for _, rs := range req["resourceSpans"].([]any) {
		for _, ss := range rs.(map[string]any)["scopeSpans"].([]any) {
			m := ss.(map[string]any)
			var kept []any
			for _, sp := range m["spans"].([]any) {
				if p, _ := sp.(map[string]any)["parentSpanId"].(string); p != "" {
					kept = append(kept, sp)
				}
			}
			m["spans"] = kept
		}
	}
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestInterruptedResend: on SIGINT, every span read and not yet delivered
// is delivered or spooled, those held for a root that never came
// included, and nothing is made up for runs that had already ended.
func TestInterruptedResend(t *testing.T) {
	formatstest.Long(t)
	in, _ := spanInput(t, 400<<10, 200)
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 4 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			for try := range 5 {
				c := newCollector(t, p, nil)
				complete := strings.Join(lines[:len(lines)-1], "")
				held := withoutRoot(t, []byte(lines[len(lines)-1]))
				read := append(spanIDsOf(t, []byte(complete)), spanIDsOf(t, held)...)
				pr, pw := io.Pipe()
				sigs := make(chan os.Signal, 1)
				spool := filepath.Join(t.TempDir(), "spool.jsonl")
				var errb bytes.Buffer
				done := make(chan int, 1)
				go func() {
					done <- convert.Run([]string{"agentconv", "--from", "otlp-json", "--to", "otlp", "--otlp-protocol", p, "--otlp-endpoint", c.endpoint, "--otlp-spool", spool},
						convert.Sys{Stdin: pr, Stdout: io.Discard, Stderr: &errb, Signals: sigs, Getenv: func(string) string { return "" }})
				}()
				go func() {
					io.WriteString(pw, complete)
					pw.Write(held)
				}()
				// Wait for the complete runs to be delivered (the held
				// spans wait for their root), then interrupt.
				want := len(spanIDsOf(t, []byte(complete)))
				for deadline := time.Now().Add(20 * time.Second); len(c.accepted()) < want && time.Now().Before(deadline); {
					time.Sleep(20 * time.Millisecond)
				}
				sigs <- syscall.SIGINT
				var code int
				select {
				case code = <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("no exit after SIGINT")
				}
				pw.Close()
				if code != convert.ExitInterrupted {
					t.Errorf("try %d: exit %d, want 130; stderr:\n%s", try, code, errb.String())
				}
				checkAccounts(t, read, c.accepted(), spanIDsOfFile(t, spool))
				if t.Failed() {
					t.Logf("try %d: stderr:\n%s", try, errb.String())
					return
				}
			}
		})
	}
}

// TestNothingMadeUpForARunReadFromOTLPJSON: a signal in the middle of a run
// read from otlp-json closes it in the pipeline; its spans are what was
// read, and no cancelled root or tool spans are added to them.
func TestNothingMadeUpForARunReadFromOTLPJSON(t *testing.T) {
	line, err := os.ReadFile(fixture("otlp-json/malac-subagents.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitAfter(string(line), "\n")[0]
	evs := formatstest.Read(t, otel.OTLPJSON, first)
	if len(evs) < 6 {
		t.Fatalf("%d events", len(evs))
	}
	exp := tracetest.NewInMemoryExporter()
	rep := discardReport()
	w := otel.ExportWriter(memExporter{exp}, formats.WriteOptions{Report: rep, Getenv: func(string) string { return "" }})
	p := convert.NewPipeline(w, otel.OTLP, convert.Options{Report: rep})
	for _, e := range evs[:len(evs)/2] { // up to the middle of the run
		if err := p.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	read := spanIDsOf(t, []byte(first))
	var got []string
	for _, s := range exp.GetSpans() {
		got = append(got, s.SpanContext.TraceID().String()+"/"+s.SpanContext.SpanID().String())
	}
	delivered := map[string]int{}
	for _, id := range got {
		delivered[id]++
	}
	checkAccounts(t, read, delivered, nil)
}

// TestStuckCollector: a collector that takes requests and never answers
// costs one timeout, and every span is spooled.
func TestStuckCollector(t *testing.T) {
	formatstest.Long(t)
	in, ids := spanInput(t, 2<<20, 200)
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			c := newCollector(t, p, func(c *fakeCollector) { c.hold = make(chan struct{}) })
			start := time.Now()
			code, stderr, spool := send(t, c, nil, "--otlp-timeout", "1s", "--from", "otlp-json", in)
			if took := time.Since(start); took > time.Second+5*time.Second {
				t.Errorf("took %v with a 1 s timeout", took)
			}
			if code != convert.ExitOutput || !strings.Contains(stderr, "delivery timeout") {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
			spooled := spanIDsOfFile(t, spool)
			if len(spooled) != len(ids) {
				t.Errorf("%d of %d spans spooled", len(spooled), len(ids))
			}
			checkAccounts(t, ids, c.accepted(), spooled)
		})
	}
}

// TestProcessEnvironmentChangesNothing: the SDK exporters read the OTEL_*
// variables of the process themselves; agentconv gives them every
// setting, so that only its own reading of them (here: none) counts. (The
// fake grpc collector does not see the grpc-encoding header: compression
// is checked over http only.)
func TestProcessEnvironmentChangesNothing(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, selfSignedPEM(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "https://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://127.0.0.1:1/elsewhere",
		"OTEL_EXPORTER_OTLP_HEADERS":         "x-from-env=1",
		"OTEL_EXPORTER_OTLP_CERTIFICATE":     ca,
		"OTEL_EXPORTER_OTLP_TIMEOUT":         "1",
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "http/json",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
	} {
		t.Setenv(k, v)
	}
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			c := newCollector(t, p, nil)
			code, stderr, _ := send(t, c, nil, fixture("adal/seed-stream.ndjson"))
			if code != 0 || len(c.accepted()) == 0 {
				t.Fatalf("exit %d, %d spans delivered; stderr:\n%s", code, len(c.accepted()), stderr)
			}
			hs := c.headers[0]
			if _, ok := hs["x-from-env"]; ok {
				t.Errorf("a header of the process environment was sent")
			}
			if e := hs["grpc-encoding"] + hs["content-encoding"]; e != "" {
				t.Errorf("compressed with %s, from the process environment", e)
			}
		})
	}
}

// TestSignalDeliversWhatWasTaken: a signal while a file read from
// otlp-json is being converted, in the middle of what the pipeline had
// taken from it: every span of the whole lines taken is delivered, none
// dropped, and none of the lines it had not taken. What was taken and not
// yet parsed was dropped.
func TestSignalDeliversWhatWasTaken(t *testing.T) {
	in, _ := spanInput(t, 1<<20, 200)
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{1, 30, 200} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			rep := discardReport()
			w := otel.ExportWriter(memExporter{exp}, formats.WriteOptions{Report: rep, Getenv: func(string) string { return "" }})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			events := 0
			clock := func() time.Time {
				if events++; events == at {
					cancel()
				}
				return formats.FixedEpoch
			}
			p := convert.NewPipeline(w, otel.OTLP, convert.Options{From: otel.OTLPJSON, Report: rep, Clock: clock})
			r := bytes.NewReader(data)
			if err := p.Convert(ctx, convert.Input{Name: "in", R: r}); !errors.Is(err, convert.ErrInterrupted) {
				t.Fatalf("Convert = %v, want ErrInterrupted", err)
			}
			if err := p.Interrupt(); err != nil {
				t.Fatal(err)
			}
			taken := data[:len(data)-r.Len()]
			taken = taken[:bytes.LastIndexByte(taken, '\n')+1]
			if r.Len() == 0 {
				t.Fatalf("the whole input (%d bytes) was taken before the signal", len(data))
			}
			delivered := map[string]int{}
			for _, s := range exp.GetSpans() {
				delivered[s.SpanContext.TraceID().String()+"/"+s.SpanContext.SpanID().String()]++
			}
			checkAccounts(t, spanIDsOf(t, taken), delivered, nil)
		})
	}
}
