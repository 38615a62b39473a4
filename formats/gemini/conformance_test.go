package gemini_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/gemini"
)

// TestConformance checks every row of the package against the
// contract of readers and writers (the formats package documentation).
func TestConformance(t *testing.T) {
	t.Run(gemini.Stream.Name, func(t *testing.T) {
		formatstest.Conformance(t, gemini.Stream,
			"gemini/error-result-stream.jsonl",
			"gemini/gemini-cli-snapshot-tools.jsonl",
			"gemini/oneshot-websearch-with-banner.txt",
			"gemini/tools-stream.jsonl",
			"agents/gemini-cli/0.20.2/api-error/stream-json/stdout.jsonl",
			"agents/gemini-cli/0.20.2/parallel/stream-json/stdout.jsonl",
			"agents/gemini-cli/0.20.2/refused/stream-json/stdout.jsonl",
			"agents/gemini-cli/0.20.2/subagent/stream-json/stdout.jsonl",
		)
	})
	t.Run(gemini.JSON.Name, func(t *testing.T) {
		formatstest.Conformance(t, gemini.JSON,
			"gemini/input-error.json",
			"gemini/response.json",
			"gemini/two-models-tools.json",
			"agents/gemini-cli/0.20.2/parallel/json/stdout.json",
			"agents/gemini-cli/0.20.2/refused/json/stdout.json",
			"agents/gemini-cli/0.20.2/subagent/json/stdout.json",
			"agents/gemini-cli/0.61.0/parallel/json/stdout.json",
		)
	})
	t.Run(gemini.Chat.Name, func(t *testing.T) {
		formatstest.Conformance(t, gemini.Chat,
			"gemini/chat-aim-control-pro-run4.json",
			"gemini/chat-pomodoro-timer-resumed.jsonl",
			"gemini/chat-pomodoro-timer.json",
			// The model's request failed: the file holds the prompt and
			// no more, and shows no end of the run.
			formatstest.Cut("agents/gemini-cli/0.20.2/api-error/json/home/.gemini/tmp/c89b9cd372ee4c4f0f14245d7019c6af5541a34c0eb3cf48529a68f454937468/chats/session-2026-12-02T01-32-9d2d2221.json"),
			formatstest.Cut("agents/gemini-cli/0.20.2/api-error/stream-json/home/.gemini/tmp/152997d79e22f920ee571a7661068b7c3ba8cfad4d87a1fec29a64eb4b66176a/chats/session-2026-12-02T01-34-5a60d94f.json"),
			"agents/gemini-cli/0.20.2/parallel/json/home/.gemini/tmp/f1e0bf75590cddf06301e91d9df027960f9fe64753b977a58ac14bc6f47d084b/chats/session-2026-12-02T01-33-1c09cf0d.json",
			"agents/gemini-cli/0.20.2/parallel/stream-json/home/.gemini/tmp/98266500c8dd2d450315e4979719a3d1eaae70a32db3e3e6c25ec3a1796f34f5/chats/session-2026-12-02T01-34-0823e493.json",
		)
	})
}
