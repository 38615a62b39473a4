package otel

import (
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// startRun opens a run: at its RunStart, or at its first event where the
// source has none. The last one was ended (see writer.Write).
func (b *builder) startRun(e *formats.Event) {
	*b = builder{cfg: b.cfg, rep: b.rep, emit: b.emit, view: b.view, open: true,
		hashBuf: b.hashBuf, res: b.res, resService: b.resService, resVersion: b.resVersion, held: b.held[:0],
		heldOver: b.heldOver, pending: b.pending[:0], pendingOver: b.pendingOver, err: b.err,
		prevSession: b.prevSession, prevTrace: b.prevTrace, prevRoot: b.prevRoot,
		agents: emptied(b.agents), callUses: emptied(b.callUses), requests: emptied(b.requests), seen: b.seen}
	// What the last run left held is dropped with it (a run that never
	// ended, outside a pipeline, hands on only its spans that ended).
	clear(b.held[:cap(b.held)])
	clear(b.pending[:cap(b.pending)])
	b.fail(b.heldOver.reset())
	b.fail(b.pendingOver.reset())
	b.seen.reset()
	b.startLine = e.Source.LineNo
	if e.Source.Line != nil {
		b.setAnchor(e)
	}
	name := e.Run.AgentName // the agent program's name
	if name == "" {
		name = e.Source.Dialect
	}
	if name == "" {
		name = "agent"
	}
	b.setResource(name, e.Run.AgentVersion)

	root := &span{key: "run", name: opInvokeAgent + " " + name, kind: trace.SpanKindInternal, start: b.at(e)}
	root.set(attribute.String(keyOperation, opInvokeAgent), attribute.String(keyAgentName, name), attribute.String(keyAgentID, mainAgentID))
	root.kinds("AGENT", "agent")
	if e.Run.Model != "" {
		root.set(attribute.String(keyModel, e.Run.Model))
	}
	if e.Run.Provider != "" {
		root.set(attribute.String(keyProvider, e.Run.Provider))
	}
	b.agents[""] = &agent{span: root, model: e.Run.Model, last: root.start}
	if s := e.Run.SystemInstructions; b.cfg.content {
		b.system = b.cut(s)
	} else {
		b.lose(lostSystem, s != "")
	}
}

// setResource makes the resource of the run's spans, unless the last run's
// is the same: its service.name is the configured one, else the agent's name;
// its service.version the agent's version, unless OTEL_RESOURCE_ATTRIBUTES
// says it.
func (b *builder) setResource(name, version string) {
	service := b.cfg.service
	if service == "" {
		service = name
	}
	for _, kv := range b.cfg.resource {
		if kv.Key == "service.version" {
			version = ""
		}
	}
	if b.res != nil && service == b.resService && version == b.resVersion {
		return
	}
	attrs := append(append([]attribute.KeyValue(nil), b.cfg.resource...), attribute.String("service.name", service))
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	b.res = resource.NewSchemaless(attrs...)
	b.resService, b.resVersion = service, version
}

// emptied empties a map of the last run for the next, or makes the first.
func emptied[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	clear(m)
	return m
}

// endRun ends the run's root span at its RunEnd, from the view, which has
// settled the run's outcome (e is normalised: its Status is never
// StatusUnknown).
func (b *builder) endRun(e *formats.Event, t time.Time) {
	if !b.open {
		return
	}
	v := b.view
	main := b.agents[""]
	root := main.span
	// What the source left open ends with the run, innermost first.
	for i := len(b.order) - 1; i >= 0; i-- {
		b.endAgent(b.order[i], b.agents[b.order[i]], t, formats.StatusUnknown, "")
	}
	b.endCalls(nil, t)
	b.endConversation(main)
	b.endTurn(main, t, formats.StatusUnknown)

	b.setModels(root, e.Run.Provider)
	// The run's totals: the source's, else the sum of every agent's
	// requests (formats.RunTotals). Where chat spans carry the requests,
	// the root carries the totals as agentconv.usage.*, and as
	// gen_ai.usage.* only what the requests leave out, so that the
	// gen_ai.usage.* of the trace's spans add up to the totals.
	switch {
	case e.Usage.InputTokens.OK || e.Usage.OutputTokens.OK:
		root.set(attribute.String(keyUsageFrom, "source"))
	case v.Usage.InputTokens.OK || v.Usage.OutputTokens.OK:
		root.set(attribute.String(keyUsageFrom, "requests"))
	}
	b.setTotals(root, v.Usage)
	b.placeRest(root, v.Usage, t)
	if e.Run.ExitCode.OK {
		root.set(attribute.Int(keyExitCode, e.Run.ExitCode.V))
	}
	if e.Cut {
		root.set(attribute.Bool(keyCut, true))
	}
	b.setMessages(main)
	b.setSystem(root, b.system)
	if !v.Success() {
		root.fail(v.Status, e.ErrorText())
		if e.Code != "" {
			// The provider's code says more than "failed".
			root.attrs = setAttr(root.attrs, attribute.String(keyErrorType, e.Code))
		}
	} else if e.ErrorText() != "" {
		b.event(root, evNotice, t, attribute.String(keySeverity, formats.Error.String()), attribute.String(keyText, e.ErrorText()))
	}
	end := t
	if d := e.Duration; d > 0 && (root.timedStart(b) || end.Before(root.start.Add(d))) && e.Time.IsZero() {
		end = root.start.Add(d)
	}
	// The previous run of the session, which this one continues.
	session := b.session()
	if session != "" && session == b.prevSession && b.prevRoot.IsValid() {
		root.links = append(root.links, sdktrace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: b.prevTrace, SpanID: b.prevRoot, TraceFlags: trace.FlagsSampled})})
	}
	b.end(root, end)
	b.open = false
	b.flushHeld()
	b.prevSession, b.prevTrace, b.prevRoot = session, b.trace(), b.spanID(root)
}

// setModels puts the models the run used (the view's) on its root:
// gen_ai.request.model only for a run that used one model, all of them in
// agentconv.models; and its provider: the one its end names, else the
// run's, else what the models' names say.
func (b *builder) setModels(root *span, provider string) {
	models := b.view.Models
	root.attrs = dropAttr(root.attrs, keyModel)
	root.attrs = dropAttr(root.attrs, keyProvider)
	switch len(models) {
	case 0:
	case 1:
		root.set(attribute.String(keyModel, models[0]))
		root.set(attribute.StringSlice(keyModels, models))
	default:
		root.set(attribute.StringSlice(keyModels, models))
	}
	if provider == "" {
		provider = b.providerOf(models...)
	}
	if provider != "" {
		root.set(attribute.String(keyProvider, provider))
	}
}
