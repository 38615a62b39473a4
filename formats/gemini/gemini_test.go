package gemini

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestStreamReader(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "gemini", "tools-stream.jsonl"))
	want := "run_start user_message text_delta text_delta tool_call tool_result tool_call tool_result notice tool_call tool_result text_delta text_delta answer run_end"
	if got := formatstest.Kinds(evs); got != want {
		t.Fatalf("kinds\n got %s\nwant %s", got, want)
	}
	start := evs[0]
	if start.Run.SessionID != "c7e1b7a4-6f0e-4a43-9d5e-3f1f2a9b8c01" || start.Run.Model != "gemini-2.5-pro" || start.Run.Provider != "gcp.gemini" || start.Run.AgentName != "gemini-cli" {
		t.Errorf("init read as %+v", start.Run)
	}
	if want := time.Date(2025, 10, 10, 12, 0, 1, 200e6, time.UTC); !evs[2].Time.Equal(want) {
		t.Errorf("timestamp read as %v", evs[2].Time)
	}
	if c := evs[4].Call; c.ID != "glob-1760097601500-a1" || c.Name != "glob" || string(c.Args) != `{"pattern":"**/*.go"}` {
		t.Errorf("tool_use read as %+v", c)
	}
	if c := evs[7].Call; c.Status != formats.Failed || c.Error != "File not found: /src/missing.go" || c.Name != "read_file" {
		t.Errorf("failed tool_result read as %+v", c)
	}
	if n := evs[8]; n.Severity != formats.Warning || !strings.HasPrefix(n.Text, "Loop detection") {
		t.Errorf("error event read as %+v", n)
	}
	if a := evs[13]; a.Text != "There are 2 Go files with 65 lines in all." {
		t.Errorf("answer %q", a.Text)
	}
	end := evs[14]
	if end.Status != formats.Completed || !end.Run.ExitCode.OK || end.Run.ExitCode.V != 0 || end.Duration != 3600*time.Millisecond ||
		end.Usage.InputTokens.V != 3900 || end.Usage.OutputTokens.V != 220 || end.Usage.CacheReadTokens.V != 1200 || end.Usage.TotalTokens.V != 4120 {
		t.Errorf("result read as %+v", end)
	}
	if !end.Source.Continued || evs[13].Source.Line == nil {
		t.Errorf("the result record must be carried once: %+v %+v", evs[13].Source, end.Source)
	}
}

func TestStreamReaderErrors(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "gemini", "error-result-stream.jsonl"))
	if got := formatstest.Kinds(evs); got != "run_start user_message message tool_call tool_result notice run_end" {
		t.Fatalf("kinds %s", got)
	}
	if n := evs[5]; n.Severity != formats.Error {
		t.Errorf("severity error read as %v", n.Severity)
	}
	end := evs[6]
	if end.Status != formats.Failed || end.Run.ExitCode.V != 53 || !strings.HasPrefix(end.Text, "Reached max session turns") {
		t.Errorf("result error read as %+v", end)
	}
	// Statuses this package writes for refusals and cancellations, a
	// result without stats, and unknown and malformed lines.
	in := `{"type":"tool_use","timestamp":"x","tool_name":"rm","tool_id":"t1","parameters":{}}
{"type":"tool_result","timestamp":"x","tool_id":"t1","status":"error","error":{"type":"permission_denied","message":"no"}}
{"type":"thought","timestamp":"x"}
{bad
{"type":"result","timestamp":"x","status":"error","error":{"type":"FatalInputError","message":"empty prompt"}}
`
	evs, bad, err := formatstest.ReadAll(Stream, []byte(in))
	if err != nil || len(bad) != 1 {
		t.Fatalf("%v %v", bad, err)
	}
	if got := formatstest.Kinds(evs); got != "tool_call tool_result raw run_end" {
		t.Fatalf("kinds %s", got)
	}
	if c := evs[1].Call; c.Status != formats.Denied || c.Error != "no" || c.Name != "rm" {
		t.Errorf("denied %+v", c)
	}
	if !evs[0].Time.IsZero() {
		t.Errorf("a bad timestamp must give no time")
	}
	if end := evs[3]; end.Run.ExitCode.V != 42 || !end.Usage.Empty() {
		t.Errorf("input error %+v", end)
	}
}

