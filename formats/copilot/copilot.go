// Package copilot reads what the GitHub Copilot CLI (`copilot`) prints and
// keeps: copilot, its `-p … --output-format json`; and copilot-events, the
// events.jsonl it keeps of each session.
//
// Both are JSON lines of the same session events: type (dotted:
// session.start, user.message, assistant.message, tool.execution_complete,
// …), data, id, timestamp, and parentId (the event before it). The stream
// also prints the events that serve only streaming (deltas, partial
// results, model call marks), marked ephemeral, which the events file
// leaves out; the events file has what the stream leaves out: session.start
// and session.resume (the session's id, model, working folder and the
// CLI's version), the system prompt, each model request's usage
// (session.usage_record) and session.shutdown at each process's end. A
// subagent's events are inline, marked with agentId, between
// subagent.started and subagent.completed. A failure is session.error
// (the CLI then exits 1). The stream's last line is result, with the
// session's id and the process's exit code.
package copilot

import (
	"bytes"
	"path/filepath"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// AgentName is the agent of the runs read from the Copilot CLI.
const AgentName = "copilot"

// Stream is the copilot dialect: `copilot -p … --output-format json`.
// Read only: the CLI takes back its events file, not its stream.
var Stream = formats.Dialect{
	Name:        "copilot",
	Aliases:     []string{"copilot-stream", "copilot-json"},
	Description: "Copilot CLI `-p --output-format json`: its session events as JSON lines (type, data, id, timestamp, parentId; streaming ones ephemeral; subagents' marked agentId), ending with result (sessionId, exitCode); no token counts (read only)",
	NewReader:   newReader,
	Detect:      detectStream,
	Bookkeeping: bookkeeping,
}

// Events is the copilot-events dialect: the session's
// ~/.copilot/session-state/<session-id>/events.jsonl, which a resumed
// session (--resume ID) appends to: each process's events from
// session.start (or session.resume) to session.shutdown.
var Events = formats.Dialect{
	Name:        "copilot-events",
	Aliases:     []string{"copilot-session"},
	Description: "Copilot CLI's session file `~/.copilot/session-state/<session-id>/events.jsonl`: the session's events without the ephemeral ones, with session.start/resume, each request's usage (session.usage_record) and session.shutdown per process; -o DIR writes <session-id>/events.jsonl, which `copilot --resume ID` resumes",
	NewReader:   newReader,
	NewWriter:   newEventsWriter,
	Files:       true,
	Carries:     eventsCarries,
	Quirks:      []formats.Quirk{formats.UnansweredCallsFailed, lossCancelled, lossExitCodes, formats.UnsummedRunUsage},
	Detect:      detectEvents,
	Bookkeeping: bookkeeping,
	DirFiles:    "events.jsonl",
	Places:      places,
}

// places: $COPILOT_HOME/session-state, else ~/.copilot/session-state.
func places(getenv func(string) string) []string {
	if d := getenv("COPILOT_HOME"); d != "" {
		return []string{filepath.Join(d, "session-state")}
	}
	if h := getenv("HOME"); h != "" {
		return []string{filepath.Join(h, ".copilot", "session-state")}
	}
	return nil
}

// bookkeeping are the event types that hold nothing of a run: what the CLI
// loaded, its model calls' marks (the requests are the usage records),
// streaming's pieces of what whole events give again, and the settings of
// the session.
var bookkeeping = []string{
	"session.skills_loaded", "session.mcp_servers_loaded", "session.tools_updated",
	"session.background_tasks_changed", "session.permissions_changed", "session.custom_agents_updated",
	"model.call_start", "model.call_finished", "model.call_final_result", "model.call_failure",
	"assistant.message_start", "assistant.tool_call_delta", "assistant.reasoning", "assistant.idle",
	"assistant.turn_retry", "tool.shell_output", "tool.execution_partial_result", "tool.execution_start",
	"subagent.configured", "system.message",
}

// probe is what detection looks at in a line.
type probe struct {
	Type      string           `json:"type"`
	Data      *json.RawMessage `json:"data"`
	ID        *string          `json:"id"`
	Timestamp *string          `json:"timestamp"`
	Ephemeral bool             `json:"ephemeral"`
	SessionID *string          `json:"sessionId"`
	ExitCode  *json.RawMessage `json:"exitCode"`
}

// shape scores the head by its lines' envelope, and says whether a line
// is one only the stream prints (ephemeral, or the result) and whether one
// is only the events file's (the session's start or resume).
func shape(head []byte) (score int, streamOnly, eventsOnly bool) {
	score = formats.DetectByTypes(head, func(line []byte, typ string) bool {
		var p probe
		if json.Unmarshal(line, &p) != nil {
			return false
		}
		if typ == "result" {
			if p.SessionID != nil && p.ExitCode != nil {
				streamOnly = true
				return true
			}
			return false
		}
		// A dotted type, a data object, an id and a timestamp, and the
		// parentId key (null on the session's first event).
		if !bytes.ContainsRune([]byte(typ), '.') || p.Data == nil || p.ID == nil || p.Timestamp == nil ||
			!bytes.Contains(line, []byte(`"parentId"`)) {
			return false
		}
		streamOnly = streamOnly || p.Ephemeral
		eventsOnly = eventsOnly || typ == "session.start" || typ == "session.resume"
		return true
	})
	return score, streamOnly, eventsOnly
}

// detectStream claims session events with an ephemeral one or the result
// among them; detectEvents those without, or with the session's start.
func detectStream(head []byte) int {
	s, stream, events := shape(head)
	if !stream || events {
		return 0
	}
	return s
}

func detectEvents(head []byte) int {
	s, stream, events := shape(head)
	if stream && !events {
		return 0
	}
	return s
}
