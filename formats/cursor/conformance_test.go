package cursor_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/cursor"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(cursor.Stream.Name, func(t *testing.T) {
		formatstest.Conformance(t, cursor.Stream,
			"cursor/takopi-stream-success.jsonl",
		)
	})
}
