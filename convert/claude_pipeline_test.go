package convert_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/adal"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/qwen"
)

// convertWith runs data through the pipeline from one dialect to another
// and returns the output and the losses, as the command line prints them.
func convertWith(t *testing.T, from, to formats.Dialect, data []byte) (string, string) {
	t.Helper()
	var out, rep bytes.Buffer
	report := formats.NewReport(&rep)
	clock := func() time.Time { return formats.FixedEpoch }
	p := convert.New(to, &out, formats.WriteOptions{Stderr: io.Discard},
		convert.Options{From: from, Report: report, Clock: clock})
	if err := p.Convert(context.Background(), convert.Input{Name: "in", R: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	report.Summary(to.Name)
	return out.String(), rep.String()
}

// Every record of a stream goes through claude-stream → claude-stream as
// it came, in order, held records included, and nothing is lost.
func TestPassthrough(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "claude", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		out, losses := convertWith(t, claude.Stream, claude.Stream, data)
		if out != string(data) && out != string(data)+"\n" {
			t.Errorf("%s changed:\n%s", f, out)
		}
		if strings.Contains(losses, "lost:") {
			t.Errorf("%s: %s", f, losses)
		}
	}
}

// claude-json → claude-json prints each object once, as it came; the
// --verbose array, whose messages are many events, too.
func TestJSONPassthrough(t *testing.T) {
	for _, f := range []string{"result-pretty.json", "verbose-array.json"} {
		data := formatstest.Fixture(t, "claude", f)
		out, losses := convertWith(t, claude.JSON, claude.JSON, data)
		if strings.TrimSpace(out) != strings.TrimSpace(string(data)) || strings.Contains(losses, "lost:") {
			t.Errorf("%s:\n%s\n%s", f, out, losses)
		}
	}
}

// claude-stream → claude-json is a result object made from the run, with
// what it cannot hold reported like any other pair's losses.
func TestStreamToJSON(t *testing.T) {
	out, losses := convertWith(t, claude.Stream, claude.JSON, formatstest.Fixture(t, "claude", "split-messages-stream.jsonl"))
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `"result":"The service listens on port 8080."`) {
		t.Errorf("result object:\n%s", out)
	}
	for _, want := range []string{"thinking text", "tool calls", "todo lists", "assistant messages besides the answer"} {
		if !strings.Contains(losses, "× "+want+" (claude-json cannot") {
			t.Errorf("no loss of %s:\n%s", want, losses)
		}
	}
}

// Claude's input_tokens leave the cache out; the model's count it. Written
// back, claude-stream gives Claude's counts again, never negative.
func TestUsageInputCountsTheCache(t *testing.T) {
	evs := formatstest.Read(t, claude.Stream, formatstest.Fixture(t, "claude", "split-messages-stream.jsonl"))
	end := formatstest.OfKind(evs, formats.RunEnd)[0]
	if u := end.Usage; u.InputTokens != formats.Some[int64](300+50+4050) {
		t.Errorf("run usage: %+v", u)
	}
	out, _ := formatstest.WriteAll(claude.Stream, evs, true)
	if !strings.Contains(string(out), `"usage":{"input_tokens":300,"cache_creation_input_tokens":50,"cache_read_input_tokens":4050,"output_tokens":60}`) {
		t.Errorf("written back:\n%s", out)
	}
	// A source whose cached count exceeds its input (it counts otherwise)
	// gives 0, not a negative count.
	odd := []*formats.Event{{Kind: formats.RunStart}, {Kind: formats.RunEnd, Status: formats.Completed,
		Usage: formats.UsageInfo{InputTokens: formats.Some[int64](10), CacheReadTokens: formats.Some[int64](30)}}}
	out, _ = formatstest.WriteAll(claude.JSON, odd, true)
	if !strings.Contains(string(out), `"input_tokens":0,`) {
		t.Errorf("negative input:\n%s", out)
	}
}

// In a session of several prompts Claude Code's total_cost_usd is the
// session's running total: each run costs what the total grew by, and a
// writer gives the running total back.
func TestSessionCostIsARunningTotal(t *testing.T) {
	run := func(total string) string {
		return `{"type":"system","subtype":"init","session_id":"s1","model":"m","cwd":"/w"}
{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s1","total_cost_usd":` + total + `}
`
	}
	other := `{"type":"system","subtype":"init","session_id":"s2","model":"m","cwd":"/w"}
{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s2","total_cost_usd":0.01}
`
	data := run("0.05") + run("0.2") + run("0.578") + other
	evs := formatstest.Read(t, claude.Stream, data)
	var costs []float64
	for _, e := range formatstest.OfKind(evs, formats.RunEnd) {
		costs = append(costs, e.Usage.CostUSD.V)
	}
	if want := []float64{0.05, 0.15, 0.378, 0.01}; !slices.Equal(costs, want) {
		t.Fatalf("run costs %v, want %v", costs, want)
	}
	for _, to := range []formats.Dialect{claude.Stream, claude.JSON} {
		out, err := formatstest.WriteAll(to, evs, true)
		if err != nil {
			t.Fatal(err)
		}
		var totals []string
		for _, l := range strings.Split(string(out), "\n") {
			if _, v, ok := strings.Cut(l, `"total_cost_usd":`); ok {
				totals = append(totals, strings.SplitN(v, ",", 2)[0])
			}
		}
		if got := strings.Join(totals, " "); got != "0.05 0.2 0.578 0.01" {
			t.Errorf("%s totals: %s", to.Name, got)
		}
	}
}

