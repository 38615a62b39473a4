package otel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentconv/agentconv/formats"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLP sends each run as a trace to an OTLP collector.
var OTLP = formats.Dialect{
	Name:        "otlp",
	Description: "OpenTelemetry traces sent over OTLP (grpc or http/protobuf) to a collector, Jaeger or Tempo",
	NewWriter:   newOTLPWriter,
	Remote:      true,
	Params:      otlpParams,
	Carries:     carries,
	Quirks:      quirks,
	Resends:     []string{"otlp-json"},
}

// OTLPJSON is the same spans as OTLP/JSON lines, one request per run.
var OTLPJSON = formats.Dialect{
	Name:        "otlp-json",
	Description: "OpenTelemetry traces as OTLP/JSON lines (the Collector's file exporter format); resend with --to otlp",
	NewReader:   newReader,
	NewWriter:   newJSONWriter,
	Detect:      detect,
	Params:      spanParams,
	Carries:     carries,
	Quirks:      quirks,
}

// writer turns events into spans and hands them to a sink. Events read
// from otlp-json pass through as the spans they came from, ids included.
type writer struct {
	b       *builder
	sink    sink
	err     error // a configuration error, reported at the first write
	emitErr error // the first error of the sink during one Write
}

// sink takes the spans of runs as they end.
type sink interface {
	// span takes a span that ended; it is only valid during the call.
	span(*spanData) error
	// raw takes an otlp-json record read from the input.
	raw(line []byte) error
	// runEnded: the current run's last span was given.
	runEnded() error
	close() error
}

func (w *writer) Write(e *formats.Event) error {
	if w.err != nil {
		return w.err
	}
	if e.Source.From(OTLPJSON.Name) {
		if e.Source.Continued || e.Source.Line == nil {
			return nil
		}
		return w.sink.raw(e.Source.Line)
	}
	w.b.write(e)
	if err := w.emitErr; err != nil {
		w.emitErr = nil
		return err
	}
	if e.Kind == formats.RunEnd {
		return w.sink.runEnded()
	}
	return nil
}

func (w *writer) Close() error {
	if w.err != nil {
		return w.err
	}
	return w.sink.close()
}

// emit hands a span the builder ended to the sink.
func (w *writer) emit(s *spanData) {
	if err := w.sink.span(s); err != nil && w.emitErr == nil {
		w.emitErr = err
	}
}

func newWriter(o formats.WriteOptions, s func(*config) (sink, error)) formats.Writer {
	cfg, err := newConfig(o)
	if err != nil {
		return &writer{err: err}
	}
	w := &writer{}
	w.b = newBuilder(cfg, o.Report, w.emit)
	if w.sink, err = s(cfg); err != nil {
		return &writer{err: err}
	}
	return w
}

// jsonSink writes each run as one OTLP/JSON request line when it ends,
// encoding its spans as they end.
type jsonSink struct {
	out io.Writer
	req requestEncoder
}

func newJSONWriter(out io.Writer, o formats.WriteOptions) formats.Writer {
	return newWriter(o, func(*config) (sink, error) { return &jsonSink{out: out}, nil })
}

func (j *jsonSink) span(s *spanData) error {
	j.req.add(s)
	return nil
}

func (j *jsonSink) raw(line []byte) error { return formats.WriteRawLine(j.out, line) }

func (j *jsonSink) runEnded() error {
	if j.req.empty() {
		return nil
	}
	return j.req.writeTo(j.out)
}

func (j *jsonSink) close() error { return j.runEnded() }

// ExportWriter returns an otlp writer that delivers through exp: the
// OTLP exporters, or an in-memory one in tests.
func ExportWriter(exp sdktrace.SpanExporter, o formats.WriteOptions) formats.Writer {
	return newWriter(o, func(cfg *config) (sink, error) { return newExportSink(exp, cfg, o, "the exporter"), nil })
}

func newOTLPWriter(_ io.Writer, o formats.WriteOptions) formats.Writer {
	return newWriter(o, func(cfg *config) (sink, error) {
		exp, err := cfg.newExporter(context.Background())
		if err != nil {
			return nil, err
		}
		return newExportSink(exp, cfg, o, cfg.endpoint+" ("+cfg.protocol+")"), nil
	})
}

// Batching: spans go out when this many are waiting, or this long after
// the first of them ended, so that a live run shows up as it goes.
const (
	batchSize  = 256
	batchDelay = 500 * time.Millisecond
	queueSize  = 4096
)

