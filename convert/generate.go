package convert

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// Generator makes a deterministic, realistic stream of runs for benchmarks
// and tests: many runs; turns with thinking and streamed text; parallel tool
// calls that finish out of order; outputs from a few bytes to hundreds of
// KiB; unicode and escapes; failures, refusals and subagents. The same seed
// gives the same events.
type Generator struct {
	rng   *rand.Rand
	clock time.Time
	run   int
	// MaxOutput caps a tool output, so that the longest line stays under
	// about 1 MB.
	MaxOutput int
	// Profile is the shape of the runs: "" (or "default"), "dense",
	// "big-outputs" or "agents"; see Profiles.
	Profile string
}

// Profiles are the shapes a generator makes, by name, with what each is.
var Profiles = []struct{ Name, Description string }{
	{"default", "1 to 4 turns with 0 to 3 parallel calls each; outputs from a few bytes to 400 KiB, mostly small"},
	{"dense", "8 to 40 calls a run; short outputs (lognormal, median about 60 bytes); tabs, quotes, backslashes and non-ASCII text in every string"},
	{"big-outputs", "8 to 40 calls a run; outputs lognormal around 700 bytes median, a few of 100 to 400 KB; escapes and non-ASCII in every string"},
	{"agents", "runs shaped like the agents' own output in the captures of their tests: no call in 55 % of runs, 1 in 34 %, 2 in 9 %, 4 to 8 in 2 %; outputs lognormal around 21 bytes median with a tail to tens of KB; short arguments and answers; 15 % of runs failed"},
}

// ProfileNames lists the profiles a generator knows.
func ProfileNames() []string {
	names := make([]string, len(Profiles))
	for i, p := range Profiles {
		names[i] = p.Name
	}
	return names
}

func knownProfile(name string) bool {
	return name == "" || slices.Contains(ProfileNames(), name)
}

// NewGenerator makes a generator from a seed.
func NewGenerator(seed uint64) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), clock: formats.FixedEpoch, MaxOutput: 400 << 10}
}

var (
	// Mostly ASCII, as tool output is, with unicode and escapes mixed in.
	genWords = []string{"the", "build", "fails", "because", "config", "is", "missing", "—", "ünïcode", "日本語", "🙂",
		"\"quoted\"", "back\\slash", "tab\there", "line\nbreak", "<html>", "&amp;", "path/to/file.go", "func", "return", "nil", "error",
		"package", "main", "import", "fmt", "if", "err", "!=", "{", "}", "for", "range", "ok", "PASS", "FAIL", "--- test",
		"src/app.ts:12:5", "warning", "npm", "install", "done", "in", "0.42s", "make", "go", "vet", "./...", "=", ":=", "x", "y"}
	genTools = []string{"bash", "read_file", "replace_by_string", "grep", "write_file", "web_fetch"}
)

func (g *Generator) text(words int) string {
	var b strings.Builder
	for i := 0; i < words; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(genWords[g.rng.IntN(len(genWords))])
	}
	return b.String()
}

// outputSize draws a size spread over orders of magnitude: mostly small,
// some of tens and hundreds of KiB.
func (g *Generator) outputSize() int {
	u := g.rng.Float64()
	exp := u * u * u * 5.6 // 10^0 .. 10^5.6 (~400 KiB), mostly small
	n := 1
	for i := 0.0; i < exp; i++ {
		n *= 10
	}
	n = int(float64(n) * (0.3 + g.rng.Float64()*0.7))
	return min(max(n, 1), g.MaxOutput)
}

