package agenttest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
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

// BenchmarkAgentTests measures the agents' tests whole: TestAgents and
// TestResume, every scenario of every installed pin in every mode and the
// resume matrix, run by this test binary as go test runs them
// (go test ./convert/agenttest -run '^$' -bench AgentTests -benchtime 1x).
// It reports the seconds they take (s/tests), and the CPU time the tests
// and the agents took (cpu-s/tests).
func BenchmarkAgentTests(b *testing.B) {
	pins, err := Pins()
	if err != nil {
		b.Fatal(err)
	}
	if !slices.ContainsFunc(pins, func(p Pin) bool { return p.Path() != "" }) {
		b.Skip("no agent is installed: run .ci/agents")
	}
	args := []string{"-test.run", "^Test(Agents|Resume)$", "-test.timeout", "60m"}
	if *only != "" {
		args = append(args, "-agent", *only)
	}
	var wall, cpu time.Duration
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Dir = filepath.Join(Root(), "convert", "agenttest")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("the agents' tests fail (%v):\n%s", err, tail(out.Bytes()))
		}
		wall += time.Since(start)
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/tests")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/tests")
}
