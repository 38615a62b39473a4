package acp_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/acp"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(acp.Dialect.Name, func(t *testing.T) {
		formatstest.ConformanceOpen(t, acp.Dialect, []formatstest.Open{
			{Rule: "usage", Why: "ACP's usage updates are read as Usage events that do not sit with their request's output (found by this check, not yet fixed)"},
			{Rule: "read back: usage", Why: "the acp writer's usage updates, read back, do not sit with their request's output"},
			{Rule: "read back: agents", Why: "what the acp writer writes of a subagent, read back, has an event of the subagent after its end"},
		},
			"acp/acplazybridge-codex-hello.jsonl",
			"acp/gemini-cli-0.61.0-cancel.jsonl",
			"acp/gemini-cli-0.61.0-text-shell.jsonl",
			"acp/gemini-cli-0.61.0-two-prompts.jsonl",
			"acp/prompt-turn-example.jsonl",
		)
	})
}
