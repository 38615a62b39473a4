// Package malac reads and writes the event stream of `malac --json`: one
// JSON object per line, each with the envelope agent, seq, at and type, for
// the main agent and its subagents.
package malac

import (
	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Dialect is the malac dialect: `malac --json`.
var Dialect = formats.Dialect{
	Name:        "malac",
	Aliases:     []string{"malac-json"},
	Description: "malac `--json`: NDJSON events with the envelope agent, seq, at, type; subagents, permissions, usage, todos",
	NewReader:   newReader,
	NewWriter:   newWriter,
	// The writer keeps values of an event, never the event.
	KeepsNoEvents: true,
	Detect:        detect,
	// malac has no place for the call that started a subagent (the reader
	// guesses it back), an answer of a subagent, a cancelled call (it is
	// failed), reasoning token counts, a run's own duration (its times
	// give one) or other dialects' events.
	Carries: formats.AllFeatures &^ (formats.ToolOutputValues | formats.SystemPrompts | formats.SubagentCalls | formats.SubagentAnswers | formats.CancelledCalls |
		formats.ReasoningTokens | formats.RunDurations | formats.RawEvents),
	Quirks: Quirks,
}

// detect claims lines that carry the whole envelope: other dialects share
// type words (text_delta, notice) but none has agent, seq and at together.
func detect(head []byte) int {
	return formats.DetectByTypes(head, func(line []byte, typ string) bool {
		var env struct {
			Agent *string          `json:"agent"`
			Seq   *json.RawMessage `json:"seq"`
			At    *string          `json:"at"`
		}
		if typ == "" || json.Unmarshal(line, &env) != nil {
			return false
		}
		return env.Agent != nil && env.Seq != nil && env.At != nil
	})
}

// Statuses of turn_finished and agent_finished.
func statusWord(s formats.Status) string {
	switch s {
	case formats.Cancelled, formats.Denied:
		return "cancelled"
	case formats.Failed:
		return "failed"
	}
	return "completed"
}
