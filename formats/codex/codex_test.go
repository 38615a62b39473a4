package codex

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestReadCapture(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "codex", "agentcmd-stream-output-5.jsonl"))
	want := "run_start turn_start thinking_delta tool_call tool_result thinking_delta message usage turn_end answer run_end"
	if got := formatstest.Kinds(evs); got != want {
		t.Fatalf("kinds\n got %s\nwant %s", got, want)
	}
	start := evs[0]
	if start.Run.SessionID != "019a2d7b-7fb8-78e1-8cfa-5bdbe274a3aa" || start.Run.Provider != "openai" || start.Run.AgentName != "codex" {
		t.Errorf("run start %+v", start.Run)
	}
	if c := evs[3].Call; c.ID != "item_1" || c.Name != "command_execution" || string(c.Args) != `{"command":"zsh -lc ls"}` || c.Summary != "zsh -lc ls" {
		t.Errorf("tool call %+v", c)
	}
	if c := evs[4].Call; c.Status != formats.Completed || !strings.Contains(c.Output.Text(), "hello.txt") || c.Error != "" {
		t.Errorf("tool result %+v", c)
	}
	end := evs[10]
	if end.Status != formats.Completed || end.Run.SessionID != start.Run.SessionID || end.Usage.InputTokens.V != 6086 ||
		end.Usage.CacheReadTokens.V != 2944 || end.Usage.OutputTokens.V != 223 || end.Run.ExitCode != formats.Some(0) {
		t.Errorf("run end %+v", end)
	}
	if a := evs[9]; !strings.HasPrefix(a.Text, "Found 1 text file") || a.Agent != "" {
		t.Errorf("answer %q", a.Text)
	}
	// Every record is carried once; the made-up end events carry none.
	for i, e := range evs {
		if e.Source.Dialect != "codex" || (e.Source.Line == nil) != (e.Source.Continued || e.Source.Made) ||
			e.Source.Made != (i >= 9) {
			t.Errorf("event %d (%s) source %+v", i, e.Kind, e.Source)
		}
	}
}

func TestReadToolsAndTodos(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "codex", "tools-and-todos.jsonl"))
	results := formatstest.OfKind(evs, formats.ToolResult)
	byID := map[string]formats.Call{}
	for _, r := range results {
		byID[r.Call.ID] = r.Call
	}
	if c := byID["item_3"]; c.Status != formats.Failed || c.Error != "exit code 1" || !strings.Contains(c.Output.Text(), "FAIL") {
		t.Errorf("failed command %+v", c)
	}
	if c := byID["item_5"]; c.Status != formats.Denied || c.Error != "declined" || string(c.Args) != `{"command":"bash -lc 'rm -rf build'"}` {
		t.Errorf("declined command %+v", c)
	}
	if c := byID["item_6"]; c.Status != formats.Failed || c.Error != "docs server timed out" || c.Name != "mcp__docs__search" {
		t.Errorf("mcp error %+v", c)
	}
	if c := byID["item_9"]; c.Status != formats.Completed || c.Output.Text() != "PR #12 opened" {
		t.Errorf("mcp result %+v", c)
	}
	// The web search's item id is the first "id", not the search's.
	if c, ok := byID["item_7"]; !ok || c.Name != "web_search" || c.Status != formats.Completed {
		t.Errorf("web search %+v (results %v)", c, byID)
	}
	calls := map[string]bool{}
	for _, c := range formatstest.OfKind(evs, formats.ToolCall) {
		calls[c.Call.ID] = true
	}
	if !calls["item_4"] || calls["item_5"] {
		t.Errorf("a completed-only file change must start a call, a declined command must not: %v", calls)
	}
	todos := formatstest.OfKind(evs, formats.Todos)
	if len(todos) != 3 || todos[1].Todos[0].Status != "completed" || todos[1].Todos[1].Status != "pending" || todos[0].Todos[0].Content != "Run the tests" {
		t.Errorf("todos %+v", todos)
	}
	if n := formatstest.OfKind(evs, formats.Notice); len(n) != 1 || n[0].Severity != formats.Warning || !strings.HasPrefix(n[0].Text, "model rerouted") {
		t.Errorf("notices %+v", n)
	}
	if r := formatstest.OfKind(evs, formats.Raw); len(r) != 1 || r[0].Source.LineNo != 21 {
		t.Errorf("unknown item %+v", r)
	}
	end := formatstest.OfKind(evs, formats.RunEnd)
	if len(end) != 1 || end[0].Status != formats.Completed || end[0].Usage.InputTokens.V != 15000 || end[0].Usage.OutputTokens.V != 1000 {
		t.Errorf("run end (usage summed over two turns) %+v", end)
	}
	if a := formatstest.OfKind(evs, formats.Answer); len(a) != 1 || a[0].Text != "Opened PR #12 with the fix." {
		t.Errorf("answer %+v", a)
	}
	if n := len(formatstest.OfKind(evs, formats.TurnEnd)); n != 2 {
		t.Errorf("%d turn ends", n)
	}
}

