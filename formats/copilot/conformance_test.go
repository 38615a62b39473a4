package copilot_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/copilot"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(copilot.Stream.Name, func(t *testing.T) {
		formatstest.Conformance(t, copilot.Stream,
			"agents/copilot/1.0.102/api-error/json/stdout.jsonl",
			"agents/copilot/1.0.102/parallel/json/stdout.jsonl",
			"agents/copilot/1.0.102/refused/json/stdout.jsonl",
			"agents/copilot/1.0.102/subagent/json/stdout.jsonl",
		)
	})
	t.Run(copilot.Events.Name, func(t *testing.T) {
		formatstest.Conformance(t, copilot.Events,
			"agents/copilot/1.0.102/api-error/json/home/.copilot/session-state/b47833c3-0e8a-4fd0-9247-7d39359a6fee/events.jsonl",
			"agents/copilot/1.0.102/parallel/json/home/.copilot/session-state/7da52722-cc9e-4d02-9272-79fbf423367c/events.jsonl",
			"agents/copilot/1.0.102/refused/json/home/.copilot/session-state/5f1dfa0d-7ca6-4d2b-96f2-d8f643cbb630/events.jsonl",
			"agents/copilot/1.0.102/subagent/json/home/.copilot/session-state/71419014-7f1f-4308-a154-449b8ebc7315/events.jsonl",
		)
	})
}
