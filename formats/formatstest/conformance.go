package formatstest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// Conformance checks that dialect d keeps the contract that the formats
// package documentation states for readers and writers. Every row of the
// registry has a test that calls it (package convert checks that), with
// the fixtures of the dialect: paths under the repository's testdata/
// ("codex/turn-failed.jsonl"), or else under the test's directory
// ("testdata/export.json").
//
// If d reads, each fixture is read and its events checked against the
// reader's rules. If d writes (and delivers to the output, not elsewhere),
// the events of every fixture, and a stream of every kind that the check
// makes itself, are written as the pipeline gives them, and the output is
// checked against the writer's rules; if d also reads, the output must
// read back, and keep the reader's rules. Each failure names the fixture,
// the event (its index, kind and line) and the rule, and says what to do.
func Conformance(t *testing.T, d formats.Dialect, fixtures ...string) {
	t.Helper()
	ConformanceOpen(t, d, nil, fixtures...)
}

// Cut names a fixture whose stream is cut short: its last run has no end,
// and the reader rightly leaves it open (the pipeline closes it as a cut
// run). Every other fixture ends its last run: a reader of a dialect that
// prints no run end ends a finished run at EOF (formats.EndAtEOF).
func Cut(fixture string) string { return cutPrefix + fixture }

const cutPrefix = "cut:"

// Open is a rule of the contract that a dialect is known to break, and
// why: a named, open failure. ConformanceOpen logs its breaches instead
// of failing, and fails once the rule holds, so that the entry goes when
// the breach is fixed.
type Open struct {
	Rule string // as the failure names it: "usage", "read back: times"
	Why  string
}

// ConformanceOpen is Conformance of a dialect that breaks the rules in
// open, for the reasons given.
func ConformanceOpen(t *testing.T, d formats.Dialect, open []Open, fixtures ...string) {
	t.Helper()
	breaches := map[string]int{}
	report := func(where string, p Problem) {
		t.Helper()
		for _, o := range open {
			if o.Rule == p.Rule {
				breaches[o.Rule]++
				t.Logf("conformance of %s: %s: %s (open: %s)", d.Name, where, p, o.Why)
				return
			}
		}
		t.Errorf("conformance of %s: %s: %s", d.Name, where, p)
	}
	defer func() {
		t.Helper()
		for _, o := range open {
			if breaches[o.Rule] == 0 && !t.Failed() {
				t.Errorf("conformance of %s: rule %q is declared open (%s), but it holds: strike it off", d.Name, o.Rule, o.Why)
			}
		}
	}()
	if d.Name == "" {
		t.Fatal("conformance: the dialect has no Name")
	}
	if d.NewReader == nil && d.NewWriter == nil {
		t.Fatalf("conformance of %s: the row has neither NewReader nor NewWriter", d.Name)
	}
	if d.NewReader != nil && len(fixtures) == 0 {
		t.Errorf("conformance of %s: it reads, and its conformance test names no fixture: put an input of the dialect under testdata/<dir>/ and pass \"<dir>/<file>\"", d.Name)
	}
	if d.NewReader == nil && len(fixtures) > 0 {
		t.Errorf("conformance of %s: it does not read (NewReader is nil), but fixtures are given", d.Name)
	}
	root := repoRoot(t)
	streams := map[string][]*formats.Event{}
	var names []string
	for _, f := range fixtures {
		f, cut := strings.CutPrefix(f, cutPrefix)
		where := "fixture " + f
		data, err := os.ReadFile(filepath.Join(root, "testdata", filepath.FromSlash(f)))
		if errors.Is(err, fs.ErrNotExist) {
			// A fixture of the package's own testdata/.
			data, err = os.ReadFile(filepath.FromSlash(f))
		}
		if err != nil {
			t.Errorf("conformance of %s: %s: %v", d.Name, where, err)
			continue
		}
		if d.Detect != nil && d.Detect(detectHead(data)) == 0 {
			report(where, Problem{Index: -1, Rule: "detect", Msg: "Detect gives 0 for its head: a dialect with a Detect recognises its own inputs"})
		}
		evs, bad, err := ReadAll(d, data)
		if err != nil {
			report(where, Problem{Index: -1, Rule: "read", Msg: err.Error() + ": Next ends with io.EOF, and fails only on a malformed record (a *LineError), after which it goes on"})
			continue
		}
		if len(bad) > 0 {
			// --lenient skips them; the pipeline skips what comes before
			// a stream (a banner).
			t.Logf("conformance of %s: %s: %d malformed records, skipped (the first: %v)", d.Name, where, len(bad), bad[0])
		}
		for _, p := range CheckReader(d, evs) {
			report(where, p)
		}
		switch at := lastRunOpen(evs); {
		case at >= 0 && !cut:
			report(where, Problem{Index: at, Kind: evs[at].Kind, Line: evs[at].Source.LineNo, Rule: "eof",
				Msg: "the fixture's last run, from this event on, has no RunEnd: a reader ends a run that its source showed finished (its last turn or its agent ended, or an error ended it) with formats.EndAtEOF; if the fixture's stream is cut short, pass it as formatstest.Cut(\"" + f + "\")"})
		case at < 0 && cut:
			report(where, Problem{Index: -1, Rule: "eof", Msg: "it is passed as formatstest.Cut, but its last run ends: pass it plainly"})
		}
		if fig, _, err := ReadFigures(d, data); err != nil {
			report(where, Problem{Index: -1, Rule: "figures", Msg: "read with ReadOptions.Figures: " + err.Error()})
		} else {
			for _, p := range CheckFigures(evs, fig) {
				report(where, p)
			}
		}
		streams[f] = evs
		names = append(names, f)
	}
	if d.NewWriter == nil {
		return
	}
	if d.Remote {
		t.Logf("conformance of %s: its writer delivers elsewhere (Remote): its writer's rules are not checked here", d.Name)
		return
	}
	const own = "the check's own stream (EveryKind)"
	streams[own] = EveryKind()
	names = append(names, own)
	for _, name := range names {
		for _, p := range CheckWriter(d, streams[name]) {
			report("writing the events of "+name, p)
		}
	}
}

