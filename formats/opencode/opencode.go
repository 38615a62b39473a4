// Package opencode reads what OpenCode (`opencode`, npm opencode-ai)
// prints and keeps: opencode, its `opencode run --format json` stream;
// opencode-db, its SQLite database of sessions; and opencode-export, the
// JSON document of `opencode export ID`.
//
// All three hold OpenCode's message parts, of one shape: step-start and
// step-finish (one model request: its reason, tokens and cost), text,
// reasoning, and tool (the call, its input, and its state: completed with
// its output, or error). The stream prints each part once it is done, a
// tool call with its result; the store and the export keep the messages
// too (a user message holds the prompt's parts, an assistant message one
// request's), and the store keeps every session, a subagent's with the
// parent_id of the session whose task call started it.
package opencode

import (
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// AgentName is the agent of the runs read from OpenCode. OpenCode runs
// models of any provider, so the run names none.
const AgentName = "opencode"

// statuses are OpenCode's words for a tool part's state.
var statuses = formats.StatusWords{"completed": formats.Completed, "error": formats.Failed, "pending": formats.Running, "running": formats.Running}

// part is a message part, as the stream's part, a part row's data (with
// the row's id, message_id and session_id) and the export's parts.
type part struct {
	ID        string `json:"id"`
	MessageID string `json:"messageID"`
	SessionID string `json:"sessionID"`
	Type      string `json:"type"`
	// text, reasoning
	Text string `json:"text"`
	Time *struct {
		Start *int64 `json:"start"`
		End   *int64 `json:"end"`
	} `json:"time"`
	Synthetic bool `json:"synthetic"`
	// tool
	Tool   string `json:"tool"`
	CallID string `json:"callID"`
	State  *struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Output   *string         `json:"output"`
		Error    string          `json:"error"`
		Title    string          `json:"title"`
		Metadata *struct {
			Exit      *int   `json:"exit"`
			Truncated bool   `json:"truncated"`
			SessionID string `json:"sessionId"`
		} `json:"metadata"`
		Time *struct {
			Start *int64 `json:"start"`
			End   *int64 `json:"end"`
		} `json:"time"`
	} `json:"state"`
	// step-finish
	Reason string   `json:"reason"`
	Tokens *tokens  `json:"tokens"`
	Cost   *float64 `json:"cost"`
}

// tokens are a step's counts: input without the cache, which OpenCode
// counts apart (cache.read, cache.write); output without the reasoning,
// which it counts apart too (the API's completion tokens less its
// reasoning tokens); total, all of them.
type tokens struct {
	Total     *int64 `json:"total"`
	Input     *int64 `json:"input"`
	Output    *int64 `json:"output"`
	Reasoning *int64 `json:"reasoning"`
	Cache     *struct {
		Read  *int64 `json:"read"`
		Write *int64 `json:"write"`
	} `json:"cache"`
}

// usage converts a step's counts to the model's (the OpenTelemetry GenAI
// conventions): the input includes the cache's reads and writes.
func usage(t *tokens, cost *float64) formats.UsageInfo {
	var u formats.UsageInfo
	if t != nil {
		opt := func(p *int64) formats.Opt[int64] {
			if p == nil {
				return formats.Opt[int64]{}
			}
			return formats.Some(*p)
		}
		var cr, cw formats.Opt[int64]
		if t.Cache != nil {
			cr, cw = opt(t.Cache.Read), opt(t.Cache.Write)
		}
		u.InputTokens = opt(t.Input)
		if u.InputTokens.OK {
			u.InputTokens.V += cr.V + cw.V
		}
		u.OutputTokens, u.ReasoningTokens, u.TotalTokens = opt(t.Output), opt(t.Reasoning), opt(t.Total)
		if u.OutputTokens.OK {
			u.OutputTokens.V += u.ReasoningTokens.V
		}
		u.CacheReadTokens, u.CacheWriteTokens = cr, cw
	}
	if cost != nil {
		u.CostUSD = formats.Some(*cost)
	}
	return u
}

