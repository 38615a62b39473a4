package otel_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/otel"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(otel.OTLP.Name, func(t *testing.T) {
		formatstest.Conformance(t, otel.OTLP)
	})
	t.Run(otel.OTLPJSON.Name, func(t *testing.T) {
		formatstest.ConformanceOpen(t, otel.OTLPJSON, []formatstest.Open{
			// Not of the reader: without --otlp-content the writer leaves a
			// request's text out (a loss it reports), so a chat span whose
			// response was text alone reads back as a Usage with no output
			// of its request, as a real agent's trace without content
			// capture does: the rule asks for output the trace does not
			// hold.
			{Rule: "read back: usage", Why: "without --otlp-content a request's text is not written, so its chat span reads back with no output"},
		},
			"otlp-json/adal-refused.jsonl",
			"otlp-json/malac-subagents.jsonl",
			"otlp-json/no-root.jsonl",
			"otlp-json/spool-batches.jsonl",
		)
	})
}