// CheckFigures checks the events read for their figures
// (ReadOptions.Figures) against those read whole: the same events, with
// the same kinds, agents, statuses, calls' ids, statuses, errors and exit
// codes, times, texts, usage and responses. What a reader may leave out
// for the figures, it may: a successful call's output, and the report of
// a subagent (AgentEnd's text), which is taken from it.
func CheckFigures(all, figures []*formats.Event) []Problem {
	var ps problems
	if len(all) != len(figures) {
		return []Problem{{Index: -1, Rule: "figures", Msg: fmt.Sprintf("%d events read for the figures, %d read whole: ReadOptions.Figures leaves out only what a successful call's output says, never an event", len(figures), len(all))}}
	}
	for i, f := range figures {
		a := all[i]
		same := f.Kind == a.Kind && f.Agent == a.Agent && f.Status == a.Status && f.Time.Equal(a.Time) &&
			f.Call.ID == a.Call.ID && f.Call.Status == a.Call.Status && f.Call.Error == a.Call.Error && f.Call.ExitCode == a.Call.ExitCode &&
			f.Usage == a.Usage && f.Response == a.Response && (f.Text == a.Text || f.Kind == formats.AgentEnd)
		if !same {
			ps.add(i, a, "figures", "read for the figures it is %v %s (call %q %s %q), read whole %v %s (call %q %s %q): ReadOptions.Figures may leave out a successful call's output, and nothing else",
				f.Kind, f.Status, f.Call.ID, f.Call.Status, f.Call.Error, a.Kind, a.Status, a.Call.ID, a.Call.Status, a.Call.Error)
			continue
		}
		if fo, ao := f.Call.Output.Decoded(), a.Call.Output.Decoded(); fo != ao && (fo != "" || a.Kind != formats.ToolResult || a.Call.Status != formats.Completed) {
			ps.add(i, a, "figures", "read for the figures the call's output is %q, read whole %q: ReadOptions.Figures may leave out a successful call's output (\"\"), not change it", fo, ao)
		}
	}
	return ps.done()
}

