package otel

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/agentconv/agentconv/formats"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLP sends each run as a trace to an OTLP collector.
var OTLP = formats.Dialect{
	Name:        nameOTLP,
	Description: "OpenTelemetry traces sent over OTLP (grpc or http/protobuf) to a collector, Jaeger or Tempo",
	NewWriter:   newOTLPWriter,
	Remote:      true,
	Params:      otlpParams,
	Check:       CheckConfig,
	Carries:     carries,
	Quirks:      quirks,
	Resends:     []string{"otlp-json"},
	// The spans copy what they keep of an event; a raw record is decoded
	// or written at once.
	KeepsNoEvents: true,
	// Making spans is as much work as reading the events.
	ReadAhead: true,
}

// OTLPJSON is the same spans as OTLP/JSON lines, one request per run.
var OTLPJSON = formats.Dialect{
	Name:        nameOTLPJSON,
	Description: "OpenTelemetry traces as OTLP/JSON lines (the Collector's file exporter format); resend with --to otlp",
	NewReader:   newReader,
	NewWriter:   newJSONWriter,
	Detect:      detect,
	Params:      spanParams,
	Check:       CheckConfig,
	Carries:     carries,
	Quirks:      quirks,
	// As OTLP.
	KeepsNoEvents: true,
	ReadAhead:     true,
}

// writer turns events into spans and hands them to a sink. Events read
// from otlp-json pass through as the spans they came from, ids included.
type writer struct {
	b       *builder
	sink    sink
	err     error // a configuration error, reported at the first write
	emitErr error // the first error of the sink during one Write
	// passthrough: the run being written was read from otlp-json, and its
	// records are its spans. Events that the pipeline makes to close such
	// a run (at a signal, or a cut input) add nothing: its spans are what
	// was read.
	passthrough bool
	ledger      *ledger
	rep         *formats.Report
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

func (w *writer) Write(e *formats.Event, v *formats.RunView) error {
	if w.err != nil {
		return w.err
	}
	if e.Kind == formats.RunStart && w.b.open {
		// A new run begins before the last one ended, outside a pipeline
		// (which ends it first): the view is the new run's already, so
		// the last run ends as at Close, its spans that ended handed on.
		w.b.flushHeld()
		if err := w.b.takeErr(); err != nil {
			return err
		}
	}
	if e.Source.From(OTLPJSON.Name) {
		w.passthrough = e.Kind != formats.RunEnd
		if e.Source.Continued || e.Source.Line == nil {
			return nil
		}
		w.ledger.given(e.Source.LineNo)
		return w.sink.raw(e.Source.Line)
	}
	if w.passthrough {
		if e.Kind == formats.RunEnd {
			w.passthrough = false
		}
		return nil
	}
	if w.b.cfg.content {
		// The spans record outputs only with content; without it they are
		// not decoded at all (TakesRawOutput).
		e.Call.Output.Decode()
	}
	w.b.write(e, v)
	if err := w.b.takeErr(); err != nil {
		return err
	}
	if err := w.emitErr; err != nil {
		w.emitErr = nil
		return err
	}
	if e.Kind == formats.RunEnd {
		return w.sink.runEnded()
	}
	return nil
}

// TakesRawOutput: the pipeline leaves tool outputs undecoded; Write decodes
// them when the spans record content.
func (w *writer) TakesRawOutput() {}

func (w *writer) Close() error {
	if w.err != nil {
		return w.err
	}
	// A run the writer was never told the end of: its held spans go.
	w.b.flushHeld()
	errs := []error{w.b.takeErr()}
	w.b.close()
	for _, rec := range w.ledger.close(w.rep) {
		if err := w.sink.raw(rec.line); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, w.sink.close())...)
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
	w := &writer{rep: o.Report}
	w.b = newBuilder(cfg, o.Report, w.emit)
	if w.sink, err = s(cfg); err != nil {
		return &writer{err: err}
	}
	w.ledger = openLedger(o.Report)
	return w
}

// jsonSink writes each run as one OTLP/JSON request line when it ends,
// encoding its spans as they end; a run whose spans pass maxRequestLine
// is written as several requests, each line a part of its spans.
type jsonSink struct {
	out io.Writer
	req requestEncoder
}

func newJSONWriter(out io.Writer, o formats.WriteOptions) formats.Writer {
	return newWriter(o, func(*config) (sink, error) { return &jsonSink{out: out}, nil })
}

func (j *jsonSink) span(s *spanData) error {
	j.req.add(s)
	if j.req.size >= maxRequestLine {
		return j.req.writeTo(j.out)
	}
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
	return newWriter(o, func(cfg *config) (sink, error) {
		return newExportSink(&exporterUploader{exp: exp}, cfg, o, "the exporter", false), nil
	})
}

func newOTLPWriter(_ io.Writer, o formats.WriteOptions) formats.Writer {
	return newWriter(o, func(cfg *config) (sink, error) {
		c, err := newTransport(cfg)
		if err != nil {
			return nil, err
		}
		return newExportSink(c, cfg, o, cfg.shown+" ("+cfg.protocol+")", true), nil
	})
}

// createSpool makes the spool file: the name given, else a new file in the
// user's state directory dir (made 0700 if missing), or in the temporary
// directory if that cannot be written.
func createSpool(name, dir string) (*os.File, error) {
	if name != "" {
		return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	}
	pattern := "agentconv-undelivered-" + time.Now().UTC().Format("20060102T150405") + "-*.otlp.jsonl"
	f, err := os.CreateTemp(dir, pattern)
	if dir != "" && err != nil && os.MkdirAll(dir, 0o700) == nil {
		f, err = os.CreateTemp(dir, pattern)
	}
	if err != nil {
		f, err = os.CreateTemp("", pattern)
	}
	return f, err
}
