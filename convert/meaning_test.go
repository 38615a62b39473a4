package convert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/goccy/go-json"
)

// These tests check that a run means the same in every target: its
// outcome, its usage totals and its calls, over every fixture and every
// dialect that can be both written and read.

// runFacts is what the run view says of one run.
type runFacts struct {
	success bool
	code    int
	usage   formats.UsageInfo
	calls   int
	cut     bool
	// requests counts the run's model requests (Usage events, less those
	// that count a whole turn)
	requests int
}

// captureWriter records the run view at each RunEnd.
type captureWriter struct {
	runs []runFacts
}

func (c *captureWriter) Write(e *formats.Event, v *formats.RunView) error {
	if e.Kind == formats.RunEnd {
		c.runs = append(c.runs, runFacts{success: v.Success(), code: v.ExitCode, usage: v.Usage, calls: v.Calls.Count(), cut: v.Cut, requests: v.Requests - v.Aggregates})
	}
	return nil
}
func (c *captureWriter) Close() error { return nil }

// readFacts reads an input of a dialect (detected when from is empty) and
// returns the facts of its runs.
func readFacts(t *testing.T, from, data string) []runFacts {
	t.Helper()
	c := &captureWriter{}
	opts := Options{Report: formats.NewReport(&bytes.Buffer{}), Lenient: true}
	if from != "" {
		d, ok := Lookup(from)
		if !ok {
			t.Fatalf("no dialect %s", from)
		}
		opts.From = d
	}
	p := NewPipeline(c, formats.Dialect{Name: "capture"}, opts)
	if err := p.Convert(context.Background(), Input{Name: "in", R: strings.NewReader(data)}); err != nil {
		t.Fatalf("reading %s back: %v", from, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return c.runs
}

// convertTo converts data as --deterministic --lenient --to TO [--from
// FROM] would, and returns its output and what it reported. With no more
// arguments it goes through the library (ConvertOne, see convertLibrary):
// the tests of every fixture through every target check what readers and
// writers make, not the command line, whose parsing would be a third of
// their time; with more it runs the command line.
func convertTo(t *testing.T, data, from, to string, more ...string) (string, string) {
	t.Helper()
	if len(more) == 0 {
		code, out, stderr := convertLibrary(data, from, to)
		if code != 0 {
			t.Fatalf("from %q to %s: %s", from, to, stderr)
		}
		return out, stderr
	}
	args := append([]string{"--deterministic", "--lenient", "--to", to}, more...)
	if from != "" {
		args = append(args, "--from", from)
	}
	code, out, stderr := convertOnce(data, args...)
	if code != 0 {
		t.Fatalf("--from %q --to %s: exit %d: %s", from, to, code, stderr)
	}
	return out, stderr
}

// converted holds what convertOnce and convertLibrary gave, by their
// input and arguments.
var converted sync.Map

type conversion struct {
	once           sync.Once
	code           int
	stdout, stderr string
}

// convertOnce is runCLI on stdin alone, the arguments naming no file: a
// --deterministic conversion of the same bytes with the same arguments
// gives the same exit status, output and stderr, so the tests that go
// through every target from every fixture share each conversion instead
// of running it once for each of them.
func convertOnce(stdin string, args ...string) (int, string, string) {
	key := sha256.Sum256([]byte(strings.Join(args, "\x00") + "\x00" + stdin))
	v, _ := converted.LoadOrStore(key, &conversion{})
	c := v.(*conversion)
	c.once.Do(func() { c.code, c.stdout, c.stderr = runCLI(stdin, args...) })
	return c.code, c.stdout, c.stderr
}

// convertLibrary is convertOnce through the library: ConvertOne with the
// options --deterministic --lenient give, from dialect from ("": detect
// it). Its code is 0, or 1 with the error on stderr.
func convertLibrary(data, from, to string) (int, string, string) {
	key := sha256.Sum256([]byte("library\x00" + from + "\x00" + to + "\x00" + data))
	v, _ := converted.LoadOrStore(key, &conversion{})
	c := v.(*conversion)
	c.once.Do(func() {
		var src formats.Dialect
		if from != "" {
			src, _ = Lookup(from)
		}
		dst, ok := Lookup(to)
		if !ok || (from != "" && src.Name == "") {
			c.code, c.stderr = 1, "no such dialect"
			return
		}
		var out, errb bytes.Buffer
		rep := formats.NewReport(&errb)
		_, err := ConvertOne(context.Background(), Input{Name: "-", R: strings.NewReader(data)}, dst, &out,
			formats.WriteOptions{Report: rep, Stderr: &errb, Getenv: func(string) string { return "" }},
			Options{From: src, Lenient: true, Clock: DeterministicClock(), Report: rep})
		if err != nil {
			c.code = 1
			fmt.Fprintf(&errb, "%v\n", err)
		}
		c.stdout, c.stderr = out.String(), errb.String()
	})
	return c.code, c.stdout, c.stderr
}

// roundTargets are the dialects a run can go through and come back from.
func roundTargets() []formats.Dialect {
	var out []formats.Dialect
	for _, d := range Dialects {
		if d.NewReader != nil && d.NewWriter != nil && !d.Remote {
			out = append(out, d)
		}
	}
	return out
}

type adalObject struct {
	Success   bool              `json:"success"`
	ExitCode  int               `json:"exit_code"`
	ToolCalls []json.RawMessage `json:"tool_calls"`
}

func adalObjects(t *testing.T, out string) []adalObject {
	t.Helper()
	var objs []adalObject
	// AdaL pretty-prints each object: one value after another.
	d := json.NewDecoder(strings.NewReader(out))
	for d.More() {
		var o adalObject
		if err := d.Decode(&o); err != nil {
			t.Fatalf("adal-json output: %v: %s", err, out)
		}
		objs = append(objs, o)
	}
	return objs
}

func fixtureData(t *testing.T, path string) string {
	t.Helper()
	return readFixture(t, path)
}

// TestOutcomeAgrees: X → adal-json and X → T → adal-json agree on success
// and exit_code, for every target T that carries run outcomes; and
// --exit-status gives the last run's code for every target. The exit
// status is the pipeline's (Pipeline.Result), whatever the target: the
// quick loop checks it through one target of each fixture, a different
// one from one fixture to the next, and the long run through all.
func TestOutcomeAgrees(t *testing.T) {
	t.Parallel()
	all := formatstest.IsLong(t)
	targets := roundTargets()
	for i, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		data := fixtureData(t, in)
		direct := adalObjects(t, first(convertTo(t, data, "", "adal-json")))
		for j, T := range targets {
			t.Run(rel+"→"+T.Name, func(t *testing.T) {
				mid, stderr := convertTo(t, data, "", T.Name)
				if len(direct) > 0 && (all || i%len(targets) == j) {
					last := direct[len(direct)-1].ExitCode
					code, _, _ := convertOnce(data, "--deterministic", "--lenient", "--exit-status", "--to", T.Name)
					if code != last {
						t.Errorf("--exit-status --to %s exits %d; adal-json says exit_code %d", T.Name, code, last)
					}
				}
				if T.Carries&formats.RunOutcomes == 0 {
					return
				}
				back := adalObjects(t, first(convertTo(t, mid, T.Name, "adal-json")))
				if len(back) != len(direct) && splitsRuns(stderr) {
					t.Skipf("%s starts a run at each prompt, and said so: %d runs through it, %d directly", T.Name, len(back), len(direct))
				}
				if len(back) != len(direct) {
					t.Fatalf("%d runs through %s, %d directly", len(back), T.Name, len(direct))
				}
				codesLost := strings.Contains(stderr, "exit codes")
				// A target that cannot tell a cut run from one that ended
				// says so.
				cutLost := strings.Contains(stderr, "× cut runs")
				for i := range direct {
					if back[i].Success != direct[i].Success && !(cutLost && !direct[i].Success && back[i].Success) {
						t.Errorf("run %d: success %v through %s, %v directly", i+1, back[i].Success, T.Name, direct[i].Success)
					}
					if back[i].ExitCode != direct[i].ExitCode && !codesLost && !(cutLost && back[i].Success) {
						t.Errorf("run %d: exit_code %d through %s, %d directly (and no loss of exit codes reported)",
							i+1, back[i].ExitCode, T.Name, direct[i].ExitCode)
					}
				}
			})
		}
	}
}

func first(a, _ string) string { return a }

// splitsRuns: the conversion reported that the target starts a run at each
// prompt, so that a run of several prompts comes back as several runs.
func splitsRuns(stderr string) bool {
	return strings.Contains(stderr, "× "+formats.FollowUpPrompts.Name()+" ")
}

// TestUsageSurvives: the run's usage totals read back from otlp-json are
// the same after X → T → otlp-json as after X → otlp-json, wherever T
// carries usage; and no count is ever negative.
func TestUsageSurvives(t *testing.T) {
	t.Parallel()
	for _, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		data := fixtureData(t, in)
		direct := readFacts(t, "otlp-json", first(convertTo(t, data, "", "otlp-json")))
		for _, r := range direct {
			checkNotNegative(t, rel, r.usage)
		}
		for _, T := range roundTargets() {
			if T.Carries&formats.TokenUsage == 0 {
				continue
			}
			t.Run(rel+"→"+T.Name, func(t *testing.T) {
				mid, stderr := convertTo(t, data, "", T.Name)
				for _, q := range T.Quirks {
					if strings.Contains(q.Name(), "token usage") && strings.Contains(stderr, "× "+q.Name()+" ") {
						t.Skipf("%s reports a loss of token usage: %s", T.Name, q)
					}
				}
				back := readFacts(t, "otlp-json", first(convertTo(t, mid, T.Name, "otlp-json")))
				if len(back) != len(direct) && splitsRuns(stderr) {
					t.Skipf("%s starts a run at each prompt, and said so: %d runs through it, %d directly", T.Name, len(back), len(direct))
				}
				if len(back) != len(direct) {
					t.Fatalf("%d runs through %s, %d directly", len(back), T.Name, len(direct))
				}
				for i := range direct {
					d, b := direct[i].usage, back[i].usage
					checkNotNegative(t, rel+"→"+T.Name, b)
					same := func(what string, x, y formats.Opt[int64], carried bool) {
						if carried && x.V != y.V {
							t.Errorf("run %d: %s %d through %s, %d directly", i+1, what, y.V, T.Name, x.V)
						}
					}
					same("input tokens", d.InputTokens, b.InputTokens, true)
					same("output tokens", d.OutputTokens, b.OutputTokens, true)
					same("cache read tokens", d.CacheReadTokens, b.CacheReadTokens, true)
					same("cache write tokens", d.CacheWriteTokens, b.CacheWriteTokens, T.Carries&formats.CacheWrites != 0)
					if T.Carries&formats.Costs != 0 && (d.CostUSD.V-b.CostUSD.V > 1e-9 || b.CostUSD.V-d.CostUSD.V > 1e-9) {
						t.Errorf("run %d: cost %v through %s, %v directly", i+1, b.CostUSD.V, T.Name, d.CostUSD.V)
					}
				}
			})
		}
	}
}

