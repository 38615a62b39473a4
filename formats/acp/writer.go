package acp

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// writer writes each event as the ACP message an agent would send for it,
// at once, so that a live stream becomes live updates.
type writer struct {
	w    io.Writer
	opts formats.WriteOptions
	run  *formats.RunView
	// runs counts the runs: the n-th run's prompt response has id n.
	runs int
	// permID numbers the permission requests the writer makes; their ids
	// are "permission-N", apart from the prompt responses' numbers.
	permID int
	// asked: the calls a permission request was written for, and the id
	// of the request of a PermissionRequest event, by its request id.
	asked    map[string]bool
	requests map[string]int
	calls    map[string]string // the request id's call
	// streamed: text or thought chunks came since the last whole message,
	// by agent, so that the message does not repeat them.
	streamed, streamedThought map[string]bool
	// said is the main agent's last text that went out in chunks, and
	// saying that its chunks still come (the deltas of one message), so
	// that the run's answer is sent only when it is not that text.
	said   formats.Text
	saying bool
	// agents are the run's subagents that an update named, in order: the
	// first update of each says what _meta knows of it (agentStart), and
	// the prompt's response their outcomes.
	agents []string
	// sid is the session id the run's messages name.
	sid string
	// begun: an update of the run went out; the first says the run's
	// model and folder in _meta.
	begun bool
	buf   bytes.Buffer
	// cost is the session's cost so far, which usage_update gives.
	cost     float64
	costSess string
}

func newWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &writer{w: w, opts: o, asked: map[string]bool{}, requests: map[string]int{},
		calls: map[string]string{}, streamed: map[string]bool{}, streamedThought: map[string]bool{}}
}

// Observe follows a record the pipeline copies: only the run count and the
// permission ids matter for what the writer may write after it.
func (w *writer) Observe(e *formats.Event, v *formats.RunView) {
	w.run = v
	switch e.Kind {
	case formats.RunStart:
		w.sid = ""
	case formats.RunEnd:
		w.runs++
	}
}

// session is the run's session id: the one its first message named, so
// that an id the source gives later (at the run's end) does not change it
// halfway.
func (w *writer) session() string {
	if w.sid == "" {
		w.sid = w.run.Info.SessionID
	}
	if w.sid == "" {
		w.sid = "session-" + strconv.Itoa(w.runs+1)
	}
	return w.sid
}

func (w *writer) Write(e *formats.Event, v *formats.RunView) error {
	w.run = v
	if e.Kind != formats.TextDelta || e.Agent != "" {
		w.saying = false
	}
	switch e.Kind {
	case formats.RunStart:
		clear(w.asked)
		clear(w.streamed)
		clear(w.streamedThought)
		w.said.Reset()
		w.sid = ""
		w.agents = w.agents[:0]
		w.begun = false
	case formats.UserMessage:
		if e.Agent != "" {
			return nil // the pipeline reports it (SubagentPrompts)
		}
		return w.update(map[string]any{"sessionUpdate": "user_message_chunk", "content": text(e.Prompt())})
	case formats.TextDelta:
		w.streamed[e.Agent] = true
		if e.Agent != "" {
			return w.subagentText(e.Agent, e.Piece())
		}
		if w.saying {
			w.said.Add(e.Piece())
		} else {
			w.said.Set(e.Piece())
			w.saying = true
		}
		return w.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": text(e.Piece())})
	case formats.ThinkingDelta:
		w.streamedThought[e.Agent] = true
		return w.thought(e.Agent, e.Piece())
	case formats.Message:
		return w.message(e)
	case formats.ToolCall:
		return w.toolCall(e)
	case formats.ToolResult:
		return w.toolResult(e)
	case formats.PermissionRequest:
		w.permID++
		w.requests[e.Permission.RequestID] = w.permID
		w.calls[e.Permission.RequestID] = e.Call.ID
		w.asked[e.Call.ID] = true
		return w.askPermission(w.permID, e.Call.ID, e.Call.Name, e.Call.Summary)
	case formats.PermissionAnswer:
		id, ok := w.requests[e.Permission.RequestID]
		if !ok {
			w.permID++
			id = w.permID
			if err := w.askPermission(id, w.calls[e.Permission.RequestID], "", ""); err != nil {
				return err
			}
		}
		return w.answerPermission(id, e.Permission.Allowed, e.Permission.Reason)
	case formats.Todos:
		return w.plan(e)
	case formats.Usage:
		return w.usage(e)
	case formats.RunEnd:
		return w.end(e, v)
	}
	return nil
}

func (w *writer) Close() error { return nil }

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// send writes one message as a line.
func (w *writer) send(m any) error {
	b, err := formats.Marshal(m)
	if err != nil {
		return err
	}
	w.buf.Reset()
	w.buf.Write(b)
	w.buf.WriteByte('\n')
	_, err = w.w.Write(w.buf.Bytes())
	return err
}

