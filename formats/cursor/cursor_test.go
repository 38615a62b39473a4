package cursor

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestReadFixture(t *testing.T) {
	data := formatstest.Fixture(t, "cursor", "takopi-stream-success.jsonl")
	evs, warn := formatstest.ReadWarnings(t, Stream, data)
	if warn != "" {
		t.Errorf("warnings %q", warn)
	}
	want := "run_start user_message thinking_delta thinking_delta tool_call tool_result message answer run_end"
	if got := formatstest.Kinds(evs); got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	s := evs[0].Run
	if s.SessionID != "a1b2c3d4-e5f6-7890-abcd-ef1234567890" || s.Model != "Claude 4.6 Opus (Thinking)" || s.Cwd != "/home/user/project" ||
		s.AgentName != AgentName || s.Provider != "anthropic" {
		t.Errorf("run start %+v", s)
	}
	if u := evs[1]; u.Text != "List the files in the current directory." {
		t.Errorf("prompt %q", u.Text)
	}
	if th := evs[3]; th.Text != " I will use the ls tool." || !th.Time.Equal(time.UnixMilli(1700000000100)) {
		t.Errorf("thinking %q at %v", th.Text, th.Time)
	}
	c := evs[4].Call
	if c.ID != "call_read_001" || c.Name != "read" || string(c.Args) != `{"path":"/home/user/project/README.md"}` {
		t.Errorf("call %+v", c)
	}
	if r := evs[5].Call; r.ID != "call_read_001" || r.Name != "read" || r.Status != formats.Completed || r.Output.Text() != "Project README" {
		t.Errorf("result %+v", r)
	}
	if a := evs[7]; a.Text != "I found README.md. Here is the content: Project README" {
		t.Errorf("answer %q", a.Text)
	}
	end := evs[8]
	if end.Status != formats.Completed || end.Run.ExitCode != formats.Some(0) || end.Duration != 2500*time.Millisecond ||
		end.Run.SessionID != s.SessionID || !end.Usage.Empty() {
		t.Errorf("run end %+v", end)
	}
	// Every line comes back, in order, once: cursor → cursor copies them.
	var lines [][]byte
	for _, e := range evs {
		if e.Source.Dialect != Stream.Name || e.Source.LineNo == 0 {
			t.Errorf("%s without its source: %+v", e.Kind, e.Source)
		}
		if !e.Source.Continued {
			lines = append(lines, e.Source.Line)
		}
	}
	if got := string(bytes.Join(lines, []byte("\n"))) + "\n"; got != string(data) {
		t.Errorf("records given back:\n%s\nwant:\n%s", got, data)
	}
}

