package acp

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

type reader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	queue formats.EventQueue
	open  bool
	// prompts are the ids of session/prompt requests without a response.
	prompts map[string]bool
	// perms are the permission requests without an answer: their call and
	// the kinds of their options.
	perms map[string]*permission
	names map[string]string // call id → tool name
	calls map[string]bool   // calls started
	// agents are the subagents of the open run, in the order they
	// started: ACP has none, so they are agentconv's (_meta), and each
	// starts at its first update and ends with the run.
	agents []string
	// cost is the session's cumulative cost that the last usage_update
	// gave, by session: each update's cost is what it adds.
	cost map[string]float64
	// requests are the methods of the other requests without a response
	// (the handshake's, files', terminals'), by id.
	requests map[string]string
	// session and cwd are what session/new or session/load gave, for the
	// runs of the session.
	session, cwd string
	// cancelling: the client sent session/cancel during the open run.
	cancelling bool
	// held are the records that came outside a run and hold nothing of
	// one (the handshake): they go out with the next run, after its start,
	// so that they make no run of their own.
	held []heldRecord
}

type heldRecord struct {
	src formats.Source
	evs []*formats.Event
}

type permission struct {
	call  string
	kinds map[string]string // optionId → kind
}

func newReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &reader{lines: formats.NewLineReader(r), opts: o, prompts: map[string]bool{}, perms: map[string]*permission{},
		names: map[string]string{}, calls: map[string]bool{}, cost: map[string]float64{}, requests: map[string]string{}}
}

func (r *reader) Next() (*formats.Event, error) {
	for r.queue.Len() == 0 {
		if err := r.readRecord(); err != nil {
			if len(r.held) == 0 {
				return nil, err
			}
			// The input ended outside a run: what it held goes out as it is.
			for _, h := range r.held {
				r.queue.Record(h.src, h.evs...)
			}
			r.held = nil
		}
	}
	return r.queue.Pop(), nil
}