// exportSink delivers spans in the background. Once a delivery fails (the
// exporter retried within the timeout), the collector counts as down: that
// batch and every later span go to the spool file, so that a dead endpoint
// costs one timeout, never one per span.
type exportSink struct {
	exp     sdktrace.SpanExporter
	cfg     *config
	target  string
	stderr  io.Writer
	queue   chan []sdktrace.ReadOnlySpan
	done    chan struct{}
	mu      sync.Mutex
	failErr error    // the delivery error, once one failed
	spool   *os.File // where undelivered spans go
	spooled int
	spoolE  error
}

func newExportSink(exp sdktrace.SpanExporter, cfg *config, o formats.WriteOptions, target string) *exportSink {
	s := &exportSink{exp: exp, cfg: cfg, target: target, stderr: o.Stderr,
		queue: make(chan []sdktrace.ReadOnlySpan, queueSize), done: make(chan struct{})}
	if s.stderr == nil {
		s.stderr = io.Discard
	}
	go s.loop()
	return s
}

func (s *exportSink) span(d *spanData) error {
	return s.spans([]sdktrace.ReadOnlySpan{d.snapshot()})
}

func (s *exportSink) spans(ss []sdktrace.ReadOnlySpan) error {
	s.queue <- ss
	return nil
}

func (s *exportSink) raw(line []byte) error {
	ss, err := decodeLine(line)
	if err != nil {
		return err
	}
	return s.spans(ss)
}

func (s *exportSink) runEnded() error { return nil }

func (s *exportSink) loop() {
	defer close(s.done)
	var batch []sdktrace.ReadOnlySpan
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) > 0 {
			s.deliver(batch)
			batch = nil
		}
	}
	for {
		select {
		case ss, ok := <-s.queue:
			if !ok {
				flush()
				return
			}
			if len(batch) == 0 {
				timer.Reset(batchDelay)
			}
			batch = append(batch, ss...)
			if len(batch) >= batchSize {
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

func (s *exportSink) deliver(batch []sdktrace.ReadOnlySpan) {
	s.mu.Lock()
	down := s.failErr != nil
	s.mu.Unlock()
	if !down {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.timeout)
		err := s.exp.ExportSpans(ctx, batch)
		cancel()
		if err == nil {
			return
		}
		s.mu.Lock()
		s.failErr = err
		s.mu.Unlock()
	}
	s.toSpool(batch)
}

// toSpool appends spans to the spool file, made at the first failure.
func (s *exportSink) toSpool(batch []sdktrace.ReadOnlySpan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spoolE != nil {
		s.spooled += len(batch)
		return
	}
	if s.spool == nil {
		s.spool, s.spoolE = createSpool(s.cfg.spool)
		if s.spoolE != nil {
			s.spooled += len(batch)
			return
		}
	}
	var req requestEncoder
	for _, span := range batch {
		d := readOnlyData(span)
		req.add(&d)
	}
	if err := req.writeTo(s.spool); err != nil {
		s.spoolE = err
	}
	s.spooled += len(batch)
}

// createSpool makes the spool file: the name given, else a new file in the
// working directory (or the temporary one, if that is not writable).
func createSpool(name string) (*os.File, error) {
	if name != "" {
		return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	}
	pattern := "agentconv-undelivered-" + time.Now().UTC().Format("20060102T150405") + "-*.otlp.jsonl"
	f, err := os.CreateTemp(".", pattern)
	if err != nil {
		f, err = os.CreateTemp("", pattern)
	}
	return f, err
}

func (s *exportSink) close() error {
	close(s.queue)
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.timeout)
	defer cancel()
	shutErr := s.exp.Shutdown(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr == nil {
		if shutErr != nil && !errors.Is(shutErr, context.DeadlineExceeded) {
			return fmt.Errorf("closing the OTLP exporter: %w", shutErr)
		}
		return nil
	}
	if s.spool == nil || s.spoolE != nil {
		why := s.spoolE
		if s.spool != nil {
			s.spool.Close()
		}
		return fmt.Errorf("%d spans could not be delivered to %s (%v), nor written to a spool file (%v)", s.spooled, s.target, s.failErr, why)
	}
	name := s.spool.Name()
	if abs, err := filepath.Abs(name); err == nil {
		name = abs
	}
	if err := s.spool.Close(); err != nil {
		return fmt.Errorf("%d spans could not be delivered to %s (%v), nor written to the spool file %s (%v)", s.spooled, s.target, s.failErr, name, err)
	}
	fmt.Fprintf(s.stderr, "agentconv: %d spans could not be delivered; they are in %s\nagentconv: resend them with: agentconv --from otlp-json --to otlp %s\n", s.spooled, name, name)
	return fmt.Errorf("%d spans could not be delivered to %s: %v (kept in %s)", s.spooled, s.target, s.failErr, name)
}