func TestReadToolResults(t *testing.T) {
	in := toolResultsInput
	evs := formatstest.Read(t, Stream, in)
	res := formatstest.OfKind(evs, formats.ToolResult)
	if len(res) != 6 {
		t.Fatalf("results %s", formatstest.Kinds(evs))
	}
	want := []formats.Call{
		{ID: "c1", Name: "shell", Status: formats.Failed, Output: formats.TextOutput("cc main.c"), Error: "main.c:1: error"},
		{ID: "call-1", Name: "read", Status: formats.Completed, Output: formats.TextOutput("{}")},
		{ID: "c3", Name: "edit", Status: formats.Denied, Error: "not allowed"},
		{ID: "c4", Name: "write", Status: formats.Failed, Error: "disk full"},
		{ID: "c5", Name: "web.search", Status: formats.Completed, Output: formats.TextOutput(`{"hits":3}`)},
		{ID: "c6", Name: "glob", Status: formats.Completed, Output: formats.TextOutput("a.go\nwarn")},
	}
	for i, w := range want {
		g := res[i].Call
		if g.ID != w.ID || g.Name != w.Name || g.Status != w.Status || g.Output.Text() != w.Output.Text() || g.Error != w.Error {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if a := string(res[4].Call.Args); a != `{"q":"go"}` {
		t.Errorf("function arguments %s", a)
	}
	if at := res[5].Time; !at.Equal(time.UnixMilli(1700000000500)) {
		t.Errorf("a timestamp_ms string gives %v", at)
	}
	if p := evs[0].Run.Provider; p != "openai" {
		t.Errorf("provider %q", p)
	}
}

// TestReadPartialOutput: with --stream-partial-output, deltas are
// assistant lines with timestamp_ms and no model_call_id; the segment's
// whole line and the final line repeat them, and give no second message.
func TestReadPartialOutput(t *testing.T) {
	in := partialInput
	evs := formatstest.Read(t, Stream, in)
	want := "run_start text_delta text_delta message tool_call tool_result text_delta message answer run_end"
	if got := formatstest.Kinds(evs); got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	if m := evs[3]; m.Text != "Looking." {
		t.Errorf("message %q", m.Text)
	}
	if r := evs[5].Call; r.Output.Text() != `{"directoryTreeRoot":{}}` {
		t.Errorf("ls output %q", r.Output.Text())
	}
	u := evs[len(evs)-1].Usage
	if u.InputTokens != formats.Some[int64](135) || u.OutputTokens != formats.Some[int64](20) || u.CacheReadTokens != formats.Some[int64](30) ||
		u.CacheWriteTokens != formats.Some[int64](5) || u.CostUSD != formats.Some(0.25) {
		t.Errorf("usage %+v", u)
	}
	// The final line repeated the last message: the next event carries it.
	if a := evs[8]; !bytes.Contains(a.Source.Line, []byte(`"session_id":"s"}`+"\n"+`{"type":"result"`)) {
		t.Errorf("answer carries %q", a.Source.Line)
	}
}

func TestReadOddRecords(t *testing.T) {
	in := oddInput
	evs, warn := formatstest.ReadWarnings(t, Stream, in)
	want := "run_start message raw raw raw tool_result run_start user_message raw"
	if got := formatstest.Kinds(evs); got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	if evs[0].Run.SessionID != "s1" || evs[1].Text != "hi" || evs[6].Run.SessionID != "s2" {
		t.Errorf("runs %+v %+v", evs[0].Run, evs[6].Run)
	}
	if r := evs[5].Call; r.Status != formats.Failed || r.Name != "shell" || r.Error == "" {
		t.Errorf("empty error %+v", r)
	}
	if !strings.Contains(warn, `without a "type"`) || !strings.Contains(warn, "unexpected types") {
		t.Errorf("warnings %q", warn)
	}
	// A thinking/completed line at the end of the input is kept.
	if last := evs[len(evs)-1]; !bytes.Contains(last.Source.Line, []byte(`"completed"`)) || last.Source.Type != "thinking" || last.Source.LineNo != 7 {
		t.Errorf("last %+v", last.Source)
	}

	r := Stream.NewReader(strings.NewReader("{\"type\":\"user\"\nnot json\n[1]\n"+`{"type":"result","subtype":"error","is_error":true,"session_id":"s"}`+"\n"),
		formats.ReadOptions{Dialect: Stream.Name, Report: formats.NewReport(io.Discard)})
	var lines []int
	var kinds []string
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		var le *formats.LineError
		if errors.As(err, &le) {
			lines = append(lines, le.Line)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind.String())
		if ev.Kind == formats.RunEnd && (ev.Text != "the run failed" || ev.Status != formats.StatusUnknown) {
			t.Errorf("failed run %+v", ev)
		}
	}
	if len(lines) != 3 || lines[0] != 1 || lines[2] != 3 || strings.Join(kinds, " ") != "run_start run_end" {
		t.Errorf("bad lines %v, events %v", lines, kinds)
	}
}

func TestWrite(t *testing.T) {
	at := time.UnixMilli(1700000000000).UTC()
	out, rep := formatstest.WriteReport(t, Stream, []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s", Model: "m", Cwd: "/w"}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.ThinkingDelta, Text: "hm", Time: at},
		{Kind: formats.TextDelta, Text: "Run", Time: at},
		{Kind: formats.TextDelta, Text: "ning.", Time: at},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "t1", Name: "Bash", Args: []byte(`{"command":"ls"}`)}, Time: at},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "t1", Status: formats.Failed, Output: formats.TextOutput("o"), Error: "boom"}, Time: at},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "t2", Name: "mcp__gh__pr", Status: formats.Denied, Error: "no"}, Time: at},
		{Kind: formats.AgentStart, Agent: "a1", AgentInfo: formats.AgentInfo{ParentCall: "t1", Model: "small"}},
		{Kind: formats.ToolCall, Agent: "a1", Call: formats.Call{ID: "t3", Name: "shell"}, Time: at},
		{Kind: formats.ToolResult, Agent: "a1", Call: formats.Call{ID: "t3", Status: formats.Completed, Output: formats.TextOutput("x")}, Time: at},
		{Kind: formats.ThinkingDelta, Agent: "a1", Text: "sub"},
		{Kind: formats.AgentEnd, Agent: "a1", Status: formats.Completed},
		{Kind: formats.Message, Text: "Done.", Thinking: "ok"},
		{Kind: formats.Notice, Severity: formats.Error, Text: "flaky"},
		{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](50), CacheReadTokens: formats.Some[int64](20), OutputTokens: formats.Some[int64](5)}},
		{Kind: formats.RunEnd, Status: formats.Completed, Duration: 3 * time.Second, Usage: formats.UsageInfo{CostUSD: formats.Some(0.5)}},
	})
	want := `{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/w","session_id":"s","model":"m","permissionMode":"default"}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"go"}]},"session_id":"s"}
{"type":"thinking","subtype":"delta","text":"hm","session_id":"s","timestamp_ms":1700000000000}
{"type":"thinking","subtype":"completed","session_id":"s","timestamp_ms":1700000000000}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Run"}]},"session_id":"s","timestamp_ms":1700000000000}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ning."}]},"session_id":"s","timestamp_ms":1700000000000}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Running."}]},"session_id":"s","model_call_id":"M1","timestamp_ms":1700000000000}
{"type":"tool_call","subtype":"started","call_id":"t1","tool_call":{"BashToolCall":{"args":{"command":"ls"}}},"model_call_id":"M1","session_id":"s","timestamp_ms":1700000000000}
{"type":"tool_call","subtype":"completed","call_id":"t1","tool_call":{"BashToolCall":{"args":{"command":"ls"},"result":{"error":{"errorMessage":"boom","content":"o"}}}},"model_call_id":"M1","session_id":"s","timestamp_ms":1700000000000}
{"type":"tool_call","subtype":"started","call_id":"t2","tool_call":{"mcp__gh__prToolCall":{"args":{}}},"model_call_id":"M2","session_id":"s","timestamp_ms":1700000000000}
{"type":"tool_call","subtype":"completed","call_id":"t2","tool_call":{"mcp__gh__prToolCall":{"args":{},"result":{"rejected":{"reason":"no","isReadonly":false}}}},"model_call_id":"M2","session_id":"s","timestamp_ms":1700000000000}
{"type":"tool_call","subtype":"started","call_id":"t3","tool_call":{"shellToolCall":{"args":{}}},"model_call_id":"M3","session_id":"s","timestamp_ms":1700000000000}
{"type":"tool_call","subtype":"completed","call_id":"t3","tool_call":{"shellToolCall":{"args":{},"result":{"success":{"stdout":"x","stderr":"","exitCode":0}}}},"model_call_id":"M3","session_id":"s","timestamp_ms":1700000000000}
{"type":"thinking","subtype":"delta","text":"ok","session_id":"s","timestamp_ms":1700000000000}
{"type":"thinking","subtype":"completed","session_id":"s","timestamp_ms":1700000000000}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done."}]},"session_id":"s","model_call_id":"M4","timestamp_ms":1700000000000}
{"type":"result","subtype":"success","duration_ms":3000,"duration_api_ms":3000,"is_error":false,"result":"Done.","session_id":"s","usage":{"inputTokens":30,"outputTokens":5,"cacheReadTokens":20,"totalCost":0.5}}
`
	if got := modelCalls(out); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	// Outside a pipeline nothing reports the features it lacks; the
	// writer reports its own losses only.
	for _, l := range []string{"1 × " + lostErrors.Name(), "1 × " + lostSubInfo.Name()} {
		if !strings.Contains(rep, l) {
			t.Errorf("report lacks %q:\n%s", l, rep)
		}
	}
}

