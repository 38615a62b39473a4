package opencode_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/opencode"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(opencode.Stream.Name, func(t *testing.T) {
		formatstest.Conformance(t, opencode.Stream,
			"agents/opencode/1.18.33/api-error/json/stdout.jsonl",
			"agents/opencode/1.18.33/parallel/json/stdout.jsonl",
			"agents/opencode/1.18.33/refused/json/stdout.jsonl",
			"agents/opencode/1.18.33/subagent/json/stdout.jsonl",
		)
	})
	t.Run(opencode.DB.Name, func(t *testing.T) {
		formatstest.Conformance(t, opencode.DB,
			"agents/opencode/1.18.33/api-error/json/home/.local/share/opencode/opencode.db",
			"agents/opencode/1.18.33/parallel/json/home/.local/share/opencode/opencode.db",
			"agents/opencode/1.18.33/refused/json/home/.local/share/opencode/opencode.db",
			"agents/opencode/1.18.33/subagent/json/home/.local/share/opencode/opencode.db",
		)
	})
	t.Run(opencode.Export.Name, func(t *testing.T) {
		formatstest.ConformanceOpen(t, opencode.Export, []formatstest.Open{
			{Rule: "read back: usage", Why: "a refused call whose call the source never gave (EveryKind's call_4) is written as a tool part of an assistant message of its own, a request the source never showed, whose tokens it never gave: read back, that request has no step-finish, and writing one would invent counts"},
		},
			"testdata/subagent-export.json",
		)
	})
}
