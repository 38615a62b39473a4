package otel

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
)

// gateUploader holds every upload until its gate opens, and counts what it
// was given.
type gateUploader struct {
	gate  chan struct{}
	mu    sync.Mutex
	spans map[trace.SpanID]int
	calls int
}

func (g *gateUploader) upload(ctx context.Context, items []item) (int64, string, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return 0, "", ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	for _, it := range items {
		g.spans[it.span.SpanContext().SpanID()]++
	}
	return 0, "", nil
}
func (g *gateUploader) shutdown(context.Context) error { return nil }

func testSpan(i int) *spanData {
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], fmt.Sprintf("trace-%010d", i/100))
	copy(sid[:], fmt.Sprintf("%08d", i))
	return &spanData{name: "execute_tool bash", traceID: tid, spanID: sid, start: time.Unix(1, 0), end: time.Unix(2, 0),
		attrs:    []attribute.KeyValue{attribute.String(keyToolName, "bash"), attribute.Int(keyTurn, i)},
		resource: resource.NewSchemaless(attribute.String("service.name", "test"))}
}

// TestDeliveryHoldsBoundedBatches: with a collector that does not answer,
// the whole input is taken at once (reading never waits on the network),
// at most maxPending+senders batches are held in memory, the rest waits on
// disk, and everything is delivered once the collector answers.
func TestDeliveryHoldsBoundedBatches(t *testing.T) {
	up := &gateUploader{gate: make(chan struct{}), spans: map[trace.SpanID]int{}}
	cfg := &config{timeout: time.Minute}
	s := newExportSink(up, cfg, formats.WriteOptions{Report: formats.NewReport(io.Discard), Stderr: io.Discard}, "test", false)
	const n = 40 * batchSpans
	took := make(chan struct{})
	go func() {
		for i := range n {
			s.span(testSpan(i))
		}
		close(took)
	}()
	select {
	case <-took:
	case <-time.After(time.Minute):
		t.Fatal("taking the spans waited on the collector")
	}
	s.mu.Lock()
	held, onDisk := s.maxHeld, 0
	if s.over != nil {
		onDisk = len(s.over.counts)
	}
	s.mu.Unlock()
	if held > maxPending+senders || onDisk < 40-maxPending-senders-1 {
		t.Errorf("held %d batches in memory (at most %d), %d on disk", held, maxPending+senders, onDisk)
	}
	close(up.gate)
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if len(up.spans) != n {
		t.Errorf("delivered %d spans, want %d", len(up.spans), n)
	}
	for id, k := range up.spans {
		if k != 1 {
			t.Errorf("span %s delivered %d times", id, k)
		}
	}
	if s.maxHeld > maxPending+senders {
		t.Errorf("held %d batches in memory while draining, at most %d", s.maxHeld, maxPending+senders)
	}
}

// fullDisk is a spool file on a disk that fills after room bytes.
type fullDisk struct {
	*os.File
	room int
}

func (f *fullDisk) Write(b []byte) (int, error) {
	if len(b) <= f.room {
		f.room -= len(b)
		return f.File.Write(b)
	}
	n, _ := f.File.Write(b[:f.room])
	f.room = 0
	return n, syscall.ENOSPC
}

// TestFullDiskUnderTheSpool: the spool keeps whole lines only, and the
// message names it and how many spans it holds whole.
func TestFullDiskUnderTheSpool(t *testing.T) {
	name := filepath.Join(t.TempDir(), "spool.jsonl")
	old := createSpoolFile
	defer func() { createSpoolFile = old }()
	createSpoolFile = func(string, string) (spoolTarget, error) {
		f, err := os.Create(name)
		return &fullDisk{File: f, room: 700 << 10}, err
	}
	up := &gateUploader{gate: make(chan struct{}), spans: map[trace.SpanID]int{}}
	var stderr strings.Builder
	s := newExportSink(up, &config{timeout: 200 * time.Millisecond}, formats.WriteOptions{Report: formats.NewReport(io.Discard), Stderr: &stderr}, "test", false)
	const n = 5 * batchSpans
	for i := range n {
		s.span(testSpan(i))
	}
	err := s.close()
	data, _ := os.ReadFile(name)
	whole := len(readAll(t, data))
	lines := strings.Count(string(data), "\n")
	if !strings.HasSuffix(string(data), "\n") || lines == 0 {
		t.Fatalf("the spool does not end with a whole line (%d lines)", lines)
	}
	spans := strings.Count(string(data), `"spanId"`)
	want := fmt.Sprintf("%d spans could not be delivered to test (not delivered within the delivery timeout (200ms; --otlp-timeout sets it)); %d of them are whole in the spool file %s, the other %d could not be written to it (no space left on device)", n, spans, name, n-spans)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v\nwant %s", err, want)
	}
	if !strings.Contains(stderr.String(), fmt.Sprintf("%d of them are in %s", spans, name)) || whole == 0 {
		t.Errorf("stderr %q (%d events read back)", stderr.String(), whole)
	}
}