// ms is a time in milliseconds since the epoch.
func ms(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func msp(p *int64) time.Time {
	if p == nil {
		return time.Time{}
	}
	return ms(*p)
}

// partEvents are the events of one finished part of agent's (""; the
// main agent's), at t. spawn, for a task call that names a child session,
// gives the events of that session, nested between the call and its
// result; nil where the source does not hold it (the stream).
func partEvents(p *part, agent string, t time.Time, spawn func(child, call string) []*formats.Event) []*formats.Event {
	ev := func(e formats.Event) *formats.Event {
		e.Agent = agent
		if e.Time.IsZero() {
			e.Time = t
		}
		return &e
	}
	switch p.Type {
	case "step-start":
		return []*formats.Event{ev(formats.Event{Kind: formats.TurnStart})}
	case "step-finish":
		u := ev(formats.Event{Kind: formats.Usage, Usage: usage(p.Tokens, p.Cost), Response: formats.Response{StopReason: p.Reason}})
		return []*formats.Event{u, ev(formats.Event{Kind: formats.TurnEnd, Status: formats.Completed})}
	case "text":
		if p.Synthetic || p.Text == "" {
			return nil
		}
		return []*formats.Event{ev(formats.Event{Kind: formats.Message, Text: p.Text})}
	case "reasoning":
		if p.Text == "" {
			return nil
		}
		return []*formats.Event{ev(formats.Event{Kind: formats.Message, Thinking: p.Text})}
	case "tool":
		return toolEvents(p, agent, t, ev, spawn)
	}
	return nil
}

func toolEvents(p *part, agent string, t time.Time, ev func(formats.Event) *formats.Event, spawn func(child, call string) []*formats.Event) []*formats.Event {
	call := formats.Call{ID: p.CallID, Name: p.Tool}
	var start, end time.Time
	st := p.State
	if st != nil {
		if len(st.Input) > 0 {
			call.Args = append(json.RawMessage(nil), st.Input...)
		}
		call.Summary = st.Title
		if st.Time != nil {
			start, end = msp(st.Time.Start), msp(st.Time.End)
		}
	}
	out := []*formats.Event{ev(formats.Event{Kind: formats.ToolCall, Call: call, Time: start})}
	if st == nil || st.Status == "pending" || st.Status == "running" {
		return out // no result (the stream prints finished parts only)
	}
	// OpenCode's task call names the child session it started; so does
	// a subagent's call of another agent written as opencode-export (its
	// own tool name: Claude Code's Task).
	if st.Metadata != nil && st.Metadata.SessionID != "" {
		child := st.Metadata.SessionID
		label := ""
		var in struct {
			Description  string `json:"description"`
			SubagentType string `json:"subagent_type"`
		}
		if json.Unmarshal(st.Input, &in) == nil {
			label = in.SubagentType
			if label == "" {
				label = in.Description
			}
		}
		out = append(out, ev(formats.Event{Kind: formats.AgentStart, Agent: child, Time: start,
			AgentInfo: formats.AgentInfo{Label: label, Parent: agent, ParentCall: p.CallID}}))
		out[len(out)-1].Agent = child
		if spawn != nil {
			out = append(out, spawn(child, p.CallID)...)
		}
		status := statuses.Parse(st.Status)
		report := ""
		if st.Output != nil {
			report = *st.Output
		}
		end := ev(formats.Event{Kind: formats.AgentEnd, Status: status, Text: report, Time: end})
		end.Agent = child
		out = append(out, end)
	}
	res := formats.Call{ID: p.CallID, Name: p.Tool, Status: statuses.Parse(st.Status)}
	if st.Output != nil {
		res.Output = formats.TextOutput(*st.Output)
	}
	if st.Status == "error" {
		res.Error = st.Error
		if refused(st.Error) {
			res.Status = formats.Denied
		}
	}
	if st.Metadata != nil {
		if st.Metadata.Exit != nil {
			res.ExitCode = formats.Some(*st.Metadata.Exit)
		}
		res.Truncated = st.Metadata.Truncated
	}
	r := ev(formats.Event{Kind: formats.ToolResult, Call: res, Time: end})
	if !start.IsZero() && !end.IsZero() && end.After(start) {
		r.Duration = end.Sub(start)
	}
	return append(out, r)
}

// refused: the error OpenCode gives a call whose permission was refused
// (its PermissionRejectedError and DeniedError messages).
func refused(msg string) bool {
	return strings.Contains(msg, "rejected permission") || strings.Contains(msg, "prevents you from using this specific tool")
}
