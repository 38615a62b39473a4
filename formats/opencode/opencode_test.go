package opencode_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/opencode"
)

// capture is the folder of an OpenCode 1.18.33 capture (convert/agenttest).
func capture(scenario string) string {
	return filepath.Join("..", "..", "testdata", "agents", "opencode", "1.18.33", scenario, "json")
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sent is what the model server answered each model request with, in the
// model's convention (the input with the cache), by thread.
func sent(t *testing.T, dir string) map[string][][2]int64 {
	t.Helper()
	var srv struct {
		Requests []struct {
			Thread string `json:"thread"`
			Status int    `json:"status"`
			Sent   *struct {
				Input     int64 `json:"input"`
				CacheRead int64 `json:"cache_read"`
				Output    int64 `json:"output"`
			} `json:"sent"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "server.json")), &srv); err != nil {
		t.Fatal(err)
	}
	out := map[string][][2]int64{}
	for _, r := range srv.Requests {
		if r.Status == 200 && r.Sent != nil && r.Thread != "side" {
			out[r.Thread] = append(out[r.Thread], [2]int64{r.Sent.Input + r.Sent.CacheRead, r.Sent.Output})
		}
	}
	return out
}

func usages(evs []*formats.Event, agent func(string) bool) [][2]int64 {
	var out [][2]int64
	for _, e := range formatstest.OfKind(evs, formats.Usage) {
		if agent(e.Agent) {
			out = append(out, [2]int64{e.Usage.InputTokens.V, e.Usage.OutputTokens.V})
		}
	}
	return out
}

func same(a, b [][2]int64) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(s [][2]int64) []int64 {
		var k []int64
		for _, x := range s {
			k = append(k, x[0]*1_000_000+x[1])
		}
		sort.Slice(k, func(i, j int) bool { return k[i] < k[j] })
		return k
	}
	ka, kb := key(a), key(b)
	for i := range ka {
		if ka[i] != kb[i] {
			return false
		}
	}
	return true
}

// TestStream: each step_finish is one model request, whose tokens are the
// server's (OpenCode counts the cache and the reasoning apart: the input
// and output add them back), with its cost (that Gemini CLI's detection
// does not take its lines is TestOpenCodeIsNotGemini, in convert).
func TestStream(t *testing.T) {
	for _, sc := range []string{"text-shell", "thinking", "parallel"} {
		dir := capture(sc)
		data := readFile(t, filepath.Join(dir, "stdout.jsonl"))
		if s := opencode.Stream.Detect(data); s < 100 {
			t.Errorf("%s: opencode scores %d", sc, s)
		}
		evs := formatstest.Read(t, opencode.Stream, data)
		got := usages(evs, func(string) bool { return true })
		if want := sent(t, dir)["main"]; !same(got, want) {
			t.Errorf("%s: requests %v; the server sent %v", sc, got, want)
		}
		for _, u := range formatstest.OfKind(evs, formats.Usage) {
			if !u.Usage.CostUSD.OK || u.Usage.CostUSD.V <= 0 {
				t.Errorf("%s: a request without its cost: %+v", sc, u.Usage)
			}
		}
		end := formatstest.OfKind(evs, formats.RunEnd)
		if len(end) != 1 || end[0].Status != formats.Completed || end[0].Run.SessionID == "" {
			t.Errorf("%s: runs %v", sc, formatstest.Kinds(evs))
		}
	}
	evs := formatstest.Read(t, opencode.Stream, readFile(t, filepath.Join(capture("thinking"), "stdout.jsonl")))
	var thought bool
	for _, m := range formatstest.OfKind(evs, formats.Message) {
		thought = thought || m.Thinking == "The user wants a short answer; think first."
	}
	if !thought {
		t.Errorf("thinking: no reasoning: %s", formatstest.Kinds(evs))
	}
}

// TestStreamUsageBeforeResults: a step's tokens (step_finish) come after
// the line that gives a call with its result; the Usage goes before the
// result, which is the next request's input, and the step's record is
// still printed once by a copy.
func TestStreamUsageBeforeResults(t *testing.T) {
	evs := formatstest.Read(t, opencode.Stream, readFile(t, filepath.Join(capture("edit"), "stdout.jsonl")))
	if got, want := formatstest.Kinds(evs), "run_start turn_start message tool_call usage tool_result turn_end"; !strings.HasPrefix(got, want) {
		t.Errorf("events %s, want them to start %s", got, want)
	}
	res := formatstest.OfKind(evs, formats.ToolResult)[0]
	if res.Source.Line != nil || !res.Source.Continued || res.Source.Type != "tool_use" || res.Source.LineNo != 3 {
		t.Errorf("the result's source %+v: want a part of line 3, the tool_use that printed it", res.Source)
	}
	lines := 0
	for _, e := range evs {
		if e.Source.Line != nil {
			lines++
		}
	}
	if want := bytes.Count(readFile(t, filepath.Join(capture("edit"), "stdout.jsonl")), []byte{'\n'}); lines != want {
		t.Errorf("%d events carry a line, of %d lines", lines, want)
	}
}

// TestStreamFailure: the one error line of a failed run is its failure,
// with OpenCode's error name as the code.
func TestStreamFailure(t *testing.T) {
	data := readFile(t, filepath.Join(capture("api-error"), "stdout.jsonl"))
	if d := opencode.Stream.Detect(data); d < 100 {
		t.Errorf("opencode scores %d", d)
	}
	evs := formatstest.Read(t, opencode.Stream, data)
	end := formatstest.OfKind(evs, formats.RunEnd)
	if len(end) != 1 || end[0].Status != formats.Failed || end[0].Text != "Overloaded" || end[0].Code != "APIError" || end[0].Run.ExitCode.V != 1 {
		t.Fatalf("the run's end: %+v", end)
	}
}

// readDB reads a capture's database as a file, as a conversion does.
func readDB(t *testing.T, name string) []*formats.Event {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := opencode.DB.NewReader(f, formats.ReadOptions{Dialect: "opencode-db", Path: name, Report: formats.NewReport(io.Discard)})
	var evs []*formats.Event
	for {
		e, err := r.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
}

// TestDBSubagent: the database holds the subagent's session; the task call
// that started it nests its events, and every request's tokens, the
// subagent's included, are the server's.
func TestDBSubagent(t *testing.T) {
	dir := capture("subagent")
	name := filepath.Join(dir, "home", ".local", "share", "opencode", "opencode.db")
	if s := opencode.DB.Detect(readFile(t, name)[:formats.DetectSize]); s != 100 {
		t.Errorf("opencode-db scores %d", s)
	}
	evs := readDB(t, name)
	starts := formatstest.OfKind(evs, formats.AgentStart)
	if len(starts) != 1 || starts[0].AgentInfo.ParentCall != "call_sub_1" || starts[0].Agent == "" {
		t.Fatalf("subagents: %+v", starts)
	}
	child := starts[0].Agent
	srv := sent(t, dir)
	if got := usages(evs, func(a string) bool { return a == "" }); !same(got, srv["main"]) {
		t.Errorf("main requests %v; the server sent %v", got, srv["main"])
	}
	if got := usages(evs, func(a string) bool { return a == child }); !same(got, srv["subagent"]) {
		t.Errorf("subagent requests %v; the server sent %v", got, srv["subagent"])
	}
	var subCall bool
	for _, c := range formatstest.OfKind(evs, formats.ToolResult) {
		subCall = subCall || c.Agent == child && c.Call.ID == "call_sub_shell_1" && c.Call.Output.Text() == "agentconv-from-subagent\n"
	}
	if !subCall {
		t.Errorf("the subagent's shell call is missing: %s", formatstest.Kinds(evs))
	}
	if ends := formatstest.OfKind(evs, formats.RunEnd); len(ends) != 1 || ends[0].Status != formats.Completed {
		t.Errorf("runs: %d", len(ends))
	}
}

// TestDBResume: a resumed session is one run per prompt.
func TestDBResume(t *testing.T) {
	evs := readDB(t, filepath.Join(capture("resume"), "home", ".local", "share", "opencode", "opencode.db"))
	prompts := formatstest.OfKind(evs, formats.UserMessage)
	ends := formatstest.OfKind(evs, formats.RunEnd)
	if len(prompts) != 2 || len(ends) != 2 || prompts[1].Text == prompts[0].Text {
		t.Errorf("%d prompts, %d runs: %s", len(prompts), len(ends), formatstest.Kinds(evs))
	}
}

// TestExport: `opencode export` of the subagent session gives the main
// agent's events the database gives (the child session is not in the
// document: its task call alone names it).
func TestExport(t *testing.T) {
	data := readFile(t, filepath.Join("testdata", "subagent-export.json"))
	if s := opencode.Export.Detect(data); s == 0 {
		t.Errorf("opencode-export scores 0")
	}
	if s := opencode.Export.Detect([]byte(`{"info":{"id":"x"},"messages":[]}`)); s != 0 {
		t.Errorf("a document without a session's slug and projectID scores %d", s)
	}
	exp := formatstest.Read(t, opencode.Export, data)
	db := readDB(t, filepath.Join(capture("subagent"), "home", ".local", "share", "opencode", "opencode.db"))
	main := func(evs []*formats.Event) string {
		var b bytes.Buffer
		for _, e := range evs {
			if e.Agent == "" {
				b.WriteString(e.Kind.String() + " ")
			}
		}
		return b.String()
	}
	if a, b := main(exp), main(db); a != b {
		t.Errorf("export: %s\ndatabase: %s", a, b)
	}
}

// TestStoredStepOrder: a stored step (the export, the database) gives its
// events in the order of its request: its text and calls, its usage, then
// the calls' results (the next request's input) and its end, each at the
// time the source gives it, which does not go back: text at its part's
// start, a call at its start, a result at its end.
func TestStoredStepOrder(t *testing.T) {
	evs := formatstest.Read(t, opencode.Export, readFile(t, filepath.Join("testdata", "subagent-export.json")))
	var kinds []string
	var last time.Time
	for _, e := range evs {
		if e.Agent != "" {
			continue
		}
		kinds = append(kinds, e.Kind.String())
		if !e.Time.IsZero() {
			if e.Time.Before(last) {
				t.Errorf("%s at %s, after %s", e.Kind, e.Time.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
			}
			last = e.Time
		}
	}
	want := "run_start user_message turn_start message tool_call usage tool_result turn_end turn_start message usage turn_end run_end"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("main agent's events\n got %s\nwant %s", got, want)
	}
}

// TestStreamTimes: OpenCode prints a part once it is done, later than its
// own times, and a step's lines later than its parts: each event has its
// part's time (text its start, a call its start, a result its end), a
// step's start, usage and end none, and an agent's times do not go back.
func TestStreamTimes(t *testing.T) {
	evs := formatstest.Read(t, opencode.Stream, readFile(t, filepath.Join(capture("parallel"), "stdout.jsonl")))
	var last time.Time
	var got []string
	for _, e := range evs {
		if e.Kind == formats.RunStart || e.Kind == formats.RunEnd {
			continue
		}
		got = append(got, fmt.Sprintf("%s@%d", e.Kind, e.Time.UnixMilli()%100000))
		if !e.Time.IsZero() && e.Time.Before(last) {
			t.Errorf("%s at %s, after %s", e.Kind, e.Time.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
		}
		if e.Time.After(last) {
			last = e.Time
		}
	}
	zero := time.Time{}.UnixMilli() % 100000
	want := fmt.Sprintf("turn_start@%d message@63649 tool_call@63689 tool_call@63718 usage@%d tool_result@70764 tool_result@70889 turn_end@%d "+
		"turn_start@%d message@73937 usage@%d turn_end@%d", zero, zero, zero, zero, zero, zero)
	if s := strings.Join(got, " "); s != want {
		t.Errorf("events\n got %s\nwant %s", s, want)
	}
}