func (w *writer) update(u map[string]any) error {
	if !w.begun {
		w.begun = true
		if info := meta("model", w.run.Info.Model, "cwd", w.run.Info.Cwd)[metaKey].(map[string]any); len(info) > 0 {
			m, _ := u["_meta"].(map[string]any)
			if m == nil {
				m = meta()
				u["_meta"] = m
			}
			for k, v := range info {
				m[metaKey].(map[string]any)[k] = v
			}
		}
	}
	return w.send(map[string]any{"jsonrpc": "2.0", "method": methodUpdate,
		"params": map[string]any{"sessionId": w.session(), "update": u}})
}

func (w *writer) message(e *formats.Event) error {
	streamed, streamedThought := w.streamed[e.Agent], w.streamedThought[e.Agent]
	delete(w.streamed, e.Agent)
	delete(w.streamedThought, e.Agent)
	if e.Thinking != "" && !streamedThought {
		if err := w.thought(e.Agent, e.Thinking); err != nil {
			return err
		}
	}
	if e.MessageText() != "" && e.Agent != "" && !streamed {
		return w.subagentText(e.Agent, e.MessageText())
	}
	if e.MessageText() != "" && e.Agent == "" {
		w.said.Set(e.MessageText())
		if !streamed {
			return w.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": text(e.MessageText())})
		}
	}
	return nil
}

// thought writes a thought chunk, of a subagent or the main agent.
func (w *writer) thought(agent, s string) error {
	u := map[string]any{"sessionUpdate": "agent_thought_chunk", "content": text(s)}
	if agent != "" {
		u["_meta"] = w.agentMeta(meta(), agent)
	}
	return w.update(u)
}

// subagentText writes a subagent's text as a thought chunk, which a client
// shows apart from the main agent's message; _meta says it is text.
func (w *writer) subagentText(agent, s string) error {
	m := w.agentMeta(meta(), agent)
	m[metaKey].(map[string]any)["text"] = true
	return w.update(map[string]any{"sessionUpdate": "agent_thought_chunk", "content": text(s), "_meta": m})
}

// agentMeta adds the agent an update is of to its _meta, and, at the
// agent's first update, what the run view knows of it (agentStart).
func (w *writer) agentMeta(m map[string]any, agent string) map[string]any {
	if agent == "" {
		return m
	}
	am := m[metaKey].(map[string]any)
	am["agent"] = agent
	if slices.Contains(w.agents, agent) {
		return m
	}
	w.agents = append(w.agents, agent)
	if a := w.run.Agent(agent); a != nil {
		start := meta("label", a.Label, "parent", a.Parent, "parentCall", a.ParentCall, "model", a.Model, "cwd", a.Cwd)[metaKey]
		if len(start.(map[string]any)) > 0 {
			am["agentStart"] = start
		}
	}
	return m
}

func (w *writer) toolCall(e *formats.Event) error {
	title := e.Call.Summary
	if title == "" {
		title = e.Call.Name
	}
	u := map[string]any{"sessionUpdate": "tool_call", "toolCallId": e.Call.ID, "title": title,
		"kind": toolKind(e.Call.Name), "status": "in_progress", "_meta": w.agentMeta(meta("toolName", e.Call.Name), e.Agent)}
	if a := bytes.TrimSpace(e.Call.Args); len(a) > 0 {
		u["rawInput"] = json.RawMessage(a)
	}
	return w.update(u)
}

func (w *writer) toolResult(e *formats.Event) error {
	c := &e.Call
	if c.Status == formats.Denied && !w.asked[c.ID] {
		// A refused call: the permission asked, and refused.
		w.permID++
		if err := w.askPermission(w.permID, c.ID, c.Name, ""); err != nil {
			return err
		}
		if err := w.answerPermission(w.permID, false, c.Error); err != nil {
			return err
		}
	}
	status := "completed"
	if c.Status != formats.Completed && c.Status != formats.StatusUnknown {
		status = "failed"
	}
	u := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": c.ID, "status": status}
	m := w.agentMeta(meta("toolName", c.Name), e.Agent)
	if c.Status == formats.Cancelled || c.Status == formats.Denied {
		m[metaKey].(map[string]any)["status"] = c.Status.String()
	}
	if e.Duration > 0 {
		m[metaKey].(map[string]any)["durationMs"] = e.Duration.Milliseconds()
	}
	u["_meta"] = m
	raw := map[string]any{}
	var content []any
	if c.Output.Text() != "" {
		raw["output"] = c.Output.Text()
		content = append(content, map[string]any{"type": "content", "content": text(c.Output.Text())})
	}
	if c.Error != "" {
		raw["error"] = c.Error
		content = append(content, map[string]any{"type": "content", "content": text(c.Error)})
	}
	if len(raw) > 0 {
		u["rawOutput"] = raw
		u["content"] = content
	}
	return w.update(u)
}

