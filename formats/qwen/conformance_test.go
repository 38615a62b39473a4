package qwen_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/qwen"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(qwen.Stream.Name, func(t *testing.T) {
		formatstest.Conformance(t, qwen.Stream,
			"agents/qwen-code/0.24.4/api-error/stream-json/stdout.jsonl",
			"agents/qwen-code/0.24.4/parallel/stream-json/stdout.jsonl",
			"agents/qwen-code/0.24.4/refused/stream-json/stdout.jsonl",
			"agents/qwen-code/0.24.4/subagent/stream-json/stdout.jsonl",
		)
	})
	t.Run(qwen.JSON.Name, func(t *testing.T) {
		formatstest.Conformance(t, qwen.JSON,
			"qwen/json-subagent.json",
			"agents/qwen-code/0.24.4/api-error/json/stdout.json",
			"agents/qwen-code/0.24.4/parallel/json/stdout.json",
			"agents/qwen-code/0.24.4/refused/json/stdout.json",
			"agents/qwen-code/0.24.4/subagent/json/stdout.json",
		)
	})
	t.Run(qwen.Session.Name, func(t *testing.T) {
		formatstest.Conformance(t, qwen.Session,
			"qwen/session-api-error.jsonl",
			"qwen/session-subagent.jsonl",
			"agents/qwen-code/0.24.4/api-error/json/home/.qwen/projects/-tmp-TestAgentsqwen-code-0-24-4jsonapi-error2596581861-002-work/chats/0606e2f3-f596-40d0-b059-a05189139202.jsonl",
			"agents/qwen-code/0.24.4/api-error/stream-json/home/.qwen/projects/-tmp-TestAgentsqwen-code-0-24-4stream-jsonapi-error3917391783-002-work/chats/41ddce47-0fc7-413d-aa6b-ab3558ea9f46.jsonl",
			"agents/qwen-code/0.24.4/parallel/json/home/.qwen/projects/-tmp-TestAgentsqwen-code-0-24-4jsonparallel370339973-002-work/chats/65b9c241-44b1-4ad9-81fd-85862fe02443.jsonl",
			"agents/qwen-code/0.24.4/parallel/stream-json/home/.qwen/projects/-tmp-TestAgentsqwen-code-0-24-4stream-jsonparallel3519984350-002-work/chats/19a28c50-4e0c-4310-829b-c5d5c5c4a931.jsonl",
		)
	})
}
