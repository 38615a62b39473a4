package otel

import (
	"strconv"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// chat makes the span of one model request (a Usage event): from the
// agent's latest event, when the model was asked, to its answer. It
// carries the request's usage, which its agent's span then counts only
// in its totals.
func (b *builder) chat(e *formats.Event, a *agent, t time.Time) {
	a.chats++
	b.placed.Add(e.Usage)
	model := b.requestModel(e, a)
	name := opChat
	if model != "" {
		name += " " + model
	}
	start := a.last
	if start.IsZero() || start.After(t) {
		start = t
	}
	s := &span{key: "chat\x00" + e.Agent + "\x00" + strconv.Itoa(a.chats), parent: b.inner(a), name: name,
		kind: trace.SpanKindClient, start: start, attrs: make([]attribute.KeyValue, 0, 16)}
	s.set(attribute.String(keyOperation, opChat))
	s.kinds("LLM", "generation")
	if p := b.providerOf(model, e.Response.Model); p != "" {
		s.set(attribute.String(keyProvider, p))
	}
	if model != "" {
		s.set(attribute.String(keyModel, model))
	}
	if e.Response.Model != "" {
		s.set(attribute.String(keyResponseModel, e.Response.Model))
	}
	if e.Response.ID != "" {
		s.set(attribute.String(keyResponseID, e.Response.ID))
	}
	if r := e.Response.StopReason; r != "" {
		s.set(attribute.StringSlice(keyFinish, []string{finishReason(r)}))
	}
	b.setUsage(s, e.Usage)
	s.costless, s.weight = !e.Usage.CostUSD.OK, tokens(e.Usage)
	if b.cfg.content && !a.done {
		b.openRequest(a, s, t, e.Response.StopReason)
		return
	}
	b.end(s, t)
}

// requestModel is the model of a request of agent a: the agent's, else the
// response's; it is the agent's first seen.
func (b *builder) requestModel(e *formats.Event, a *agent) string {
	model := a.model
	if model == "" {
		model = e.Response.Model
	}
	if a.seen == "" {
		a.seen = model
	}
	return model
}

// turnUsage counts the usage a source gives for a whole turn, of requests
// it does not tell apart (Aggregate): the turn's span carries it, and no
// chat span claims it for one request. Outside a turn, only the run's
// totals count it.
func (b *builder) turnUsage(e *formats.Event, a *agent) {
	b.requestModel(e, a)
	if a.turn == nil {
		return
	}
	a.turnUse.Add(e.Usage)
	a.turnUseSet = true
}

// finishReason is a stop reason in the words of the GenAI conventions,
// where one of theirs means the same; else the source's word.
func finishReason(r string) string {
	switch r {
	case "end_turn", "stop_sequence", "STOP", "completed":
		return "stop"
	case "tool_use", "tool_calls", "function_call":
		return "tool_call"
	case "max_tokens", "MAX_TOKENS", "length", "model_context_window_exceeded":
		return "length"
	case "refusal", "content_filter", "SAFETY":
		return "content_filter"
	}
	return r
}

// aggregateChat ends a chat span under parent that stands for model
// requests the source does not list one by one, with their usage, and
// says so (agentconv.chat.aggregate).
func (b *builder) aggregateChat(parent *span, key, model string, u formats.UsageInfo, start, t time.Time) {
	name := opChat
	if model != "" {
		name += " " + model
	}
	s := &span{key: key, parent: parent, name: name, kind: trace.SpanKindClient, start: start}
	s.set(attribute.String(keyOperation, opChat))
	s.kinds("LLM", "generation")
	if p := b.providerOf(model); p != "" {
		s.set(attribute.String(keyProvider, p))
	}
	if model != "" {
		s.set(attribute.String(keyModel, model))
	}
	s.set(attribute.Bool(keyAggregate, true))
	b.setUsage(s, u)
	s.costless, s.weight = !u.CostUSD.OK, tokens(u)
	b.end(s, t)
}
