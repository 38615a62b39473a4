package otel

import (
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// agent is the main agent of a run or a subagent.
type agent struct {
	span    *span
	turn    *span
	turns   int
	usage   formats.UsageInfo
	model   string   // the model it uses now
	seen    string   // the model of its first request
	prompts []string // its prompts, with --otlp-content
	// answer is a subagent's answer, with --otlp-content; the run's own
	// is the view's.
	answer string
	// lastText is a subagent's latest whole message's text, with
	// --otlp-content: its answer where the source names none.
	lastText string
	chats    int // its model requests so far
	// turnUse is the usage of its open turn that the source gives for the
	// whole turn (Aggregate), which the turn's span carries.
	turnUse    formats.UsageInfo
	turnUseSet bool
	conv       conversation // what its model was given and answered, with --otlp-content
	last       time.Time    // when its latest event came
	idle       time.Time    // when its first event since its last turn came
	hasIdle    bool
	done       bool
}

// agent returns an agent of the run, starting it when it is new: from its
// AgentStart, or at its first event when the source gave none.
func (b *builder) agent(id string, t time.Time) *agent {
	if a, ok := b.agents[id]; ok {
		return a
	}
	return b.startAgent(id, formats.AgentInfo{Label: id}, t)
}

func (b *builder) startAgent(id string, info formats.AgentInfo, t time.Time) *agent {
	parent := b.agents[info.Parent]
	if parent == nil || info.Parent == id {
		parent = b.agents[""]
	}
	ps := b.callOr(info.ParentCall, parent)
	label := info.Label
	if label == "" {
		label = id
	}
	s := &span{key: "agent\x00" + id, parent: ps, name: opInvokeAgent + " " + label, kind: trace.SpanKindInternal, start: t}
	s.set(attribute.String(keyOperation, opInvokeAgent), attribute.String(keyAgentName, label), attribute.String(keyAgentID, id))
	s.kinds("AGENT", "agent")
	if info.Model != "" {
		s.set(attribute.String(keyModel, info.Model))
	}
	a := &agent{span: s, model: info.Model, last: t}
	b.agents[id] = a
	b.order = append(b.order, id)
	return a
}

// inner is the span that an agent's events go into: its turn, or itself;
// the run's for an agent that ended already.
func (b *builder) inner(a *agent) *span {
	if a.done {
		return b.inner(b.agents[""])
	}
	if a.turn != nil {
		return a.turn
	}
	return a.span
}

func (b *builder) endAgent(id string, a *agent, t time.Time, status formats.Status, text string) {
	if id == "" || a.done {
		return
	}
	b.endCalls(a, t)
	b.endConversation(a)
	b.endTurn(a, t, formats.StatusUnknown)
	if status == formats.Failed || status == formats.Cancelled {
		a.span.fail(status, "")
	}
	model := a.model
	if model == "" {
		model = a.seen // the model its requests name
	}
	if model != "" {
		a.span.attrs = setAttr(a.span.attrs, attribute.String(keyModel, model))
	}
	if p := b.providerOf(model); p != "" {
		a.span.set(attribute.String(keyProvider, p))
	}
	b.setTotals(a.span, a.usage)
	b.setMessages(a)
	b.end(a.span, t)
	a.done = true
}