// TestSpoolCountsWhatItCannotEncode: a span JSON cannot carry (a NaN) is
// counted among those that could not be written, not forgotten.
func TestSpoolCountsWhatItCannotEncode(t *testing.T) {
	var p spoolFile
	p.name = filepath.Join(t.TempDir(), "spool.jsonl")
	good, bad := testSpan(1), testSpan(2)
	bad.attrs = append(bad.attrs, attribute.Float64("x", math.NaN()))
	p.write([]item{{span: good.snapshot()}})
	p.write([]item{{span: bad.snapshot()}})
	if p.whole != 1 || p.failed != 1 || p.spans() != 2 {
		t.Errorf("whole %d, failed %d", p.whole, p.failed)
	}
	err := p.finish("test", nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "1 of them are whole") {
		t.Errorf("error %v", err)
	}
}

// A spool that is not named goes to the user's state directory, made
// private if missing, never to the working directory.
func TestSpoolDefaultsToTheStateDirectory(t *testing.T) {
	tmp := t.TempDir()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got, want := StateDir(env(map[string]string{"XDG_STATE_HOME": tmp, "HOME": "/home/x"})), filepath.Join(tmp, "agentconv"); got != want {
		t.Errorf("stateDir with XDG_STATE_HOME = %q, want %q", got, want)
	}
	if got, want := StateDir(env(map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/home/x"})), "/home/x/.local/state/agentconv"; got != want {
		t.Errorf("stateDir with a relative XDG_STATE_HOME = %q, want %q (the spec ignores relative paths)", got, want)
	}
	if got := StateDir(env(nil)); got != "" {
		t.Errorf("stateDir without HOME = %q, want \"\"", got)
	}
	dir := filepath.Join(tmp, "agentconv")
	f, err := createSpool("", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if filepath.Dir(f.Name()) != dir {
		t.Errorf("the spool is %s, want a file in %s", f.Name(), dir)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the state directory: %v, mode %v; want 0700", err, st.Mode().Perm())
	}
	if st, _ := f.Stat(); st.Mode().Perm() != 0o600 {
		t.Errorf("the spool's mode is %v, want 0600", st.Mode().Perm())
	}
}

// orderUploader fails every batch, the first only after the second has
// failed: the senders give up on them out of order.
type orderUploader struct {
	second chan struct{}
	once   sync.Once
}

func (o *orderUploader) upload(ctx context.Context, items []item) (int64, string, error) {
	first := false
	for _, kv := range items[0].span.Attributes() {
		if kv.Key == keyTurn && kv.Value.AsInt64() < batchSpans {
			first = true
		}
	}
	if first {
		select {
		case <-o.second:
		case <-ctx.Done():
		}
		return 0, "", fmt.Errorf("refused")
	}
	o.once.Do(func() { close(o.second) })
	return 0, "", fmt.Errorf("refused")
}
func (o *orderUploader) shutdown(context.Context) error { return nil }

// TestSpoolKeepsTheBatchesOrder: the spool holds the spans in the order
// they were given, though the first batch failed after the second: a
// reader of the spool holds a trace until its root, which comes last, so
// a batch spooled after a later one would split its runs.
func TestSpoolKeepsTheBatchesOrder(t *testing.T) {
	name := filepath.Join(t.TempDir(), "spool.jsonl")
	up := &orderUploader{second: make(chan struct{})}
	s := newExportSink(up, &config{timeout: time.Minute, spool: name}, formats.WriteOptions{Report: formats.NewReport(io.Discard), Stderr: io.Discard}, "test", false)
	const n = 6 * batchSpans
	for i := range n {
		s.span(testSpan(i))
	}
	if err := s.close(); err == nil {
		t.Fatal("no error for spans that were not delivered")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for line := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
		spans, err := decodeLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range spans {
			for _, kv := range sp.Attributes() {
				if kv.Key == keyTurn && int(kv.Value.AsInt64()) != next {
					t.Fatalf("span %d of the spool is span %d of the input", next, kv.Value.AsInt64())
				}
			}
			next++
		}
	}
	if next != n {
		t.Errorf("%d spans spooled, want %d", next, n)
	}
}