func TestJSONReader(t *testing.T) {
	evs := formatstest.Read(t, JSON, formatstest.Fixture(t, "gemini", "response.json"))
	if got := formatstest.Kinds(evs); got != "run_start answer run_end" {
		t.Fatalf("kinds %s", got)
	}
	end := evs[2]
	if evs[0].Run.Model != "gemini-2.5-pro" || evs[1].Text != "The capital of France is Paris." || end.Status != formats.Completed ||
		end.Run.ExitCode.V != 0 || end.Usage.InputTokens.V != 8300 || end.Usage.CacheReadTokens.V != 3100 || end.Usage.OutputTokens.V != 91 || end.Usage.ReasoningTokens.V != 82 {
		t.Errorf("read as %+v / %+v", evs[0].Run, end)
	}
	if !bytes.Equal(evs[0].Source.Line, bytes.TrimSpace(formatstest.Fixture(t, "gemini", "response.json"))) {
		t.Errorf("the object must be carried whole")
	}
	evs = formatstest.Read(t, JSON, formatstest.Fixture(t, "gemini", "input-error.json"))
	if end := evs[len(evs)-1]; end.Status != formats.Failed || end.Run.ExitCode.V != 42 || !strings.HasPrefix(end.Text, "No input") {
		t.Errorf("error object read as %+v", end)
	}
	evs = formatstest.Read(t, JSON, `{"response":"a","warnings":["w1",{"message":"w2"}],"stats":{"models":{"m1":{"tokens":{"total":5}},"m2":{"tokens":{"total":9}}}}}`)
	if got := formatstest.Kinds(evs); got != "run_start notice notice answer run_end" || evs[2].Text != "w2" || evs[0].Run.Model != "m2" || evs[4].Usage.TotalTokens.V != 14 {
		t.Errorf("warnings and models: %s %+v", got, evs[0].Run)
	}
}

func TestDetect(t *testing.T) {
	for n, d := range map[string]formats.Dialect{"tools-stream.jsonl": Stream, "error-result-stream.jsonl": Stream, "response.json": JSON, "input-error.json": JSON} {
		if s := d.Detect(formatstest.Fixture(t, "gemini", n)); s < 80 {
			t.Errorf("%s scores %d as %s", n, s, d.Name)
		}
	}
	// A pretty-printed object cut by the detection head is judged by its
	// first key.
	if s := detectJSON([]byte("{\n  \"session_id\": \"s\",\n  \"response\": \"very long")); s == 0 {
		t.Errorf("a cut object is not recognised")
	}
	for _, in := range []string{
		`{"type":"result","subtype":"success","is_error":false,"result":"x","timestamp":"t"}`,
		`{"type":"system","subtype":"init","session_id":"s"}`,
		`{"type":"error","message":"x"}`,
		`{"agent":"","seq":1,"at":"2025-01-01T00:00:00Z","type":"error","timestamp":"t"}`,
		`{"type":"error","message":"x","severity":"warning"}`,
	} {
		if s := detectStream([]byte(in)); s != 0 {
			t.Errorf("stream detector scores %d on %s", s, in)
		}
	}
	for _, in := range []string{
		`{"success":true,"answer":"a","exit_code":0,"tool_calls":[]}`,
		`{"type":"result","subtype":"success","result":"x","session_id":"s"}`,
		`[{"type":"system"}]`,
		`{"hello":1}`,
	} {
		if s := detectJSON([]byte(in)); s != 0 {
			t.Errorf("json detector scores %d on %s", s, in)
		}
	}
}

func writeAll(t *testing.T, d formats.Dialect, evs []*formats.Event) (string, map[string]int) {
	t.Helper()
	var out bytes.Buffer
	rep := formats.NewReport(io.Discard)
	w := formats.Standalone(d.NewWriter(&out, formats.WriteOptions{Dialect: d.Name, Report: rep}))
	for _, e := range evs {
		if e.Source.Dialect == "" {
			e.Source.Dialect = "other"
		}
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String(), rep.LossTable()
}

func sampleRun() []*formats.Event {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return []*formats.Event{
		{Kind: formats.RunStart, Time: at, Run: formats.RunInfo{SessionID: "s1", Model: "m"}},
		{Kind: formats.UserMessage, Time: at, Text: "go"},
		{Kind: formats.ThinkingDelta, Time: at, Text: "hmm"},
		{Kind: formats.TextDelta, Time: at, Text: "Look"},
		{Kind: formats.Message, Time: at, Text: "Look"},
		{Kind: formats.ToolCall, Time: at, Call: formats.Call{ID: "c1", Name: "bash", Args: []byte(`{"command":"ls"}`)}},
		{Kind: formats.ToolResult, Time: at, Call: formats.Call{ID: "c1", Status: formats.Failed, Output: formats.TextOutput("o"), Error: "exit 1"}},
		{Kind: formats.ToolResult, Time: at, Call: formats.Call{ID: "c2", Name: "rm", Status: formats.Denied, Error: "refused"}},
		{Kind: formats.Todos, Time: at, Todos: []formats.Todo{{Content: "x"}}},
		{Kind: formats.Answer, Time: at, Text: "Done."},
		{Kind: formats.RunEnd, Time: at, Status: formats.Failed, Text: "too many turns", Run: formats.RunInfo{ExitCode: formats.Some(53)},
			Duration: 2 * time.Second, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](10), OutputTokens: formats.Some[int64](2)}},
	}
}

