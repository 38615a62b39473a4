package otel

import (
	"strconv"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// turnEnded ends an agent's turn; in a dialect that only ends turns, the
// turn began at the agent's first event since its last one.
func (b *builder) turnEnded(e *formats.Event, a *agent, t time.Time) {
	if !b.turnsSeen && !b.startsSeen {
		// The first sign that the dialect has turns (it only ends
		// them): the agents working now are in a turn too.
		b.turnsSeen = true
		for _, id := range append([]string{""}, b.order...) {
			if other := b.agents[id]; other != a && b.busy(other) {
				b.implicitTurn(id, other, t)
			}
		}
	}
	if a.turn == nil {
		b.implicitTurn(e.Agent, a, t)
	}
	b.endTurn(a, t, e.Status)
	a.hasIdle = false
}

// content: the agent is working; in a dialect that only ends turns, this
// opens its next turn.
func (b *builder) content(agentID string, a *agent, t time.Time) {
	if b.turnsSeen && !b.startsSeen && a.turn == nil && !a.done {
		b.implicitTurn(agentID, a, t)
	}
}

// implicitTurn opens the turn of a dialect that only ends turns. It began
// with the agent's first event since its last turn, or after the spans
// already given to the agent itself; the agent's calls still open move
// into it.
func (b *builder) implicitTurn(agentID string, a *agent, t time.Time) {
	b.startTurn(agentID, a, b.turnStart(a, t))
	for _, c := range b.calls {
		if c.parent == a.span {
			c.parent = a.turn
			if c.start.Before(a.turn.start) {
				a.turn.start = c.start
			}
		}
	}
}

// busy: an agent has calls open and no turn.
func (b *builder) busy(a *agent) bool {
	if a == nil || a.done || a.turn != nil {
		return false
	}
	for _, c := range b.calls {
		if c.parent == a.span {
			return true
		}
	}
	return false
}

// turnStart is when an implicit turn began: at the agent's first event
// since its last turn, but not before a span already ended under the agent
// itself, so that the turn does not overlap its siblings.
func (b *builder) turnStart(a *agent, t time.Time) time.Time {
	start := t
	if a.hasIdle && a.idle.Before(start) {
		start = a.idle
	}
	if a.span.children.After(start) && !a.span.children.After(t) {
		start = a.span.children
	}
	return start
}

func (b *builder) startTurn(agentID string, a *agent, t time.Time) {
	a.turns++
	n := strconv.Itoa(a.turns)
	a.turn = &span{key: "turn\x00" + agentID + "\x00" + n, parent: a.span, name: "turn " + n, kind: trace.SpanKindInternal, start: t}
	a.turn.set(attribute.Int(keyTurn, a.turns))
	// No GenAI convention names a turn; OpenInference calls a step of an
	// agent a chain, and so does Langfuse.
	a.turn.kinds("CHAIN", "chain")
}

func (b *builder) endTurn(a *agent, t time.Time, status formats.Status) {
	if a.turn == nil {
		return
	}
	b.closeRequest(a) // under the turn
	if status == formats.Failed || status == formats.Cancelled {
		a.turn.fail(status, "")
	}
	if a.turnUseSet {
		// The turn's usage, of requests the source does not tell apart:
		// a chat span that says it stands for them.
		model := a.model
		if model == "" {
			model = a.seen
		}
		b.aggregateChat(a.turn, "chat\x00turn\x00"+a.turn.key, model, a.turnUse, a.turn.start, t)
		b.placed.Add(a.turnUse)
		a.turnUse, a.turnUseSet = formats.UsageInfo{}, false
	}
	b.end(a.turn, t)
	a.turn = nil
}
