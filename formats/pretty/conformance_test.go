package pretty_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/pretty"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(pretty.Dialect.Name, func(t *testing.T) {
		formatstest.Conformance(t, pretty.Dialect)
	})
}