func TestStreamWriter(t *testing.T) {
	got, losses := writeAll(t, Stream, sampleRun())
	want := `{"type":"init","timestamp":"2025-01-02T03:04:05.000Z","session_id":"s1","model":"m"}
{"type":"message","timestamp":"2025-01-02T03:04:05.000Z","role":"user","content":"go"}
{"type":"message","timestamp":"2025-01-02T03:04:05.000Z","role":"assistant","content":"Look","delta":true}
{"type":"tool_use","timestamp":"2025-01-02T03:04:05.000Z","tool_name":"bash","tool_id":"c1","parameters":{"command":"ls"}}
{"type":"tool_result","timestamp":"2025-01-02T03:04:05.000Z","tool_id":"c1","status":"error","output":"o","error":{"type":"execution_failed","message":"exit 1"}}
{"type":"tool_use","timestamp":"2025-01-02T03:04:05.000Z","tool_name":"rm","tool_id":"c2","parameters":{}}
{"type":"tool_result","timestamp":"2025-01-02T03:04:05.000Z","tool_id":"c2","status":"error","error":{"type":"permission_denied","message":"refused"}}
{"type":"message","timestamp":"2025-01-02T03:04:05.000Z","role":"assistant","content":"Done."}
{"type":"result","timestamp":"2025-01-02T03:04:05.000Z","status":"error","error":{"type":"FatalTurnLimitedError","message":"too many turns"},"stats":{"total_tokens":12,"input_tokens":10,"output_tokens":2,"duration_ms":2000,"tool_calls":2}}
`
	if got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
	if len(losses) != 0 {
		// Thinking and todo lists are the pipeline's to report (Carries).
		t.Errorf("the writer reports losses of its own: %v", losses)
	}
	back := formatstest.Read(t, Stream, got)
	end := back[len(back)-1]
	if end.Run.ExitCode.V != 53 || end.Text != "too many turns" || end.Duration != 2*time.Second || back[len(back)-2].Text != "Done." {
		t.Errorf("read back %+v", end)
	}
}

func TestJSONWriter(t *testing.T) {
	got, losses := writeAll(t, JSON, sampleRun())
	want := `{
  "session_id": "s1",
  "response": "Done.",
  "stats": {
    "models": {
      "m": {
        "tokens": {
          "prompt": 10,
          "candidates": 2,
          "total": 12
        }
      }
    }
  },
  "error": {
    "type": "FatalTurnLimitedError",
    "message": "too many turns",
    "code": 53
  }
}
`
	if got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
	// The writer reports only its own quirks: the message "Look" is not
	// the response. What Carries leaves out is the pipeline's to report.
	if len(losses) != 1 || losses["assistant messages besides the answer"] != 1 {
		t.Errorf("losses %v", losses)
	}
	back := formatstest.Read(t, JSON, got)
	if end := back[len(back)-1]; end.Run.ExitCode.V != 53 || end.Run.Model != "m" || end.Usage.InputTokens.V != 10 {
		t.Errorf("read back %+v", end)
	}
}

// unnamedFailure forgets the message of a failed run whose source gave
// none: the writer prints the run view's ("the run failed").
func unnamedFailure(cs []formatstest.Comparable) []formatstest.Comparable {
	for i := range cs {
		if cs[i].Kind == formats.RunEnd && cs[i].Text == "the run failed" {
			cs[i].Text = ""
		}
	}
	return cs
}

func TestUsageCounts(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	// gemini-json's tokens of response.json: prompt includes cached, the
	// candidates leave the thoughts out.
	u := usageOfCounts(n(8300), n(9), n(8391), n(3100), n(82))
	if u.InputTokens.V != 8300 || u.CacheReadTokens.V != 3100 || u.OutputTokens.V != 91 || u.ReasoningTokens.V != 82 || u.TotalTokens.V != 8391 {
		t.Errorf("read as %+v", u)
	}
	c := countsOf(u, true)
	if *c.Prompt != 8300 || *c.Cached != 3100 || *c.Input != 5200 || *c.Candidates != 9 || *c.Thoughts != 82 || *c.Total != 8391 {
		t.Errorf("written with thoughts as %+v", c)
	}
	// Without a thoughts count the candidates are the whole output.
	if c := countsOf(u, false); *c.Candidates != 91 || c.Thoughts != nil {
		t.Errorf("written without thoughts as %+v", c)
	}
	// No count is negative: more cache reads than input (a source that
	// does not count them in) gives an input of 0; a negative count read
	// is unknown.
	c = countsOf(formats.UsageInfo{InputTokens: formats.Some[int64](300), CacheReadTokens: formats.Some[int64](4050),
		OutputTokens: formats.Some[int64](60), ReasoningTokens: formats.Some[int64](80)}, true)
	if *c.Input != 0 || *c.Candidates != 0 || *c.Total != 360 {
		t.Errorf("negative counts written: %+v", c)
	}
	if u := usageOfCounts(n(-5), nil, nil, nil, nil); u.InputTokens.OK || !u.Empty() {
		t.Errorf("a negative count read as %+v", u)
	}
}