func TestReadFailures(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "codex", "turn-failed.jsonl"))
	if got, want := formatstest.Kinds(evs), "run_start turn_start thinking_delta tool_call tool_result notice turn_end run_end"; got != want {
		t.Fatalf("kinds\n got %s\nwant %s", got, want)
	}
	end := evs[len(evs)-1]
	if end.Status != formats.Failed || !strings.HasPrefix(end.Text, "stream disconnected") || evs[6].Status != formats.Failed ||
		end.Run.ExitCode != formats.Some(1) {
		t.Errorf("turn.failed (codex exec exits 1): %+v", end)
	}
	// The run view settles it so, as --exit-status gives it.
	var v formats.RunView
	for _, e := range evs {
		v.Observe(e)
	}
	if v.Success() || v.ExitCode != 1 || !strings.HasPrefix(v.Failure, "stream disconnected") {
		t.Errorf("view of a failed run: success %v, exit code %d, failure %q", v.Success(), v.ExitCode, v.Failure)
	}
	if c := evs[4].Call; c.Error != "exit code 2" || c.Status != formats.Failed {
		t.Errorf("exit code 2: %+v", c)
	}

	evs = formatstest.Read(t, Dialect, formatstest.Fixture(t, "codex", "fatal-error.jsonl"))
	if got, want := formatstest.Kinds(evs), "run_start notice run_end"; got != want {
		t.Fatalf("fatal error kinds %s", got)
	}
	if end := evs[2]; end.Status != formats.Failed || !strings.Contains(end.Text, "401") {
		t.Errorf("fatal error end %+v", end)
	}

	// turn.failed alone gives a notice too.
	evs = formatstest.Read(t, Dialect, `{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"turn.failed","error":{"message":"boom"}}`)
	if got := formatstest.Kinds(evs); got != "run_start turn_start notice turn_end run_end" || evs[4].Text != "boom" {
		t.Errorf("turn.failed alone: %s %+v", got, evs[len(evs)-1])
	}
	// A later turn that completes makes the run a success again.
	evs = formatstest.Read(t, Dialect, `{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/5"}
{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":2}}`)
	if end := evs[len(evs)-1]; end.Kind != formats.RunEnd || end.Status != formats.Completed {
		t.Errorf("recovered run ends %+v", end)
	}
}

// TestReadUsage: codex counts as the model does: input_tokens include the
// cached ones, output_tokens the reasoning ones; the run's totals are the
// sum of its turns, a failed turn's too when a writer gave it usage.
func TestReadUsage(t *testing.T) {
	evs := formatstest.Read(t, Dialect, `{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":800,"output_tokens":50}}
{"type":"turn.started"}
{"type":"turn.failed","error":{"message":"boom"},"usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}`)
	u := formatstest.OfKind(evs, formats.Usage)
	if len(u) != 2 || u[0].Usage.InputTokens != formats.Some[int64](1000) || u[0].Usage.CacheReadTokens != formats.Some[int64](800) ||
		u[0].Usage.OutputTokens != formats.Some[int64](50) || u[0].Usage.ReasoningTokens.OK {
		t.Fatalf("usage %+v", u)
	}
	end := evs[len(evs)-1]
	if end.Kind != formats.RunEnd || end.Usage.InputTokens.V != 1010 || end.Usage.CacheReadTokens.V != 800 || end.Usage.OutputTokens.V != 55 {
		t.Errorf("run totals %+v", end.Usage)
	}
	evs = formatstest.Read(t, Dialect, `{"id":"0","msg":{"type":"task_started"}}
{"id":"0","msg":{"type":"token_count","info":{"last_token_usage":{"input_tokens":900,"cached_input_tokens":600,"output_tokens":120,"reasoning_output_tokens":100,"total_tokens":1020}}}}
{"id":"0","msg":{"type":"task_complete"}}`)
	if u := formatstest.OfKind(evs, formats.Usage); len(u) != 1 || u[0].Usage.InputTokens.V != 900 || u[0].Usage.CacheReadTokens.V != 600 ||
		u[0].Usage.OutputTokens.V != 120 || u[0].Usage.ReasoningTokens != formats.Some[int64](100) {
		t.Errorf("legacy usage %+v", u)
	}
}

