package acp

import (
	"strings"
	"testing"

	"github.com/goccy/go-json"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestReadPromptTurn(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "acp", "prompt-turn-example.jsonl"))
	if got, want := formatstest.Kinds(evs), "run_start user_message todos text_delta tool_call raw tool_result usage run_end"; got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	if evs[0].Run.SessionID != "sess_abc123def456" || !strings.HasPrefix(evs[1].Text, "Can you analyze") || !strings.Contains(evs[1].Text, "def process_data") {
		t.Errorf("prompt: %+v %q", evs[0].Run, evs[1].Text)
	}
	if len(evs[2].Todos) != 4 || evs[2].Todos[0].Status != "pending" {
		t.Errorf("plan: %+v", evs[2].Todos)
	}
	if r := evs[6].Call; r.ID != "call_001" || r.Status != formats.Completed || !strings.HasPrefix(r.Output.Text(), "Analysis complete") {
		t.Errorf("result: %+v", r)
	}
	if u := evs[7].Usage; u.CostUSD.V != 0.045 || u.ContextTokens.V != 200000 {
		t.Errorf("usage: %+v", u)
	}
	if evs[8].Status != formats.Completed {
		t.Errorf("end: %v", evs[8].Status)
	}
}

// TestReadCumulativeCost: usage_update's cost is the session's so far;
// each update adds what it grew by.
func TestReadCumulativeCost(t *testing.T) {
	in := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.5,"currency":"USD"}}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":20,"size":100,"cost":{"amount":0.75,"currency":"USD"}}}}
`
	var costs []float64
	for _, e := range formatstest.OfKind(formatstest.Read(t, Dialect, in), formats.Usage) {
		costs = append(costs, e.Usage.CostUSD.V)
	}
	if len(costs) != 2 || costs[0] != 0.5 || costs[1] != 0.25 {
		t.Errorf("costs %v, want [0.5 0.25]", costs)
	}
}

// TestReadHarborEnvelopeAndV2: Harbor's acp-events.jsonl envelope, and the
// v2 draft's names (whole messages, a tool_call_update that starts a call).
func TestReadHarborEnvelopeAndV2(t *testing.T) {
	in := `{"event_type":"request","payload":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}}
{"event_type":"notification","payload":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message","messageId":"m1","content":{"type":"text","text":"hello"}}}}}
{"event_type":"notification","payload":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"ls","status":"completed","rawOutput":"a b"}}}}
{"event_type":"notification","payload":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle"}}}}
{"event_type":"response","payload":{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}}
`
	evs := formatstest.Read(t, Dialect, in)
	if got, want := formatstest.Kinds(evs), "run_start user_message message tool_call tool_result raw run_end"; got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	if evs[4].Call.Output.Text() != "a b" || evs[6].Status != formats.Cancelled {
		t.Errorf("result %+v, end %v", evs[4].Call, evs[6].Status)
	}
}

// TestWriteRefusal: a refused call is a permission request answered with
// a reject, then the call's update as failed; a failed run ends with an
// error response.
func TestWriteRefusal(t *testing.T) {
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "b1", Name: "Bash", Args: []byte(`{"command":"rm -rf /"}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "b1", Name: "Bash", Status: formats.Denied, Error: "not allowed"}},
		{Kind: formats.RunEnd, Status: formats.Denied},
	}
	out, _ := formatstest.WriteReport(t, Dialect, evs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	for i, want := range []string{`"kind":"execute"`, `"method":"session/request_permission"`, `"optionId":"reject"`,
		`"status":"failed"`, `"exitCode":2`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d lacks %s: %s", i+1, want, lines[i])
		}
	}
	back := formatstest.Read(t, Dialect, out)
	if got := formatstest.Kinds(back); got != "run_start tool_call permission_request permission_answer tool_result run_end" {
		t.Errorf("read back: %s", got)
	}
	if back[4].Call.Status != formats.Denied || back[3].Permission.Allowed || back[5].Status != formats.Denied {
		t.Errorf("read back: %+v %+v %v", back[4].Call, back[3].Permission, back[5].Status)
	}
}

