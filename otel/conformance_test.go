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
			{Rule: "usage", Why: "chat spans are read as Usage events ordered by time, apart from the content of their requests (found by this check, not yet fixed)"},
			{Rule: "read back: usage", Why: "the same, of what the otlp-json writer writes"},
		},
			"otlp-json/adal-refused.jsonl",
			"otlp-json/malac-subagents.jsonl",
			"otlp-json/no-root.jsonl",
			"otlp-json/spool-batches.jsonl",
		)
	})
}