func (g *Generator) output(n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	for b.Len() < n {
		b.WriteString(genWords[g.rng.IntN(len(genWords))])
		if g.rng.IntN(8) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// The words of the dense profiles' strings: each string has one of each
// escape and some non-ASCII text.
var (
	genEscapes  = []string{"a\tb", "say \"hi\"", `C:\\tmp`, "x\ty", `\"q\"`}
	genNonASCII = []string{"ünïcode", "日本語", "🙂", "naïve café", "Ωmega", "—"}
)

// escaped returns text of about the given words with a tab, a quote, a
// backslash and non-ASCII text in it, in places that vary.
func (g *Generator) escaped(words int) string {
	ws := make([]string, 0, words+4)
	for i := 0; i < words; i++ {
		switch {
		case g.rng.IntN(6) == 0:
			ws = append(ws, genEscapes[g.rng.IntN(len(genEscapes))])
		case g.rng.IntN(5) == 0:
			ws = append(ws, genNonASCII[g.rng.IntN(len(genNonASCII))])
		default:
			ws = append(ws, genWords[g.rng.IntN(len(genWords))])
		}
	}
	for _, w := range []string{"tab\there", "a \"quote\"", `back\slash`, genNonASCII[g.rng.IntN(len(genNonASCII))]} {
		ws = slices.Insert(ws, g.rng.IntN(len(ws)+1), w)
	}
	return strings.Join(ws, " ")
}

// escapedOutput is an output of about n bytes, with the escapes and
// non-ASCII text of escaped in it.
func (g *Generator) escapedOutput(n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	b.WriteString(g.escaped(4))
	for b.Len() < n {
		b.WriteByte('\n')
		b.WriteString(g.output(min(n-b.Len(), 120)))
	}
	return b.String()
}

// lognormalSize draws a size around median, spread by sigma, capped by
// MaxOutput.
func (g *Generator) lognormalSize(median, sigma float64) int {
	n := int(median * math.Exp(sigma*g.rng.NormFloat64()))
	return min(max(n, 1), g.MaxOutput)
}

// denseOutputSize is the size of an output of the dense profiles.
func (g *Generator) denseOutputSize() int {
	if g.Profile == "big-outputs" {
		if g.rng.IntN(400) == 0 {
			return min(100_000+g.rng.IntN(300_000), g.MaxOutput) // a few of 100 to 400 KB
		}
		return g.lognormalSize(700, 1)
	}
	return g.lognormalSize(60, 0.8)
}

// manyCalls is a run of the dense profiles: 8 to 40 calls over 1 to 4
// turns, in parallel groups of 1 to 4 that finish out of order, every
// string with escapes and non-ASCII text.
func (g *Generator) manyCalls() []*formats.Event {
	r := g.start(func() string { return g.escaped(8) })
	calls := 8 + g.rng.IntN(33)
	turns := 1 + g.rng.IntN(4)
	failed := g.rng.IntN(10) == 0
	denied := !failed && g.rng.IntN(15) == 0
	call := 0
	for t := 0; t < turns; t++ {
		r.add(&formats.Event{Kind: formats.TurnStart})
		r.add(&formats.Event{Kind: formats.ThinkingDelta, Text: g.escaped(6)})
		r.add(&formats.Event{Kind: formats.TextDelta, Text: g.escaped(5)})
		last := calls
		if t < turns-1 {
			last = call + calls/turns
		}
		for call < last {
			var open []formats.Call
			for n := 1 + g.rng.IntN(4); n > 0 && call < last; n-- {
				call++
				c := r.newCall(call)
				c.Args, _ = json.Marshal(map[string]any{"command": g.escaped(4), "path": "src/" + strconv.Itoa(call) + ".go"})
				open = r.startCall(open, c)
			}
			r.finish(open, func() string { return g.escapedOutput(g.denseOutputSize()) }, func() string { return g.escaped(4) })
		}
		r.endTurn()
	}
	r.end(call+1, denied, failed, runEnding{
		deniedArgs:  `{"command":"rm -rf \"build/\"\tnaïve"}`,
		deniedError: "bash needs approval: \"rm\"\t\\ — ü",
		text:        g.escaped,
		answerWords: 20,
	})
	return r.evs
}

// agentRun is a run of the agents profile, shaped as the runs that the
// agents printed in the captures of testdata/agents (230 runs, read through
// adal-json): how many calls a run makes, how long outputs, arguments and
// answers are, and how many runs fail.
func (g *Generator) agentRun() []*formats.Event {
	r := g.start(func() string { return g.text(6) })
	calls := 0
	switch u := g.rng.IntN(100); {
	case u < 55:
	case u < 89:
		calls = 1
	case u < 98:
		calls = 2
	default:
		calls = 4 + g.rng.IntN(5)
	}
	failed := g.rng.IntN(100) < 15
	r.add(&formats.Event{Kind: formats.TurnStart})
	r.add(&formats.Event{Kind: formats.TextDelta, Text: g.text(3)})
	for call := 1; call <= calls; call++ {
		c := r.newCall(call)
		c.Args, _ = json.Marshal(map[string]any{"command": g.text(3), "path": "src/" + strconv.Itoa(call) + ".go"})
		open := r.startCall(nil, c)
		r.finish(open, func() string { return g.output(g.lognormalSize(21, 2)) }, func() string { return g.text(4) })
	}
	r.endTurn()
	r.end(calls+1, false, failed, runEnding{text: g.text, answerWords: 3})
	return r.evs
}

// genRun is a run being generated: its session id and its events, each
// stamped with the next tick as it is added.
type genRun struct {
	g       *Generator
	session string
	evs     []*formats.Event
}

func (r *genRun) add(e *formats.Event) {
	e.Time = r.g.tick()
	r.evs = append(r.evs, e)
}

// newCall is the run's call number n, with a tool drawn at random; its
// arguments are the profile's.
func (r *genRun) newCall(n int) formats.Call {
	return formats.Call{ID: "call_" + strconv.Itoa(r.g.run) + "_" + strconv.Itoa(n), Name: genTools[r.g.rng.IntN(len(genTools))]}
}

// startCall adds c's ToolCall and returns the open calls with c.
func (r *genRun) startCall(open []formats.Call, c formats.Call) []formats.Call {
	r.add(&formats.Event{Kind: formats.ToolCall, Call: c})
	return append(open, c)
}

// start begins the next run: its RunStart, and the prompt that prompt
// words.
func (g *Generator) start(prompt func() string) *genRun {
	g.run++
	r := &genRun{g: g, session: fmt.Sprintf("00000000-0000-4000-8000-%012d", g.run)}
	r.add(&formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: r.session, Model: "model-large-1", Cwd: "/work/project"}})
	r.add(&formats.Event{Kind: formats.UserMessage, Text: prompt()})
	return r
}

