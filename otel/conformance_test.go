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
		formatstest.Conformance(t, otel.OTLPJSON,
			"otlp-json/adal-refused.jsonl",
			"otlp-json/malac-subagents.jsonl",
			"otlp-json/no-root.jsonl",
			"otlp-json/spool-batches.jsonl",
		)
	})
}
