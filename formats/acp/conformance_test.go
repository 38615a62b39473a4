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
		formatstest.Conformance(t, acp.Dialect,
			"acp/acplazybridge-codex-hello.jsonl",
			"acp/gemini-cli-0.61.0-cancel.jsonl",
			"acp/gemini-cli-0.61.0-text-shell.jsonl",
			"acp/gemini-cli-0.61.0-two-prompts.jsonl",
			"acp/prompt-turn-example.jsonl",
		)
	})
}
