package codex

import (
	"bytes"
	"path"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Rollout is the codex-rollout dialect: the session files Codex keeps in
// ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl, lines of
// {timestamp, type, payload} (RolloutLine of codex-rs/protocol): a
// session_meta, then response_item, event_msg, turn_context and compacted
// records.
var Rollout = formats.Dialect{
	Name:        "codex-rollout",
	Aliases:     []string{"codex-session", "rollout"},
	Description: "Codex session files (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl): session_meta, turn_context, response_item (messages, reasoning, tool calls and outputs) and event_msg (prompts, token counts, task starts and ends) lines; -o DIR writes the YYYY/MM/DD tree",
	NewReader:   newRolloutReader,
	NewWriter:   newRolloutWriter,
	Detect:      detectRollout,
	// A rollout holds prompts, the assistant's text and reasoning, turns
	// (tasks) that completed, failed or were aborted, tool calls with their
	// outputs, exit codes and durations, plans, compactions, the model of
	// each turn, notices, per-request token counts and the run's outcome;
	// a subagent's usage is counted in it, but not its calls, which the
	// main model never made.
	Carries: formats.Timestamps | formats.WorkingDirs | formats.ModelNames | formats.UserPrompts | formats.SystemPrompts |
		formats.AssistantText | formats.Thinking | formats.Turns | formats.TurnStatuses |
		formats.ToolCalls | formats.ToolDurations | formats.TodoLists | formats.Compactions |
		formats.CompactionSummaries | formats.ModelChanges | formats.InfoNotices | formats.WarningNotices |
		formats.TokenUsage | formats.PerRequestUsage | formats.ReasoningTokens | formats.RunOutcomes |
		formats.SubagentPrompts | formats.SubagentThinking | formats.SubagentTurns | formats.SubagentTodos,
	// 0.171's records of its own state, a request's usage record without
	// its counts (one with them is read), the items again as events, and
	// the instructions and context it adds (reported as lost system
	// instructions).
	Bookkeeping: []string{"world_state", "event_msg/thread_settings_applied", "event_msg/item_completed",
		"token_usage_record", "inter_agent_communication_metadata", contextType},
	Quirks: []formats.Quirk{
		formats.ZeroTokenCounts,
		formats.UnsummedRunUsage,
		formats.ExitCodesBeyond01,
		formats.PromptsNeverGiven,
		lossAborted,
		lossSubagentRollout,
	},
	DirFiles: "rollout-*.jsonl",
	Files:    true,
	Places:   rolloutPlaces,
	Owner:    rolloutOwner,
	Params: []formats.Param{{Key: ParamModelProvider, Flag: "codex-model-provider", Default: DefaultModelProvider,
		Usage: "codex-rollout names `PROVIDER` as the session's model_provider, the one Codex resumes it with (its model_providers key in config.toml); a rollout source keeps its own"}},
}

// ParamModelProvider is the writer parameter that names the session's
// model provider: Codex resumes a session only under the provider its
// session_meta names, and newer Codex lists sessions by it.
const ParamModelProvider = "codex.model-provider"

// DefaultModelProvider is the provider a rollout names when neither its
// source nor the parameter names one: Codex's built-in OpenAI provider.
const DefaultModelProvider = "openai"

// lossSubagentRollout: a rollout copied to a stream leaves out its
// subagents' rollouts, which are files of their own.
var lossSubagentRollout = formats.NewQuirk("subagents' rollouts, copied to a stream (each is a file of its own: use -o DIR)")

// rolloutPlaces is where Codex keeps its sessions: $CODEX_HOME/sessions,
// else ~/.codex/sessions.
func rolloutPlaces(getenv func(string) string) []string {
	if h := getenv("CODEX_HOME"); h != "" {
		return []string{path.Join(h, "sessions")}
	}
	if h := getenv("HOME"); h != "" {
		return []string{path.Join(h, ".codex", "sessions")}
	}
	return nil
}

// rolloutTypes are the types of RolloutLine (RolloutItemWire): the first
// five are in every version, the others in newer ones.
var rolloutTypes = map[string]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true,
	"world_state": true, "inter_agent_communication": true, "inter_agent_communication_metadata": true,
	"token_usage_record": true, "retained_context": true, "security_risk_score": true, "realtime_item": true,
}

// detectRollout wants every head line to be a rollout line: a known type
// and a payload object. A first line longer than the head (a session_meta
// with long instructions) is recognised by its opening.
func detectRollout(head []byte) int {
	lines := formats.HeadLines(head, 8)
	if len(lines) == 0 {
		return 0
	}
	hits := 0
	for _, l := range lines {
		if l[0] != '{' {
			return 0
		}
		var probe struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(l, &probe) != nil {
			if len(lines) == 1 && cutSessionMeta(l) {
				return 100
			}
			continue
		}
		if rolloutTypes[probe.Type] && len(probe.Payload) > 0 && probe.Payload[0] == '{' {
			hits++
		}
	}
	return hits * 100 / len(lines)
}

// cutSessionMeta: the opening of a session_meta line, as Codex writes it.
func cutSessionMeta(l []byte) bool {
	i := bytes.Index(l, []byte(`"type":"session_meta"`))
	return i > 0 && i < 80 && bytes.Contains(l[:min(len(l), 200)], []byte(`"payload":{`))
}

// urlNamespace is the URL namespace of RFC 9562 (6ba7b811-9dad-11d1-80b4-00c04fd430c8).
var urlNamespace = [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// sessionUUID is the thread id a rollout gets for a session id: the id
// itself when it is a UUID (lower case), else the name-based UUID
// (version 5, RFC 9562) of the id in the URL namespace, so that the same
// session always gets the same thread.
func sessionUUID(id string) string {
	if formats.IsUUID(id) {
		return strings.ToLower(id)
	}
	return formats.NameUUID(string(urlNamespace[:]), id)
}

// rolloutPath is where Codex puts a session's rollout under its sessions
// directory, by the session's start (in UTC) and thread id.
func rolloutPath(start time.Time, id string) string {
	t := start.UTC()
	return t.Format("2006/01/02") + "/rollout-" + t.Format("2006-01-02T15-04-05") + "-" + id + ".jsonl"
}

// injectedPrefixes open the user messages that Codex adds to the
// conversation itself (instructions, the environment, skills, a shell
// command the user ran, an aborted turn): they are not prompts.
var injectedPrefixes = []string{
	"<environment_context>", "<user_instructions>", "# AGENTS.md instructions for ", "<INSTRUCTIONS>",
	"<skill>", "<user_shell_command>", "<turn_aborted>", "<subagent_notification>",
}

func injected(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	for _, p := range injectedPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}
