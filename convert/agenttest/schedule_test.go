package agenttest

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// parallelAgents is how many agent processes run at once. Once started,
// an agent mostly waits: for the server's turns, for its own retries
// after a failure. Its CPU is its start (a Node process compiles megabytes
// of JavaScript), of which fewer go at once (Starts: one more than the
// cores; with three a core, AdaL's back end, on 2 cores busy with other
// work too, failed to start within AdaL's 60 s).
const parallelAgents = 12

// classLimits are the agents of which fewer run at once: AdaL starts a
// back end of its own, which fails to start within AdaL's 60 s when the
// cores are busy (six at a time on 2 cores; three at a time on 2 cores
// busy with other work).
var classLimits = map[string]int{"adal": 2}

func init() { Starts = make(chan struct{}, runtime.GOMAXPROCS(0)+1) }

// agents hands the slots of the agent runs of TestAgents and TestResume,
// which run at the same time; checks is the slots of the checks, which
// take CPU and not an agent's slot.
var (
	agents = newPool(parallelAgents, classLimits)
	checks = make(chan struct{}, runtime.GOMAXPROCS(0))
)

// check runs Check(t, c) in a slot of the checks.
func check(t *testing.T, c *Capture) {
	t.Helper()
	checks <- struct{}{}
	defer func() { <-checks }()
	Check(t, c)
}

// pool gives at most n slots at once, and a free slot to the waiting
// ticket of the largest cost (the run expected to take longest, so that
// no long run starts last and makes a tail); a class of tickets (an
// agent's) may have a limit of its own.
type pool struct {
	mu      sync.Mutex
	free    int
	limits  map[string]int
	running map[string]int
	queued  []*ticket
	seq     int
	started bool // once every queued ticket's test has come to wait, or one waited a second
}

// ticket is a place in a pool's queue.
type ticket struct {
	p       *pool
	class   string
	cost    float64
	seq     int
	waiting bool // its test waits for it
	held    bool
	ready   chan struct{}
	once    sync.Once
}

func newPool(n int, limits map[string]int) *pool {
	return &pool{free: n, limits: limits, running: map[string]int{}}
}

// ticket queues a run of class expected to take cost. A test takes it
// before t.Parallel, so that every run is queued before any parallel test
// starts: the first slots go to the longest runs, not to the tests that
// happen to start first.
func (p *pool) ticket(class string, cost float64) *ticket {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	tk := &ticket{p: p, class: class, cost: cost, seq: p.seq, ready: make(chan struct{})}
	p.queued = append(p.queued, tk)
	return tk
}

// hand gives the free slots to the waiting tickets of the largest costs
// whose class has room (p.mu held). Until every queued ticket's test
// waits (the parallel tests start all at once), it gives none.
func (p *pool) hand() {
	if !p.started && slices.ContainsFunc(p.queued, func(tk *ticket) bool { return !tk.waiting }) {
		return
	}
	p.started = true
	for p.free > 0 {
		best := -1
		for i, tk := range p.queued {
			if !tk.waiting {
				continue
			}
			if l, ok := p.limits[tk.class]; ok && p.running[tk.class] >= l {
				continue
			}
			if b := best; b < 0 || tk.cost > p.queued[b].cost || tk.cost == p.queued[b].cost && tk.seq < p.queued[b].seq {
				best = i
			}
		}
		if best < 0 {
			return
		}
		tk := p.queued[best]
		p.queued = slices.Delete(p.queued, best, best+1)
		p.free--
		p.running[tk.class]++
		tk.held = true
		close(tk.ready)
	}
}

// wait blocks until the ticket has its slot. A test that waited a second
// starts the pool even if not every queued test came (a -parallel on the
// command line lets fewer tests run at once than are queued).
func (tk *ticket) wait() {
	p := tk.p
	p.mu.Lock()
	tk.waiting = true
	p.hand()
	p.mu.Unlock()
	select {
	case <-tk.ready:
		return
	case <-time.After(time.Second):
	}
	p.mu.Lock()
	p.started = true
	p.hand()
	p.mu.Unlock()
	<-tk.ready
}

// release gives the slot back, or leaves the queue (a test that ended
// before its run).
func (tk *ticket) release() {
	tk.once.Do(func() {
		p := tk.p
		p.mu.Lock()
		defer p.mu.Unlock()
		if tk.held {
			p.free++
			p.running[tk.class]--
		} else if i := slices.Index(p.queued, tk); i >= 0 {
			p.queued = slices.Delete(p.queued, i, i+1)
		}
		p.hand()
	})
}

// timings are how long each run of a test waited for its slot, ran its
// agent (and how much CPU the agent took) and checked what the agent
// left: the log of where the time of the agents' tests goes.
type timings struct {
	mu   sync.Mutex
	runs []timing
}

type timing struct {
	name                   string
	wait, run, cpu, checks time.Duration
}

func (ts *timings) add(t *testing.T, tm timing) {
	t.Logf("waited %.1fs, ran %.1fs (agent CPU %.1fs), checked %.1fs", tm.wait.Seconds(), tm.run.Seconds(), tm.cpu.Seconds(), tm.checks.Seconds())
	ts.mu.Lock()
	ts.runs = append(ts.runs, tm)
	ts.mu.Unlock()
}

// report logs the runs, the longest first.
func (ts *timings) report(t *testing.T, start time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.runs) == 0 {
		return
	}
	slices.SortFunc(ts.runs, func(a, b timing) int { return int(b.run - a.run) })
	var b strings.Builder
	var run, cpu, checks time.Duration
	for _, r := range ts.runs {
		run += r.run
		cpu += r.cpu
		checks += r.checks
		fmt.Fprintf(&b, "\n  %6.1fs run %6.1fs cpu %6.1fs checks %6.1fs wait  %s", r.run.Seconds(), r.cpu.Seconds(), r.checks.Seconds(), r.wait.Seconds(), r.name)
	}
	t.Logf("%d runs in %.0fs: %.0fs of agents' runs (%.0fs of their CPU), %.0fs of checks; the longest first:%s",
		len(ts.runs), time.Since(start).Seconds(), run.Seconds(), cpu.Seconds(), checks.Seconds(), b.String())
}
