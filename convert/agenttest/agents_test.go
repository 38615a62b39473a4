package agenttest

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

var (
	refresh = flag.Bool("refresh", false, "run the installed agents and keep their captures under testdata/agents (replacing the old ones)")
	only    = flag.String("agent", "", "run only this agent's pins (claude-code, codex, …), with -refresh or in TestAgents")
)

// parallelAgents is how many agent processes run at once: each is a Node
// process that mostly waits for the server.
const parallelAgents = 6

// slowStarters are the agents of which fewer run at once: AdaL starts a
// backend of its own, which, six at a time on 2 cores, failed to start
// within AdaL's 60 s.
var slowStarters = map[string]chan struct{}{"adal": make(chan struct{}, 2)}

// slot waits until an agent of pin's may start, and then until any agent
// may (sem); it returns the release of both.
func slot(pin Pin, sem chan struct{}) (release func()) {
	own := slowStarters[pin.Agent]
	if own != nil {
		own <- struct{}{}
	}
	sem <- struct{}{}
	return func() {
		<-sem
		if own != nil {
			<-own
		}
	}
}

// TestMain lets as many tests run at once as agent processes may: go test
// runs GOMAXPROCS parallel tests by default (2 on a 2-core machine), and
// agents that wait (Qwen Code's seven attempts at a failing API take 80
// seconds) would hold both. A -test.parallel on the command line wins.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if p := flag.Lookup("test.parallel"); p != nil && !set {
		if n, err := strconv.Atoi(p.Value.String()); err == nil && n < parallelAgents {
			p.Value.Set(strconv.Itoa(parallelAgents))
		}
	}
	os.Exit(m.Run())
}

// TestAgents runs every scenario with every pinned agent that is installed,
// in every output mode, and checks each capture. In CI an agent that is
// not installed fails the test; elsewhere it skips with a message. With
// -refresh the captures replace those kept under testdata/agents.
func TestAgents(t *testing.T) {
	pins, err := Pins()
	if err != nil {
		t.Fatal(err)
	}
	sem := make(chan struct{}, parallelAgents)
	var once sync.Once
	for _, pin := range pins {
		fam, ok := Families[pin.Agent]
		if !ok || (*only != "" && pin.Agent != *only) {
			continue
		}
		t.Run(pin.String(), func(t *testing.T) {
			t.Parallel()
			if pin.Path() == "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed in %s: .ci/agents must install every pin", pin, Cache())
				}
				once.Do(func() {
					t.Logf("agents not installed in %s: run .ci/agents to run them (the kept captures are checked by TestCaptures)", Cache())
				})
				t.Skipf("%s is not installed", pin)
			}
			for _, mode := range fam.Modes(pin) {
				for _, name := range ScenarioNames {
					sc, ok := NewScenario(name, fam.Tools(pin))
					if !ok {
						continue
					}
					t.Run(mode.Name+"/"+name, func(t *testing.T) {
						t.Parallel()
						defer slot(pin, sem)()
						dir := filepath.Join(t.TempDir(), "capture")
						if *refresh {
							dir = filepath.Join(Root(), "testdata", "agents", pin.Agent, pin.Version, name, mode.Name)
							if err := os.RemoveAll(dir); err != nil {
								t.Fatal(err)
							}
						}
						c, err := Run(context.Background(), pin, fam, mode, sc, t.TempDir(), dir)
						if err != nil {
							t.Fatal(err)
						}
						Check(t, c)
					})
				}
			}
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
			Check(t, c)
		})
	}
}
