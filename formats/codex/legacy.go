package codex

import (
	"strconv"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// legacyMsg is every field of the events of Codex before 0.44 that this
// package reads.
type legacyMsg struct {
	Type             string          `json:"type"`
	Message          string          `json:"message"`
	Text             string          `json:"text"`
	Delta            string          `json:"delta"`
	SessionID        string          `json:"session_id"`
	Model            string          `json:"model"`
	CallID           string          `json:"call_id"`
	Command          json.RawMessage `json:"command"`
	Stdout           string          `json:"stdout"`
	Stderr           string          `json:"stderr"`
	AggregatedOutput *string         `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Success          *bool           `json:"success"`
	Changes          json.RawMessage `json:"changes"`
	Invocation       *struct {
		Server    string          `json:"server"`
		Tool      json.RawMessage `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"invocation"`
	Result *struct {
		Ok  *mcpResult      `json:"Ok"`
		Err json.RawMessage `json:"Err"`
	} `json:"result"`
	Query string `json:"query"`
	usage
	Info *struct {
		Last *usage `json:"last_token_usage"`
	} `json:"info"`
	Plan []struct {
		Step   string `json:"step"`
		Status string `json:"status"`
	} `json:"plan"`
}

// legacy reads one event of the protocol Codex printed before 0.44. Calls
// map onto the same names and arguments as the items of the current
// protocol, so that both read alike.
func (r *reader) legacy(raw json.RawMessage, n int, emit func(*formats.Event)) error {
	var m legacyMsg
	if err := r.opts.Report.Unmarshal(n, raw, &m); err != nil {
		return err
	}
	switch m.Type {
	case "session_configured":
		// The run is open already, from the config summary, whose RunStart
		// was held back for this session id (see reader.hold); the record
		// travels raw.
		emit(&formats.Event{Kind: formats.Raw})
	case "task_started":
		r.run.turnOpen = true
		emit(&formats.Event{Kind: formats.TurnStart})
	case "task_complete":
		r.endTurn(formats.Completed)
		emit(&formats.Event{Kind: formats.TurnEnd, Status: formats.Completed})
	case "turn_aborted":
		r.run.fatal, r.run.fatalSeen = "the turn was aborted", true
		r.endTurn(formats.Failed)
		emit(&formats.Event{Kind: formats.TurnEnd, Status: formats.Cancelled})
	case "error":
		r.run.fatal, r.run.fatalSeen, r.run.failed = m.Message, true, true
		emit(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: m.Message})
	case "stream_error":
		emit(&formats.Event{Kind: formats.Notice, Severity: formats.Warning, Text: m.Message})
	case "agent_message":
		r.run.answer, r.run.answered = m.Message, true
		emit(&formats.Event{Kind: formats.Message, Text: m.Message})
	case "agent_message_delta":
		emit(&formats.Event{Kind: formats.TextDelta, Text: m.Delta})
	case "agent_reasoning":
		emit(&formats.Event{Kind: formats.ThinkingDelta, Text: m.Text})
	case "token_count":
		u := m.usage
		if m.Info != nil && m.Info.Last != nil {
			u = *m.Info.Last
		}
		r.usage(&u, emit)
	case "plan_update":
		todos := make([]formats.Todo, len(m.Plan))
		for i, p := range m.Plan {
			todos[i] = formats.Todo{Content: p.Step, Status: p.Status}
		}
		emit(&formats.Event{Kind: formats.Todos, Todos: todos})
	case "exec_command_begin", "patch_apply_begin", "mcp_tool_call_begin", "web_search_begin":
		c := legacyCall(&m)
		if r.run.started == nil {
			r.run.started = map[string]string{}
		}
		r.run.started[c.ID] = c.Name
		emit(&formats.Event{Kind: formats.ToolCall, Call: c})
	case "exec_command_end", "patch_apply_end", "mcp_tool_call_end", "web_search_end":
		c := legacyCall(&m)
		res := legacyResult(&m)
		res.ID, res.Name = c.ID, c.Name
		if name, ok := r.run.started[c.ID]; ok {
			res.Name = name
		} else {
			emit(&formats.Event{Kind: formats.ToolCall, Call: c})
		}
		delete(r.run.started, c.ID)
		emit(&formats.Event{Kind: formats.ToolResult, Call: res})
	default:
		emit(&formats.Event{Kind: formats.Raw})
	}
	return nil
}

// legacyCall is the call an old begin or end event names.
func legacyCall(m *legacyMsg) formats.Call {
	it := item{Type: typeCommand}
	switch {
	case strings.HasPrefix(m.Type, "exec_command"):
		it.Command = commandLine(m.Command)
	case strings.HasPrefix(m.Type, "patch_apply"):
		it.Type, it.Changes = typeFile, m.Changes
	case strings.HasPrefix(m.Type, "mcp_tool_call"):
		it.Type = typeMCP
		if m.Invocation != nil {
			it.Server, it.Tool, it.Arguments = m.Invocation.Server, m.Invocation.Tool, m.Invocation.Arguments
		}
	case strings.HasPrefix(m.Type, "web_search"):
		it.Type, it.Query = typeSearch, m.Query
	}
	return callOf(m.CallID, &it)
}

// legacyResult is the outcome an old end event gives.
func legacyResult(m *legacyMsg) formats.Call {
	c := formats.Call{Status: formats.Completed}
	switch {
	case strings.HasPrefix(m.Type, "exec_command"):
		if m.AggregatedOutput != nil {
			c.Output = formats.TextOutput(*m.AggregatedOutput)
		} else {
			c.Output = formats.TextOutput(m.Stdout + m.Stderr)
		}
		if m.ExitCode != nil && *m.ExitCode != 0 {
			c.Status, c.Error = formats.Failed, "exit code "+strconv.Itoa(*m.ExitCode)
		}
	case strings.HasPrefix(m.Type, "patch_apply"):
		if m.Success != nil && !*m.Success {
			c.Status, c.Error = formats.Failed, m.Stderr
		}
	case strings.HasPrefix(m.Type, "mcp_tool_call"):
		if m.Result != nil && m.Result.Ok != nil {
			var parts []string
			for _, p := range m.Result.Ok.Content {
				parts = append(parts, p.Text)
			}
			c.Output = formats.TextOutput(strings.Join(parts, "\n"))
		} else if m.Result != nil {
			c.Status, c.Error = formats.Failed, rawString(m.Result.Err)
		}
	}
	return c
}

// commandLine joins an argv array into one command line; a string stays.
func commandLine(b json.RawMessage) string {
	var argv []string
	if json.Unmarshal(b, &argv) == nil {
		return strings.Join(argv, " ")
	}
	return rawString(b)
}
