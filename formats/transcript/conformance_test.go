package transcript_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/transcript"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(transcript.Markdown.Name, func(t *testing.T) {
		formatstest.Conformance(t, transcript.Markdown)
	})
	t.Run(transcript.HTML.Name, func(t *testing.T) {
		formatstest.Conformance(t, transcript.HTML)
	})
}
