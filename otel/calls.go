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
	n := b.callUses[id]
	if n == 0 && b.seen.has(id) {
		n = 1 // its first use was forgotten (see callEnded)
	}
	n++
	b.callUses[id] = n
	key := "call\x00" + id
	if n > 1 || id == "" {
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
	callID, ok := b.requests[e.Permission.RequestID]
	if _, s := b.call(callID); ok && s == nil {
		delete(b.requests, e.Permission.RequestID) // its call ended
	}
	b.event(b.callOr(callID, a), evPermissionAnswer, t, attrs...)
}

// maxCallUses is how many call ids callUses keeps before it forgets those
// of calls that ended after one use, into seen (a variable, so that tests
// lower it).
var maxCallUses = 1 << 15

// callEnded forgets what the run keeps of a call that ended, so that a
// run keeps of its calls those still open: the permission requests for it
// (an answer that comes after its call ended goes to the agent's span
// anyway), and, once callUses holds maxCallUses ids, its id, used once,
// which then counts only in seen. Its next use, if any, is its second: the
// key is what it was; where seen mistakes an id for one used, its first
// use takes the suffix of a second one, a key as unique.
func (b *builder) callEnded(id string) {
	if _, open := b.call(id); open != nil {
		return
	}
	if len(b.requests) > 0 {
		for req, call := range b.requests {
			if call == id {
				delete(b.requests, req)
			}
		}
	}
	if len(b.callUses) > maxCallUses && b.callUses[id] == 1 {
		delete(b.callUses, id)
		b.seen.add(id)
	}
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
	b.callEnded(s.callID)
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
			b.callEnded(c.callID)
		}
	}
}

// idSet is a Bloom filter of call ids, of a fixed size, made at its first
// id: has is false for an id never added, and true for one added (and,
// rarely, for one not: one in ten million at 400,000 ids, one in sixty at four million).
type idSet struct {
	bits []uint64
	used bool
}

const (
	idSetBits   = 1 << 25 // 4 MiB
	idSetHashes = 6
)

func (s *idSet) add(id string) {
	if s.bits == nil {
		s.bits = make([]uint64, idSetBits/64)
	}
	s.used = true
	h1, h2 := idHashes(id)
	for i := range uint64(idSetHashes) {
		k := (h1 + i*h2) % idSetBits
		s.bits[k/64] |= 1 << (k % 64)
	}
}

func (s *idSet) has(id string) bool {
	if !s.used {
		return false
	}
	h1, h2 := idHashes(id)
	for i := range uint64(idSetHashes) {
		k := (h1 + i*h2) % idSetBits
		if s.bits[k/64]&(1<<(k%64)) == 0 {
			return false
		}
	}
	return true
}

// reset empties the set for the next run.
func (s *idSet) reset() {
	if s.used {
		clear(s.bits)
		s.used = false
	}
}

// idHashes are two hashes of an id (FNV-1a, 64 bits, mixed as
// SplitMix64 does, its two halves), the same from run to run, so that the
// same input gives the same span ids.
func idHashes(id string) (uint64, uint64) {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * prime
	}
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	h ^= h >> 31
	return h >> 32, h&(1<<32-1) | 1
}
