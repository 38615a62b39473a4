// Package cliagents reads and writes the `cli-agents --json` stream of the
// cli-agents Rust crate: one serialized StreamEvent per line, the same for
// its Claude, Codex and Gemini providers, with provider events it does not
// map passed through as raw.
package cliagents

import (
	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Dialect is the cli-agents dialect: `cli-agents --json`.
var Dialect = formats.Dialect{
	Name:        "cli-agents",
	Aliases:     []string{"cliagents"},
	Description: "cli-agents `--json`: NDJSON text_delta, thinking_delta, tool_start, tool_end, turn_end, error, done, raw (Claude, Codex, Gemini)",
	NewReader:   newReader,
	NewWriter:   newWriter,
	// The writer keeps values of an event, never the event.
	KeepsNoEvents: true,
	Detect:        detect,
	// One flat stream of text, thinking, tool calls, turn ends, warnings
	// and errors, and a result with the run's totals.
	Carries: formats.AssistantText | formats.Thinking | formats.Turns | formats.ToolCalls | formats.SubagentToolCalls |
		formats.WarningNotices | formats.TokenUsage | formats.Costs | formats.RunDurations | formats.RunOutcomes,
	Quirks: Quirks,
}

var knownTypes = map[string]bool{
	"text_delta": true, "thinking_delta": true, "tool_start": true, "tool_end": true,
	"turn_end": true, "error": true, "done": true, "raw": true,
}

// detect claims lines of the eight StreamEvent types without malac's
// envelope; an AdaL error line (message, no severity) is left to AdaL.
func detect(head []byte) int {
	return formats.DetectByTypes(head, func(line []byte, typ string) bool {
		if !knownTypes[typ] {
			return false
		}
		var probe struct {
			Seq      *json.RawMessage `json:"seq"`
			Agent    *json.RawMessage `json:"agent"`
			Severity *json.RawMessage `json:"severity"`
			ToolName *json.RawMessage `json:"toolName"`
			Result   *json.RawMessage `json:"result"`
			Provider *json.RawMessage `json:"provider"`
			// Gemini's stream has error lines with a severity too, but
			// every one of its lines has a timestamp.
			Timestamp *json.RawMessage `json:"timestamp"`
		}
		if json.Unmarshal(line, &probe) != nil || probe.Seq != nil || probe.Agent != nil || probe.Timestamp != nil {
			return false
		}
		switch typ {
		case "error":
			return probe.Severity != nil
		case "tool_start":
			return probe.ToolName != nil
		case "done":
			return probe.Result != nil
		case "raw":
			return probe.Provider != nil
		}
		return true
	})
}
