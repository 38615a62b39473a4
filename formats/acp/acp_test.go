package acp

import (
	"strings"
	"testing"

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
	if r := evs[6].Call; r.ID != "call_001" || r.Status != formats.Completed || !strings.HasPrefix(r.Output, "Analysis complete") {
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
	if evs[4].Call.Output != "a b" || evs[6].Status != formats.Cancelled {
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
	for name, want := range map[string]string{"Bash": "execute", "command_execution": "execute", "Read": "read",
		"Edit": "edit", "Write": "edit", "Grep": "search", "Glob": "search", "WebFetch": "fetch", "Task": "other"} {
		if got := toolKind(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
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
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, Dialect, data, formats.UserMessage, formats.ToolCall, formats.ToolResult,
			formats.PermissionRequest, formats.PermissionAnswer, formats.Todos)
	})
}
