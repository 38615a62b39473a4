package atif_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/atif"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(atif.Dialect.Name, func(t *testing.T) {
		formatstest.Conformance(t, atif.Dialect,
			"atif/harbor-openhands-hello-world.trajectory.json",
			"atif/harbor-terminus-2-context-summarization.trajectory.json",
			"atif/harbor-terminus-2-linear-history.trajectory.json",
			"atif/harbor-terminus-2-timeout.trajectory.json",
			"atif/nemo-exmp01-atif-v1.6.json",
			"atif/nemo-exmp02-atif.json",
			"atif/nemo-exmp06-atif.json",
			"atif/nemo-hermes-native-trajectory.json",
			"atif/rfc-0001-example.json",
		)
	})
}