// detectHead is the head of data that detection sees: the pipeline skips
// lines that are not JSON before a stream (a banner, comments).
func detectHead(data []byte) []byte {
	head := data[:min(len(data), formats.DetectSize)]
	for rest := head; len(rest) > 0; {
		line, after, _ := bytes.Cut(rest, []byte{'\n'})
		if t := bytes.TrimSpace(line); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			if d := len(head) - len(rest); d > 0 {
				return data[d:min(len(data), d+formats.DetectSize)]
			}
			break
		}
		rest = after
	}
	return head
}

// repoRoot is the directory of go.mod, above the test's directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("conformance: no go.mod above the test's directory")
		}
		dir = up
	}
}

// Problem is one breach of the contract: where, which rule, and what to do.
type Problem struct {
	// Index is the event's index in the stream, -1 for the whole stream.
	Index int
	Kind  formats.Kind
	Line  int
	Rule  string
	Msg   string
}

func (p Problem) String() string {
	where := "the stream"
	if p.Index >= 0 {
		where = fmt.Sprintf("event %d (%s", p.Index, p.Kind)
		if p.Line > 0 {
			where += fmt.Sprintf(", line %d", p.Line)
		}
		where += ")"
	}
	return fmt.Sprintf("%s: rule %q: %s", where, p.Rule, p.Msg)
}

// maxPerRule bounds the problems reported of one rule in one stream.
const maxPerRule = 5

type problems struct {
	list  []Problem
	count map[string]int
}

func (ps *problems) add(i int, e *formats.Event, rule, format string, args ...any) {
	if ps.count == nil {
		ps.count = map[string]int{}
	}
	ps.count[rule]++
	if ps.count[rule] > maxPerRule {
		return
	}
	p := Problem{Index: i, Rule: rule, Msg: fmt.Sprintf(format, args...)}
	if e != nil {
		p.Kind, p.Line = e.Kind, e.Source.LineNo
	}
	ps.list = append(ps.list, p)
}

func (ps *problems) done() []Problem {
	for rule, n := range ps.count {
		if n > maxPerRule {
			ps.list = append(ps.list, Problem{Index: -1, Rule: rule, Msg: fmt.Sprintf("%d more of this rule", n-maxPerRule)})
		}
	}
	return ps.list
}

// segment is a stretch of one agent's events between two inputs of its
// model: what one request answered.
type segment struct {
	first int // its first output or Usage event, -1 for none
	out   bool
	usage int
	// unrecorded counts its Usage events marked Unrecorded: of a request
	// whose output the source did not record.
	unrecorded int
	// calls are its ToolCalls' ids; text says it had output other than
	// calls. A request whose only output is calls that end refused needs
	// no Usage (see the formats package documentation).
	calls []string
	text  bool
}

// conformingCall is what CheckReader follows of a call.
type conformingCall struct {
	agent        string
	done, denied bool
}

// refusedOnly says whether a request's only output was calls that ended
// refused (or, read back, that the source gave only as refused: bare).
func refusedOnly(sg segment, calls map[string]*conformingCall, bare map[string]bool) bool {
	if sg.text || len(sg.calls) == 0 {
		return false
	}
	for _, id := range sg.calls {
		if c := calls[id]; !bare[id] && (c == nil || !c.denied) {
			return false
		}
	}
	return true
}

// conformingAgent is what CheckReader follows of an agent.
type conformingAgent struct {
	started, ended bool
	last           time.Time
	seg            segment
	segs           []segment
	usages         int
}

func (a *conformingAgent) endSegment() {
	if a.seg.first >= 0 {
		a.segs = append(a.segs, a.seg)
	}
	a.seg = segment{first: -1}
}