func TestReadRunsAndCuts(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "codex", "two-threads.jsonl"))
	if got, want := formatstest.Kinds(evs), "run_start turn_start message usage turn_end answer run_end run_start turn_start tool_call"; got != want {
		t.Fatalf("kinds\n got %s\nwant %s", got, want)
	}
	if evs[6].Run.SessionID != "0199c001-aaaa-7000-8000-000000000001" || evs[7].Run.SessionID != "0199c001-bbbb-7000-8000-000000000002" {
		t.Errorf("sessions %q %q", evs[6].Run.SessionID, evs[7].Run.SessionID)
	}
	// A stream cut before a turn ends has no RunEnd: the pipeline closes it.
	if evs := formatstest.Read(t, Dialect, `{"type":"thread.started","thread_id":"t"}`); formatstest.Kinds(evs) != "run_start" {
		t.Errorf("thread alone: %s", formatstest.Kinds(evs))
	}
}

func TestReadMalformedAndUnknown(t *testing.T) {
	in := "{\"type\":\"turn.started\"}\n{oops\n{\"type\":\"item.completed\",\"item\":\"x\"}\n{\"type\":\"thread.archived\"}\n{\"type\":\"turn.completed\"}\n"
	evs, bad, err := formatstest.ReadAll(Dialect, []byte(in))
	if err != nil || len(bad) != 2 {
		t.Fatalf("want 2 line errors, got %v %v", bad, err)
	}
	var le *formats.LineError
	if !errors.As(bad[0], &le) || le.Line != 2 {
		t.Errorf("first error %v", bad[0])
	}
	if got := formatstest.Kinds(evs); got != "turn_start raw turn_end run_end" {
		t.Errorf("kinds %s", got)
	}
}

func TestReadLegacy(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "codex", "legacy-0.40.jsonl"))
	want := "run_start user_message raw turn_start thinking_delta tool_call raw tool_result tool_call tool_result tool_call tool_result usage message turn_end answer run_end"
	if got := formatstest.Kinds(evs); got != want {
		t.Fatalf("kinds\n got %s\nwant %s", got, want)
	}
	if evs[0].Run.Model != "gpt-5" || evs[0].Run.SessionID != "5973b6c0-94b8-487b-a530-2aeb6098ae0e" || evs[1].Text != "Why does the checkout test fail?" {
		t.Errorf("config and prompt read as %+v / %q", evs[0].Run, evs[1].Text)
	}
	if c := evs[5].Call; c.ID != "call_a1" || c.Name != "command_execution" || string(c.Args) != `{"command":"bash -lc npm test -- checkout"}` {
		t.Errorf("exec begin read as %+v", c)
	}
	if c := evs[7].Call; c.Status != formats.Failed || c.Error != "exit code 1" || c.Output.Text() != "FAIL checkout.test.ts\n" {
		t.Errorf("exec end read as %+v", c)
	}
	if c := evs[9].Call; c.Name != "mcp__docs__search" || c.Output.Text() != "Number.prototype.toFixed()" || c.Status != formats.Completed {
		t.Errorf("mcp end read as %+v", c)
	}
	if c := evs[11].Call; c.Name != "file_change" || c.Status != formats.Completed {
		t.Errorf("patch end read as %+v", c)
	}
	end := evs[len(evs)-1]
	if end.Status != formats.Completed || end.Run.SessionID != "5973b6c0-94b8-487b-a530-2aeb6098ae0e" || end.Usage.InputTokens.V != 9000 || evs[15].Text != "The total was not rounded; cart.ts now rounds it." {
		t.Errorf("run end %+v", end)
	}
	// Without a config summary, the first event opens the run; a failed
	// patch and an MCP error fail their calls.
	evs = formatstest.Read(t, Dialect, `{"id":"0","msg":{"type":"session_configured","session_id":"s","model":"m"}}
{"id":"0","msg":{"type":"patch_apply_end","call_id":"p","stdout":"","stderr":"conflict","success":false}}
{"id":"0","msg":{"type":"mcp_tool_call_end","call_id":"q","invocation":{"server":"x","tool":"y","arguments":null},"result":{"Err":"timeout"}}}
{"id":"0","msg":{"type":"error","message":"boom"}}`)
	if got := formatstest.Kinds(evs); got != "run_start tool_call tool_result tool_call tool_result notice run_end" {
		t.Fatalf("kinds %s", got)
	}
	if evs[0].Run.SessionID != "s" || evs[2].Call.Status != formats.Failed || evs[4].Call.Error != "timeout" || evs[6].Status != formats.Failed || evs[6].Text != "boom" {
		t.Errorf("read as %+v %+v %+v", evs[0].Run, evs[4].Call, evs[6])
	}
	if s := detect(formatstest.Fixture(t, "codex", "legacy-0.40.jsonl")); s < 90 {
		t.Errorf("legacy stream scores %d", s)
	}
}