var roundTripKinds = []formats.Kind{formats.ToolCall, formats.ToolResult, formats.UserMessage, formats.TextDelta, formats.Message, formats.Answer, formats.Notice, formats.RunEnd}

func FuzzStreamReader(f *testing.F) {
	f.Add(formatstest.Fixture(f, "gemini", "tools-stream.jsonl"))
	f.Add(formatstest.Fixture(f, "gemini", "error-result-stream.jsonl"))
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTripNormalized(t, Stream, data, unnamedFailure, roundTripKinds...)
	})
}

func FuzzJSONReader(f *testing.F) {
	f.Add(formatstest.Fixture(f, "gemini", "response.json"))
	f.Add(formatstest.Fixture(f, "gemini", "input-error.json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, JSON, data, formats.Answer, formats.Notice, formats.RunEnd)
	})
}

// Gemini CLI counts the thoughts in stream-json's total_tokens only, and
// in gemini-json's tokens.thoughts; the output tokens of the model include
// them, and the writers take them out again (Gemini CLI 0.61's thinking
// capture: 1,207 + 33 + 11 = 1,251).
func TestThoughtTokens(t *testing.T) {
	stream := `{"type":"init","timestamp":"2026-12-02T01:53:18.084Z","session_id":"s","model":"auto"}
{"type":"result","timestamp":"2026-12-02T01:53:19.307Z","status":"success","stats":{"total_tokens":1251,"input_tokens":1207,"output_tokens":33,"cached":200,"input":1007,"duration_ms":1223,"tool_calls":0}}
`
	evs := formatstest.Read(t, Stream, stream)
	u := evs[len(evs)-1].Usage
	if u.OutputTokens.V != 44 || u.ReasoningTokens.V != 11 || u.InputTokens.V != 1207 || u.TotalTokens.V != 1251 {
		t.Errorf("stream usage %+v", u)
	}
	b, err := formatstest.WriteAll(Stream, evs, true)
	out := string(b)
	if err != nil || !strings.Contains(out, `"total_tokens":1251,"input_tokens":1207,"output_tokens":33`) {
		t.Errorf("stream written back as %s", out)
	}
	b, err = formatstest.WriteAll(JSON, evs, true)
	out = string(b)
	if err != nil || !strings.Contains(out, `"candidates": 33`) || !strings.Contains(out, `"thoughts": 11`) {
		t.Errorf("json written as %s", out)
	}
	back := formatstest.Read(t, JSON, out)
	if u := back[len(back)-1].Usage; u.OutputTokens.V != 44 || u.ReasoningTokens.V != 11 {
		t.Errorf("json read back as %+v", u)
	}
	// No total over the rest: no thoughts.
	evs = formatstest.Read(t, Stream, `{"type":"result","timestamp":"2025-01-02T03:04:05.000Z","status":"success","stats":{"total_tokens":12,"input_tokens":10,"output_tokens":2}}`)
	if u := evs[len(evs)-1].Usage; u.ReasoningTokens.OK || u.OutputTokens.V != 2 {
		t.Errorf("thoughts made up: %+v", u)
	}
}

// Gemini CLI exits with the HTTP status of an API error modulo 256, which
// its result quotes (Gemini CLI 0.61's and 0.20's api-error and 0.20's
// rate-limit captures: 529 gives 17, 429 173).
func TestAPIErrorExitCode(t *testing.T) {
	for msg, want := range map[string]int{
		`[API Error: {\"error\":{\"code\":529,\"message\":\"Overloaded\",\"status\":\"UNAVAILABLE\"}}]`:                                            17,
		`[API Error: {\"error\":{\"code\":429,\"message\":\"Rate limited\",\"status\":\"RESOURCE_EXHAUSTED\"}}]\nPlease wait and try again later.`: 173,
	} {
		evs := formatstest.Read(t, Stream, `{"type":"result","timestamp":"2026-12-02T01:54:08.828Z","status":"error","error":{"type":"unknown","message":"`+msg+`"}}`)
		if c := evs[len(evs)-1].Run.ExitCode; !c.OK || c.V != want {
			t.Errorf("%s: exit code %+v, want %d", msg, c, want)
		}
	}
}