func (r *reader) readRecord() error {
	line, err := r.lines.Next()
	if err != nil {
		return err
	}
	n := r.lines.Line()
	var m message
	if err := r.opts.Report.UnmarshalObject(n, line, &m); err != nil {
		return err
	}
	if m.JSONRPC == "" {
		// Harbor's acp-events.jsonl: {event_type, payload}.
		var env struct {
			EventType string          `json:"event_type"`
			Payload   json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(line, &env) == nil && len(env.Payload) > 0 && env.Payload[0] == '{' {
			m = message{}
			if err := r.opts.Report.UnmarshalObject(n, env.Payload, &m); err != nil {
				return err
			}
		}
	}
	typ := m.Method
	if typ == "" {
		typ = "response"
	}
	evs := r.events(&m, &typ)
	if len(evs) == 0 {
		evs = []*formats.Event{{Kind: formats.Raw}}
	}
	src := formats.Source{Dialect: r.opts.Dialect, Type: typ, Line: append([]byte(nil), line...), LineNo: n}
	switch {
	case !r.open && evs[0].Kind == formats.Raw:
		// Nothing of a run, outside one: held until a run starts.
		r.held = append(r.held, heldRecord{src, evs})
	case len(r.held) > 0 && evs[0].Kind == formats.RunStart:
		// The run starts before the records held for it, which the
		// start's event carries, then its own record's events.
		held := r.held
		r.held = nil
		r.queue.Record(held[0].src, append([]*formats.Event{evs[0]}, held[0].evs...)...)
		for _, h := range held[1:] {
			r.queue.Record(h.src, h.evs...)
		}
		if evs = evs[1:]; len(evs) == 0 {
			evs = []*formats.Event{known()}
		}
		r.queue.Record(src, evs...)
	default:
		r.queue.Record(src, evs...)
	}
	return nil
}

// known is a raw event of a record the dialect knows, which holds nothing
// of the run.
func known() *formats.Event {
	return &formats.Event{Kind: formats.Raw, Source: formats.Source{Known: true}}
}

// events reads one message.
func (r *reader) events(m *message, typ *string) []*formats.Event {
	var evs []*formats.Event
	id := strings.TrimSpace(string(m.ID))
	switch {
	case m.Method == methodPrompt:
		var p struct {
			SessionID string            `json:"sessionId"`
			Prompt    []json.RawMessage `json:"prompt"`
		}
		json.Unmarshal(m.Params, &p)
		evs = append(evs, r.start(p.SessionID)...)
		r.prompts[id] = true
		if t := contentText(p.Prompt); t != "" {
			evs = append(evs, &formats.Event{Kind: formats.UserMessage, Text: t})
		}
	case m.Method == methodUpdate:
		var p struct {
			SessionID string          `json:"sessionId"`
			Update    json.RawMessage `json:"update"`
		}
		json.Unmarshal(m.Params, &p)
		evs = r.update(p.SessionID, p.Update, typ)
	case m.Method == methodPermission:
		var p struct {
			SessionID string `json:"sessionId"`
			ToolCall  struct {
				ID    string `json:"toolCallId"`
				Title string `json:"title"`
			} `json:"toolCall"`
			Options []struct {
				ID   string `json:"optionId"`
				Kind string `json:"kind"`
			} `json:"options"`
		}
		json.Unmarshal(m.Params, &p)
		evs = append(evs, r.start(p.SessionID)...)
		perm := &permission{call: p.ToolCall.ID, kinds: map[string]string{}}
		for _, o := range p.Options {
			perm.kinds[o.ID] = o.Kind
		}
		r.perms[id] = perm
		evs = append(evs, &formats.Event{Kind: formats.PermissionRequest, Permission: formats.Permission{RequestID: id},
			Call: formats.Call{ID: p.ToolCall.ID, Name: r.names[p.ToolCall.ID], Summary: p.ToolCall.Title}})
	case m.Method == methodCancel:
		// The client cancels the turn: the agent ends it with the
		// cancelled stop reason, or an error that is the cancellation.
		r.cancelling = r.open
		evs = append(evs, known())
	case m.Method != "":
		// The handshake, the session's settings, files, terminals:
		// nothing of a run. session/new and session/load name the
		// session and its folder.
		if len(m.ID) > 0 {
			r.requests[id] = m.Method
		}
		if m.Method == methodNew || m.Method == methodLoad || m.Method == methodResume {
			var p struct {
				SessionID string `json:"sessionId"`
				Cwd       string `json:"cwd"`
			}
			json.Unmarshal(m.Params, &p)
			if p.SessionID != "" {
				r.session = p.SessionID
			}
			if p.Cwd != "" {
				r.cwd = p.Cwd
			}
		}
		if knownMethods[m.Method] {
			evs = append(evs, known())
		}
	case r.perms[id] != nil && len(m.Result) > 0:
		perm := r.perms[id]
		delete(r.perms, id)
		var res struct {
			Outcome struct {
				Outcome  string `json:"outcome"`
				OptionID string `json:"optionId"`
			} `json:"outcome"`
			Meta map[string]map[string]any `json:"_meta"`
		}
		json.Unmarshal(m.Result, &res)
		allowed := res.Outcome.Outcome == "selected" && strings.HasPrefix(perm.kinds[res.Outcome.OptionID], "allow")
		reason, _ := res.Meta[metaKey]["reason"].(string)
		if res.Outcome.Outcome == "cancelled" && reason == "" {
			reason = "cancelled" // the client cancelled the turn
		}
		*typ = "permission_response"
		evs = append(evs, &formats.Event{Kind: formats.PermissionAnswer,
			Permission: formats.Permission{RequestID: id, Allowed: allowed, Reason: reason}})
	case r.prompts[id] && m.Error == nil && len(m.Result) > 0 && !isPromptResult(m.Result):
		// v2's response only acknowledges the prompt: the turn ends with
		// an idle state_update.
		delete(r.prompts, id)
		*typ = "prompt_ack"
	case r.prompts[id] || isPromptResult(m.Result) || m.Error != nil && (r.open || bytes.Contains(m.Error.Data, []byte(`"`+metaKey+`"`))):
		delete(r.prompts, id)
		*typ = "prompt_response"
		evs = append(evs, r.start("")...) // a turn that sent nothing before its end
		end, me := r.end(m)
		if len(evs) > 0 {
			runInfo(&evs[0].Run, me)
		}
		evs = append(evs, end...)
	case r.requests[id] != "" || isSetupResult(m.Result):
		// The answer to a request of the handshake, of a setting, of a
		// file or a terminal; session/new's names the session.
		method := r.requests[id]
		delete(r.requests, id)
		var res struct {
			SessionID string `json:"sessionId"`
		}
		json.Unmarshal(m.Result, &res)
		if res.SessionID != "" {
			r.session = res.SessionID
		}
		if method != "" {
			*typ = method + " response"
		}
		if m.Error == nil && (method == "" || knownMethods[method]) {
			evs = append(evs, known())
		}
	}
	return evs
}

// knownMethods are ACP's methods besides a prompt turn's, which hold
// nothing of a run: the handshake, the session's settings, files,
// terminals.
var knownMethods = map[string]bool{
	"initialize": true, "authenticate": true, "logout": true, methodNew: true, methodLoad: true, methodResume: true,
	"session/list": true, "session/close": true, "session/delete": true, "session/set_mode": true, "session/set_model": true,
	"session/set_config_option": true, "fs/read_text_file": true, "fs/write_text_file": true, "terminal/create": true,
	"terminal/output": true, "terminal/release": true, "terminal/wait_for_exit": true, "terminal/kill": true,
	"$/cancel_request": true, "elicitation/create": true, "elicitation/complete": true,
}

// isSetupResult says whether a response whose request the input lacks
// (an agent's side alone) answers initialize (its protocol version) or
// session/new (a session id without a stop reason).
func isSetupResult(res json.RawMessage) bool {
	var r struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
		SessionID       string          `json:"sessionId"`
		StopReason      json.RawMessage `json:"stopReason"`
	}
	return len(res) > 0 && json.Unmarshal(res, &r) == nil && (len(r.ProtocolVersion) > 0 || r.SessionID != "" && r.StopReason == nil)
}

