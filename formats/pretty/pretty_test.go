package pretty

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// render writes events into a pretty writer, stamping them 1 ms apart as
// the pipeline's fixed clock does, and returns the output and the losses.
func render(t *testing.T, color bool, evs ...*formats.Event) (string, map[string]int) {
	t.Helper()
	var out bytes.Buffer
	rep := formats.NewReport(io.Discard)
	w := formats.Standalone(Dialect.NewWriter(&out, formats.WriteOptions{Dialect: "pretty", Report: rep, Params: map[string]string{ParamColor: colorParam(color)}}))
	for i, e := range evs {
		if e.Arrived.IsZero() {
			e.Arrived = formats.FixedEpoch.Add(time.Duration(i+1) * time.Millisecond)
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

func check(t *testing.T, got, want string) {
	t.Helper()
	want = strings.TrimPrefix(want, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func args(s string) json.RawMessage { return json.RawMessage(s) }

func runStart() *formats.Event {
	return &formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s1", Model: "m1", Cwd: "/src"}}
}

func toolCall(agent, id, name, a string) *formats.Event {
	return &formats.Event{Kind: formats.ToolCall, Agent: agent, Call: formats.Call{ID: id, Name: name, Args: args(a)}}
}

func result(agent, id string, st formats.Status, output, errText string) *formats.Event {
	return &formats.Event{Kind: formats.ToolResult, Agent: agent, Call: formats.Call{ID: id, Status: st, Output: formats.TextOutput(output), Error: errText}}
}

func runEnd(st formats.Status, code int) *formats.Event {
	return &formats.Event{Kind: formats.RunEnd, Status: st, Run: formats.RunInfo{ExitCode: formats.Some(code)}}
}

func TestRun(t *testing.T) {
	got, lost := render(t, false,
		runStart(),
		&formats.Event{Kind: formats.UserMessage, Text: "fix the lint"},
		toolCall("", "c1", "bash", `{"command":"bash -lc 'npx eslint src/'","timeout":5}`),
		&formats.Event{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Status: formats.Completed, Output: formats.TextOutput("ok")}, Duration: 2500 * time.Millisecond},
		&formats.Event{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](1000), OutputTokens: formats.Some[int64](20), CostUSD: formats.Some(0.5)}},
		&formats.Event{Kind: formats.Message, Text: "Fixed it."},
		&formats.Event{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](1500), OutputTokens: formats.Some[int64](30), CostUSD: formats.Some(0.25)}},
		&formats.Event{Kind: formats.Answer, Text: "Fixed it.\n"},
		runEnd(formats.Completed, 0),
	)
	check(t, got, `
▶ run · s1 · m1 · /src
› fix the lint
▸ bash  npx eslint src/ ✓ 2.5s
Fixed it.
■ ✓ completed · 1 call · 2,550 tokens (2,500 in, 50 out) · $0.7500 · 8ms
`)
	if lost[lostOutputs.Name()] != 1 || len(lost) != 1 {
		t.Errorf("losses %v, want 1 × %s", lost, lostOutputs)
	}
}

// TestNesting: subagents two deep, each under the call that started it; a
// call left open while its subagent works ends with "…" and gets its result
// on a line of its own.
func TestNesting(t *testing.T) {
	got, _ := render(t, false,
		runStart(),
		toolCall("", "t1", "Task", `{"description":"explore","prompt":"look around"}`),
		&formats.Event{Kind: formats.AgentStart, Agent: "a1", AgentInfo: formats.AgentInfo{Label: "explorer", ParentCall: "t1", Model: "small"}},
		&formats.Event{Kind: formats.TextDelta, Agent: "a1", Text: "Looking"},
		&formats.Event{Kind: formats.TextDelta, Agent: "a1", Text: " around.\nTwo lines."},
		toolCall("a1", "t2", "Task", `{"description":"dig deeper"}`),
		&formats.Event{Kind: formats.AgentStart, Agent: "a2", AgentInfo: formats.AgentInfo{Label: "digger", Parent: "a1", ParentCall: "t2"}},
		toolCall("a2", "r1", "Read", `{"file_path":"/src/main.go"}`),
		result("a2", "r1", formats.Completed, "", ""),
		&formats.Event{Kind: formats.Message, Agent: "a2", Text: "Found it."},
		&formats.Event{Kind: formats.AgentEnd, Agent: "a2", Status: formats.Completed, Text: "main.go has it\nline two"},
		result("a1", "t2", formats.Completed, "", ""),
		&formats.Event{Kind: formats.AgentEnd, Agent: "a1", Status: formats.Completed, Text: "all found"},
		result("", "t1", formats.Completed, "", ""),
		runEnd(formats.Completed, 0),
	)
	check(t, got, `
▶ run · s1 · m1 · /src
▸ Task  explore …
  ┌ explorer · small
  │ Looking around.
  │ Two lines.
  │ ▸ Task  dig deeper …
  │   ┌ digger
  │   │ ▸ Read  /src/main.go ✓ 1ms
  │   │ Found it.
  │   └ digger ✓ · main.go has it (+1 lines)
  │ ↳ Task  dig deeper ✓ 6ms
  └ explorer ✓ · all found
↳ Task  explore ✓ 12ms
■ ✓ completed · 3 calls · 14ms
`)
}

