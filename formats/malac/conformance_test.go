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
		formatstest.ConformanceOpen(t, malac.Dialect, []formatstest.Open{
			{Rule: "usage", Why: "malac prints usage per turn (its \"turn\" counts), which the reader gives as one request's Usage rather than an Aggregate one"},
			{Rule: "read back: usage", Why: "the same, of what the malac writer writes"},
		},
			"malac/cut.jsonl",
			"malac/denied.jsonl",
			"malac/failed-turn.jsonl",
			"malac/refused-then-failed.jsonl",
			"malac/subagents.jsonl",
			"malac/two-runs.jsonl",
		)
	})
}
