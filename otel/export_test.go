package otel

import "github.com/agentconv/agentconv/formats"

// ReaderHeld says what an otlp-json reader holds: the traces waiting for
// their root, the trace ids it keeps in order, and their spans.
func ReaderHeld(r formats.Reader) (traces, order, spans int) {
	rr := r.(*reader)
	for _, ss := range rr.traces {
		spans += len(ss)
	}
	return len(rr.traces), len(rr.order), spans
}
