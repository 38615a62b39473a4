package agenttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestResponsesTurns: the calls of one response count as one model turn,
// whether the agent sends the outputs after all the calls or each right
// after its call; the agent's context is not the user's first message.
func TestResponsesTurns(t *testing.T) {
	api := &responsesAPI{kinds: map[*Request]map[string]string{}}
	rec := httptest.NewRecorder()
	first := &Request{Seq: 1, Stream: true}
	api.kinds[first] = map[string]string{"shell": "function"}
	api.WriteReply(rec, first, Reply{Text: "two", Calls: []Call{{ID: "t_a", Name: "shell"}, {ID: "t_b", Name: "shell"}}})
	msg := func(role, text string) string {
		return `{"type":"message","role":"` + role + `","content":[{"type":"input_text","text":"` + text + `"}]}`
	}
	fc := func(id string) string {
		return `{"type":"function_call","name":"shell","arguments":"{}","call_id":"` + id + `"}`
	}
	out := func(id string) string { return `{"type":"function_call_output","call_id":"` + id + `","output":"ok"}` }
	for name, input := range map[string][]string{
		"grouped":     {fc("t_a"), fc("t_b"), out("t_a"), out("t_b")},
		"interleaved": {fc("t_a"), out("t_a"), fc("t_b"), out("t_b")},
	} {
		items := append([]string{msg("user", "<environment_context>x</environment_context>"), msg("user", "the task"), msg("assistant", "two")}, input...)
		body := `{"model":"m","stream":true,"tools":[{"type":"function","name":"shell"}],"input":[` + strings.Join(items, ",") + `]}`
		var req Request
		r := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(body))
		if err := api.Parse(r, []byte(body), &req); err != nil {
			t.Fatal(err)
		}
		if n := Turns(req.History); n != 1 {
			t.Errorf("%s: %d turns, want 1: %+v", name, n, req.History)
		}
		if got := req.FirstUser(); got != "the task" {
			t.Errorf("%s: first user message %q", name, got)
		}
	}
	// The stream ends with response.completed, whose usage counts the
	// cached tokens in the input.
	var last map[string]any
	sc := bufio.NewScanner(bytes.NewReader(rec.Body.Bytes()))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last = nil
			if err := json.Unmarshal([]byte(d), &last); err != nil {
				t.Fatal(err)
			}
		}
	}
	if last["type"] != "response.completed" {
		t.Fatalf("last event %v", last["type"])
	}
}

// TestResponsesUsage: OpenAI counts input with the cache.
func TestResponsesUsage(t *testing.T) {
	u := responsesUsage(Usage{Input: 100, CacheRead: 20, Output: 30, Reasoning: 5})
	if u["input_tokens"] != 120 || u["total_tokens"] != 150 || u["input_tokens_details"].(map[string]any)["cached_tokens"] != 20 {
		t.Errorf("usage %v", u)
	}
}