func checkNotNegative(t *testing.T, where string, u formats.UsageInfo) {
	t.Helper()
	for _, c := range []formats.Opt[int64]{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.TotalTokens} {
		if c.V < 0 {
			t.Errorf("%s: a negative token count: %+v", where, u)
			return
		}
	}
	if u.CostUSD.V < 0 {
		t.Errorf("%s: a negative cost: %+v", where, u)
	}
}

// TestCallsOnce: each call appears once in every target: one entry of
// adal-json's tool_calls, and one execute_tool span in otlp-json, for each
// call the source has.
func TestCallsOnce(t *testing.T) {
	t.Parallel()
	for _, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		t.Run(rel, func(t *testing.T) {
			data := fixtureData(t, in)
			calls := 0
			for _, r := range readFacts(t, "", data) {
				calls += r.calls
			}
			entries := 0
			for _, o := range adalObjects(t, first(convertTo(t, data, "", "adal-json"))) {
				entries += len(o.ToolCalls)
			}
			if entries != calls {
				t.Errorf("adal-json has %d tool_calls entries for %d calls", entries, calls)
			}
			otlp, _ := convertTo(t, data, "", "otlp-json")
			if spans := strings.Count(otlp, `"name":"execute_tool `); spans != calls {
				t.Errorf("otlp-json has %d execute_tool spans for %d calls", spans, calls)
			}
		})
	}
}