// Unknown Claude messages are kept as they are: another dialect reports
// each one lost, under claude-stream's name.
func TestUnknownTypesLostElsewhere(t *testing.T) {
	data := formatstest.Fixture(t, "claude", "unknown-types-stream.jsonl")
	raws := len(formatstest.OfKind(formatstest.Read(t, claude.Stream, data), formats.Raw))
	_, losses := convertWith(t, claude.Stream, adal.Stream, data)
	if want := fmt.Sprintf("lost: %d × unknown claude-stream events (adal-stream", raws); raws == 0 || !strings.Contains(losses, want) {
		t.Errorf("want %q:\n%s", want, losses)
	}
}

// A refused call ends once, as refused with its reason, whichever way it
// goes through claude-stream.
func TestRefusalEndsOnce(t *testing.T) {
	for _, reason := range []string{"Claude requested permissions to write to /etc/hosts, but you haven't granted it yet.", "blocked by policy"} {
		evs := []*formats.Event{{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
			{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "Write", Args: []byte(`{"file_path":"/etc/hosts"}`)}},
			{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Name: "Write", Status: formats.Denied, Error: reason}},
			{Kind: formats.Message, Text: "I may not."},
			{Kind: formats.RunEnd, Status: formats.Failed, Text: "stopped"}}
		out, losses := formatstest.WriteReport(t, claude.Stream, evs)
		back := formatstest.Read(t, claude.Stream, out)
		results := formatstest.OfKind(back, formats.ToolResult)
		if len(results) != 1 || results[0].Call.Status != formats.Denied || results[0].Call.Name != "Write" {
			t.Fatalf("%q: results %+v\n%s", reason, results, out)
		}
		// A reason in Claude Code's words is the tool_result; another has
		// no place beside the run's own error, and is reported lost.
		claudes := strings.Contains(reason, "granted")
		if strings.Contains(out, reason) != claudes || strings.Contains(losses, "refusal reasons") == claudes ||
			(results[0].Call.Error == reason) != claudes {
			t.Errorf("%q:\n%s\n%s", reason, out, losses)
		}
	}
}

// Qwen Code's and Amp's stream-json are claude-stream's: read with their
// agent's name, copied as they came into their own dialect, written like
// claude-stream into it from anything else (Qwen Code's input_tokens with
// the cache), and not detected as theirs (Qwen Code's is, by its init
// line: TestQwenCode).
func TestCopiesOfClaudeStream(t *testing.T) {
	data := formatstest.Fixture(t, "claude", "split-messages-stream.jsonl")
	for _, d := range []struct {
		dialect formats.Dialect
		agent   string
	}{{qwen.Stream, "qwen-code"}, {claude.Amp, "amp"}} {
		if d.dialect.Detect != nil && d.dialect.Detect(data) > 1 {
			t.Errorf("%s is detected", d.dialect.Name)
		}
		evs := formatstest.Read(t, d.dialect, data)
		if run := evs[0].Run; run.AgentName != d.agent || run.Provider != "" || evs[0].Source.Dialect != d.dialect.Name {
			t.Errorf("%s: run %+v", d.dialect.Name, run)
		}
		if got, want := formatstest.Kinds(evs), formatstest.Kinds(formatstest.Read(t, claude.Stream, data)); got != want {
			t.Errorf("%s reads %s, claude-stream %s", d.dialect.Name, got, want)
		}
		out, losses := convertWith(t, d.dialect, d.dialect, data)
		if out != string(data) || strings.Contains(losses, "lost:") {
			t.Errorf("%s → %s changed:\n%s%s", d.dialect.Name, d.dialect.Name, out, losses)
		}
		fromClaude, _ := convertWith(t, claude.Stream, d.dialect, data)
		asClaude, _ := convertWith(t, claude.Amp, claude.Stream, data)
		if d.dialect.Name == qwen.Stream.Name {
			asClaude = strings.ReplaceAll(asClaude, `"input_tokens":100,`, `"input_tokens":2150,`)
			asClaude = strings.ReplaceAll(asClaude, `"input_tokens":200,`, `"input_tokens":2250,`)
			asClaude = strings.ReplaceAll(asClaude, `"input_tokens":300,`, `"input_tokens":4400,`)
		}
		if fromClaude == string(data) || fromClaude != asClaude {
			t.Errorf("claude-stream → %s is not written as claude-stream:\n%s", d.dialect.Name, fromClaude)
		}
	}
}
