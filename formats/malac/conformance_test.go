package malac_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/malac"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(malac.Dialect.Name, func(t *testing.T) {
		formatstest.Conformance(t, malac.Dialect,
			formatstest.Cut("malac/cut.jsonl"),
			"malac/denied.jsonl",
			"malac/failed-turn.jsonl",
			"malac/refused-then-failed.jsonl",
			"malac/subagents.jsonl",
			"malac/two-runs.jsonl",
		)
	})
}
