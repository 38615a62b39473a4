package otel

import (
	"slices"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// span is a span still open, or ending.
type span struct {
	key      string // what its id is derived from
	parent   *span
	name     string
	kind     trace.SpanKind
	start    time.Time
	end      time.Time
	attrs    []attribute.KeyValue
	events   []sdktrace.Event
	status   sdktrace.Status
	children time.Time // the latest end of an ended child
	callID   string
	owner    *agent // the agent of a tool call
	id       trace.SpanID
	idSet    bool
	links    []sdktrace.Link
	// costless: a chat span without a cost of its own, held until its
	// run ends, when a cost the source gives only for the run is split
	// over such spans by their tokens; weight is its tokens.
	costless bool
	weight   int64
}

// kinds are the kinds of a span as Phoenix (OpenInference) and Langfuse
// name them, beside the GenAI conventions' operation.
func (s *span) kinds(oi, langfuse string) {
	s.set(attribute.String(keyOIKind, oi), attribute.String(keyLangfuseType, langfuse))
}

func (s *span) set(kv ...attribute.KeyValue) { s.attrs = append(s.attrs, kv...) }

// fail marks a span as failed with a status that is not a success (Failed,
// Cancelled or Denied).
func (s *span) fail(status formats.Status, msg string) {
	s.set(attribute.String(keyErrorType, status.String()))
	s.status = sdktrace.Status{Code: codes.Error, Description: msg}
}

// builder turns the events of runs into spans, and hands each span to emit
// as it ends. It holds only the open spans of one run; what the run means
// (its session, models, usage, answer and outcome) it reads in the run
// view.
type builder struct {
	cfg  *config
	rep  *formats.Report
	emit func(*spanData)
	// view is the run view, up to date with the event being written.
	view *formats.RunView

	// The run.
	open       bool
	anchor     []byte // what the run's ids derive from
	anchorSet  bool
	startLine  int
	traceID    trace.TraceID
	traceSet   bool
	res        *resource.Resource
	agents     map[string]*agent
	order      []string          // agent ids in the order they started
	calls      []*span           // open tool calls, oldest first
	callUses   map[string]int    // how often each call id was used, for unique keys
	requests   map[string]string // permission request ids and the calls they are for
	system     string            // the system instructions, with --otlp-content
	sysGiven   bool              // the first chat span of the main agent took them
	placed     formats.UsageInfo // what spans under the root carry of the run's usage
	turnsSeen  bool              // the source ends turns, so content opens one
	startsSeen bool              // the source starts turns itself

	// held: the spans that ended while the run's session id was not
	// known yet (AdaL gives it only at the run's end); they are handed on
	// once it is, with it, or at the run's end, so that every span of a
	// session carries it and is in its trace. Past holdLimit (heldSize),
	// the later ones wait in heldOver.
	held     []spanData
	heldSize int
	heldOver spill
	// pending: the chat spans that ended without a cost of their own,
	// with their tokens, held until the run's end says whether the source
	// gives a cost for the whole run, which is then split over them (by
	// split, which follows their tokens). Past holdLimit, the later ones
	// wait in pendingOver.
	pending     []pendingChat
	pendingSize int
	pendingOver spill
	split       costSplit
	// seen: the ids of calls used once, that callUses forgot.
	seen idSet
	// err: the first error holding spans on disk, which Write returns.
	err error

	// Kept from run to run.
	prevSession string        // the session of the previous run
	prevTrace   trace.TraceID // and its trace
	prevRoot    trace.SpanID  // and its root, which the next run of the session links to
	ended       spanData      // the span being handed to emit
	hashBuf     []byte        // what a hash is taken of
	resService  string        // the service.name of res
	resVersion  string        // and its service.version
}

func newBuilder(cfg *config, rep *formats.Report, emit func(*spanData)) *builder {
	return &builder{cfg: cfg, rep: rep, emit: emit}
}

// at is the time of an event: the source's, else the latest source time of
// a run that has them (events the pipeline adds to close a run), else when
// the event arrived.
func (b *builder) at(e *formats.Event) time.Time {
	if !e.Time.IsZero() {
		return e.Time
	}
	if b.timed() {
		return b.view.Last
	}
	return e.Arrived
}

// timed: the run's source gives times.
func (b *builder) timed() bool { return !b.view.Start.IsZero() }

// session is the run's session id, "" while it is not known.
func (b *builder) session() string {
	if b.view == nil {
		return ""
	}
	return b.view.Info.SessionID
}

// write makes the spans of an event; v is the run view, which has
// followed it.
func (b *builder) write(e *formats.Event, v *formats.RunView) {
	b.view = v
	if e.Kind == formats.RunStart || !b.open {
		b.startRun(e)
		if e.Kind == formats.RunStart {
			return
		}
	}
	if !b.anchorSet && e.Source.Line != nil {
		b.setAnchor(e)
	}
	t := b.at(e)
	if e.Kind == formats.AgentStart && b.agents[e.Agent] == nil {
		b.startAgent(e.Agent, e.AgentInfo, t)
	}
	a := b.agent(e.Agent, t)
	switch e.Kind {
	case formats.RunEnd:
		b.endRun(e, t)
	case formats.AgentStart:
		// b.agent made it.
	case formats.AgentEnd:
		b.endAgent(e.Agent, a, t, e.Status, e.Report())
	case formats.TurnStart:
		b.startsSeen = true
		b.closeRequest(a)
		b.endTurn(a, t, formats.StatusUnknown)
		b.startTurn(e.Agent, a, t)
	case formats.TurnEnd:
		b.turnEnded(e, a, t)
		return
	case formats.ToolCall:
		b.startCall(e, a, t)
		b.message(e, a)
	case formats.ToolResult:
		b.message(e, a)
		b.endCall(e, a, t)
	case formats.PermissionRequest, formats.PermissionAnswer:
		b.permission(e, a, t)
	case formats.Notice:
		b.event(b.inner(a), evNotice, t, attribute.String(keySeverity, e.Severity.String()), attribute.String(keyText, e.NoticeText()))
	case formats.Compaction:
		b.event(b.inner(a), evCompaction, t, attribute.String(keyText, e.Summary()))
	case formats.ModelChange:
		b.event(b.inner(a), evModelChange, t, attribute.String(keyModel, e.Run.Model))
		if e.Run.Model != "" {
			a.model = e.Run.Model
		}
	case formats.Usage:
		a.usage.Add(e.Usage)
		b.content(e.Agent, a, t)
		if e.Aggregate {
			b.turnUsage(e, a)
		} else {
			b.chat(e, a, t)
		}
	case formats.TextDelta, formats.Message, formats.ThinkingDelta:
		b.content(e.Agent, a, t)
		b.message(e, a)
	case formats.Answer, formats.UserMessage:
		b.said(e, a)
	}
	if !a.hasIdle && a.turn == nil {
		a.idle, a.hasIdle = t, true
	}
	a.last = t
}

// lose reports the quirk q if lost.
func (b *builder) lose(q formats.Quirk, lost bool) {
	if lost {
		b.rep.Quirk(q)
	}
}

func (b *builder) event(s *span, name string, t time.Time, attrs ...attribute.KeyValue) {
	s.events = append(s.events, sdktrace.Event{Name: name, Time: t, Attributes: attrs})
	if t.Before(s.start) {
		s.start = t
	}
}

// timedStart: the span's start is a source time.
func (s *span) timedStart(b *builder) bool { return b.timed() && !s.start.IsZero() }

// flushHeld hands on the spans held while the session id was not known,
// with it if it is known now, in the session's trace.
func (b *builder) flushHeld() {
	give := func(h *spanData, _ int64) {
		h.traceID = b.trace()
		h.attrs = b.sessionAttrs(h.attrs)
		b.emit(h)
		*h = spanData{}
	}
	for i := range b.held {
		give(&b.held[i], 0)
	}
	b.held, b.heldSize = b.held[:0], 0
	b.fail(b.heldOver.drain(0, give))
}

// fail keeps the first error of holding spans on disk, for Write to return.
func (b *builder) fail(err error) {
	if err != nil && b.err == nil {
		b.err = err
	}
}

// takeErr returns the error kept by fail, once.
func (b *builder) takeErr() error {
	err := b.err
	b.err = nil
	return err
}

// close lets go of the files that held spans.
func (b *builder) close() {
	b.heldOver.close()
	b.pendingOver.close()
}

// end closes a span and hands it on. A parent is stretched to hold its
// children, so that arrival times and measured durations never make a child
// stick out of its parent.
func (b *builder) end(s *span, t time.Time) {
	s.attrs = b.sessionAttrs(s.attrs)
	s.attrs = b.limitAttrs(s.attrs)
	s.end = t
	if s.children.After(s.end) {
		s.end = s.children
	}
	if s.end.Before(s.start) {
		s.end = s.start
	}
	// emit takes the span as it is now: a subagent's span may still move
	// the start of a call that ended.
	b.fixAnchor()
	b.ended = spanData{name: s.name, spanID: b.spanID(s), kind: s.kind,
		start: s.start, end: s.end, attrs: s.attrs, events: s.events, status: s.status, links: s.links,
		resource: b.res, scope: instrumentation.Scope{Name: scopeName}}
	if p := s.parent; p != nil {
		b.ended.parentID = b.spanID(p)
		if s.end.After(p.children) {
			p.children = s.end
		}
		if s.start.Before(p.start) {
			p.start = s.start
		}
	}
	if s.costless && b.open {
		// Held until the run ends: in memory with attributes of their
		// own size, room left for the two of its cost share, so that
		// what a run holds of each request is no more than the span it
		// becomes; past holdLimit, on disk.
		b.split.add(s.weight)
		if !b.pendingOver.empty() || b.pendingSize >= holdLimit {
			b.fail(b.pendingOver.put(&b.ended, s.weight))
			return
		}
		d := b.ended
		d.attrs = append(make([]attribute.KeyValue, 0, len(d.attrs)+pendingRoom), d.attrs...)
		d.events = slices.Clip(d.events)
		b.pending = append(b.pending, pendingChat{data: d, weight: s.weight})
		b.pendingSize += spanSize(&d)
		return
	}
	b.hand(&b.ended)
}

// hand gives a span that ended to emit, in the run's trace; while the
// run's session id is not known, it is held (in memory up to holdLimit,
// then on disk).
func (b *builder) hand(d *spanData) {
	if b.session() == "" && b.open {
		if !b.heldOver.empty() || b.heldSize >= holdLimit {
			b.fail(b.heldOver.put(d, 0))
			return
		}
		b.held = append(b.held, *d)
		b.heldSize += spanSize(d)
		return
	}
	b.flushHeld()
	d.traceID = b.trace()
	b.emit(d)
}
