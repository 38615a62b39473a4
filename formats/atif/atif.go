// Package atif reads and writes ATIF, Harbor's Agent Trajectory
// Interchange Format (RFC 0001): one JSON document per run, whose steps are
// the prompts, the model's responses with their tool calls and results,
// and system events, with subagents embedded as trajectories of their own.
package atif

import (
	"bytes"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Dialect is atif: one pretty-printed trajectory document per run.
var Dialect = formats.Dialect{
	Name:    "atif",
	Aliases: []string{"atif-json", "trajectory"},
	Description: "ATIF, Harbor's Agent Trajectory Interchange Format (v1.0 to v1.7 read, v1.7 written): " +
		"one trajectory document per run, one step per model response, subagents embedded",
	NewReader: newReader,
	NewWriter: newWriter,
	Detect:    detect,
	Carries: formats.AllFeatures &^ (formats.ToolOutputValues | formats.SystemPrompts | formats.Turns | formats.TurnStatuses | formats.PermissionRequests |
		formats.PermissionAnswers | formats.TodoLists | formats.RawEvents),
	Quirks:   []formats.Quirk{lostEmptySubagents},
	RunFile:  "trajectory.json",
	DirFiles: "*.json",
	// The document of a run is written whole at its end.
	HoldsRun: true,
}

// SchemaVersion is the version the writer writes.
const SchemaVersion = "ATIF-v1.7"

// The writer's own losses.
var lostEmptySubagents = formats.NewQuirk("subagents that say nothing (a trajectory needs a step)")

// trajectory is ATIF's root object, and an embedded subagent's.
type trajectory struct {
	SchemaVersion string          `json:"schema_version"`
	SessionID     string          `json:"session_id,omitempty"`
	TrajectoryID  string          `json:"trajectory_id,omitempty"`
	Agent         agentSchema     `json:"agent"`
	Steps         []*step         `json:"steps"`
	Notes         string          `json:"notes,omitempty"`
	FinalMetrics  *finalMetrics   `json:"final_metrics,omitempty"`
	Extra         map[string]any  `json:"extra,omitempty"`
	Subagents     []*trajectory   `json:"subagent_trajectories,omitempty"`
	Continued     json.RawMessage `json:"continued_trajectory_ref,omitempty"`
}

type agentSchema struct {
	Name    string          `json:"name"`
	Version string          `json:"version"`
	Model   string          `json:"model_name,omitempty"`
	Tools   json.RawMessage `json:"tool_definitions,omitempty"`
	Extra   map[string]any  `json:"extra,omitempty"`
}

type step struct {
	StepID    int             `json:"step_id"`
	Timestamp string          `json:"timestamp,omitempty"`
	Source    string          `json:"source"`
	Model     string          `json:"model_name,omitempty"`
	Effort    json.RawMessage `json:"reasoning_effort,omitempty"`
	Message   json.RawMessage `json:"message"`
	Reasoning *string         `json:"reasoning_content,omitempty"`
	ToolCalls []*toolCall     `json:"tool_calls,omitempty"`
	Obs       *observation    `json:"observation,omitempty"`
	Metrics   *metrics        `json:"metrics,omitempty"`
	Copied    *bool           `json:"is_copied_context,omitempty"`
	LLMCalls  *int            `json:"llm_call_count,omitempty"`
	Extra     map[string]any  `json:"extra,omitempty"`
}

type toolCall struct {
	ID    string          `json:"tool_call_id"`
	Name  string          `json:"function_name"`
	Args  json.RawMessage `json:"arguments"`
	Extra map[string]any  `json:"extra,omitempty"`
}

type observation struct {
	Results []*result `json:"results"`
}

type result struct {
	SourceCallID *string         `json:"source_call_id,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
	Refs         []subagentRef   `json:"subagent_trajectory_ref,omitempty"`
	Extra        map[string]any  `json:"extra,omitempty"`
}

type subagentRef struct {
	TrajectoryID   string         `json:"trajectory_id,omitempty"`
	TrajectoryPath string         `json:"trajectory_path,omitempty"`
	SessionID      string         `json:"session_id,omitempty"`
	Extra          map[string]any `json:"extra,omitempty"`
}

type metrics struct {
	Prompt     *int64          `json:"prompt_tokens,omitempty"`
	Completion *int64          `json:"completion_tokens,omitempty"`
	Cached     *int64          `json:"cached_tokens,omitempty"`
	Cost       *float64        `json:"cost_usd,omitempty"`
	PromptIDs  json.RawMessage `json:"prompt_token_ids,omitempty"`
	CompIDs    json.RawMessage `json:"completion_token_ids,omitempty"`
	Logprobs   json.RawMessage `json:"logprobs,omitempty"`
	Extra      map[string]any  `json:"extra,omitempty"`
}

type finalMetrics struct {
	Prompt     *int64         `json:"total_prompt_tokens,omitempty"`
	Completion *int64         `json:"total_completion_tokens,omitempty"`
	Cached     *int64         `json:"total_cached_tokens,omitempty"`
	Cost       *float64       `json:"total_cost_usd,omitempty"`
	Steps      *int           `json:"total_steps,omitempty"`
	Extra      map[string]any `json:"extra,omitempty"`
}

// The keys of extra that the writer sets and the reader reads back.
const (
	extraOutcome       = "agentconv_outcome" // {status, exit_code, error, errors}
	extraAnswer        = "agentconv_answer"
	extraCwd           = "cwd"
	extraDurationMs    = "duration_ms"
	extraStatus        = "status"
	extraError         = "error"
	extraNotice        = "notice" // a system step that is a notice: its severity
	extraReport        = "report"
	extraCacheCreation = "cache_creation_input_tokens"
	extraReasoning     = "reasoning_tokens"
	extraContextMgmt   = "context_management"
	extraArguments     = "arguments"    // a tool call's arguments that are not an object
	extraRefusedOnly   = "refused_only" // a tool call the source gave only as refused: no model response made it
	extraParent        = "parent_agent"
	extraAgentID       = "agent_id"
)

// detect recognises a trajectory: a JSON object whose schema_version is
// ATIF's.
func detect(head []byte) int {
	b := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return 0
	}
	i := bytes.Index(b, []byte(`"schema_version"`))
	if i < 0 {
		return 0
	}
	rest := bytes.TrimLeft(b[i+len(`"schema_version"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return 0
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if bytes.HasPrefix(rest, []byte(`"ATIF-v`)) {
		return 100
	}
	return 0
}