// TestInterleaved: when two subagents' lines alternate, each resumption is
// headed with the agent's name.
func TestInterleaved(t *testing.T) {
	got, _ := render(t, false,
		runStart(),
		toolCall("", "t1", "Task", `{"description":"one"}`),
		toolCall("", "t2", "Task", `{"description":"two"}`),
		&formats.Event{Kind: formats.AgentStart, Agent: "a1", AgentInfo: formats.AgentInfo{Label: "one", ParentCall: "t1"}},
		&formats.Event{Kind: formats.AgentStart, Agent: "a2", AgentInfo: formats.AgentInfo{Label: "two", ParentCall: "t2"}},
		toolCall("a1", "r1", "Read", `{"file_path":"a"}`),
		toolCall("a2", "r2", "Read", `{"file_path":"b"}`),
		result("a1", "r1", formats.Completed, "", ""),
		result("a2", "r2", formats.Completed, "", ""),
		&formats.Event{Kind: formats.AgentEnd, Agent: "a1", Status: formats.Completed},
		&formats.Event{Kind: formats.AgentEnd, Agent: "a2", Status: formats.Failed},
		result("", "t1", formats.Completed, "", ""),
		result("", "t2", formats.Failed, "", "subagent failed"),
		runEnd(formats.Failed, 1),
	)
	check(t, got, `
▶ run · s1 · m1 · /src
▸ Task  one …
▸ Task  two …
  ┌ one · for Task  one
  ┌ two · for Task  two
  ├ one
  │ ▸ Read  a …
  ├ two
  │ ▸ Read  b …
  ├ one
  │ ↳ Read  a ✓ 2ms
  ├ two
  │ ↳ Read  b ✓ 2ms
  └ one ✓
  └ two ✗ failed
↳ Task  one ✓ 10ms
↳ Task  two ✗ failed 10ms: subagent failed
■ ✗ failed · exit 1 · 4 calls, 1 failed · 13ms
`)
}

func TestDeniedAndFailed(t *testing.T) {
	got, lost := render(t, false,
		runStart(),
		toolCall("", "c1", "bash", `{"command":"make test"}`),
		result("", "c1", formats.Failed, "FAIL: TestX\nFAIL: TestY\nok\nok\nok\nexit status 1", ""),
		toolCall("", "c2", "bash", `{"command":"go vet"}`),
		result("", "c2", formats.Failed, "long output", "exit status 2"),
		&formats.Event{Kind: formats.ToolResult, Call: formats.Call{ID: "c3", Name: "bash", Args: args(`{"command":"rm -rf /"}`), Status: formats.Denied, Error: "destructive command"}},
		&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: "stopped on a refused call"},
		&formats.Event{Kind: formats.RunEnd, Status: formats.Denied, Text: "stopped on a refused call", Run: formats.RunInfo{ExitCode: formats.Some(2)}},
	)
	check(t, got, `
▶ run · s1 · m1 · /src
▸ bash  make test ✗ failed 1ms
    FAIL: TestX
    FAIL: TestY
    ok
    ok
    … +2 more lines
▸ bash  go vet ✗ failed 1ms: exit status 2
▸ bash  rm -rf / ⛔ denied: destructive command
✗ stopped on a refused call
■ ✗ denied · exit 2 · 3 calls, 2 failed, 1 denied · 7ms
`)
	if lost[lostOutputs.Name()] != 1 {
		t.Errorf("losses %v: the output of go vet is not shown", lost)
	}
}

