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
		formatstest.Conformance(t, opencode.Export,
			"testdata/subagent-export.json",
		)
	})
}