func (w *writer) askPermission(id int, call, name, title string) error {
	if title == "" {
		title = name
	}
	tc := map[string]any{"toolCallId": call}
	if title != "" {
		tc["title"] = title
	}
	return w.send(map[string]any{"jsonrpc": "2.0", "id": permissionID(id), "method": methodPermission, "params": map[string]any{
		"sessionId": w.session(), "toolCall": tc,
		"options": []any{
			map[string]any{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
			map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
		}}})
}

func (w *writer) answerPermission(id int, allowed bool, reason string) error {
	opt := "reject"
	if allowed {
		opt = "allow"
	}
	result := map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": opt}}
	if reason != "" {
		result["_meta"] = meta("reason", reason)
	}
	return w.send(map[string]any{"jsonrpc": "2.0", "id": permissionID(id), "result": result})
}

func permissionID(n int) string { return "permission-" + strconv.Itoa(n) }

// plan writes a todo list as ACP's plan: the whole list each time.
func (w *writer) plan(e *formats.Event) error {
	entries := make([]any, 0, len(e.Todos))
	for _, t := range e.Todos {
		status := t.Status
		switch status {
		case "pending", "in_progress", "completed":
		default:
			w.opts.Report.Quirk(lostTodoStatuses)
			status = "pending"
		}
		// ACP requires a priority; the model has none: every entry is medium.
		entries = append(entries, map[string]any{"content": t.Content, "priority": "medium", "status": status})
	}
	return w.update(map[string]any{"sessionUpdate": "plan", "entries": entries})
}

// usage writes a request's usage. ACP's usage_update says the tokens in
// the context and the window's size; the window is unknown unless the
// source gives it, and the counts the model has go in _meta.
func (w *writer) usage(e *formats.Event) error {
	u := e.Usage
	used := u.InputTokens.V + u.OutputTokens.V
	size := used
	m := usageMeta(u)
	if u.ContextTokens.OK {
		size = max(u.ContextTokens.V, used)
	} else {
		m[metaKey].(map[string]any)["sizeUnknown"] = true
	}
	if e.Aggregate {
		// The counts of several requests: read back as such.
		m[metaKey].(map[string]any)["aggregate"] = true
	}
	w.agentMeta(m, e.Agent)
	upd := map[string]any{"sessionUpdate": "usage_update", "used": used, "size": size, "_meta": m}
	if u.CostUSD.OK {
		if s := w.session(); s != w.costSess {
			w.cost, w.costSess = 0, s
		}
		w.cost += u.CostUSD.V
		upd["cost"] = map[string]any{"amount": w.cost, "currency": "USD"}
	}
	return w.update(upd)
}

func usageMeta(u formats.UsageInfo) map[string]any {
	m := map[string]any{}
	put := func(k string, o formats.Opt[int64]) {
		if o.OK {
			m[k] = o.V
		}
	}
	put("inputTokens", u.InputTokens)
	put("outputTokens", u.OutputTokens)
	put("cachedReadTokens", u.CacheReadTokens)
	put("cachedWriteTokens", u.CacheWriteTokens)
	put("thoughtTokens", u.ReasoningTokens)
	put("totalTokens", u.TotalTokens)
	if u.CostUSD.OK {
		m["costUsd"] = u.CostUSD.V
	}
	return map[string]any{metaKey: m}
}

// end writes the session/prompt response that ends the turn: its stop
// reason, or an error for a run that failed; the outcome and totals are
// in _meta.
func (w *writer) end(e *formats.Event, v *formats.RunView) error {
	a := v.Answer()
	if strings.TrimSpace(a) != "" && strings.TrimSpace(a) != strings.TrimSpace(w.said.String()) &&
		(v.Status == formats.Completed || a != v.Failure && !slices.Contains(v.Errors, a)) {
		// A client shows the user the chunks: the answer is one, unless
		// it is the text the last chunks said (or the error the
		// response says). _meta marks it, so that it is read back as the
		// answer, not as more of the message before it.
		w.said.Set(a)
		if err := w.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": text(a),
			"_meta": map[string]any{metaKey: map[string]any{"answer": true}}}); err != nil {
			return err
		}
	}
	w.runs++
	m := usageMeta(v.Usage)
	out := m[metaKey].(map[string]any)
	if !w.begun {
		// A run of no update: the response says its model and folder.
		for k, s := range meta("model", v.Info.Model, "cwd", v.Info.Cwd)[metaKey].(map[string]any) {
			out[k] = s
		}
	}
	out["status"] = v.Status.String()
	out["exitCode"] = v.ExitCode
	if len(v.Errors) > 0 {
		out["errors"] = v.Errors
	}
	if len(w.agents) > 0 {
		// The outcomes of the subagents the updates named, which end with
		// the run when read back.
		ended := map[string]any{}
		for _, id := range w.agents {
			if a := v.Agent(id); a != nil && a.Status != formats.StatusUnknown {
				ended[id] = a.Status.String()
			}
		}
		if len(ended) > 0 {
			out["agents"] = ended
		}
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": w.runs}
	switch v.Status {
	case formats.Completed:
		msg["result"] = map[string]any{"stopReason": "end_turn", "_meta": m}
	case formats.Cancelled:
		msg["result"] = map[string]any{"stopReason": "cancelled", "_meta": m}
	default:
		msg["error"] = map[string]any{"code": -32603, "message": v.Failure, "data": m}
	}
	return w.send(msg)
}

// meta makes _meta.agentconv from key, value pairs, leaving out empty
// values.
func meta(kv ...string) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			m[kv[i]] = kv[i+1]
		}
	}
	return map[string]any{metaKey: m}
}