func TestToolKind(t *testing.T) {
	for name, want := range map[string]string{
		// Claude Code
		"Bash": "execute", "BashOutput": "execute", "Read": "read", "Edit": "edit", "MultiEdit": "edit", "Write": "edit",
		"NotebookEdit": "edit", "Grep": "search", "Glob": "search", "LS": "search", "WebFetch": "fetch", "WebSearch": "search",
		"Task": "other", "TodoWrite": "other",
		// Codex items, Gemini CLI and others' tools
		"command_execution": "execute", "file_change": "edit", "web_search": "search", "mcp_tool_call": "other",
		"run_shell_command": "execute", "read_file": "read", "read_many_files": "read", "write_file": "edit", "replace": "edit",
		"list_directory": "search", "search_file_content": "search", "google_web_search": "search", "web_fetch": "fetch",
		"str_replace_editor": "edit", "execute_bash": "execute", "bash_command": "execute", "search_files": "search",
		"apply_patch": "edit", "mcp__github__list_issues": "search", "shell": "execute",
		// Names that hold a kind's letters but not its word.
		"mark_task_complete": "other", "calculator__add": "other", "get_tools": "other", "truncate": "other",
		"locate_notifications": "other", "finish": "other", "": "other",
	} {
		if got := toolKind(name); got != want {
			t.Errorf("%q: %s, want %s", name, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	if detect(formatstest.Fixture(t, "acp", "prompt-turn-example.jsonl")) < 90 {
		t.Error("the protocol's example is not detected")
	}
	for _, s := range []string{`{"type":"system","subtype":"init"}`, `{"jsonrpc":"2.0","method":"textDocument/didOpen"}`} {
		if detect([]byte(s+"\n")) != 0 {
			t.Errorf("%s detected as ACP", s)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add(formatstest.Fixture(f, "acp", "prompt-turn-example.jsonl"))
	f.Add([]byte(v2Turn))
	f.Add(formatstest.Fixture(f, "acp", "gemini-cli-0.61.0-cancel.jsonl"))
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, Dialect, data, formats.UserMessage, formats.ToolCall, formats.ToolResult,
			formats.PermissionRequest, formats.PermissionAnswer, formats.Todos)
	})
}

// v2Turn is three prompt turns as the v2 draft gives them.
var v2Turn = `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}
{"jsonrpc":"2.0","id":1,"result":{}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"running"}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message","messageId":"m1","content":{"type":"text","text":"hello"}}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}
{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"again"}]}}
{"jsonrpc":"2.0","id":2,"result":{}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"max_tokens"}}}
{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"once more"}]}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","error":{"code":-32603,"message":"overloaded"}}}}
`

// TestReadV2Turn: in the v2 draft the prompt's response only acknowledges
// it and an idle state_update ends the turn, with its stop reason or error;
// other states are kept raw.
func TestReadV2Turn(t *testing.T) {
	in := v2Turn
	evs := formatstest.Read(t, Dialect, in)
	if got, want := formatstest.Kinds(evs), "run_start user_message raw raw message run_end run_start user_message raw run_end run_start user_message run_end"; got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	ends := formatstest.OfKind(evs, formats.RunEnd)
	if ends[0].Status != formats.Completed || ends[1].Status != formats.Failed || ends[1].Text != "stopped: max_tokens" ||
		ends[2].Status != formats.Failed || ends[2].Text != "overloaded" {
		t.Errorf("ends: %v %v %q %v %q", ends[0].Status, ends[1].Status, ends[1].Text, ends[2].Status, ends[2].Text)
	}
	if evs[2].Source.Type != "prompt_ack" {
		t.Errorf("the acknowledgement is %q", evs[2].Source.Type)
	}
}

// TestReadStopReasons: each run's outcome is its response's stopReason.
func TestReadStopReasons(t *testing.T) {
	for reason, want := range map[string]formats.Status{"end_turn": formats.Completed, "cancelled": formats.Cancelled,
		"max_tokens": formats.Failed, "max_turn_requests": formats.Failed, "refusal": formats.Failed} {
		in := `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}
{"jsonrpc":"2.0","id":7,"result":{"stopReason":"` + reason + `"}}
`
		evs := formatstest.Read(t, Dialect, in)
		if end := evs[len(evs)-1]; end.Kind != formats.RunEnd || end.Status != want {
			t.Errorf("%s: %v %v, want run_end %v", reason, end.Kind, end.Status, want)
		}
	}
}

// TestWriteSessionUpdates: what an ACP agent sends its client during a
// run, one message a line: the prompt, thought and message chunks, the
// call with its kind, status and raw input, its update with the raw
// output and content, the plan, the usage, and the prompt's response with
// its stop reason.
func TestWriteSessionUpdates(t *testing.T) {
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s1"}},
		{Kind: formats.UserMessage, Text: "list the files"},
		{Kind: formats.ThinkingDelta, Text: "I will run ls"},
		{Kind: formats.TextDelta, Text: "Listing."},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "Bash", Args: []byte(`{"command":"ls"}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Name: "Bash", Status: formats.Completed, Output: formats.TextOutput("a b")}},
		{Kind: formats.Todos, Todos: []formats.Todo{{Content: "check", Status: "in_progress"}}},
		{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](100), OutputTokens: formats.Some[int64](5), CostUSD: formats.Some(0.01)}},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	out, _ := formatstest.WriteReport(t, Dialect, evs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	type msg struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
		Params struct {
			SessionID string         `json:"sessionId"`
			Update    map[string]any `json:"update"`
		} `json:"params"`
		Result map[string]any `json:"result"`
	}
	var got []msg
	for _, l := range lines {
		var m msg
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		got = append(got, m)
	}
	var kinds []string
	for _, m := range got[:len(got)-1] {
		if m.Method != "session/update" || m.Params.SessionID != "s1" {
			t.Errorf("not a session/update of s1: %+v", m)
		}
		kinds = append(kinds, m.Params.Update["sessionUpdate"].(string))
	}
	if k := strings.Join(kinds, " "); k != "user_message_chunk agent_thought_chunk agent_message_chunk tool_call tool_call_update plan usage_update" {
		t.Fatalf("updates: %s", k)
	}
	call, upd := got[3].Params.Update, got[4].Params.Update
	if call["kind"] != "execute" || call["status"] != "in_progress" || call["title"] != "Bash" || call["rawInput"].(map[string]any)["command"] != "ls" {
		t.Errorf("tool_call: %v", call)
	}
	if upd["status"] != "completed" || upd["rawOutput"].(map[string]any)["output"] != "a b" || len(upd["content"].([]any)) != 1 {
		t.Errorf("tool_call_update: %v", upd)
	}
	if e := got[5].Params.Update["entries"].([]any)[0].(map[string]any); e["status"] != "in_progress" || e["content"] != "check" {
		t.Errorf("plan: %v", e)
	}
	if u := got[6].Params.Update; u["used"] != 105.0 || u["cost"].(map[string]any)["amount"] != 0.01 {
		t.Errorf("usage_update: %v", u)
	}
	if end := got[len(got)-1]; end.ID != 1.0 || end.Result["stopReason"] != "end_turn" {
		t.Errorf("the prompt's response: %+v", end)
	}
}

// TestWriteStopReasons: a cancelled run ends with the cancelled stop
// reason; a failed one with an error response that says why.
func TestWriteStopReasons(t *testing.T) {
	for _, c := range []struct {
		status formats.Status
		text   string
		want   []string
	}{{formats.Cancelled, "", []string{`"result":{`, `"stopReason":"cancelled"`}},
		{formats.Failed, "boom", []string{`"error":{"code":-32603`, `"message":"boom"`}}} {
		out, _ := formatstest.WriteReport(t, Dialect, []*formats.Event{
			{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
			{Kind: formats.UserMessage, Text: "go"},
			{Kind: formats.RunEnd, Status: c.status, Text: c.text},
		})
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, w := range c.want {
			if !strings.Contains(lines[len(lines)-1], w) {
				t.Errorf("%v: last line %s lacks %s", c.status, lines[len(lines)-1], w)
			}
		}
	}
}

// TestReadGeminiHandshake: Gemini CLI 0.61.0 over ACP (a real two-way
// transcript): initialize and session/new, with their responses, come
// before the first prompt. They make no run of their own: the one run
// starts with them, and takes its session id from session/new's response
// and its folder from the request. The handshake, the commands Gemini
// lists and a call on its way are known: raw events that need no warning.
func TestReadGeminiHandshake(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "acp", "gemini-cli-0.61.0-text-shell.jsonl"))
	if got, want := formatstest.Kinds(evs), "run_start raw raw raw raw user_message raw text_delta tool_call tool_result text_delta run_end"; got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	start := evs[0]
	if start.Run.SessionID != "b5d1d35b-839a-4676-b928-dd4cf759ed4f" || start.Run.Cwd != "/tmp/acpcap2696964026/work" {
		t.Errorf("the run's session and folder: %+v", start.Run)
	}
	if start.Source.Type != "initialize" || start.Source.Line == nil {
		t.Errorf("the start carries the first record: %q", start.Source.Type)
	}
	for _, e := range formatstest.OfKind(evs, formats.Raw) {
		if !e.Source.Known {
			t.Errorf("line %d (%s) is not known", e.Source.LineNo, e.Source.Type)
		}
	}
	if end := evs[len(evs)-1]; end.Status != formats.Completed {
		t.Errorf("end: %v", end.Status)
	}
}

// TestReadGeminiTwoPrompts: two prompts after one handshake are two runs
// of the session session/new made, both in its folder.
func TestReadGeminiTwoPrompts(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "acp", "gemini-cli-0.61.0-two-prompts.jsonl"))
	starts, ends := formatstest.OfKind(evs, formats.RunStart), formatstest.OfKind(evs, formats.RunEnd)
	if len(starts) != 2 || len(ends) != 2 {
		t.Fatalf("%d starts, %d ends: %s", len(starts), len(ends), formatstest.Kinds(evs))
	}
	for _, s := range starts {
		if s.Run.SessionID != "a0cc3740-d25c-4981-a154-68654a769090" || s.Run.Cwd != "/tmp/acpcap799561936/work" {
			t.Errorf("start: %+v", s.Run)
		}
	}
}

// TestReadGeminiCancel: the client cancels while Gemini asks for
// permission; it answers the request cancelled, and Gemini ends the turn
// with the cancelled stop reason.
func TestReadGeminiCancel(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "acp", "gemini-cli-0.61.0-cancel.jsonl"))
	if got, want := formatstest.Kinds(evs), "run_start raw raw raw raw user_message raw text_delta permission_request raw permission_answer run_end"; got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	if a := evs[10].Permission; a.Allowed || a.Reason != "cancelled" {
		t.Errorf("the answer: %+v", a)
	}
	if evs[9].Source.Type != "session/cancel" || !evs[9].Source.Known {
		t.Errorf("the cancellation: %+v", evs[9].Source)
	}
	if end := evs[11]; end.Status != formats.Cancelled {
		t.Errorf("end: %v", end.Status)
	}
}

// TestReadCancelThenError: an agent that ends a cancelled turn with an
// error (not the stop reason ACP asks for): the run is cancelled still.
func TestReadCancelThenError(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}
{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s9"}}
{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s9","prompt":[{"type":"text","text":"hi"}]}}
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s9"}}
{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}}
`
	evs := formatstest.Read(t, Dialect, in)
	end := evs[len(evs)-1]
	if end.Kind != formats.RunEnd || end.Status != formats.Cancelled || evs[0].Run.SessionID != "s9" || evs[0].Run.Cwd != "/w" {
		t.Errorf("%s: end %v, start %+v", formatstest.Kinds(evs), end.Status, evs[0].Run)
	}
}

// TestReadAgentSideHandshake: ACPLazyBridge's stdout, the agent's side
// alone: the responses to initialize and session/new, whose requests it
// lacks, and a mode update before the first chunk, make no run; the run
// takes its session id from session/new's response.
func TestReadAgentSideHandshake(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "acp", "acplazybridge-codex-hello.jsonl"))
	if got, want := formatstest.Kinds(evs), "run_start raw raw raw text_delta text_delta text_delta run_end"; got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	if evs[0].Run.SessionID != "session-bd635d62-6c93-42bc-838e-4fdd4833daa3" {
		t.Errorf("session: %q", evs[0].Run.SessionID)
	}
	for _, e := range formatstest.OfKind(evs, formats.Raw) {
		if !e.Source.Known {
			t.Errorf("line %d (%s) is not known", e.Source.LineNo, e.Source.Type)
		}
	}
}

// TestWriteAnswerChunk: the run's answer reaches the client as an
// agent_message_chunk, the only thing a client shows, once: not when the
// last message (whole, or its deltas) said it already. Read back, it is
// the run's answer, and no text is repeated.
func TestWriteAnswerChunk(t *testing.T) {
	for _, c := range []struct {
		name   string
		evs    []*formats.Event
		chunks int // the answer's chunks
	}{
		{"answer apart", []*formats.Event{{Kind: formats.Message, Text: "Working."}, {Kind: formats.Answer, Text: "Done: 3 files."}}, 1},
		{"answer only", []*formats.Event{{Kind: formats.Answer, Text: "Done: 3 files."}}, 1},
		{"answer is the message", []*formats.Event{{Kind: formats.Message, Text: "Done: 3 files."}, {Kind: formats.Answer, Text: "Done: 3 files."}}, 0},
		{"answer is the deltas", []*formats.Event{{Kind: formats.TextDelta, Text: "Done: "}, {Kind: formats.TextDelta, Text: "3 files."},
			{Kind: formats.Answer, Text: "Done: 3 files."}}, 0},
		{"no answer event", []*formats.Event{{Kind: formats.Message, Text: "Done: 3 files."}}, 0},
		{"a turn's final text", []*formats.Event{{Kind: formats.TurnEnd, Status: formats.Completed, Text: "Done: 3 files."}}, 1},
	} {
		evs := append([]*formats.Event{{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}}, {Kind: formats.UserMessage, Text: "go"}},
			c.evs...)
		evs = append(evs, &formats.Event{Kind: formats.RunEnd, Status: formats.Completed})
		out, _ := formatstest.WriteReport(t, Dialect, evs)
		chunks := strings.Count(out, `"_meta":{"agentconv":{"answer":true}}`)
		if chunks != c.chunks || strings.Contains(out, `"answer":"`) {
			t.Errorf("%s: %d answer chunks, want %d:\n%s", c.name, chunks, c.chunks, out)
		}
		var shown strings.Builder
		for _, e := range formatstest.Read(t, Dialect, out) {
			if e.Kind == formats.TextDelta || e.Kind == formats.Answer {
				shown.WriteString(e.Text)
			}
		}
		if n := strings.Count(shown.String(), "Done: 3 files."); n != 1 {
			t.Errorf("%s: read back, the answer is said %d times: %q", c.name, n, shown.String())
		}
		back := formatstest.Read(t, Dialect, out)
		v := &formats.RunView{}
		for _, e := range back {
			v.Observe(e)
		}
		if v.Answer() != "Done: 3 files." {
			t.Errorf("%s: read back, the answer is %q", c.name, v.Answer())
		}
	}
}

// TestReadUsageUpdateIsAggregate: ACP's own usage_update says the
// session's context and cost so far, not one model request's: it is read
// as the requests since the last update together (Aggregate), which no
// request takes; agentconv's, with a request's counts in _meta, as that
// request's.
func TestReadUsageUpdateIsAggregate(t *testing.T) {
	evs := formatstest.OfKind(formatstest.Read(t, Dialect, formatstest.Fixture(t, "acp", "prompt-turn-example.jsonl")), formats.Usage)
	if len(evs) != 1 || !evs[0].Aggregate {
		t.Errorf("ACP's usage_update: %d Usage events, Aggregate %v; want one, Aggregate", len(evs), len(evs) > 0 && evs[0].Aggregate)
	}
	in := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":105,"size":105,"_meta":{"agentconv":{"inputTokens":100,"outputTokens":5}}}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":105,"size":105,"_meta":{"agentconv":{"inputTokens":300,"outputTokens":9,"aggregate":true}}}}}
