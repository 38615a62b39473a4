package claude_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestQwenCode reads what Qwen Code 0.24.4 printed (issue 24 #12, #13, #14,
// #18): its stream is detected as qwen-code by its init line; the run's
// tokens and each request's are what the model server sent, the cache
// counted once (input_tokens include it), the subagent's requests in the
// result's total, and the 0/0 usage of a message per content block no
// request.
func TestQwenCode(t *testing.T) {
	for _, scenario := range []string{"text-shell", "subagent", "thinking"} {
		dir := filepath.Join("..", "..", "testdata", "agents", "qwen-code", "0.24.4", scenario, "stream-json")
		data, err := os.ReadFile(filepath.Join(dir, "stdout.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var srv struct {
			Requests []struct {
				Status int `json:"status"`
				Sent   *struct {
					Input, Output int64
					CacheRead     int64 `json:"cache_read"`
				} `json:"sent"`
			} `json:"requests"`
		}
		b, _ := os.ReadFile(filepath.Join(dir, "server.json"))
		if err := json.Unmarshal(b, &srv); err != nil {
			t.Fatal(err)
		}
		var in, out int64
		var calls int
		for _, r := range srv.Requests {
			if r.Status == 200 && r.Sent != nil {
				in, out, calls = in+r.Sent.Input+r.Sent.CacheRead, out+r.Sent.Output, calls+1
			}
		}
		if q, c := claude.QwenCode.Detect(data), claude.Stream.Detect(data); q <= c {
			t.Errorf("%s: qwen-code scores %d, claude-stream %d", scenario, q, c)
		}
		evs := formatstest.Read(t, claude.QwenCode, data)
		end := formatstest.OfKind(evs, formats.RunEnd)
		if len(end) != 1 || end[0].Usage.InputTokens.V != in || end[0].Usage.OutputTokens.V != out {
			t.Errorf("%s: run's usage %+v; the server sent %d in, %d out", scenario, end[0].Usage, in, out)
		}
		var sumIn int64
		usage := formatstest.OfKind(evs, formats.Usage)
		for _, u := range usage {
			sumIn += u.Usage.InputTokens.V
		}
		if scenario == "subagent" {
			continue // the subagent's messages have 0/0 usage: no request of theirs is known
		}
		if len(usage) != calls || sumIn != in {
			t.Errorf("%s: %d requests of %d input tokens; the server answered %d of %d", scenario, len(usage), sumIn, calls, in)
		}
	}
}
