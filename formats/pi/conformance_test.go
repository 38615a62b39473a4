package pi_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/pi"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(pi.Stream.Name, func(t *testing.T) {
		formatstest.Conformance(t, pi.Stream,
			"pi/stream-api-error.jsonl",
			"pi/stream-text-shell.jsonl",
			"agents/pi/0.73.1/api-error/json/stdout.jsonl",
			"agents/pi/0.73.1/parallel/json/stdout.jsonl",
			"agents/pi/0.73.1/refused/json/stdout.jsonl",
		)
	})
	t.Run(pi.Session.Name, func(t *testing.T) {
		formatstest.Conformance(t, pi.Session,
			"pi/session-refused.jsonl",
			"pi/session-resume-thinking.jsonl",
			"agents/pi/0.73.1/api-error/json/home/.pi/agent/sessions/--tmp-TestAgentspi@0.73.1jsonapi-error1057096596-002-work--/2026-12-02T07-26-11-337Z_01a235a5-8b88-75a2-a582-a0d7aba28542.jsonl",
			"agents/pi/0.73.1/parallel/json/home/.pi/agent/sessions/--tmp-TestAgentspi@0.73.1jsonparallel2806776625-002-work--/2026-12-02T07-26-15-852Z_01a235a5-9d23-7246-9df5-e1757419d82d.jsonl",
			"agents/pi/0.73.1/refused/json/home/.pi/agent/sessions/--tmp-TestAgentspi@0.73.1jsonrefused2138738706-002-work--/2026-12-02T07-26-06-490Z_01a235a5-7899-728b-89ed-7f528fc78268.jsonl",
		)
	})
}