func isPromptResult(res json.RawMessage) bool {
	return len(res) > 0 && bytes.Contains(res, []byte(`"stopReason"`))
}

// start opens a run if none is open.
func (r *reader) start(session string) []*formats.Event {
	if r.open {
		return nil
	}
	r.open, r.cancelling = true, false
	clear(r.calls)
	r.agents = r.agents[:0]
	if session == "" {
		session = r.session
	}
	return []*formats.Event{{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: session, Cwd: r.cwd}}}
}

type update struct {
	SessionUpdate string            `json:"sessionUpdate"`
	Content       json.RawMessage   `json:"content"`
	ToolCallID    string            `json:"toolCallId"`
	Title         *string           `json:"title"`
	Kind          string            `json:"kind"`
	Status        *string           `json:"status"`
	RawInput      json.RawMessage   `json:"rawInput"`
	RawOutput     json.RawMessage   `json:"rawOutput"`
	Entries       []json.RawMessage `json:"entries"`
	Used          *int64            `json:"used"`
	Size          *int64            `json:"size"`
	Cost          *struct {
		Amount float64 `json:"amount"`
	} `json:"cost"`
	Meta map[string]map[string]any `json:"_meta"`
	// v2's state_update: the turn's state, and when it is idle its stop
	// reason or error.
	State      string    `json:"state"`
	StopReason string    `json:"stopReason"`
	Error      *rpcError `json:"error"`
}

// update reads a session/update notification.
func (r *reader) update(session string, raw json.RawMessage, typ *string) []*formats.Event {
	var u update
	json.Unmarshal(raw, &u)
	*typ = methodUpdate + "/" + u.SessionUpdate
	if u.SessionUpdate == "state_update" {
		// v2: an idle state with a stop reason or an error ends the turn
		// that is open; any other state is kept as it is.
		if u.State != "idle" || !r.open || u.StopReason == "" && u.Error == nil {
			return []*formats.Event{known()}
		}
		m := &message{Result: raw}
		if u.Error != nil {
			m = &message{Error: u.Error}
		}
		evs, _ := r.end(m)
		return evs
	}
	switch u.SessionUpdate {
	case "available_commands_update", "current_mode_update", "config_option_update", "session_info_update":
		// The session's commands, mode, settings and title: nothing of a
		// run, and no run of their own.
		return []*formats.Event{known()}
	}
	evs := r.start(session)
	me := u.Meta[metaKey]
	if len(evs) > 0 {
		runInfo(&evs[0].Run, me)
	}
	agent, _ := me["agent"].(string)
	if agent != "" && !slices.Contains(r.agents, agent) {
		evs = append(evs, r.startAgent(agent, me))
	}
	switch u.SessionUpdate {
	case "user_message_chunk", "user_message":
		evs = append(evs, &formats.Event{Kind: formats.UserMessage, Text: blockText(u.Content)})
	case "agent_message_chunk":
		if me["answer"] == true {
			// The run's answer, which agentconv sends as a chunk of its own.
			evs = append(evs, &formats.Event{Kind: formats.Answer, Text: blockText(u.Content)})
			break
		}
		evs = append(evs, &formats.Event{Kind: formats.TextDelta, Text: blockText(u.Content)})
	case "agent_message":
		evs = append(evs, &formats.Event{Kind: formats.Message, Text: blockText(u.Content)})
	case "agent_thought_chunk":
		if me["text"] == true {
			// A subagent's text, which a client shows as a thought.
			evs = append(evs, &formats.Event{Kind: formats.TextDelta, Agent: agent, Text: blockText(u.Content)})
			break
		}
		evs = append(evs, &formats.Event{Kind: formats.ThinkingDelta, Agent: agent, Text: blockText(u.Content)})
	case "agent_thought":
		evs = append(evs, &formats.Event{Kind: formats.Message, Thinking: blockText(u.Content)})
	case "tool_call", "tool_call_update":
		evs = append(evs, r.tool(&u, agent, me)...)
		if len(evs) == 0 {
			// A call on its way (in_progress, its output so far): the
			// run learns nothing until it ends.
			evs = append(evs, known())
		}
	case "plan", "plan_update":
		var todos []formats.Todo
		for _, e := range u.Entries {
			var pe struct {
				Content string `json:"content"`
				Status  string `json:"status"`
			}
			json.Unmarshal(e, &pe)
			todos = append(todos, formats.Todo{Content: pe.Content, Status: pe.Status})
		}
		evs = append(evs, &formats.Event{Kind: formats.Todos, Todos: todos})
	case "usage_update":
		// ACP's update says the session's context and cost so far, not a
		// model request's: the requests since the last update together
		// (Aggregate). agentconv's says a request's counts in _meta.
		ev := &formats.Event{Kind: formats.Usage, Agent: agent, Aggregate: len(me) == 0 || me["aggregate"] == true}
		if len(me) > 0 {
			ev.Usage = metaUsage(me)
		} else if u.Used != nil {
			ev.Usage.ContextTokens = formats.OptFrom(u.Used)
		}
		if u.Size != nil && me["sizeUnknown"] != true {
			ev.Usage.ContextTokens = formats.OptFrom(u.Size)
		}
		if u.Cost != nil {
			// ACP's cost is the session's so far.
			add := u.Cost.Amount - r.cost[session]
			if add < 0 { // a new count began
				add = u.Cost.Amount
			}
			r.cost[session] = u.Cost.Amount
			if _, ok := me["costUsd"]; !ok {
				ev.Usage.CostUSD = formats.Some(add)
			}
		}
		evs = append(evs, ev)
	default:
		// An update ACP v1 does not name: kept as it is.
		evs = append(evs, &formats.Event{Kind: formats.Raw})
	}
	return evs
}

