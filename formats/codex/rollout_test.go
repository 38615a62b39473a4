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