`
	evs = formatstest.OfKind(formatstest.Read(t, Dialect, in), formats.Usage)
	if len(evs) != 2 || evs[0].Aggregate || !evs[1].Aggregate {
		t.Errorf("agentconv's usage_update: %d Usage events; want a request's, then an aggregate's", len(evs))
	}
}

// TestWriteSubagentReadsBack: a subagent written as updates of its own
// (_meta) reads back as an agent: started at its first update with what
// the run knew of it, its text (a thought chunk for a client) and calls
// and each request's usage with them, ended with the run with its
// outcome; the run keeps its model and folder.
func TestWriteSubagentReadsBack(t *testing.T) {
	u := formats.UsageInfo{InputTokens: formats.Some[int64](10), OutputTokens: formats.Some[int64](2)}
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s1", Model: "model-a", Cwd: "/work"}},
		{Kind: formats.UserMessage, Text: "ask a helper"},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "t1", Name: "Task", Args: []byte(`{}`)}},
		{Kind: formats.Usage, Usage: u},
		{Kind: formats.AgentStart, Agent: "a1", AgentInfo: formats.AgentInfo{Label: "helper", ParentCall: "t1", Model: "model-b"}},
		{Kind: formats.UserMessage, Agent: "a1", Text: "read a.txt"},
		{Kind: formats.ToolCall, Agent: "a1", Call: formats.Call{ID: "r1", Name: "Read", Args: []byte(`{}`)}},
		{Kind: formats.Usage, Agent: "a1", Usage: u},
		{Kind: formats.ToolResult, Agent: "a1", Call: formats.Call{ID: "r1", Name: "Read", Status: formats.Completed, Output: formats.TextOutput("hello")}},
		{Kind: formats.Message, Agent: "a1", Text: "a.txt says hello."},
		{Kind: formats.Usage, Agent: "a1", Usage: u},
		{Kind: formats.AgentEnd, Agent: "a1", Status: formats.Completed},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "t1", Name: "Task", Status: formats.Completed, Output: formats.TextOutput("hello")}},
		{Kind: formats.Message, Text: "Done."},
		{Kind: formats.Usage, Usage: u},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	out, _ := formatstest.WriteReport(t, Dialect, evs)
	back := formatstest.Read(t, Dialect, out)
	var got []string
	for _, e := range back {
		if e.Agent != "" || e.Kind == formats.RunStart {
			got = append(got, e.Kind.String()+" "+e.Agent)
		}
	}
	if g, want := strings.Join(got, ", "), "run_start , agent_start a1, tool_call a1, usage a1, tool_result a1, text_delta a1, usage a1, agent_end a1"; g != want {
		t.Fatalf("read back:\n got %s\nwant %s", g, want)
	}
	start := formatstest.OfKind(back, formats.AgentStart)[0]
	if i := start.AgentInfo; i.Label != "helper" || i.ParentCall != "t1" || i.Model != "model-b" {
		t.Errorf("the agent's start: %+v", i)
	}
	if e := formatstest.OfKind(back, formats.AgentEnd)[0]; e.Status != formats.Completed {
		t.Errorf("the agent's end: %v", e.Status)
	}
	if r := back[0].Run; r.Model != "model-a" || r.Cwd != "/work" {
		t.Errorf("the run's start: %+v", r)
	}
	for _, p := range formatstest.CheckReader(Dialect, back) {
		t.Errorf("read back: %s", p)
	}
}