// output kinds are what a model request answers with.
func output(k formats.Kind) bool {
	switch k {
	case formats.Message, formats.TextDelta, formats.ThinkingDelta, formats.ToolCall:
		return true
	}
	return false
}

// CheckReader checks the events a reader of d gave for one input against
// the reader's rules (see the formats package documentation).
func CheckReader(d formats.Dialect, evs []*formats.Event) []Problem {
	return checkReader(d, evs, nil)
}

// refusedBare are the ids of the calls that evs give only as refused: a
// Denied ToolResult with no ToolCall before it.
func refusedBare(evs []*formats.Event) map[string]bool {
	called, bare := map[string]bool{}, map[string]bool{}
	for _, e := range evs {
		switch {
		case e.Kind == formats.ToolCall:
			called[e.Call.ID] = true
		case e.Kind == formats.ToolResult && e.Call.Status == formats.Denied && e.Call.ID != "" && !called[e.Call.ID]:
			bare[e.Call.ID] = true
		}
	}
	return bare
}

// checkReader is CheckReader of events read back from a writer's output,
// whose source gave the calls in bare only as refused: the writer may have
// had to write each in a request of its own, without usage, and a refusal
// as the format can say it (an error, where it has no refusal).
func checkReader(d formats.Dialect, evs []*formats.Event, bare map[string]bool) []Problem {
	var ps problems
	records := false // the reader gives its records (Source.Line)
	for _, e := range evs {
		if e.Source.Line != nil {
			records = true
			break
		}
	}
	type call = conformingCall
	type agentState = conformingAgent
	var (
		opens     bool // the reader gave a RunStart
		afterEnd  bool // a RunEnd came and no RunStart since
		carried   bool // an event carried a record
		calls     map[string]*call
		agents    map[string]*agentState
		lastEvent = -1
	)
	// endRun checks where the run's Usage events went: an agent that
	// gives its requests' usage gives each request's, in the stretch of
	// events between two inputs of its model (a prompt, a call's result)
	// that holds the request's output.
	endRun := func() {
		for id, a := range agents {
			a.endSegment()
			if a.usages == 0 {
				continue
			}
			for _, sg := range a.segs {
				switch {
				case sg.out && sg.usage == 0 && !refusedOnly(sg, calls, bare):
					ps.add(sg.first, evs[sg.first], "usage", "agent %q gives its requests' usage, but the request answered here has no Usage between the model's input before it and the next (a prompt, a call's result): a Usage goes with its request's output, not with the next request's, and the last request's is not dropped", id)
				case !sg.out && sg.usage > sg.unrecorded:
					ps.add(sg.first, evs[sg.first], "usage", "agent %q: a Usage with no output of its request between the model's input before it and the next (a prompt, a call's result): it belongs with its request's messages and calls, before their results", id)
				}
			}
		}
	}
	reset := func() {
		calls = map[string]*call{}
		agents = map[string]*agentState{"": {started: true, seg: segment{first: -1}}}
	}
	reset()
	for i, e := range evs {
		// Source.
		if e.Source.Dialect != d.Name {
			ps.add(i, e, "source", "Source.Dialect is %q; a reader names its dialect (ReadOptions.Dialect) in every event", e.Source.Dialect)
		}
		if e.Kind == formats.KindUnknown || e.Kind.String() == fmt.Sprintf("kind(%d)", e.Kind) {
			ps.add(i, e, "kind", "the event has no Kind of the model")
		}
		if e.Synthetic {
			ps.add(i, e, "synthetic", "Synthetic marks what the pipeline makes; an event the reader makes is Source.Made")
		}
		switch {
		case e.Source.Made && (e.Source.Line != nil || e.Source.Continued):
			ps.add(i, e, "made", "a Made event has no record: Line is nil and Continued false")
		case e.Source.Continued && e.Source.Line != nil:
			ps.add(i, e, "continued", "a Continued event's record went with an earlier event: its Line is nil")
		case e.Source.Continued && !carried:
			ps.add(i, e, "continued", "Continued, but no earlier event carried a record: an event made before the first record is Source.Made")
		case records && e.Source.Line == nil && !e.Source.Continued && !e.Source.Made:
			ps.add(i, e, "made", "the reader gives its records (Source.Line), but this event has none and does not say why: mark it Continued (an earlier event carried its record) or Made (it has none)")
		}
		if e.Source.Line != nil {
			carried = true
		}
		// Counts and times.
		u := e.Usage
		if bad := u.Negative(); len(bad) > 0 {
			ps.add(i, e, "counts", "usage below zero (%s); no count is negative: leave a count the source does not give unknown", strings.Join(bad, ", "))
		}
		if e.Duration < 0 {
			ps.add(i, e, "counts", "a negative duration")
		}
		// Runs.
		switch e.Kind {
		case formats.RunStart:
			opens, afterEnd = true, false
			endRun()
			reset()
			lastEvent = i
			continue
		case formats.RunEnd:
			if afterEnd && opens {
				ps.add(i, e, "runs", "a second RunEnd after the run ended, with no RunStart between")
			}
			afterEnd = true
			lastEvent = i
			endRun()
			reset()
			continue
		case formats.Raw:
			continue
		}
		if afterEnd && opens {
			ps.add(i, e, "runs", "a %s after the run's RunEnd (event %d) and before any RunStart: the pipeline would open a run of its own for it; put it inside its run, or open the next run first", e.Kind, lastEvent)
			afterEnd = false
		}
		// Agents.
		a := agents[e.Agent]
		switch e.Kind {
		case formats.AgentStart:
			if e.Agent == "" {
				ps.add(i, e, "agents", "an AgentStart without an Agent id: the main agent is the run itself")
				break
			}
			if a != nil && a.started && !a.ended {
				ps.add(i, e, "agents", "agent %q starts again before it ended", e.Agent)
			}
			if p := e.AgentInfo.Parent; p != "" && (agents[p] == nil || !agents[p].started) {
				ps.add(i, e, "agents", "agent %q names parent %q, which did not start in this run", e.Agent, p)
			}
			agents[e.Agent] = &agentState{started: true, seg: segment{first: -1}}
			continue
		case formats.AgentEnd:
			if a == nil || !a.started || e.Agent == "" {
				ps.add(i, e, "agents", "agent %q ends, but no AgentStart started it in this run", e.Agent)
			} else if a.ended {
				ps.add(i, e, "agents", "agent %q ends twice", e.Agent)
			} else {
				a.ended = true
			}
			continue
		}
		if e.Agent != "" && (a == nil || !a.started) {
			ps.add(i, e, "agents", "an event of agent %q, which no AgentStart of this run started: emit the AgentStart first", e.Agent)
			a = &agentState{started: true, seg: segment{first: -1}}
			agents[e.Agent] = a
		} else if a.ended {
			ps.add(i, e, "agents", "an event of agent %q after its AgentEnd", e.Agent)
		}
		// Times of one agent do not go back.
		if !e.Time.IsZero() {
			if !a.last.IsZero() && e.Time.Before(a.last) {
				ps.add(i, e, "times", "its time %s is before the time of an earlier event of the same agent (%s): give the source's times in order, or none", e.Time.Format(time.RFC3339Nano), a.last.Format(time.RFC3339Nano))
			}
			if e.Time.After(a.last) {
				a.last = e.Time
			}
		}
		// Calls.
		switch e.Kind {
		case formats.ToolCall:
			if c := calls[e.Call.ID]; e.Call.ID != "" && c != nil && !c.done {
				ps.add(i, e, "calls", "call id %q is used again while its call is open", e.Call.ID)
			}
			if e.Call.ID != "" {
				calls[e.Call.ID] = &call{agent: e.Agent}
			}
		case formats.ToolResult:
			c := calls[e.Call.ID]
			switch {
			case e.Call.ID == "":
			case c == nil && e.Call.Status != formats.Denied:
				ps.add(i, e, "calls", "a result for call %q, which no ToolCall of this run started: emit the call first (only a refused call, Denied, may have no ToolCall)", e.Call.ID)
			case c == nil:
			case c.done:
				ps.add(i, e, "calls", "a second result for call %q", e.Call.ID)
			case c.agent != e.Agent:
				ps.add(i, e, "calls", "the result of call %q is of agent %q, its call of agent %q", e.Call.ID, e.Agent, c.agent)
			default:
				c.done = true
				c.denied = e.Call.Status == formats.Denied
			}
		}
		// Usage: in the stretch of its request's output.
		switch {
		case output(e.Kind):
			a.seg.out = true
			if e.Kind == formats.ToolCall {
				a.seg.calls = append(a.seg.calls, e.Call.ID)
			} else {
				a.seg.text = true
			}
			if a.seg.first < 0 {
				a.seg.first = i
			}
		case e.Kind == formats.Usage && !e.Aggregate:
			a.seg.usage++
			a.usages++
			if e.Unrecorded {
				a.seg.unrecorded++
			}
			if a.seg.first < 0 {
				a.seg.first = i
			}
		case e.Kind == formats.ToolResult || e.Kind == formats.UserMessage:
			a.endSegment()
		}
	}
	endRun()
	return ps.done()
}