func TestFirstID(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"item_7","type":"web_search","id":"ws_1"}`:               "item_7",
		`{"type":"x","nested":{"id":"inner"},"id":"outer","id":"late"}`: "outer",
		` { "a" : [1, {"id":"no"}], "s":"\"id\"", "id" : "yes" }`:       "yes",
		`{"type":"x"}`: "",
		`{"id":5}`:     "",
		`{"id":`:       "",
		`[]`:           "",
	} {
		if got := firstID([]byte(in)); got != want {
			t.Errorf("firstID(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, n := range []string{"agentcmd-stream-output-5.jsonl", "tools-and-todos.jsonl", "turn-failed.jsonl", "fatal-error.jsonl", "two-threads.jsonl"} {
		if s := detect(formatstest.Fixture(t, "codex", n)); s < 90 {
			t.Errorf("%s scores %d", n, s)
		}
	}
	for _, in := range []string{
		`{"type":"error","message":"AdaL's error"}` + "\n" + `{"type":"complete","exit_code":1}`,
		`{"type":"init","timestamp":"2025-01-01T00:00:00Z","session_id":"s","model":"m"}`,
		`{"type":"system","subtype":"init","session_id":"s"}`,
		"plain text",
	} {
		if s := detect([]byte(in)); s != 0 {
			t.Errorf("%q scores %d", in, s)
		}
	}
}

// TestWriter checks the stream written from events of another dialect: a
// turn opened around the items, synthetic item ids, an MCP call for a
// foreign tool, the answer as the last agent message, and no loss the
// vocabulary names.
func TestWriter(t *testing.T) {
	src := formats.Source{Dialect: "other"}
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s1", Model: "m", Cwd: "/w"}},
		{Kind: formats.UserMessage, Text: "do it"},
		{Kind: formats.ThinkingDelta, Text: "hmm"},
		{Kind: formats.TextDelta, Text: "Let me "},
		{Kind: formats.TextDelta, Text: "look."},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "bash", Args: []byte(`{"command":"ls"}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Status: formats.Completed, Output: formats.TextOutput("a\n")}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c2", Name: "rm", Status: formats.Denied, Error: "not allowed"}},
		{Kind: formats.Todos, Todos: []formats.Todo{{Content: "x", Status: "pending"}}},
		{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](10), OutputTokens: formats.Some[int64](2)}},
		{Kind: formats.Answer, Text: "Done."},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	var out bytes.Buffer
	rep := formats.NewReport(io.Discard)
	w := formats.Standalone(newWriter(&out, formats.WriteOptions{Dialect: "codex", Report: rep}))
	for _, e := range evs {
		e.Source = src
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"type":"thread.started","thread_id":"s1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"hmm"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Let me look."}}
{"type":"item.started","item":{"id":"c1","type":"mcp_tool_call","server":"","tool":"bash","arguments":{"command":"ls"},"result":null,"error":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"c1","type":"mcp_tool_call","server":"","tool":"bash","arguments":{"command":"ls"},"result":{"content":[{"type":"text","text":"a\n"}],"structured_content":null},"error":null,"status":"completed"}}
{"type":"item.completed","item":{"id":"c2","type":"mcp_tool_call","server":"","tool":"rm","arguments":{},"result":null,"error":{"message":"not allowed"},"status":"declined"}}
{"type":"item.started","item":{"id":"item_2","type":"todo_list","items":[{"text":"x","completed":false}]}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Done."}}
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}
`
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want)
	}
	// What the vocabulary names (the prompt, cwd, model) the pipeline
	// reports from Carries; the writer reports only its own quirks.
	if losses := rep.LossTable(); len(losses) != 0 {
		t.Errorf("the writer reported %v", losses)
	}
	for _, f := range []formats.Feature{formats.UserPrompts, formats.WorkingDirs, formats.ModelNames, formats.Timestamps} {
		if Dialect.Carries&f != 0 {
			t.Errorf("codex declares it carries %s", f.Name())
		}
	}
	// And it reads back.
	back := formatstest.Read(t, Dialect, out.String())
	if a := formatstest.OfKind(back, formats.Answer); len(a) != 1 || a[0].Text != "Done." {
		t.Errorf("answer read back %+v", a)
	}
	if r := formatstest.OfKind(back, formats.ToolResult); len(r) != 2 || r[1].Call.Status != formats.Denied || r[1].Call.Error != "not allowed" || r[0].Call.Name != "bash" {
		t.Errorf("results read back %+v", r)
	}
}

func TestWriterFailures(t *testing.T) {
	write := func(evs ...*formats.Event) string {
		var out bytes.Buffer
		w := formats.Standalone(newWriter(&out, formats.WriteOptions{Dialect: "codex", Report: formats.NewReport(io.Discard)}))
		for _, e := range evs {
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
		return out.String()
	}
	// A failed run with no turn still gets one, so that it reads as ended.
	got := write(&formats.Event{Kind: formats.RunEnd, Status: formats.Failed, Text: "auth failed"})
	want := "{\"type\":\"thread.started\",\"thread_id\":\"\"}\n{\"type\":\"turn.started\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"auth failed\"}}\n"
	if got != want {
		t.Errorf("failed run:\n%s", got)
	}
	// A command's exit code and a fatal error survive.
	got = write(
		&formats.Event{Kind: formats.ToolCall, Call: formats.Call{ID: "x", Name: "command_execution", Args: []byte(`{"command":"make"}`)}},
		&formats.Event{Kind: formats.ToolResult, Call: formats.Call{ID: "x", Status: formats.Failed, Output: formats.TextOutput("no"), Error: "exit code 2"}},
		&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: "quota"},
		&formats.Event{Kind: formats.RunEnd, Status: formats.Failed},
	)
	evs := formatstest.Read(t, Dialect, got)
	if r := formatstest.OfKind(evs, formats.ToolResult); len(r) != 1 || r[0].Call.Error != "exit code 2" || !strings.Contains(got, `"exit_code":2`) {
		t.Errorf("exit code lost:\n%s", got)
	}
	if end := formatstest.OfKind(evs, formats.RunEnd); len(end) != 1 || end[0].Status != formats.Failed || end[0].Text != "quota" || len(formatstest.OfKind(evs, formats.Notice)) != 1 {
		t.Errorf("failure read back as %+v from\n%s", end, got)
	}
}

var roundTripKinds = []formats.Kind{formats.ToolCall, formats.ToolResult, formats.Message, formats.Answer, formats.Notice, formats.Todos, formats.RunEnd}

func FuzzReader(f *testing.F) {
	for _, n := range []string{"agentcmd-stream-output-5.jsonl", "tools-and-todos.jsonl", "turn-failed.jsonl", "fatal-error.jsonl", "two-threads.jsonl", "legacy-0.40.jsonl", "untether-0157-web-search.jsonl"} {
		f.Add(formatstest.Fixture(f, "codex", n))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTripNormalized(t, Dialect, data, byOrder, roundTripKinds...)
	})
}

// byOrder renumbers call ids by the order they first appear in: the
// writer keeps a call's id unless a synthetic id of an earlier item
// (message, reasoning) took it, which only odd inputs whose ids do not
// follow codex's numbering meet.
func byOrder(cs []formatstest.Comparable) []formatstest.Comparable {
	ids := map[string]string{}
	for i := range cs {
		if cs[i].CallID == "" {
			continue
		}
		if _, ok := ids[cs[i].CallID]; !ok {
			ids[cs[i].CallID] = strconv.Itoa(len(ids))
		}
		cs[i].CallID = ids[cs[i].CallID]
	}
	return cs
}

// TestWebSearchActions: a web_search keeps what it did, from the real
// Codex 0.157 capture: the query and action of the completed item (its
// started item had an empty query) in the call's arguments, and its
// results as the call's output; codex → codex writes them back.
func TestWebSearchActions(t *testing.T) {
	data := formatstest.Fixture(t, "codex", "untether-0157-web-search.jsonl")
	data = data[bytes.Index(data, []byte("\n{"))+1:] // the capture's # comments are the pipeline's to skip
	evs := formatstest.Read(t, Dialect, data)
	calls, results := formatstest.OfKind(evs, formats.ToolCall), formatstest.OfKind(evs, formats.ToolResult)
	if len(calls) != 2 || len(results) != 2 {
		t.Fatalf("kinds: %s", formatstest.Kinds(evs))
	}
	// The call started with an empty query; its completion, the next line,
	// says what it searched for.
	done := `{"query":"codex-cli latest version npm GitHub","action":{"type":"search","query":"codex-cli latest version npm GitHub"}}`
	if c := calls[0].Call; c.ID != "item_2" || c.Name != "web_search" || string(c.Args) != done || c.Summary != "codex-cli latest version npm GitHub" ||
		!bytes.HasPrefix(calls[0].Source.Line, []byte(`{"type":"item.started","item":{"id":"item_2"`)) {
		t.Errorf("started search: %+v %s", c, c.Args)
	}
	r := results[0].Call
	if string(r.Args) != done ||
		!strings.HasPrefix(r.Output.Text(), `[{"type":"text_result","domain":"www.npmjs.com"`) || !strings.Contains(r.Output.Text(), `"title":"@openai/codex - npm"`) {
		t.Errorf("completed search: %s\n%s", r.Args, r.Output.Text())
	}
	if r := results[1].Call; r.ID != "item_3" || !strings.Contains(r.Output.Text(), `"title":"Internal Error"`) || string(r.Args) != `{"query":"","action":{"type":"other"}}` {
		t.Errorf("second search: %+v", r)
	}
	if got := formatstest.Kinds(evs); got != "run_start turn_start tool_call tool_result tool_call tool_result message usage turn_end answer run_end" {
		t.Errorf("kinds: %s", got)
	}
	// When other lines come between, the call keeps its start's arguments,
	// and the result has the completed item's, which win where a writer
	// reads the call at its end.
	lines := strings.Split(string(data), "\n")
	apart := strings.Join(append([]string{lines[0], lines[1], lines[2], `{"type":"item.completed","item":{"id":"item_9","type":"reasoning","text":"hm"}}`}, lines[3:]...), "\n")
	evs2 := formatstest.Read(t, Dialect, apart)
	c2, r2 := formatstest.OfKind(evs2, formats.ToolCall)[0], formatstest.OfKind(evs2, formats.ToolResult)[0]
	if string(c2.Call.Args) != `{"query":"","action":{"type":"other"}}` || string(r2.Call.Args) != done {
		t.Errorf("apart: %s, %s", c2.Call.Args, r2.Call.Args)
	}
	var tr formats.CallTracker
	tr.Start(c2)
	if c, _ := tr.Finish(r2); string(c.Args) != done {
		t.Errorf("tracked call: %s", c.Args)
	}
	out, err := formatstest.WriteAll(Dialect, evs, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"query":"codex-cli latest version npm GitHub","action":{"type":"search","query":"codex-cli latest version npm GitHub"},"results":[{"type":"text_result","domain":"www.npmjs.com"`)) {
		t.Errorf("codex writer:\n%s", out)
	}
	formatstest.RoundTripNormalized(t, Dialect, data, byOrder, roundTripKinds...)

	// The other actions, as Codex defines them: the summary says what was
	// done.
	for action, want := range map[string]string{
		`{"type":"search","query":null,"queries":["a b","c"]}`:                    "a b",
		`{"type":"open_page","url":"https://go.dev/doc"}`:                         "https://go.dev/doc",
		`{"type":"find_in_page","url":"https://go.dev/doc","pattern":"generics"}`: "'generics' in https://go.dev/doc",
		`{"type":"find_in_page","pattern":"generics"}`:                            "'generics'",
		`{"type":"other"}`: "the item's query",
	} {
		line := `{"type":"item.completed","item":{"id":"item_1","type":"web_search","query":"the item's query","action":` + action + `}}`
		evs := formatstest.Read(t, Dialect, line)
		calls := formatstest.OfKind(evs, formats.ToolCall)
		if len(calls) != 1 || calls[0].Call.Summary != want || !bytes.Contains(calls[0].Call.Args, []byte(`"action":`+action)) {
			t.Errorf("%s: %+v", action, calls)
		}
	}
}

// TestWriterUsageAndCalls: the writer converts usage to codex's
// convention (input_tokens include cache reads and writes, output_tokens
// the reasoning, as the model's do), the last turn carries what the run's totals count beyond the turns
// before it, a failed turn keeps its usage, and a call's item completes
// once however many results come.
func TestWriterUsageAndCalls(t *testing.T) {
	var out bytes.Buffer
	rep := formats.NewReport(io.Discard)
	w := formats.Standalone(newWriter(&out, formats.WriteOptions{Dialect: "codex", Report: rep}))
	for _, e := range []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.TurnStart},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c", Name: "Write", Args: []byte(`{}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c", Status: formats.Failed, Error: "no permission"}},
		{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](1000), CacheReadTokens: formats.Some[int64](800),
			CacheWriteTokens: formats.Some[int64](100), OutputTokens: formats.Some[int64](60), ReasoningTokens: formats.Some[int64](40)}},
		{Kind: formats.TurnEnd, Status: formats.Completed},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c", Status: formats.Denied, Error: "no permission"}},
		{Kind: formats.RunEnd, Status: formats.Completed, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](1500),
			CacheReadTokens: formats.Some[int64](800), OutputTokens: formats.Some[int64](90)}},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"type":"thread.started","thread_id":"s"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"c","type":"mcp_tool_call","server":"","tool":"Write","arguments":{},"result":null,"error":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"c","type":"mcp_tool_call","server":"","tool":"Write","arguments":{},"result":null,"error":{"message":"no permission"},"status":"failed"}}
{"type":"turn.completed","usage":{"input_tokens":1500,"cached_input_tokens":800,"output_tokens":90,"reasoning_output_tokens":40}}
`
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want)
	}
	if l := rep.LossTable(); len(l) != 1 || l["later results of tool calls that had already ended"] != 1 {
		t.Errorf("losses %v", l)
	}

	// A failed run's usage goes on its turn.failed, and reads back.
	out.Reset()
	w = formats.Standalone(newWriter(&out, formats.WriteOptions{Dialect: "codex", Report: rep}))
	for _, e := range []*formats.Event{
		{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](30), OutputTokens: formats.Some[int64](3)}},
		{Kind: formats.RunEnd, Status: formats.Failed, Text: "quota"},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(out.String(), `{"type":"turn.failed","error":{"message":"quota"},"usage":{"input_tokens":30,"cached_input_tokens":0,"output_tokens":3}}`) {
		t.Errorf("failed run:\n%s", out.String())
	}
	if end := formatstest.OfKind(formatstest.Read(t, Dialect, out.String()), formats.RunEnd); len(end) != 1 ||
		end[0].Usage.InputTokens.V != 30 || end[0].Status != formats.Failed || end[0].Text != "quota" {
		t.Errorf("read back %+v", end)
	}
}
