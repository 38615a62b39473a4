package cliagents_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/cliagents"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(cliagents.Dialect.Name, func(t *testing.T) {
		formatstest.Conformance(t, cliagents.Dialect,
			"cli-agents/cancelled.jsonl",
			"cli-agents/claude-run.jsonl",
			"cli-agents/codex-run.jsonl",
			"cli-agents/gemini-failed.jsonl",
		)
	})
}