// TestCutRun: the events the pipeline makes up when a stream stops early.
func TestCutRun(t *testing.T) {
	got, _ := render(t, false,
		runStart(),
		toolCall("", "c1", "bash", `{"command":"sleep 100"}`),
		result("", "c1", formats.Cancelled, "", "not completed: the stream was cut before the run completed"),
		&formats.Event{Kind: formats.RunEnd, Status: formats.Failed, Cut: true, Text: "the stream was cut before the run completed",
			Run: formats.RunInfo{ExitCode: formats.Some(1), SessionID: "s1"}},
	)
	check(t, got, `
▶ run · s1 · m1 · /src
▸ bash  sleep 100 ⊘ cancelled 1ms: not completed: the stream was cut before the run completed
✗ the stream was cut before the run completed
■ ✗ failed (cut short) · exit 1 · 1 call, 1 cancelled · 3ms
`)
}

// TestText: deltas stream as they come and a message repeating them is
// not printed again; thinking is marked; an answer that repeats the last
// text is not printed, one that does not is.
func TestText(t *testing.T) {
	got, _ := render(t, false,
		runStart(),
		&formats.Event{Kind: formats.ThinkingDelta, Text: "hmm\n"},
		&formats.Event{Kind: formats.ThinkingDelta, Text: "let me see"},
		&formats.Event{Kind: formats.TextDelta, Text: "Hel"},
		&formats.Event{Kind: formats.TextDelta, Text: "lo\x1b[2J!\n\nBye"},
		&formats.Event{Kind: formats.Message, Text: "Hello!\n\nBye", Thinking: "hmm\nlet me see"},
		&formats.Event{Kind: formats.Message, Text: "Second.", Thinking: "again"},
		&formats.Event{Kind: formats.Answer, Text: "Second."},
		&formats.Event{Kind: formats.TurnEnd, Status: formats.Cancelled, Text: "Second."},
		&formats.Event{Kind: formats.Answer, Text: "The answer."},
		runEnd(formats.Cancelled, 130),
	)
	check(t, got, `
▶ run · s1 · m1 · /src
┊ hmm
┊ let me see
Hello�[2J!

Bye
┊ again
Second.
⊘ turn cancelled
The answer.
■ ⊘ cancelled · exit 130 · 10ms
`)
}

func TestOtherEvents(t *testing.T) {
	got, lost := render(t, false,
		&formats.Event{Kind: formats.RunStart, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Run: formats.RunInfo{Model: "claude", Provider: "anthropic"}},
		&formats.Event{Kind: formats.TurnStart},
		&formats.Event{Kind: formats.PermissionRequest, Permission: formats.Permission{RequestID: "p1"}, Call: formats.Call{Name: "bash", Summary: "rm x"}},
		&formats.Event{Kind: formats.PermissionAnswer, Permission: formats.Permission{RequestID: "p1", Allowed: false, Reason: "no"}},
		&formats.Event{Kind: formats.Todos, Todos: []formats.Todo{{Content: "write", Status: "completed"}, {Content: "test", Status: "in_progress"}, {Content: "ship", Status: "pending"}}},
		&formats.Event{Kind: formats.Todos, Todos: []formats.Todo{{Content: "write", Status: "completed"}, {Content: "test", Status: "completed"}, {Content: "ship", Status: "in_progress"}}},
		&formats.Event{Kind: formats.Compaction, Text: "summary\nof it"},
		&formats.Event{Kind: formats.Notice, Severity: formats.Warning, Text: "retrying"},
		&formats.Event{Kind: formats.Notice, Text: "info"},
		&formats.Event{Kind: formats.ModelChange, Run: formats.RunInfo{Model: "haiku"}},
		&formats.Event{Kind: formats.TurnEnd, Status: formats.Completed},
		&formats.Event{Kind: formats.TurnStart},
		&formats.Event{Kind: formats.Raw, Source: formats.Source{Dialect: "malac", Type: "update"}},
		&formats.Event{Kind: formats.RunEnd, Time: time.Date(2026, 1, 2, 3, 5, 10, 0, time.UTC),
			Usage: formats.UsageInfo{TotalTokens: formats.Some[int64](1234567), CacheReadTokens: formats.Some[int64](5)}},
	)
	check(t, got, `
▶ run · claude (anthropic) · 2026-01-02 03:04:05Z
? permission for bash  rm x → ⛔ refused: no
☰ todos 1/3 done · now: test
    ☑ write
    ◐ test
    ☐ ship
☰ todos 2/3 done · now: ship
⟲ context compacted: summary of it
⚠ retrying
ℹ info
⇄ model haiku
· turn 2
■ ✓ completed · 1,234,567 tokens (5 cache read) · 1m05s
`)
	if len(lost) != 0 {
		t.Errorf("the writer reported losses the pipeline reports from Carries: %v", lost)
	}
}

