package agenttest

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkAgents measures how long one scenario takes each installed pin,
// in its first output mode, from the agent's start to its exit: what the
// agents' tests spend per capture (go test -run '^$' -bench Agents).
func BenchmarkAgents(b *testing.B) {
	pins, err := Pins()
	if err != nil {
		b.Fatal(err)
	}
	for _, pin := range pins {
		fam, ok := Families[pin.Agent]
		if !ok || (*only != "" && pin.Agent != *only) {
			continue
		}
		b.Run(pin.String(), func(b *testing.B) {
			if pin.Path() == "" {
				b.Skipf("%s is not installed: run .ci/agents", pin)
			}
			sc, _ := NewScenario("text-shell", fam.Tools(pin))
			mode := fam.Modes(pin)[0]
			for i := 0; i < b.N; i++ {
				tmp := b.TempDir()
				if _, err := Run(context.Background(), pin, fam, mode, sc, tmp, filepath.Join(tmp, "capture")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