// modelCalls replaces model_call_ids with M1, M2, … in order of first
// sight, so that a test can say which lines share one.
func modelCalls(out string) string {
	seen := map[string]string{}
	var b strings.Builder
	for _, l := range strings.SplitAfter(out, "\n") {
		const k = `"model_call_id":"`
		if i := strings.Index(l, k); i >= 0 {
			j := strings.IndexByte(l[i+len(k):], '"')
			id := l[i+len(k) : i+len(k)+j]
			if seen[id] == "" {
				seen[id] = "M" + string(rune('0'+len(seen)+1))
			}
			l = l[:i+len(k)] + seen[id] + l[i+len(k)+j:]
		}
		b.WriteString(l)
	}
	return b.String()
}

// TestWriteMessageAfterItsToolCall: some sources end a message after the
// tool calls it holds, repeating text that deltas carried; the writer gave
// it its whole line before the call, and does not write it again.
func TestWriteMessageAfterItsToolCall(t *testing.T) {
	out, _ := formatstest.WriteReport(t, Stream, []*formats.Event{
		{Kind: formats.RunStart},
		{Kind: formats.TextDelta, Text: "Reading it."},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c", Name: "read"}},
		{Kind: formats.Message, Text: "Reading it."},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c", Status: formats.Completed}},
		{Kind: formats.Message, Text: "Reading it."},
		{Kind: formats.RunEnd, Status: formats.Completed},
	})
	// The delta, its whole line, the answer in the result, and the second
	// message, which is a message of its own.
	if n := strings.Count(out, "Reading it."); n != 4 {
		t.Errorf("text written %d times:\n%s", n, out)
	}
	evs := formatstest.Read(t, Stream, out)
	if n := len(formatstest.OfKind(evs, formats.Message)); n != 2 {
		t.Errorf("%d messages read back:\n%s", n, out)
	}
}

