package codex

import (
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// Codex 0.171 records a request's usage (token_usage_record) when its
// response ends, before its calls' outputs, and prints the token_count
// that repeats it after them: the usage is read where the request is, once.
func TestRolloutUsageRecord(t *testing.T) {
	evs := formatstest.Read(t, Rollout, formatstest.Fixture(t, "agents/codex/0.171.0/parallel/json/home/.codex/sessions/2026/12/02",
		"rollout-2026-12-02T01-30-19-01a2345f-bd6d-75b0-b9e8-ec130bd33308.jsonl"))
	var got []string
	for _, e := range evs {
		switch e.Kind {
		case formats.ToolCall, formats.ToolResult, formats.Usage, formats.Message:
			got = append(got, e.Kind.String()+":"+e.Call.ID+e.Response.ID)
		}
	}
	want := "message: tool_call:call_par_1 tool_call:call_par_2 usage:resp_agentconv_1 tool_result:call_par_1 tool_result:call_par_2 " +
		"message: usage:resp_agentconv_2"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("events\n got %s\nwant %s", s, want)
	}
	us := formatstest.OfKind(evs, formats.Usage)
	if len(us) != 2 || us[0].Usage.InputTokens.V != 1200 || us[0].Usage.CacheReadTokens.V != 200 || us[0].Usage.OutputTokens.V != 30 ||
		us[1].Usage.InputTokens.V != 1348 || us[1].Usage.OutputTokens.V != 37 {
		for _, u := range us {
			t.Logf("usage %+v", u.Usage)
		}
		t.Errorf("%d usage events, want the two requests' counts once each", len(us))
	}
}

// TestRolloutOddLines: a line is decoded whole, its payload with it, and
// one that cannot be (a count written as 100.0, a payload that is no
// object, a field of another type) is read as before, envelope then
// payload: the count repaired, the others kept as unknown events with a
// warning each.
func TestRolloutOddLines(t *testing.T) {
	const ts = `"timestamp":"2026-02-23T19:34:39.388Z"`
	in := `{` + ts + `,"type":"session_meta","payload":{"id":"019c8a70-dda7-7f33-98ea-f30553347322","cwd":"/w","cli_version":"0.104.0"}}
{` + ts + `,"type":"event_msg","payload":{"type":"user_message","message":"hi"}}
{` + ts + `,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100.0,"cached_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":105},"last_token_usage":{"input_tokens":100.0,"cached_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":105}}}}
{` + ts + `,"type":"event_msg","payload":"a string"}
{` + ts + `,"type":"turn_context","payload":{"cwd":true}}
{` + ts + `,"type":"event_msg","payload":{"type":"agent_message","message":"done"}}
`
	evs, warnings := formatstest.ReadWarnings(t, Rollout, in)
	us := formatstest.OfKind(evs, formats.Usage)
	if len(us) != 1 || us[0].Usage.InputTokens != formats.Some[int64](100) || us[0].Usage.OutputTokens != formats.Some[int64](5) {
		t.Errorf("usage: %+v (%s)", us, formatstest.Kinds(evs))
	}
	for _, w := range []string{"line 4: a Codex event_msg line without a payload object", "line 5: a Codex turn_context with fields of unexpected types"} {
		if !strings.Contains(warnings, w) {
			t.Errorf("no warning %q in:\n%s", w, warnings)
		}
	}
	if len(formatstest.OfKind(evs, formats.Raw)) != 2 || len(formatstest.OfKind(evs, formats.UserMessage)) != 1 {
		t.Errorf("events: %s", formatstest.Kinds(evs))
	}
}
