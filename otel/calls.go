package otel

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// call finds an open call by id, the latest first.
func (b *builder) call(id string) (int, *span) {
	for i := len(b.calls) - 1; i >= 0; i-- {
		if b.calls[i].callID == id {
			return i, b.calls[i]
		}
	}
	return -1, nil
}

// callOr is the open call's span, else the agent's inner span.
func (b *builder) callOr(callID string, a *agent) *span {
	if _, s := b.call(callID); s != nil && callID != "" {
		return s
	}
	return b.inner(a)
}

func (b *builder) startCall(e *formats.Event, a *agent, t time.Time) {
	id := e.Call.ID
	b.callUses[id]++
	key := "call\x00" + id
	if n := b.callUses[id]; n > 1 || id == "" {
		key += "\x00" + strconv.Itoa(n)
	}
	b.content(e.Agent, a, t)
	room := 10 // for the four below, the two kinds, a summary, MCP's two and an error type, in one allocation
	if b.cfg.content {
		room += 2
	}
	s := &span{key: key, parent: b.inner(a), name: opExecuteTool + " " + e.Call.Name, kind: trace.SpanKindInternal, start: t,
		callID: id, owner: a, attrs: make([]attribute.KeyValue, 0, room)}
	s.set(attribute.String(keyOperation, opExecuteTool), attribute.String(keyToolName, e.Call.Name),
		attribute.String(keyToolCallID, id), attribute.String(keyToolType, "function"))
	s.kinds("TOOL", "tool")
	if e.Call.Summary != "" {
		s.set(attribute.String(keySummary, e.Call.Summary))
	}
	if server, ok := mcpServer(e.Call.Name); ok {
		s.set(attribute.String(keyMCPMethod, "tools/call"), attribute.String(keyMCPServer, server))
	}
	recordContent(b, s, keyToolArgs, e.Call.Args)
	b.calls = append(b.calls, s)
}

// permission puts a permission request or its answer on the call it is
// for, else on the agent's inner span, as a span event.
func (b *builder) permission(e *formats.Event, a *agent, t time.Time) {
	if e.Kind == formats.PermissionRequest {
		attrs := []attribute.KeyValue{attribute.String(keyRequestID, e.Permission.RequestID),
			attribute.String(keyToolCallID, e.Call.ID), attribute.String(keyToolName, e.Call.Name)}
		if e.Permission.RequestID != "" {
			b.requests[e.Permission.RequestID] = e.Call.ID
		}
		b.event(b.callOr(e.Call.ID, a), evPermissionRequest, t, attrs...)
		return
	}
	attrs := []attribute.KeyValue{attribute.String(keyRequestID, e.Permission.RequestID),
		attribute.Bool(keyAllowed, e.Permission.Allowed)}
	if e.Permission.Reason != "" {
		attrs = append(attrs, attribute.String(keyReason, e.Permission.Reason))
	}
	b.event(b.callOr(b.requests[e.Permission.RequestID], a), evPermissionAnswer, t, attrs...)
}

// mcpServer is the server of an MCP tool call, as the event model names
// them (mcp__<server>__<tool>, Claude Code's names, which the Codex
// reader gives its MCP calls too).
func mcpServer(tool string) (string, bool) {
	rest, ok := strings.CutPrefix(tool, "mcp__")
	if !ok {
		return "", false
	}
	server, name, ok := strings.Cut(rest, "__")
	if !ok || server == "" || name == "" {
		return "", false
	}
	return server, true
}

// callOf finds an open call by id, the agent's own first: two agents may
// use the same id.
func (b *builder) callOf(id string, a *agent) (int, *span) {
	for i := len(b.calls) - 1; i >= 0; i-- {
		if b.calls[i].callID == id && b.calls[i].owner == a {
			return i, b.calls[i]
		}
	}
	return b.call(id)
}

func (b *builder) endCall(e *formats.Event, a *agent, t time.Time) {
	i, s := b.callOf(e.Call.ID, a)
	if s == nil {
		// A result without a call (a refusal): a span of its own.
		b.startCall(e, a, t)
		i, s = len(b.calls)-1, b.calls[len(b.calls)-1]
	}
	start := s.start
	b.calls = append(b.calls[:i], b.calls[i+1:]...)
	end := t
	// A duration the source measured wins over the distance between the
	// lines: from a timed start it fixes the end; without times it is
	// the least the call took.
	if d := e.Duration; d > 0 {
		switch {
		case s.timedStart(b):
			end = start.Add(d)
		case e.Time.IsZero() && end.Before(start.Add(d)):
			end = start.Add(d)
		}
	}
	if !b.cfg.content && !e.Call.Output.IsEmpty() {
		b.lose(lostContent, true) // an output left undecoded is not empty
	} else {
		recordContent(b, s, keyToolResult, e.Call.Output.Text())
	}
	if e.Call.ExitCode.OK {
		s.set(attribute.Int(keyExitCode, e.Call.ExitCode.V))
	}
	switch e.Call.Status {
	case formats.Failed, formats.Cancelled, formats.Denied:
		s.fail(e.Call.Status, e.Call.Error)
	}
	b.end(s, end)
}

// endCalls ends an agent's calls that are still open as cancelled (all
// calls for nil), newest first.
func (b *builder) endCalls(a *agent, t time.Time) {
	for i := len(b.calls) - 1; i >= 0; i-- {
		if c := b.calls[i]; a == nil || c.owner == a {
			c.fail(formats.Cancelled, "not completed when its agent ended")
			b.end(c, t)
			b.calls = append(b.calls[:i], b.calls[i+1:]...)
		}
	}
}