// endTurn ends a turn, with the usage of its request.
func (r *genRun) endTurn() {
	g := r.g
	r.add(&formats.Event{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some(int64(1000 + g.rng.IntN(9000))), OutputTokens: formats.Some(int64(g.rng.IntN(2000)))}})
	r.add(&formats.Event{Kind: formats.TurnEnd, Status: formats.Completed})
}

// finish gives the open calls their results, in reverse order, each with
// the output that output makes, and one in eight failed with errText's.
func (r *genRun) finish(open []formats.Call, output, errText func() string) {
	for i := len(open) - 1; i >= 0; i-- {
		c := open[i]
		c.Status = formats.Completed
		c.Output = formats.TextOutput(output())
		if r.g.rng.IntN(8) == 0 {
			c.Status, c.Error = formats.Failed, "exit status 1: "+errText()
		}
		r.add(&formats.Event{Kind: formats.ToolResult, Call: c, Duration: time.Duration(r.g.rng.IntN(5000)) * time.Millisecond})
	}
}

// runEnding is how a profile words the end of a run.
type runEnding struct {
	deniedArgs, deniedError string
	text                    func(words int) string
	answerWords             int
}

// end ends a run: denied (a refused call, number call), failed, or
// completed with an answer.
func (r *genRun) end(call int, denied, failed bool, how runEnding) {
	switch {
	case denied:
		r.add(&formats.Event{Kind: formats.ToolResult, Call: formats.Call{ID: "call_" + strconv.Itoa(r.g.run) + "_" + strconv.Itoa(call), Name: "bash",
			Args: json.RawMessage(how.deniedArgs), Status: formats.Denied, Error: how.deniedError}})
		r.add(&formats.Event{Kind: formats.RunEnd, Status: formats.Denied, Run: formats.RunInfo{SessionID: r.session, ExitCode: formats.Some(2)}})
	case failed:
		r.add(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: "model error: " + how.text(4)})
		r.add(&formats.Event{Kind: formats.RunEnd, Status: formats.Failed, Text: "model error", Run: formats.RunInfo{SessionID: r.session, ExitCode: formats.Some(1)}})
	default:
		r.add(&formats.Event{Kind: formats.Answer, Text: how.text(how.answerWords)})
		r.add(&formats.Event{Kind: formats.RunEnd, Status: formats.Completed, Run: formats.RunInfo{SessionID: r.session, Model: "model-large-1", ExitCode: formats.Some(0)}})
	}
}

