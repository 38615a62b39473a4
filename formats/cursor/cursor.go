// Package cursor reads and writes what Cursor's CLI prints when it runs
// headless: `cursor-agent -p --output-format stream-json`, NDJSON with
// Claude Code's envelope (system/init, user, assistant, result) but with
// tool calls as events of their own (tool_call started/completed, paired by
// call_id) and reasoning as thinking delta/completed events.
package cursor

import (
	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// AgentName is what runs read from Cursor carry. Cursor runs models of
// several providers, so the run names none.
const AgentName = "cursor-agent"

// Stream is the cursor-stream dialect.
var Stream = formats.Dialect{
	Name:        "cursor-stream",
	Aliases:     []string{"cursor"},
	Description: "Cursor CLI `cursor-agent -p --output-format stream-json`: NDJSON system/init, user, thinking, assistant, tool_call started/completed, result",
	NewReader:   newReader,
	NewWriter:   newWriter,
	Detect:      detect,
	// What cursor stream-json has no place for: turns, subagents,
	// approvals, todo lists, compactions, model changes, notices below
	// error, per-request usage, reasoning token counts, tool call
	// durations, cancelled calls, and other dialects' unknown events.
	Carries: formats.AllFeatures &^ (formats.ToolOutputValues | formats.SystemPrompts | formats.Turns | formats.TurnStatuses | formats.ToolDurations |
		formats.CancelledCalls | formats.Subagents | formats.SubagentCalls | formats.SubagentText |
		formats.SubagentReports | formats.SubagentAnswers | formats.SubagentNotices |
		formats.PermissionRequests | formats.PermissionAnswers | formats.TodoLists | formats.Compactions |
		formats.CompactionSummaries | formats.ModelChanges | formats.InfoNotices | formats.WarningNotices |
		formats.PerRequestUsage | formats.ReasoningTokens | formats.RawEvents | formats.SubagentPrompts | formats.SubagentThinking),
	Quirks: []formats.Quirk{lostTimes, lostErrors, formats.FailedRunAnswers, formats.ExitCodesBeyondRefusal, formats.CancelledRunsAsErrors, lostSubInfo},
}

// The losses the writer reports itself: what its encoding cannot keep of
// features it carries.
var (
	lostTimes   = formats.NewQuirk("event timestamps of init, prompt and result lines")
	lostErrors  = formats.NewQuirk("error notices (only a failed run's result says its error)")
	lostSubInfo = formats.NewQuirk("subagents' models and working directories")
)

// probe is what detection looks at in a line.
type probe struct {
	Type         string           `json:"type"`
	Subtype      string           `json:"subtype"`
	CallID       *json.RawMessage `json:"call_id"`
	ToolCall     *json.RawMessage `json:"tool_call"`
	SessionID    *string          `json:"session_id"`
	TimestampMS  *json.RawMessage `json:"timestamp_ms"`
	APIKeySource string           `json:"apiKeySource"`
	Message      *json.RawMessage `json:"message"`
	IsError      *json.RawMessage `json:"is_error"`
	// What Claude Code prints in the same envelope and Cursor does not:
	// init's tools and mcp_servers, a message's id and usage, a result's
	// total_cost_usd.
	Tools        *json.RawMessage `json:"tools"`
	MCPServers   *json.RawMessage `json:"mcp_servers"`
	TotalCostUSD *json.RawMessage `json:"total_cost_usd"`
}

// claudeOnly: a line has what only Claude Code prints.
func (p *probe) claudeOnly() bool {
	if p.Tools != nil || p.MCPServers != nil || p.TotalCostUSD != nil {
		return true
	}
	if p.Message == nil {
		return false
	}
	var m struct {
		ID    *json.RawMessage `json:"id"`
		Usage *json.RawMessage `json:"usage"`
	}
	return json.Unmarshal(*p.Message, &m) == nil && (m.ID != nil || m.Usage != nil)
}

// line classifies a line: whether it has Cursor's envelope, and whether it
// has a mark that only Cursor prints.
func line(b []byte) (cursorish, marked bool) {
	var p probe
	if json.Unmarshal(b, &p) != nil || p.claudeOnly() {
		return false, false
	}
	switch p.Type {
	case "tool_call":
		// Cursor's tool events: started/completed, paired by call_id,
		// with the tool as the key of a tool_call object.
		ok := (p.Subtype == "started" || p.Subtype == "completed") && p.CallID != nil && p.ToolCall != nil
		return ok, ok
	case "thinking":
		ok := (p.Subtype == "delta" || p.Subtype == "completed") && p.SessionID != nil && p.TimestampMS != nil
		return ok, ok
	case "system":
		// Cursor's own values of apiKeySource.
		ok := p.Subtype == "init" && p.SessionID != nil
		return ok, ok && (p.APIKeySource == "login" || p.APIKeySource == "env" || p.APIKeySource == "flag")
	case "user", "assistant":
		ok := p.SessionID != nil && p.Message != nil
		return ok, ok && p.Type == "assistant" && p.TimestampMS != nil
	case "result":
		return p.SessionID != nil && (p.Subtype != "" || p.IsError != nil), false
	case "interaction_query":
		return p.SessionID != nil, false
	}
	return false, false
}

// detect scores a head by the share of its lines that have Cursor's
// envelope, when one of them at least has a mark only Cursor prints (a
// tool_call or thinking event, timestamp_ms on an assistant line, Cursor's
// apiKeySource): without one, a stream of Claude's envelope is Claude's.
func detect(head []byte) int {
	marks := 0
	score := formats.DetectByTypes(head, func(l []byte, _ string) bool {
		ok, marked := line(l)
		if marked {
			marks++
		}
		return ok
	})
	if marks == 0 {
		return 0
	}
	return score
}
