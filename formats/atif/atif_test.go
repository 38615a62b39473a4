package atif

import (
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestReadRFCExample(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "atif", "rfc-0001-example.json"))
	if got, want := formatstest.Kinds(evs), "run_start user_message usage message tool_call tool_call tool_result tool_result usage message run_end"; got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	start := evs[0]
	if start.Run.SessionID != "025B810F-B3A2-4C67-93C0-FE7A142A947A" || start.Run.AgentName != "harbor-agent" || start.Run.Model != "gemini-2.5-flash" {
		t.Errorf("run start: %+v", start.Run)
	}
	u := evs[2].Usage
	if u.InputTokens.V != 520 || u.CacheReadTokens.V != 200 || u.OutputTokens.V != 80 || u.CostUSD.V != 0.00045 {
		t.Errorf("first step's usage: %+v", u)
	}
	if evs[3].Thinking == "" || !strings.HasPrefix(evs[3].Text, "I will search") {
		t.Errorf("message: %+v", evs[3])
	}
	r := evs[6]
	if r.Call.ID != "call_price_1" || r.Call.Name != "financial_search" || r.Call.Status != formats.Completed || !strings.Contains(r.Call.Output, "185.35") {
		t.Errorf("result: %+v", r.Call)
	}
	if evs[0].Time.IsZero() || evs[3].Time.Format("15:04:05") != "10:30:02" {
		t.Errorf("times: %v %v", evs[0].Time, evs[3].Time)
	}
}

// TestReadVersions: the oldest version (session_id required, no
// trajectory ids) reads, and v1.8's audio content parts are kept raw.
func TestReadVersions(t *testing.T) {
	v10 := `{"schema_version":"ATIF-v1.0","session_id":"s1","agent":{"name":"a","version":"1"},"steps":[
{"step_id":1,"source":"user","message":"hi"},
{"step_id":2,"source":"agent","message":"hello","metrics":{"prompt_tokens":5,"completion_tokens":2}}]}`
	evs := formatstest.Read(t, Dialect, v10)
	if got := formatstest.Kinds(evs); got != "run_start user_message usage message run_end" {
		t.Errorf("v1.0: %s", got)
	}
	v18 := `{"schema_version":"ATIF-v1.8","agent":{"name":"a","version":"1"},"steps":[
{"step_id":1,"source":"user","message":[{"type":"text","text":"listen"},{"type":"audio","source":{"media_type":"audio/wav","path":"a.wav"}}]}]}`
	evs = formatstest.Read(t, Dialect, v18)
	if got := formatstest.Kinds(evs); got != "run_start raw user_message run_end" {
		t.Fatalf("v1.8: %s", got)
	}
	if evs[1].Source.Type != "content/audio" || evs[2].Text != "listen" {
		t.Errorf("v1.8 audio part: %+v, prompt %q", evs[1].Source, evs[2].Text)
	}
}

// TestReadSystemPrompt: the system steps a trajectory begins with are its
// system prompt, on the run's start, and still notices; a notice or a
// compaction that agentconv wrote as a system step is not, nor a system
// step after the first prompt.
func TestReadSystemPrompt(t *testing.T) {
	doc := `{"schema_version":"ATIF-v1.6","session_id":"s1","agent":{"name":"a","version":"1"},"steps":[
{"step_id":1,"source":"system","message":"You are a careful agent."},
{"step_id":2,"source":"system","message":"update available","extra":{"notice":"info"}},
{"step_id":3,"source":"system","message":[{"type":"text","text":"Answer briefly."}]},
{"step_id":4,"source":"user","message":"hi"},
{"step_id":5,"source":"system","message":"later"}]}`
	evs := formatstest.Read(t, Dialect, doc)
	if got, want := evs[0].Run.SystemInstructions, "You are a careful agent.\n\nAnswer briefly."; got != want {
		t.Errorf("system instructions %q, want %q", got, want)
	}
	if got := formatstest.Kinds(evs); got != "run_start notice notice notice user_message notice run_end" {
		t.Errorf("kinds: %s", got)
	}
	noPrompt := `{"schema_version":"ATIF-v1.6","session_id":"s1","agent":{"name":"a","version":"1"},"steps":[
{"step_id":1,"source":"system","message":"retrying","extra":{"notice":"warning"}},
{"step_id":2,"source":"user","message":"hi"}]}`
	if got := formatstest.Read(t, Dialect, noPrompt)[0].Run.SystemInstructions; got != "" {
		t.Errorf("a notice read as the system prompt: %q", got)
	}
}

func TestReadRejectsOtherJSON(t *testing.T) {
	_, bad, err := formatstest.ReadAll(Dialect, []byte(`{"schema_version":"2.0","steps":[]}`))
	if err == nil && len(bad) == 0 {
		t.Fatal("a document that is not ATIF was read")
	}
}

// TestWriteSubagentsAndRefusals: a subagent is embedded and referenced
// from the result of the call that spawned it; a refused call keeps its
// status in extra and its reason as the observation.
func TestWriteSubagentsAndRefusals(t *testing.T) {
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s", AgentName: "x"}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "t1", Name: "Task", Args: []byte(`{"prompt":"look"}`)}},
		{Kind: formats.AgentStart, Agent: "t1", AgentInfo: formats.AgentInfo{Label: "Explore", ParentCall: "t1"}},
		{Kind: formats.Message, Agent: "t1", Text: "found it"},
		{Kind: formats.AgentEnd, Agent: "t1", Status: formats.Completed, Text: "report"},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "t1", Name: "Task", Status: formats.Completed, Output: "found it"}},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "b1", Name: "Bash", Args: []byte(`{"command":"rm -rf /"}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "b1", Name: "Bash", Status: formats.Denied, Error: "not allowed"}},
		{Kind: formats.RunEnd, Status: formats.Denied},
	}
	out, _ := formatstest.WriteReport(t, Dialect, evs)
	for _, want := range []string{`"subagent_trajectories"`, `"trajectory_id": "t1"`, `"subagent_trajectory_ref"`,
		`"status": "denied"`, `"content": "not allowed"`, `"report": "report"`, `"exit_code": 2`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	back := formatstest.Read(t, Dialect, out)
	if got := formatstest.Kinds(back); got != "run_start user_message tool_call agent_start message agent_end tool_result tool_call tool_result run_end" {
		t.Errorf("read back: %s", got)
	}
	if back[8].Call.Status != formats.Denied || back[3].AgentInfo.ParentCall != "t1" || back[5].Text != "report" {
		t.Errorf("read back: refusal %v, parent call %q, report %q", back[8].Call.Status, back[3].AgentInfo.ParentCall, back[5].Text)
	}
}

func TestDetect(t *testing.T) {
	if detect(formatstest.Fixture(t, "atif", "rfc-0001-example.json")) != 100 {
		t.Error("the RFC's example is not detected")
	}
	for _, s := range []string{`{"type":"system"}`, `{"schema_version":"1.4"}`, `not json`} {
		if detect([]byte(s)) != 0 {
			t.Errorf("%s detected as ATIF", s)
		}
	}
}

var roundTripKinds = []formats.Kind{formats.UserMessage, formats.Message, formats.ToolCall, formats.ToolResult,
	formats.AgentStart, formats.AgentEnd, formats.Compaction}

func FuzzReader(f *testing.F) {
	f.Add(formatstest.Fixture(f, "atif", "rfc-0001-example.json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, Dialect, data, roundTripKinds...)
	})
}