func (g *Generator) tick() time.Time {
	g.clock = g.clock.Add(time.Duration(1+g.rng.IntN(900)) * time.Millisecond)
	return g.clock
}

// Run returns the events of the next run.
func (g *Generator) Run() []*formats.Event {
	switch g.Profile {
	case "dense", "big-outputs":
		return g.manyCalls()
	case "agents":
		return g.agentRun()
	}
	r := g.start(func() string { return g.text(12) })
	call := 0
	turns := 1 + g.rng.IntN(4)
	failed := g.rng.IntN(10) == 0
	denied := !failed && g.rng.IntN(15) == 0
	for t := 0; t < turns; t++ {
		r.add(&formats.Event{Kind: formats.TurnStart})
		r.add(&formats.Event{Kind: formats.ThinkingDelta, Text: g.text(10)})
		for i, n := 0, 1+g.rng.IntN(4); i < n; i++ {
			r.add(&formats.Event{Kind: formats.TextDelta, Text: g.text(6)})
		}
		// Parallel calls, finished in reverse order.
		var open []formats.Call
		for i, n := 0, g.rng.IntN(4); i < n; i++ {
			call++
			c := r.newCall(call)
			c.Args, _ = json.Marshal(map[string]any{"command": g.text(4), "path": "src/" + strconv.Itoa(call) + ".go", "limit": g.rng.IntN(1000)})
			open = r.startCall(open, c)
		}
		r.finish(open, func() string { return g.output(g.outputSize()) }, func() string { return g.text(5) })
		r.endTurn()
	}
	r.end(call+1, denied, failed, runEnding{
		deniedArgs:  `{"command":"rm -rf build/"}`,
		deniedError: "bash needs approval",
		text:        g.text,
		answerWords: 30,
	})
	return r.evs
}

// Generate writes runs in dialect d to w until at least size bytes are
// written, with tool outputs of at most maxOutput bytes (0: the default).
func Generate(w io.Writer, d formats.Dialect, size int64, seed uint64, maxOutput int) error {
	return GenerateProfile(w, d, size, seed, maxOutput, "")
}

// GenerateProfile is Generate with runs of the named profile (see
// Profiles; "" is the default).
func GenerateProfile(w io.Writer, d formats.Dialect, size int64, seed uint64, maxOutput int, profile string) error {
	if !knownProfile(profile) {
		return fmt.Errorf("no profile %q; the profiles are %s", profile, strings.Join(ProfileNames(), ", "))
	}
	cw := &countingWriter{w: w}
	fw := formats.Standalone(d.NewWriter(cw, formats.WriteOptions{Dialect: d.Name, Report: formats.NewReport(io.Discard), Stderr: io.Discard}))
	g := NewGenerator(seed)
	g.Profile = profile
	if maxOutput > 0 {
		g.MaxOutput = maxOutput
	}
	for cw.n < size {
		for _, e := range g.Run() {
			e.Arrived = e.Time
			if err := fw.Write(e); err != nil {
				return err
			}
		}
	}
	return fw.Close()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// parseSize reads sizes like 100MB, 1GiB, 512k.
func parseSize(s string) (int64, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (examples: 100MB, 1GiB, 512k)", s)
	}
	return int64(n * float64(mult)), nil
}