// EveryKind is a stream of two runs that uses every kind of event: a
// prompt, a turn with thinking, text and a call, a subagent with a call
// of its own, a refused call, usage per request, a todo list, a
// compaction, a notice, a model change and an answer; the second run is
// cut by its source and ends failed.
func EveryKind() []*formats.Event {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	n := 0
	at := func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
	u := func(in, out int64) formats.UsageInfo {
		return formats.UsageInfo{InputTokens: formats.Some(in), OutputTokens: formats.Some(out), CostUSD: formats.Some(0.01)}
	}
	run := formats.RunInfo{SessionID: "0d7c6c2e-5a3b-4f6e-9d3c-1b2a3c4d5e6f", Model: "model-a", Cwd: "/work", Provider: "anthropic"}
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: run},
		{Kind: formats.UserMessage, Text: "List the files, then ask a helper."},
		{Kind: formats.TurnStart},
		{Kind: formats.ThinkingDelta, Text: "I will run ls."},
		{Kind: formats.TextDelta, Text: "Listing "},
		{Kind: formats.TextDelta, Text: "the files."},
		{Kind: formats.Message, Text: "Listing the files.", Thinking: "I will run ls."},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "call_1", Name: "Bash", Args: []byte(`{"command":"ls"}`), Summary: "ls"}},
		{Kind: formats.Usage, Usage: u(100, 20), Response: formats.Response{ID: "resp_1", Model: "model-a", StopReason: "tool_use"}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "call_1", Name: "Bash", Status: formats.Completed, Output: formats.TextOutput("a.txt\nb.txt\n"), ExitCode: formats.Some(0)}},
		{Kind: formats.Todos, Todos: []formats.Todo{{Content: "read a.txt", Status: "in_progress"}, {Content: "read b.txt", Status: "pending"}}},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "call_2", Name: "Task", Args: []byte(`{"prompt":"read a.txt"}`), Summary: "read a.txt"}},
		{Kind: formats.Usage, Usage: u(140, 10)},
		{Kind: formats.AgentStart, Agent: "agent_1", AgentInfo: formats.AgentInfo{Label: "helper", ParentCall: "call_2", Model: "model-b"}},
		{Kind: formats.UserMessage, Agent: "agent_1", Text: "read a.txt"},
		{Kind: formats.ToolCall, Agent: "agent_1", Call: formats.Call{ID: "call_3", Name: "Read", Args: []byte(`{"path":"a.txt"}`)}},
		{Kind: formats.Usage, Agent: "agent_1", Usage: u(50, 5)},
		{Kind: formats.ToolResult, Agent: "agent_1", Call: formats.Call{ID: "call_3", Name: "Read", Status: formats.Completed, Output: formats.TextOutput("hello")}},
		{Kind: formats.Message, Agent: "agent_1", Text: "a.txt says hello."},
		{Kind: formats.Usage, Agent: "agent_1", Usage: u(60, 6)},
		{Kind: formats.AgentEnd, Agent: "agent_1", Status: formats.Completed, Text: "a.txt says hello."},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "call_2", Name: "Task", Status: formats.Completed, Output: formats.TextOutput("a.txt says hello.")}},
		{Kind: formats.PermissionRequest, Permission: formats.Permission{RequestID: "perm_1"}, Call: formats.Call{ID: "call_4", Name: "Bash", Args: []byte(`{"command":"rm b.txt"}`)}},
		{Kind: formats.PermissionAnswer, Permission: formats.Permission{RequestID: "perm_1", Allowed: false, Reason: "not allowed"}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "call_4", Name: "Bash", Status: formats.Denied, Error: "not allowed"}},
		{Kind: formats.Notice, Severity: formats.Warning, Text: "b.txt was not removed"},
		{Kind: formats.Compaction, Text: "Listed the files; a.txt says hello."},
		{Kind: formats.ModelChange, Run: formats.RunInfo{Model: "model-b"}},
		{Kind: formats.Message, Text: "a.txt says hello; b.txt stays."},
		{Kind: formats.Usage, Usage: u(200, 12)},
		{Kind: formats.TurnEnd, Status: formats.Completed},
		{Kind: formats.Answer, Text: "a.txt says hello; b.txt stays."},
		{Kind: formats.RunEnd, Status: formats.Completed, Run: formats.RunInfo{SessionID: run.SessionID, ExitCode: formats.Some(0)}, Duration: 20 * time.Second},
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "5e4d3c2b-1a09-4f8e-8d7c-6b5a4f3e2d1c", Model: "model-a"}},
		{Kind: formats.UserMessage, Text: "Try again."},
		{Kind: formats.TurnStart},
		{Kind: formats.Notice, Severity: formats.Error, Text: "overloaded", Code: "overloaded_error"},
		{Kind: formats.TurnEnd, Status: formats.Failed},
		{Kind: formats.RunEnd, Status: formats.Failed, Text: "overloaded", Code: "overloaded_error", Run: formats.RunInfo{SessionID: "5e4d3c2b-1a09-4f8e-8d7c-6b5a4f3e2d1c", ExitCode: formats.Some(1)}},
	}
	for _, e := range evs {
		e.Time = at()
	}
	return evs
}