func TestWriteFailedRuns(t *testing.T) {
	out, rep := formatstest.WriteReport(t, Stream, []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c", Name: "write", Status: formats.Denied, Error: "read-only"}},
		{Kind: formats.RunEnd, Status: formats.Denied, Run: formats.RunInfo{ExitCode: formats.Some(2)}},
		{Kind: formats.RunStart},
		{Kind: formats.Answer, Text: "half"},
		{Kind: formats.RunEnd, Status: formats.Cancelled, Text: "interrupted by a signal", Run: formats.RunInfo{ExitCode: formats.Some(130)}},
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || !strings.Contains(lines[3], `"subtype":"error","duration_ms":0,"duration_api_ms":0,"is_error":true,"result":"read-only"`) ||
		!strings.Contains(lines[5], `"is_error":true,"result":"interrupted by a signal"`) {
		t.Fatalf("output:\n%s", out)
	}
	// A run stopped at a refusal reads back as one (exit 2); a cancelled
	// run reads back as a failure.
	evs := formatstest.Read(t, Stream, out)
	var ends []*formats.Event
	for _, e := range evs {
		if e.Kind == formats.RunEnd {
			ends = append(ends, e)
		}
	}
	v := &formats.RunView{}
	var codes []int
	for _, e := range evs {
		v.Observe(e)
		if e.Kind == formats.RunEnd {
			codes = append(codes, v.ExitCode)
		}
	}
	if len(ends) != 2 || len(codes) != 2 || codes[0] != 2 || codes[1] != 1 {
		t.Errorf("read back: exit codes %v", codes)
	}
	for _, l := range []string{"1 × " + formats.ExitCodesBeyondRefusal.Name(), "1 × " + formats.CancelledRunsAsErrors.Name(), "1 × " + formats.FailedRunAnswers.Name()} {
		if !strings.Contains(rep, l) {
			t.Errorf("report lacks %q:\n%s", l, rep)
		}
	}
}

func TestDetect(t *testing.T) {
	if s := detect(formatstest.Fixture(t, "cursor", "takopi-stream-success.jsonl")); s != 100 {
		t.Errorf("the Cursor fixture scores %d", s)
	}
	// Without a tool or thinking event, Cursor's own apiKeySource marks it.
	plain := `{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/x","session_id":"c","model":"Auto","permissionMode":"default"}
{"type":"result","subtype":"success","duration_ms":1,"duration_api_ms":1,"is_error":false,"result":"ok","session_id":"c"}
`
	if s := detect([]byte(plain)); s != 100 {
		t.Errorf("a plain Cursor stream scores %d", s)
	}
	// A head cut inside a line still counts its complete lines.
	if s := detect([]byte(plain[:len(plain)-20])); s != 100 {
		t.Errorf("a cut head scores %d", s)
	}
	// Every other dialect's fixture scores 0.
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*", "*"))
	n := 0
	for _, p := range files {
		if strings.Contains(p, string(filepath.Separator)+"cursor"+string(filepath.Separator)) || strings.Contains(p, "golden") || strings.Contains(p, "bench") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n++
		if s := detect(b[:min(len(b), formats.DetectSize)]); s != 0 {
			t.Errorf("%s scores %d", p, s)
		}
	}
	if n < 20 {
		t.Errorf("only %d fixtures of other dialects", n)
	}
}

// TestWriterObserves: the pipeline copies cursor records verbatim and
// only shows them to the writer.
func TestWriterObserves(t *testing.T) {
	var _ formats.Observer = newWriter(io.Discard, formats.WriteOptions{}).(*writer)
}

const toolResultsInput = `{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/x","session_id":"chat-7","model":"GPT-5","permissionMode":"default"}
{"type":"tool_call","subtype":"started","call_id":"c1","tool_call":{"shellToolCall":{"args":{"command":"make"}}},"model_call_id":"m1","session_id":"chat-7","timestamp_ms":1}
{"type":"tool_call","subtype":"completed","call_id":"c1","tool_call":{"shellToolCall":{"args":{"command":"make"},"result":{"failure":{"stdout":"cc main.c","stderr":"main.c:1: error","exitCode":2}}}},"session_id":"chat-7"}
{"type":"tool_call","subtype":"completed","call_id":"call-1","tool_call":{"readToolCall":{"args":{"path":"/x/package.json"},"result":{"success":{"content":"{}"}}},"toolCallId":"call-1"},"session_id":"chat-7"}
{"type":"tool_call","subtype":"completed","call_id":"c3","tool_call":{"editToolCall":{"args":{"path":"a"},"result":{"rejected":{"reason":"not allowed","isReadonly":true}}}},"session_id":"chat-7"}
{"type":"tool_call","subtype":"completed","call_id":"c4","tool_call":{"writeToolCall":{"args":{"path":"b"},"result":{"error":{"errorMessage":"disk full"}}}},"session_id":"chat-7"}
{"type":"tool_call","subtype":"completed","call_id":"c5","tool_call":{"function":{"name":"web.search","arguments":"{\"q\":\"go\"}","result":{"success":{"hits":3}}}},"session_id":"chat-7"}
{"type":"tool_call","subtype":"completed","call_id":"c6","timestamp_ms":"1700000000500","tool_call":{"globToolCall":{"args":{"glob":"*.go"},"result":{"success":{"stdout":"a.go","stderr":"warn"}}}},"session_id":"chat-7"}
`

const partialInput = `{"type":"system","subtype":"init","session_id":"s","model":"Auto","cwd":"/x","apiKeySource":"env","permissionMode":"default"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Look"}]},"session_id":"s","timestamp_ms":10}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ing."}]},"session_id":"s","timestamp_ms":11}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Looking."}]},"session_id":"s","model_call_id":"m1","timestamp_ms":12}
{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"lsToolCall":{"args":{"path":"/x"}}},"model_call_id":"m1","session_id":"s","timestamp_ms":13}
{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"lsToolCall":{"args":{"path":"/x"},"result":{"success":{"directoryTreeRoot":{}}}}},"model_call_id":"m1","session_id":"s","timestamp_ms":14}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done"}]},"session_id":"s","timestamp_ms":15}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done"}]},"session_id":"s","model_call_id":"m2","timestamp_ms":16}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done"}]},"session_id":"s"}
{"type":"result","subtype":"success","duration_ms":5,"duration_api_ms":5,"is_error":false,"result":"Looking.Done","session_id":"s","usage":{"inputTokens":100,"outputTokens":20,"cacheReadTokens":30,"cacheWriteTokens":5,"totalCost":0.25}}
`

const oddInput = `{"type":"assistant","message":{"role":"assistant","content":"hi"},"session_id":"s1"}
{"type":"interaction_query","subtype":"request","query_type":"shell","session_id":"s1"}
{"mystery":1}
{"type":"tool_call","subtype":"completed","call_id":7,"tool_call":{}}
{"type":"tool_call","subtype":"completed","call_id":"x","tool_call":{"shellToolCall":{"result":{"error":{}}}},"session_id":"s1"}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"again"}]},"session_id":"s2"}
{"type":"thinking","subtype":"completed","session_id":"s2","timestamp_ms":3}
`

// FuzzStreamReader: deltas, messages, tool calls and answers are left out
// of the comparison: the writer gives streamed text its whole message when
// the agent moves on, a whole message's thinking as a delta, a call that
// ended unannounced its started line, and a result without a text the
// run's last text.
func FuzzStreamReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "cursor", "*"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, in := range []string{toolResultsInput, partialInput, oddInput} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, Stream, data, formats.ToolResult, formats.UserMessage)
	})
}

// TestLive: on a pipe, each event comes as soon as its line does.
func TestLive(t *testing.T) {
	pr, pw := io.Pipe()
	r := newReader(pr, formats.ReadOptions{Dialect: Stream.Name, Report: formats.NewReport(io.Discard)})
	for _, l := range []string{
		`{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/x","session_id":"c","model":"Auto","permissionMode":"default"}`,
		`{"type":"tool_call","subtype":"started","call_id":"t","tool_call":{"shellToolCall":{"args":{"command":"sleep 9"}}},"session_id":"c","timestamp_ms":1}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"a"}]},"session_id":"c","timestamp_ms":2}`,
	} {
		go pw.Write([]byte(l + "\n"))
		if ev := formatstest.Next(t, r); ev == nil || ev.Source.Line == nil {
			t.Fatalf("no event for %s", l)
		}
	}
	pw.Close()
}
