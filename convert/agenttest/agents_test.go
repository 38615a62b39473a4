package agenttest

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats/formatstest"
)

var (
	refresh = flag.Bool("refresh", false, "run the installed agents and keep their captures under testdata/agents (replacing the old ones)")
	only    = flag.String("agent", "", "run only this agent's pins (claude-code, codex, …), with -refresh or in TestAgents")
)

// TestMain lets every test of the agents start at once, to wait for its
// slot in the pool of agent runs (agents), which hands the slots the
// longest run first: go test runs GOMAXPROCS parallel tests by default (2
// on a 2-core machine), and would start them in no order. A -test.parallel
// on the command line wins.
func TestMain(m *testing.M) {
	formatstest.SetTestGC()
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if p := flag.Lookup("test.parallel"); p != nil && !set {
		p.Value.Set(strconv.Itoa(1 << 12))
	}
	os.Exit(m.Run())
}

// TestAgents runs every scenario with every pinned agent that is installed,
// in every output mode, and checks each capture. In CI an agent that is
// not installed fails the test; elsewhere it skips with a message. With
// -refresh the captures replace those kept under testdata/agents.
//
// The runs are queued the longest expected first (expectedSeconds), and
// run at the same time as TestResume's, parallelAgents at once, so that
// no long run starts last.
func TestAgents(t *testing.T) {
	needTime(t)
	if !*refresh {
		t.Parallel() // with TestResume, which, after a refresh, resumes the new captures
	}
	pins, err := Pins()
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		pin  Pin
		fam  Family
		mode Mode
		sc   Scenario
		cost float64
	}
	var jobs []job
	var missing []Pin
	for _, pin := range pins {
		fam, ok := Families[pin.Agent]
		if !ok || (*only != "" && pin.Agent != *only) {
			continue
		}
		if pin.Path() == "" {
			missing = append(missing, pin)
			continue
		}
		for _, mode := range fam.Modes(pin) {
			for _, name := range ScenarioNames {
				if sc, ok := NewScenario(name, fam.Tools(pin)); ok {
					jobs = append(jobs, job{pin, fam, mode, sc, expectedSeconds(pin, mode, sc)})
				}
			}
		}
	}
	for _, pin := range missing {
		t.Run(pin.String(), func(t *testing.T) {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed in %s: .ci/agents must install every pin", pin, Cache())
			}
			t.Logf("agents not installed in %s: run .ci/agents to run them (the kept captures are checked by TestCaptures)", Cache())
			t.Skipf("%s is not installed", pin)
		})
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(b.cost, a.cost) })
	var times timings
	start := time.Now()
	t.Cleanup(func() { times.report(t, start) })
	for _, j := range jobs {
		pin, fam, mode, sc := j.pin, j.fam, j.mode, j.sc
		t.Run(pin.String()+"/"+mode.Name+"/"+sc.Name, func(t *testing.T) {
			tk := agents.ticket(pin.Agent, j.cost)
			defer tk.release()
			t.Parallel()
			queued := time.Now()
			tk.wait()
			began := time.Now()
			dir := filepath.Join(t.TempDir(), "capture")
			if *refresh {
				dir = filepath.Join(Root(), "testdata", "agents", pin.Agent, pin.Version, sc.Name, mode.Name)
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Run(context.Background(), pin, fam, mode, sc, t.TempDir(), dir)
			ran := time.Now()
			tk.release()
			if err != nil {
				t.Fatal(err)
			}
			check(t, c)
			times.add(t, timing{pin.String() + " " + mode.Name + " " + sc.Name, began.Sub(queued), ran.Sub(began), c.CPU, time.Since(ran)})
		})
	}
}

// TestCaptures checks every capture kept under testdata/agents, without
// the agents.
func TestCaptures(t *testing.T) {
	dirs, err := Captures()
	if err != nil {
		t.Fatal(err)
	}
	if *refresh {
		t.Skip("-refresh checks the new captures in TestAgents")
	}
	for _, dir := range dirs {
		rel, _ := filepath.Rel(filepath.Join(Root(), "testdata", "agents"), dir)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			t.Parallel()
			c, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			check(t, c)
		})
	}
}

// expectedSeconds is about how long a run of sc by pin in mode takes:
// what orders the runs, the longest first. It need not be exact, only
// rank the runs; the figures are from the log of the runs that go test -v
// prints at the end (on 2 busy cores). A run of an agent of fewer slots
// than the pool's (AdaL's) counts for as many more, so that its runs
// start first and go on back to back: they are the longest chain.
func expectedSeconds(pin Pin, mode Mode, sc Scenario) float64 {
	s := startSeconds[pin.Agent]
	switch sc.Name {
	case "api-error", "rate-limit":
		s += retrySeconds[pin.Agent+"/"+sc.Name]
	case "resume", "resume-thinking", "loop":
		s *= 2 // two processes, or nine turns
	case "subagent":
		s *= 1.5
	}
	if pin.Agent == "gemini-cli" && strings.HasPrefix(pin.Version, "0.20.") || pin.Agent == "claude-code" && !strings.HasPrefix(pin.Version, "2.1.") {
		s *= 2 // slower to start, or to end, than their newer versions
	}
	return s * classShare(pin.Agent)
}

// resumeSeconds is expectedSeconds of a run of the resume matrix: one
// process.
func resumeSeconds(pin Pin) float64 {
	return startSeconds[pin.Agent] * classShare(pin.Agent)
}

// classShare is how many of the pool's slots one slot of the agent's class
// stands for.
func classShare(agent string) float64 {
	if l, ok := classLimits[agent]; ok && l < parallelAgents {
		return float64(parallelAgents) / float64(l)
	}
	return 1
}

// startSeconds is about how long one process of each agent takes, and
// retrySeconds how much longer the agents wait in the scenarios of
// failures, retrying with their own backoff (Qwen Code's seven attempts,
// 1.5 s to 30 s apart, at a 529; Gemini CLI's 5 s and 10 s).
var (
	startSeconds = map[string]float64{"claude-code": 4, "codex": 2, "gemini-cli": 12, "qwen-code": 20, "adal": 20,
		"opencode": 26, "copilot": 8, "pi": 7}
	retrySeconds = map[string]float64{"qwen-code/api-error": 80, "gemini-cli/api-error": 15, "gemini-cli/rate-limit": 15,
		"copilot/api-error": 30, "copilot/rate-limit": 60, "opencode/api-error": 40, "opencode/rate-limit": 40}
)

// wholeRun is about how long TestAgents and TestResume take together with
// every pin installed, on 2 cores.
const wholeRun = 30 * time.Minute

// needTime stops the agents' tests at once, with what to do, when every
// pin is to run and go test's deadline comes sooner than they can end (its
// default is 10 minutes): they would be cut by a panic that names none of
// it. In CI that is a failure; elsewhere the test skips.
func needTime(t *testing.T) {
	d, ok := t.Deadline()
	if !ok || *only != "" || time.Until(d) >= wholeRun {
		return
	}
	msg := fmt.Sprintf("the agents' tests take about %v with every pin installed, and go test's deadline is in %v: run them with -timeout 45m (or one agent with -agent NAME)",
		wholeRun, time.Until(d).Round(time.Second))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