// CheckWriter writes evs with d's writer as the pipeline gives them to a
// writer of another dialect, and checks the writer's rules: Write and
// Close succeed, the writer reports only the losses its row declares
// (Quirks), and, if d reads, the output reads back without errors, keeps
// the reader's rules, and holds as many runs.
func CheckWriter(d formats.Dialect, evs []*formats.Event) []Problem {
	var ps problems
	var out bytes.Buffer
	var rep bytes.Buffer
	report := formats.NewReport(&rep)
	view := &formats.RunView{}
	w := d.NewWriter(&out, formats.WriteOptions{Dialect: d.Name, Report: report, Stderr: io.Discard,
		Getenv: func(string) string { return "" }})
	_, raw := w.(formats.RawOutputWriter)
	clock := formats.FixedEpoch
	runs := 0
	write := func(i int, e *formats.Event) bool {
		clock = clock.Add(time.Millisecond)
		e.Arrived = clock
		if !raw {
			e.Call.Output.Decode()
		}
		view.Observe(e)
		if e.Kind == formats.RunEnd {
			runs++
		}
		if err := w.Write(e, view); err != nil {
			ps.add(i, e, "write", "Write failed: %v; a writer takes every stream the pipeline gives (events inside runs, each RunEnd settled)", err)
			return false
		}
		return true
	}
	// closeRun ends an open run as the pipeline does for a cut stream.
	closeRun := func(i int) bool {
		if !view.Open {
			return true
		}
		for _, c := range view.Calls.Open() {
			if !write(i, &formats.Event{Kind: formats.ToolResult, Agent: c.Agent, Time: view.Last, Synthetic: true,
				Call: formats.Call{ID: c.ID, Name: c.Name, Status: formats.Cancelled, Error: "not completed"}}) {
				return false
			}
		}
		for j := len(view.Agents) - 1; j >= 0; j-- {
			if !view.Agents[j].Ended && !write(i, &formats.Event{Kind: formats.AgentEnd, Agent: view.Agents[j].ID, Time: view.Last, Status: formats.Failed, Synthetic: true}) {
				return false
			}
		}
		return write(i, &formats.Event{Kind: formats.RunEnd, Time: view.Last, Status: formats.Failed, Cut: true, Text: "the stream was cut", Synthetic: true,
			Run: formats.RunInfo{ExitCode: formats.Some(1), SessionID: view.Info.SessionID}})
	}
	ok := true
	for i, ev := range evs {
		e := *ev
		e.Source = formats.Source{} // another dialect's: the writer encodes it
		if e.Kind == formats.Raw {
			continue // only its own dialect's writer copies it
		}
		if e.Kind == formats.RunStart {
			if ok = closeRun(i); !ok {
				break
			}
		} else if !view.Open {
			if ok = write(i, &formats.Event{Kind: formats.RunStart, Time: e.Time, Synthetic: true}); !ok {
				break
			}
		}
		if ok = write(i, &e); !ok {
			break
		}
	}
	if ok {
		ok = closeRun(len(evs))
	}
	if err := w.Close(); err != nil {
		ps.add(-1, nil, "close", "Close failed: %v", err)
		return ps.done()
	}
	if !ok {
		return ps.done()
	}
	for what := range report.LossTable() {
		if !slices.ContainsFunc(d.Quirks, func(q formats.Quirk) bool { return q.Name() == what }) {
			ps.add(-1, nil, "losses", "the writer reported the loss %q, which its row does not declare: a loss of a feature it does not carry is the pipeline's to report (leave it out of Carries); a loss of its own encoding goes in Quirks", what)
		}
	}
	if d.NewReader == nil {
		return ps.done()
	}
	back, bad, err := ReadAll(d, out.Bytes())
	if err != nil {
		ps.add(-1, nil, "read back", "reading the output back failed: %v", err)
		return ps.done()
	}
	for _, b := range bad {
		ps.add(-1, nil, "read back", "the output has a record its own reader cannot read: %v", b)
	}
	for _, p := range checkReader(d, back, refusedBare(evs)) {
		p.Rule = "read back: " + p.Rule
		ps.list = append(ps.list, p)
	}
	if got := len(OfKind(back, formats.RunEnd)) + openAtEnd(back); runs > 0 && got == 0 {
		ps.add(-1, nil, "read back", "%d runs written, none read back", runs)
	}
	return ps.done()
}

// openAtEnd is 1 when the events leave a run open (the pipeline would
// close it), else 0.
func openAtEnd(evs []*formats.Event) int {
	open := 0
	for _, e := range evs {
		switch e.Kind {
		case formats.RunStart:
			open = 1
		case formats.RunEnd:
			open = 0
		case formats.Raw:
		default:
			if open == 0 {
				open = 1
			}
		}
	}
	return open
}

// lastRunOpen is the index of the event that opens the main agent's last
// run, if that run has no RunEnd; -1 if it ends (or there is none). A run
// opens at a RunStart, or at an event other than Raw outside a run (the
// pipeline opens one there).
func lastRunOpen(evs []*formats.Event) int {
	at := -1
	for i, e := range evs {
		switch {
		case e.Agent != "":
		case e.Kind == formats.RunStart:
			at = i
		case e.Kind == formats.RunEnd:
			at = -1
		case e.Kind != formats.Raw && at < 0:
			at = i
		}
	}
	return at
}