// TestMultiRun: runs are apart, and events before any RunStart still show.
func TestMultiRun(t *testing.T) {
	got, _ := render(t, false,
		&formats.Event{Kind: formats.Message, Text: "one"},
		runEnd(formats.Completed, 0),
		runStart(),
		toolCall("", "c1", "x", ``),
	)
	check(t, got, `
one
■ ✓ completed · 1ms

▶ run · s1 · m1 · /src
▸ x …
`)
}

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

func TestColor(t *testing.T) {
	evs := func() []*formats.Event {
		return []*formats.Event{runStart(), toolCall("", "c1", "bash", `{"command":"ls"}`),
			result("", "c1", formats.Failed, "", "boom"),
			&formats.Event{Kind: formats.ThinkingDelta, Text: "hmm"},
			toolCall("", "c2", "bash", `{"command":"ls"}`), runEnd(formats.Failed, 1)}
	}
	plain, _ := render(t, false, evs()...)
	if strings.Contains(plain, "\x1b") {
		t.Errorf("escape codes without colour:\n%q", plain)
	}
	colored, _ := render(t, true, evs()...)
	if !strings.Contains(colored, "\x1b[1;31m✗ failed\x1b[0m") {
		t.Errorf("no red failure mark:\n%q", colored)
	}
	if stripped := sgr.ReplaceAllString(colored, ""); stripped != plain {
		t.Errorf("colour changes the text:\n%s\nvs\n%s", stripped, plain)
	}
	// Every line leaves the terminal's colour as it found it.
	for _, l := range strings.Split(colored, "\n") {
		if i := strings.LastIndex(l, "\x1b["); i >= 0 && !strings.HasPrefix(l[i:], "\x1b[0m") {
			t.Errorf("line leaves colour on: %q", l)
		}
	}
}

func TestArgSummary(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{`{"command":"ls -la","description":"list"}`, "ls -la"},
		{`{"description":"explore","prompt":"look","subagent_type":"Explore"}`, "explore"},
		{`{"pattern":"TODO","path":"src"}`, "src"},
		{`{"command":["bash","-lc","go test ./..."]}`, "go test ./..."},
		{`{"command":["git","status"]}`, "git status"},
		{`{"cmd":"zsh -lc \"echo hi\""}`, "echo hi"},
		{`{"n":1,"nested":{"a":"b"},"first":"this one","second":"no"}`, "this one"},
		{`{"file_path":"a\nb"}`, "a b"},
		{`"just a string"`, "just a string"},
		{`[1,2]`, "[1,2]"},
		{`{}`, ""},
		{`{"todos":[{"content":"a"},{"content":"b"}],"merge":true}`, "todos: 2 items"},
		{`{"todos":[{"content":"a"}],"title":"plan"}`, "plan"},
		{``, ""},
		{`{"broken":`, ""},
		{`{"content":"` + strings.Repeat("é", 100) + `"}`, strings.Repeat("é", summaryWidth-1) + "…"},
	} {
		if got := summarize(formats.Call{Args: args(c.args)}); got != c.want {
			t.Errorf("summarize(%s) = %q, want %q", c.args, got, c.want)
		}
	}
	if got := summarize(formats.Call{Summary: "Run\tthe tests", Args: args(`{"command":"x"}`)}); got != "Run the tests" {
		t.Errorf("the source's summary comes first: %q", got)
	}
}

func TestFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "<1ms", 999 * time.Microsecond: "<1ms", 12 * time.Millisecond: "12ms", 2500 * time.Millisecond: "2.5s",
		42 * time.Second: "42s", 125 * time.Second: "2m05s", 3*time.Hour + 7*time.Minute: "3h07m",
	} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
	for usd, want := range map[float64]string{0: "$0.00", 0.0012: "$0.0012", 0.5: "$0.5000", 1.5: "$1.50"} {
		if got := cost(usd); got != want {
			t.Errorf("cost(%v) = %q, want %q", usd, got, want)
		}
	}
	if got := tokens(formats.UsageInfo{OutputTokens: formats.Some[int64](7)}); got != "7 tokens" {
		t.Errorf("tokens = %q", got)
	}
	if got := tokens(formats.UsageInfo{CacheWriteTokens: formats.Some[int64](7)}); got != "tokens: 7 cache write" {
		t.Errorf("tokens = %q", got)
	}
}

// TestOddSequences: events a careless source may give still make a view:
// an agent's events before its start, an agent that is its own parent, a
// cycle, ends without starts, calls without ids.
func TestOddSequences(t *testing.T) {
	got, _ := render(t, false,
		&formats.Event{Kind: formats.TextDelta, Agent: "ghost", Text: "boo"},
		&formats.Event{Kind: formats.AgentStart, Agent: "self", AgentInfo: formats.AgentInfo{Parent: "self"}},
		&formats.Event{Kind: formats.AgentStart, Agent: "x", AgentInfo: formats.AgentInfo{Parent: "y"}},
		&formats.Event{Kind: formats.AgentStart, Agent: "y", AgentInfo: formats.AgentInfo{Parent: "x"}},
		toolCall("y", "", "", ``),
		result("y", "", formats.Completed, "", ""),
		&formats.Event{Kind: formats.AgentEnd, Agent: "never-started", Status: formats.Completed},
		&formats.Event{Kind: formats.AgentEnd, Agent: ""},
		&formats.Event{Kind: formats.PermissionAnswer, Permission: formats.Permission{RequestID: "nope", Allowed: true}},
		&formats.Event{Kind: formats.TurnEnd, Agent: "x", Status: formats.Failed, Text: "x's last words"},
		&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: ""},
	)
	check(t, got, `
  ├ ghost
  │ boo
  ┌ self
  │   ┌ x
  ┌ y
  │ ▸ tool ✓ 1ms
  └ never-started ✓
? permission for tool → allowed
  │   ├ x
  │   │ x's last words
  │   │ ✗ turn failed
✗
`)
}

func colorParam(on bool) string {
	if on {
		return "always"
	}
	return "never"
}

// TestRepeatedResult: a result repeated for a call already done (Claude
// gives a refused call's result, then its refusal) makes no second line,
// and the call counts once, with its last status.
func TestRepeatedResult(t *testing.T) {
	got, _ := render(t, false,
		runStart(),
		toolCall("", "c1", "bash", `{"command":"rm x"}`),
		result("", "c1", formats.Failed, "", "needs approval"),
		&formats.Event{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Name: "bash", Status: formats.Denied, Error: "needs approval"}},
		&formats.Event{Kind: formats.RunEnd, Status: formats.Denied},
	)
	check(t, got, `
▶ run · s1 · m1 · /src
▸ bash  rm x ✗ failed 1ms: needs approval
■ ✗ denied · exit 2 · 1 call, 1 denied · 4ms
`)
}

// TestClosingLineFromTheView: the outcome is the view's (a source without
// a status or code succeeded, one with a non-zero code failed), the exit
// code shows only for a run that did not succeed, and the tokens are the
// run's totals where the source gives them, else the sum of its requests.
func TestClosingLineFromTheView(t *testing.T) {
	got, _ := render(t, false,
		runStart(),
		&formats.Event{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](100), OutputTokens: formats.Some[int64](10),
			ReasoningTokens: formats.Some[int64](4), CostUSD: formats.Some(0.5)}},
		&formats.Event{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](100), OutputTokens: formats.Some[int64](10)}},
		&formats.Event{Kind: formats.RunEnd, Usage: formats.UsageInfo{CostUSD: formats.Some(0.25)}},
		runStart(),
		&formats.Event{Kind: formats.RunEnd, Run: formats.RunInfo{ExitCode: formats.Some(42)}},
	)
	check(t, got, `
▶ run · s1 · m1 · /src
■ ✓ completed · 220 tokens (200 in, 20 out, 4 reasoning) · $0.2500 · 3ms

▶ run · s1 · m1 · /src
■ ✗ failed · exit 42 · 1ms
`)
}
