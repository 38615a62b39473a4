package codex_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/codex"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(codex.Dialect.Name, func(t *testing.T) {
		formatstest.Conformance(t, codex.Dialect,
			"codex/agentcmd-stream-output-5.jsonl",
			"codex/fatal-error.jsonl",
			"codex/legacy-0.40.jsonl",
			"codex/rust-claude-codes-multi-command.jsonl",
			"codex/takopi-all-formats.jsonl",
			"codex/tools-and-todos.jsonl",
			"codex/turn-failed.jsonl",
			formatstest.Cut("codex/two-threads.jsonl"),
			"codex/untether-0157-web-search.jsonl",
			"codex/untether-turn-failed.jsonl",
			"agents/codex/0.171.0/api-error/json/stdout.jsonl",
			"agents/codex/0.171.0/parallel/json/stdout.jsonl",
			"agents/codex/0.171.0/refused/json/stdout.jsonl",
			"agents/codex/0.171.0/subagent/json/stdout.jsonl",
		)
	})
	t.Run(codex.Rollout.Name, func(t *testing.T) {
		formatstest.Conformance(t, codex.Rollout,
			"codex/agentcmd-codex-rollout.jsonl",
			"codex/letta-tool-calls-rollout.jsonl",
			formatstest.Cut("codex/localpush-0.104-rollout-cut.jsonl"),
			"codex/localpush-0.104-rollout.jsonl",
			"agents/codex/0.171.0/api-error/json/home/.codex/sessions/2026/12/02/rollout-2026-12-02T01-30-15-01a2345f-ac81-7331-97de-a179553a829d.jsonl",
			"agents/codex/0.171.0/parallel/json/home/.codex/sessions/2026/12/02/rollout-2026-12-02T01-30-19-01a2345f-bd6d-75b0-b9e8-ec130bd33308.jsonl",
			"agents/codex/0.171.0/refused/json/home/.codex/sessions/2026/12/02/rollout-2026-12-02T01-30-13-01a2345f-a604-7632-818b-39b42e2bebae.jsonl",
			"agents/codex/0.171.0/subagent/json/home/.codex/sessions/2026/12/02/rollout-2026-12-02T01-30-15-01a2345f-af38-7521-bd96-524af540edd8.jsonl",
		)
	})
}
