package adal_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/adal"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(adal.Stream.Name, func(t *testing.T) {
		formatstest.Conformance(t, adal.Stream,
			formatstest.Cut("adal/cut-stream.ndjson"),
			"adal/error-stream.ndjson",
			"adal/multi-run-stream.ndjson",
			"adal/old-variant-stream.ndjson",
			"adal/refused-stream.ndjson",
			"adal/seed-stream.ndjson",
			"agents/adal/1.8.6/api-error/stream-json/stdout.ndjson",
			"agents/adal/1.8.6/parallel/stream-json/stdout.ndjson",
			"agents/adal/1.8.6/refused/stream-json/stdout.ndjson",
			"agents/adal/1.8.6/subagent/stream-json/stdout.ndjson",
		)
	})
	t.Run(adal.JSON.Name, func(t *testing.T) {
		formatstest.Conformance(t, adal.JSON,
			"agents/adal/1.8.6/api-error/json/stdout.json",
			"agents/adal/1.8.6/parallel/json/stdout.json",
			"agents/adal/1.8.6/refused/json/stdout.json",
			"agents/adal/1.8.6/subagent/json/stdout.json",
		)
	})
	t.Run(adal.Text.Name, func(t *testing.T) {
		formatstest.Conformance(t, adal.Text,
			"agents/adal/1.8.6/edit/text/stdout.txt",
			"agents/adal/1.8.6/large-output/text/stdout.txt",
			"agents/adal/1.8.6/refused/text/stdout.txt",
		)
	})
	t.Run(adal.Session.Name, func(t *testing.T) {
		formatstest.Conformance(t, adal.Session,
			"agents/adal/1.8.6/api-error/json/home/.adal/sessions/conversation_85f6b49e-b27a-47e8-94fc-5f6c8c17945b.jsonl",
			"agents/adal/1.8.6/api-error/stream-json/home/.adal/sessions/conversation_113b5d33-93e8-4d00-a51a-73a299c8e92d.jsonl",
			"agents/adal/1.8.6/api-error/text/home/.adal/sessions/conversation_0b9c7fd4-ff50-4086-b03d-6a51b37217f6.jsonl",
			"agents/adal/1.8.6/parallel/json/home/.adal/sessions/conversation_46e6ac79-9b7e-4b82-a617-f9680e05b677.jsonl",
		)
	})
}