// tool reads a tool call or an update of one: v2 folds the start into the
// update, so an update of an unknown call starts it.
func (r *reader) tool(u *update, agent string, me map[string]any) []*formats.Event {
	var evs []*formats.Event
	id := u.ToolCallID
	name, _ := me["toolName"].(string)
	if name == "" && u.Title != nil && !r.calls[id] {
		name = *u.Title
	}
	if name != "" {
		r.names[id] = name
	}
	refused := me["status"] == "denied" && u.Status != nil
	if !r.calls[id] && !refused {
		// A refused call that never started needs no start: its result
		// says it was refused.
		r.calls[id] = true
		c := formats.Call{ID: id, Name: r.names[id], Args: u.RawInput}
		if u.Title != nil && *u.Title != c.Name {
			c.Summary = *u.Title
		}
		evs = append(evs, &formats.Event{Kind: formats.ToolCall, Agent: agent, Call: c})
	}
	if u.Status == nil {
		return evs
	}
	var st formats.Status
	switch *u.Status {
	case "completed":
		st = formats.Completed
	case "failed":
		st = formats.Failed
	case "cancelled":
		st = formats.Cancelled
	default:
		return evs
	}
	switch me["status"] {
	case "cancelled":
		st = formats.Cancelled
	case "denied":
		st = formats.Denied
	}
	c := formats.Call{ID: id, Name: r.names[id], Status: st}
	var out struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	if len(u.RawOutput) > 0 && json.Unmarshal(u.RawOutput, &out) == nil && (out.Output != nil || out.Error != nil) {
		c.Output, c.Error = formats.TextOutput(formats.Deref(out.Output)), formats.Deref(out.Error)
	} else {
		t := toolContentText(u.Content)
		if t == "" && len(u.RawOutput) > 0 {
			if json.Unmarshal(u.RawOutput, &t) != nil {
				t = string(u.RawOutput)
			}
		}
		if st == formats.Completed {
			c.Output = formats.TextOutput(t)
		} else {
			c.Error = t
		}
	}
	ev := &formats.Event{Kind: formats.ToolResult, Agent: agent, Call: c}
	if ms, ok := me["durationMs"].(float64); ok && ms > 0 {
		ev.Duration = time.Duration(ms) * time.Millisecond
	}
	return append(evs, ev)
}

// runInfo adds to a run's start what agentconv's _meta says of the run in
// the message that starts it: its model and folder.
func runInfo(run *formats.RunInfo, me map[string]any) {
	if m, _ := me["model"].(string); m != "" {
		run.Model = m
	}
	if c, _ := me["cwd"].(string); c != "" {
		run.Cwd = c
	}
}

