package claude_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(claude.Stream.Name, func(t *testing.T) {
		formatstest.Conformance(t, claude.Stream,
			formatstest.Cut("claude/agent-stream-fmt-stream.jsonl"),
			"claude/failures-stream.jsonl",
			"claude/gleam-basic-query.ndjson",
			"claude/orchestrator-task-tool-output.jsonl",
			"claude/partial-messages-stream.jsonl",
			"claude/split-messages-stream.jsonl",
			"claude/subagent-stream.jsonl",
			"claude/takopi-all-events.jsonl",
			"claude/takopi-session.jsonl",
			"claude/unknown-types-stream.jsonl",
			"claude/untether-autocompact-2.1.285.jsonl",
			"agents/claude-code/1.0.128/api-error/stream-json/stdout.jsonl",
			"agents/claude-code/1.0.128/parallel/stream-json/stdout.jsonl",
			"agents/claude-code/1.0.128/refused/stream-json/stdout.jsonl",
			"agents/claude-code/1.0.128/subagent/stream-json/stdout.jsonl",
		)
	})
	t.Run(claude.JSON.Name, func(t *testing.T) {
		formatstest.Conformance(t, claude.JSON,
			"claude/gleam-result-success.json",
			"claude/result-pretty.json",
			"claude/verbose-array.json",
			"agents/claude-code/1.0.128/api-error/json/stdout.json",
			"agents/claude-code/1.0.128/parallel/json/stdout.json",
			"agents/claude-code/1.0.128/refused/json/stdout.json",
			"agents/claude-code/1.0.128/subagent/json/stdout.json",
		)
	})
	t.Run(claude.Session.Name, func(t *testing.T) {
		formatstest.Conformance(t, claude.Session,
			formatstest.Cut("claude/sessions/agentcmd-claude-session-2.0.14.jsonl"),
			"claude/sessions/claude-code-log-showcase-55550000-0000-4000-8000-000000000001.jsonl",
			formatstest.Cut("claude/sessions/claude-code-log-sidechain-integrated.jsonl"),
			"claude/sessions/trajectory-subagent-input.jsonl",
			"agents/claude-code/1.0.128/api-error/json/home/.claude/projects/-tmp-TestAgentsclaude-code-1-0-128jsonapi-error374827422-002-work/a8c1208b-e646-43b2-9364-a728ceed93b5.jsonl",
			"agents/claude-code/1.0.128/api-error/stream-json/home/.claude/projects/-tmp-TestAgentsclaude-code-1-0-128stream-jsonapi-error3878078660-002-work/a4ab8c8d-3148-4138-bd1f-83428f4d343a.jsonl",
			"agents/claude-code/1.0.128/parallel/json/home/.claude/projects/-tmp-TestAgentsclaude-code-1-0-128jsonparallel2549045506-002-work/35d0f89a-d53c-4cd9-8913-78e24bcd80bb.jsonl",
			"agents/claude-code/1.0.128/parallel/stream-json/home/.claude/projects/-tmp-TestAgentsclaude-code-1-0-128stream-jsonparallel3540006413-002-work/6371d093-72d4-4e92-91be-b97c0e3cbd7b.jsonl",
			// Refused calls: their failed results' texts (rule "figures").
			"agents/claude-code/1.0.128/refused/json/home/.claude/projects/-tmp-TestAgentsclaude-code-1-0-128jsonrefused1599376618-002-work/c71d2a76-d0e6-4fe1-8707-ad61dbea9213.jsonl",
			"agents/claude-code/2.1.332/refused/json/home/.claude/projects/-tmp-TestAgentsclaude-code-2-1-332jsonrefused3672407994-002-work/4f5235d4-0c20-45d7-b899-64999d65eb01.jsonl",
		)
	})
	t.Run(claude.Amp.Name, func(t *testing.T) {
		formatstest.Conformance(t, claude.Amp,
			"claude/failures-stream.jsonl",
			"claude/subagent-stream.jsonl",
		)
	})
}