// startAgent starts a subagent at its first update, with what _meta says
// of it.
func (r *reader) startAgent(id string, me map[string]any) *formats.Event {
	r.agents = append(r.agents, id)
	info := formats.AgentInfo{}
	if a, ok := me["agentStart"].(map[string]any); ok {
		str := func(k string) string { s, _ := a[k].(string); return s }
		info = formats.AgentInfo{Label: str("label"), Parent: str("parent"), ParentCall: str("parentCall"), Model: str("model"), Cwd: str("cwd")}
		if !slices.Contains(r.agents, info.Parent) {
			info.Parent = "" // an agent this run did not start
		}
	}
	return &formats.Event{Kind: formats.AgentStart, Agent: id, AgentInfo: info}
}

// end reads the response that ends a prompt turn, after ending the run's
// subagents, last started first, with the outcomes its _meta gives them;
// and gives the response's _meta.
func (r *reader) end(m *message) ([]*formats.Event, map[string]any) {
	e, me := r.runEnd(m)
	var evs []*formats.Event
	ended, _ := me["agents"].(map[string]any)
	for _, id := range slices.Backward(r.agents) {
		st, _ := ended[id].(string)
		evs = append(evs, &formats.Event{Kind: formats.AgentEnd, Agent: id, Status: formats.ParseStatus(st)})
	}
	r.agents = r.agents[:0]
	return append(evs, e), me
}

// runEnd is the RunEnd of the response that ends a prompt turn, and the
// response's _meta.
func (r *reader) runEnd(m *message) (*formats.Event, map[string]any) {
	r.open = false
	e := &formats.Event{Kind: formats.RunEnd}
	var res struct {
		StopReason string                    `json:"stopReason"`
		Meta       map[string]map[string]any `json:"_meta"`
	}
	var me map[string]any
	cancelling := r.cancelling
	r.cancelling = false
	if m.Error != nil {
		e.Status, e.Text = formats.Failed, m.Error.Message
		if cancelling {
			// The error that ends a turn the client cancelled.
			e.Status = formats.Cancelled
		}
		var data map[string]map[string]any
		if json.Unmarshal(m.Error.Data, &data) == nil {
			me = data[metaKey]
		}
	} else {
		json.Unmarshal(m.Result, &res)
		me = res.Meta[metaKey]
		switch res.StopReason {
		case "end_turn":
			e.Status = formats.Completed
		case "cancelled":
			e.Status = formats.Cancelled
		default: // max_tokens, max_turn_requests, refusal
			e.Status, e.Text = formats.Failed, "stopped: "+res.StopReason
		}
	}
	if len(me) > 0 {
		e.Usage = metaUsage(me)
		switch me["status"] {
		case "denied":
			e.Status = formats.Denied
		case "cancelled":
			e.Status = formats.Cancelled
		}
		if c, ok := me["exitCode"].(float64); ok {
			e.Run.ExitCode = formats.Some(int(c))
		}
	}
	return e, me
}

func metaUsage(me map[string]any) formats.UsageInfo {
	get := func(k string) formats.Opt[int64] {
		if f, ok := me[k].(float64); ok {
			return formats.Some(int64(f))
		}
		return formats.Opt[int64]{}
	}
	u := formats.UsageInfo{InputTokens: get("inputTokens"), OutputTokens: get("outputTokens"),
		CacheReadTokens: get("cachedReadTokens"), CacheWriteTokens: get("cachedWriteTokens"),
		ReasoningTokens: get("thoughtTokens"), TotalTokens: get("totalTokens")}
	if f, ok := me["costUsd"].(float64); ok {
		u.CostUSD = formats.Some(f)
	}
	return u
}

// blockText is the text of a content block.
func blockText(raw json.RawMessage) string {
	var b struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Resource struct {
			Text string `json:"text"`
		} `json:"resource"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return ""
	}
	if b.Type == "resource" {
		return b.Resource.Text
	}
	return b.Text
}

func contentText(blocks []json.RawMessage) string {
	var parts []string
	for _, b := range blocks {
		if t := blockText(b); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// toolContentText is the text of a tool call's content: its content
// blocks and the new text of its diffs.
func toolContentText(raw json.RawMessage) string {
	var items []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
		NewText string          `json:"newText"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return ""
	}
	var parts []string
	for _, it := range items {
		switch it.Type {
		case "content":
			if t := blockText(it.Content); t != "" {
				parts = append(parts, t)
			}
		case "diff":
			parts = append(parts, it.NewText)
		}
	}
	return strings.Join(parts, "\n")
}
