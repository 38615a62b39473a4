package otel

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The attribute keys of the OpenTelemetry GenAI conventions, and the few of
// agentconv's own for what they have no name for.
const (
	keyOperation     = "gen_ai.operation.name"
	keyProvider      = "gen_ai.provider.name"
	keyAgentID       = "gen_ai.agent.id"
	keyAgentName     = "gen_ai.agent.name"
	keyConversation  = "gen_ai.conversation.id"
	keyModel         = "gen_ai.request.model"
	keyResponseModel = "gen_ai.response.model"
	keyResponseID    = "gen_ai.response.id"
	keyFinish        = "gen_ai.response.finish_reasons"
	keyInputTokens   = "gen_ai.usage.input_tokens"
	keyOutputTokens  = "gen_ai.usage.output_tokens"
	keyCacheRead     = "gen_ai.usage.cache_read.input_tokens"
	keyCacheCreation = "gen_ai.usage.cache_creation.input_tokens"
	keyReasoning     = "gen_ai.usage.reasoning.output_tokens"
	keyCost          = "gen_ai.usage.cost"
	keyToolName      = "gen_ai.tool.name"
	keyToolCallID    = "gen_ai.tool.call.id"
	keyToolType      = "gen_ai.tool.type"
	keyToolArgs      = "gen_ai.tool.call.arguments"
	keyToolResult    = "gen_ai.tool.call.result"
	keyInputMessages = "gen_ai.input.messages"
	keyOutputMsgs    = "gen_ai.output.messages"
	keySystem        = "gen_ai.system_instructions"
	keyErrorType     = "error.type"
	keyExitCode      = "process.exit.code"
	keyMCPMethod     = "mcp.method.name"
	// An agent's totals, its subagents' included for the run's own: under
	// agentconv.usage.* wherever the spans under it carry the counts, so
	// that a backend that sums gen_ai.usage.* over a trace counts each
	// token and each cent once.
	keyTotalPrefix = "agentconv.usage."
	// keyOldCost is the run's cost in the spans of agentconv before 2026-12,
	// still read.
	keyOldCost = "agentconv.usage.cost_usd"
	keyModels  = "agentconv.models"
	keyCut     = "agentconv.run.cut"
	// keyUsageFrom says where the run's token totals come from: the
	// source's own totals of the run ("source"), or the sum of the model
	// requests it gave ("requests"), which leaves out what it did not
	// print.
	keyUsageFrom = "agentconv.run.usage_from"
	keyTurn      = "agentconv.turn.number"
	keySummary   = "agentconv.tool.summary"
	keyRequestID = "agentconv.permission.request_id"
	keyAllowed   = "agentconv.permission.allowed"
	keyReason    = "agentconv.permission.reason"
	keySeverity  = "agentconv.notice.severity"
	keyText      = "agentconv.text"
	// keyMCPServer names the MCP server of a call, which the MCP
	// conventions have no attribute for.
	keyMCPServer = "agentconv.mcp.server.name"

	opInvokeAgent = "invoke_agent"
	opExecuteTool = "execute_tool"
	opChat        = "chat"

	// mainAgentID is gen_ai.agent.id of a run's own agent, which the event
	// model leaves unnamed.
	mainAgentID = "main"
	scopeName   = "github.com/agentconv/agentconv/otel"
)

// The names of the span events.
const (
	evPermissionRequest = "permission_request"
	evPermissionAnswer  = "permission_answer"
	evNotice            = "notice"
	evCompaction        = "compaction"
	evModelChange       = "model_change"
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
}

func (s *span) set(kv ...attribute.KeyValue) { s.attrs = append(s.attrs, kv...) }

func (s *span) fail(status formats.Status, msg string) {
	word := status.String()
	if status == formats.StatusUnknown || status == formats.Completed || status == formats.Running {
		word = formats.Failed.String()
	}
	s.set(attribute.String(keyErrorType, word))
	s.status = sdktrace.Status{Code: codes.Error, Description: msg}
}

// agent is the main agent of a run or a subagent.
type agent struct {
	span    *span
	turn    *span
	turns   int
	usage   formats.UsageInfo
	model   string   // the model it uses now
	seen    string   // the model of its first request
	prompts []string // its prompts, with --otlp-content
	answer  string   // its answer, with --otlp-content
	chats   int      // its model requests so far
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

// builder turns the events of runs into spans, and hands each span to emit
// as it ends. It holds only the open spans of one run.
type builder struct {
	cfg  *config
	rep  *formats.Report
	emit func(*spanData)

	// The run.
	open       bool
	session    string
	anchor     []byte // what the run's ids derive from
	anchorSet  bool
	startLine  int
	traceID    trace.TraceID
	traceSet   bool
	name       string // the agent program's name
	res        *resource.Resource
	agents     map[string]*agent
	order      []string       // agent ids in the order they started
	calls      []*span        // open tool calls, oldest first
	callUses   map[string]int // how often each call id was used, for unique keys
	requests   map[string]string
	models     []string          // the models the run used, in the order first seen
	provider   string            // the run's provider, as the source names it
	system     string            // the system instructions, with --otlp-content
	sysGiven   bool              // the first chat span of the main agent took them
	reqUsage   formats.UsageInfo // the sum of the run's requests (Usage events)
	placed     formats.UsageInfo // what spans under the root carry of it
	chats      int               // the run's chat spans
	turnUsed   int               // the run's turn spans that carry a turn's usage
	timed      bool              // the source gives times
	last       time.Time         // the latest source time
	turnsSeen  bool              // the source ends turns, so content opens one
	startsSeen bool              // the source starts turns itself

	// held: the spans that ended while the run's session id was not
	// known yet (AdaL gives it only at the run's end); they are handed on
	// once it is, with it, or at the run's end, so that every span of a
	// session carries it and is in its trace.
	held []spanData

	// Kept from run to run.
	ended      spanData // the span being handed to emit
	hashBuf    []byte   // what a hash is taken of
	resService string   // the service.name of res
	resVersion string   // and its service.version
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
	if b.timed {
		return b.last
	}
	return e.Arrived
}

func (b *builder) write(e *formats.Event) {
	if e.Kind == formats.RunStart || !b.open {
		b.startRun(e)
		if e.Kind == formats.RunStart {
			return
		}
	}
	if !e.Time.IsZero() {
		b.timed = true
		if e.Time.After(b.last) {
			b.last = e.Time
		}
	}
	if !b.anchorSet && e.Source.Line != nil {
		b.setAnchor(e)
	}
	if e.Run.SessionID != "" && e.Kind != formats.RunEnd {
		b.session = e.Run.SessionID
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
		b.endAgent(e.Agent, a, t, e.Status, e.Text)
	case formats.TurnStart:
		b.startsSeen = true
		b.closeRequest(a)
		b.endTurn(a, t, formats.StatusUnknown)
		b.startTurn(e.Agent, a, t)
	case formats.TurnEnd:
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
		return
	case formats.ToolCall:
		b.startCall(e, a, t)
		b.message(e, a)
	case formats.ToolResult:
		b.message(e, a)
		b.endCall(e, a, t)
	case formats.PermissionRequest:
		attrs := []attribute.KeyValue{attribute.String(keyRequestID, e.Permission.RequestID),
			attribute.String(keyToolCallID, e.Call.ID), attribute.String(keyToolName, e.Call.Name)}
		if e.Permission.RequestID != "" {
			b.requests[e.Permission.RequestID] = e.Call.ID
		}
		b.event(b.callOr(e.Call.ID, a), evPermissionRequest, t, attrs...)
	case formats.PermissionAnswer:
		attrs := []attribute.KeyValue{attribute.String(keyRequestID, e.Permission.RequestID),
			attribute.Bool(keyAllowed, e.Permission.Allowed)}
		if e.Permission.Reason != "" {
			attrs = append(attrs, attribute.String(keyReason, e.Permission.Reason))
		}
		b.event(b.callOr(b.requests[e.Permission.RequestID], a), evPermissionAnswer, t, attrs...)
	case formats.Notice:
		b.event(b.inner(a), evNotice, t, attribute.String(keySeverity, e.Severity.String()), attribute.String(keyText, e.Text))
	case formats.Compaction:
		b.event(b.inner(a), evCompaction, t, attribute.String(keyText, e.Text))
	case formats.ModelChange:
		b.event(b.inner(a), evModelChange, t, attribute.String(keyModel, e.Run.Model))
		if e.Run.Model != "" {
			a.model = e.Run.Model
			b.used(e.Run.Model)
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
	case formats.Answer:
		switch {
		case b.cfg.content && !a.done:
			a.answer = b.cut(e.Text)
		default:
			b.lose(lostAnswers, e.Text != "")
		}
	case formats.UserMessage:
		switch {
		case e.Text == "":
		case b.cfg.content && !a.done:
			a.prompts = append(a.prompts, b.cut(e.Text))
			b.message(e, a)
		default:
			b.lose(lostPrompts, true)
		}
	}
	if !a.hasIdle && a.turn == nil {
		a.idle, a.hasIdle = t, true
	}
	a.last = t
}

// chat makes the span of one model request (a Usage event): from the
// agent's latest event, when the model was asked, to its answer. It
// carries the request's usage, which its agent's span then counts only
// in its totals.
func (b *builder) chat(e *formats.Event, a *agent, t time.Time) {
	a.chats++
	b.chats++
	b.reqUsage.Add(e.Usage)
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
		kind: trace.SpanKindClient, start: start, attrs: make([]attribute.KeyValue, 0, 12)}
	s.set(attribute.String(keyOperation, opChat))
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
	if b.cfg.content && !a.done {
		b.openRequest(a, s, t, e.Response.StopReason)
		return
	}
	b.end(s, t)
}

// requestModel is the model of a request of agent a: the agent's, else the
// response's; it is the agent's first seen, and one the run used.
func (b *builder) requestModel(e *formats.Event, a *agent) string {
	model := a.model
	if model == "" {
		model = e.Response.Model
	}
	if a.seen == "" {
		a.seen = model
	}
	b.used(model)
	return model
}

// turnUsage counts the usage a source gives for a whole turn, of requests
// it does not tell apart (Aggregate): the turn's span carries it, and no
// chat span claims it for one request. Outside a turn, only the run's
// totals count it.
func (b *builder) turnUsage(e *formats.Event, a *agent) {
	b.reqUsage.Add(e.Usage)
	b.requestModel(e, a)
	if a.turn == nil {
		return
	}
	a.turnUse.Add(e.Usage)
	a.turnUseSet = true
}

// used notes a model the run used.
func (b *builder) used(model string) {
	if model == "" {
		return
	}
	for _, m := range b.models {
		if m == model {
			return
		}
	}
	b.models = append(b.models, model)
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

// providerOf is the run's provider, else what a model's name says of it.
func (b *builder) providerOf(models ...string) string {
	if b.provider != "" {
		return b.provider
	}
	for _, m := range models {
		if p := modelProvider(m); p != "" {
			return p
		}
	}
	return ""
}

// modelProvider names the provider of a model from its name's prefix, as
// OpenTelemetry names providers; "" when the name does not say.
func modelProvider(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // anthropic/claude-…, openrouter's spelling
	}
	switch {
	case strings.HasPrefix(m, "claude-"):
		return "anthropic"
	case strings.HasPrefix(m, "gpt-"), strings.HasPrefix(m, "o1"), strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"),
		strings.HasPrefix(m, "codex-"):
		return "openai"
	case strings.HasPrefix(m, "gemini-"):
		return "gcp.gemini"
	}
	return ""
}

func (b *builder) lose(what string, lost bool) {
	if lost {
		b.rep.Lose(what)
	}
}

func (b *builder) startRun(e *formats.Event) {
	if b.open {
		b.endRun(&formats.Event{Kind: formats.RunEnd, Status: formats.Failed, Text: "a new run began before this one completed"}, b.at(e))
	}
	*b = builder{cfg: b.cfg, rep: b.rep, emit: b.emit, open: true,
		hashBuf: b.hashBuf, res: b.res, resService: b.resService, resVersion: b.resVersion, held: b.held[:0],
		agents: emptied(b.agents), callUses: emptied(b.callUses), requests: emptied(b.requests)}
	b.session = e.Run.SessionID
	b.startLine = e.Source.LineNo
	if !e.Time.IsZero() {
		b.timed, b.last = true, e.Time
	}
	if e.Source.Line != nil {
		b.setAnchor(e)
	}
	b.name = e.Run.AgentName
	if b.name == "" {
		b.name = e.Source.Dialect
	}
	if b.name == "" {
		b.name = "agent"
	}
	service := b.cfg.service
	if service == "" {
		service = b.name
	}
	version := e.Run.AgentVersion
	for _, kv := range b.cfg.resource {
		if kv.Key == "service.version" {
			version = "" // OTEL_RESOURCE_ATTRIBUTES says it
		}
	}
	if b.res == nil || service != b.resService || version != b.resVersion {
		attrs := append(append([]attribute.KeyValue(nil), b.cfg.resource...), attribute.String("service.name", service))
		if version != "" {
			attrs = append(attrs, attribute.String("service.version", version))
		}
		b.res = resource.NewSchemaless(attrs...)
		b.resService, b.resVersion = service, version
	}

	root := &span{key: "run", name: opInvokeAgent + " " + b.name, kind: trace.SpanKindInternal, start: b.at(e)}
	root.set(attribute.String(keyOperation, opInvokeAgent), attribute.String(keyAgentName, b.name), attribute.String(keyAgentID, mainAgentID))
	if e.Run.Model != "" {
		root.set(attribute.String(keyModel, e.Run.Model))
	}
	if e.Run.Provider != "" {
		root.set(attribute.String(keyProvider, e.Run.Provider))
	}
	b.provider = e.Run.Provider
	b.used(e.Run.Model)
	b.agents[""] = &agent{span: root, model: e.Run.Model, last: root.start}
	if s := e.Run.SystemInstructions; b.cfg.content {
		b.system = b.cut(s)
	} else {
		b.lose(lostSystem, s != "")
	}
}

// emptied empties a map of the last run for the next, or makes the first.
func emptied[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	clear(m)
	return m
}

// setAnchor fixes what the run's ids derive from: its first record and
// where it stands in the input.
func (b *builder) setAnchor(e *formats.Event) {
	b.hashBuf = binary.BigEndian.AppendUint64(b.hashBuf[:0], uint64(e.Source.LineNo))
	b.hashBuf = append(b.hashBuf, e.Source.Line...)
	sum := sha256.Sum256(b.hashBuf)
	b.anchor, b.anchorSet = sum[:], true
}

// ids fixes the trace id the first time a span ends: from the session id if
// the source gave it by then, else from the run's first record.
func (b *builder) trace() trace.TraceID {
	if !b.traceSet {
		b.fixAnchor()
		var sum [sha256.Size]byte
		if b.session != "" {
			sum = b.hash("session", b.session)
		} else {
			sum = b.hash("run", string(b.anchor))
		}
		copy(b.traceID[:], sum[:])
		b.traceSet = true
	}
	return b.traceID
}

// fixAnchor fixes the run's anchor, if no record of the source did.
func (b *builder) fixAnchor() {
	if !b.anchorSet {
		sum := b.hash("line", strconv.Itoa(b.startLine))
		b.anchor, b.anchorSet = sum[:], true
	}
}

// spanID derives a span's id from the run's anchor and the span's key, so
// that runs sharing a session (and so a trace) get distinct ids. The anchor
// is fixed by then (b.trace), so the id is made once.
func (b *builder) spanID(s *span) trace.SpanID {
	if !s.idSet {
		sum := b.hash("span", string(b.anchor), s.key)
		copy(s.id[:], sum[:])
		if !s.id.IsValid() {
			s.id[7] = 1
		}
		s.idSet = true
	}
	return s.id
}

// hash is the SHA-256 of length-prefixed parts.
func (b *builder) hash(parts ...string) [sha256.Size]byte {
	buf := b.hashBuf[:0]
	for _, p := range parts {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(p)))
		buf = append(buf, p...)
	}
	b.hashBuf = buf
	return sha256.Sum256(buf)
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
	if info.Model != "" {
		s.set(attribute.String(keyModel, info.Model))
	}
	b.used(info.Model)
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

func (b *builder) event(s *span, name string, t time.Time, attrs ...attribute.KeyValue) {
	s.events = append(s.events, sdktrace.Event{Name: name, Time: t, Attributes: attrs})
	if t.Before(s.start) {
		s.start = t
	}
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
		b.setUsage(a.turn, a.turnUse)
		b.placed.Add(a.turnUse)
		b.turnUsed++
		a.turnUse, a.turnUseSet = formats.UsageInfo{}, false
	}
	b.end(a.turn, t)
	a.turn = nil
}

func (b *builder) startCall(e *formats.Event, a *agent, t time.Time) {
	id := e.Call.ID
	b.callUses[id]++
	key := "call\x00" + id
	if n := b.callUses[id]; n > 1 || id == "" {
		key += "\x00" + strconv.Itoa(n)
	}
	b.content(e.Agent, a, t)
	room := 8 // for the four below, a summary, MCP's two and an error type, in one allocation
	if b.cfg.content {
		room += 2
	}
	s := &span{key: key, parent: b.inner(a), name: opExecuteTool + " " + e.Call.Name, kind: trace.SpanKindInternal, start: t,
		callID: id, owner: a, attrs: make([]attribute.KeyValue, 0, room)}
	s.set(attribute.String(keyOperation, opExecuteTool), attribute.String(keyToolName, e.Call.Name),
		attribute.String(keyToolCallID, id), attribute.String(keyToolType, "function"))
	if e.Call.Summary != "" {
		s.set(attribute.String(keySummary, e.Call.Summary))
	}
	if server, ok := mcpServer(e.Call.Name); ok {
		s.set(attribute.String(keyMCPMethod, "tools/call"), attribute.String(keyMCPServer, server))
	}
	recordContent(b, s, keyToolArgs, e.Call.Args)
	b.calls = append(b.calls, s)
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

// cut keeps a text to --otlp-content-limit, whole characters only; a cut
// is a loss.
func (b *builder) cut(text string) string {
	if len(text) <= b.cfg.contentLimit {
		return text
	}
	b.lose(lostContentPast, true)
	return strings.ToValidUTF8(text[:b.cfg.contentLimit], "")
}

// setMessages puts an agent's prompts and answer on its span, with
// --otlp-content: what Langfuse and Phoenix show as its input and output.
func (b *builder) setMessages(a *agent) {
	if !b.cfg.content {
		return
	}
	var msgs []chatMessage
	for _, p := range a.prompts {
		if p != "" { // all of it past a limit of 0
			msgs = append(msgs, chatMessage{Role: "user", Parts: []msgPart{{Type: partText, Content: p}}})
		}
	}
	if len(msgs) > 0 {
		if j, err := formats.Marshal(msgs); err == nil {
			a.span.set(attribute.String(keyInputMessages, string(j)))
		}
	}
	if a.answer != "" {
		msgs := []chatMessage{{Role: "assistant", Parts: []msgPart{{Type: partText, Content: a.answer}}, FinishReason: "stop"}}
		if j, err := formats.Marshal(msgs); err == nil {
			a.span.set(attribute.String(keyOutputMsgs, string(j)))
		}
	}
}

// recordContent puts a tool call's arguments or result on its span when
// --otlp-content asks for it, cut at the limit; else it is a loss. It takes
// bytes too, so that they are made a string only when kept.
func recordContent[T ~string | ~[]byte](b *builder, s *span, key string, v T) {
	if len(v) == 0 {
		return
	}
	if !b.cfg.content {
		b.lose(lostContent, true)
		return
	}
	if len(v) > b.cfg.contentLimit {
		v = v[:b.cfg.contentLimit]
		b.lose(lostContentPast, true)
	}
	s.set(attribute.String(key, string(v)))
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
	if !b.cfg.content && e.Call.HasOutput() {
		b.lose(lostContent, true) // an output left undecoded is not empty
	} else {
		recordContent(b, s, keyToolResult, e.Call.Output)
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

// timedStart: the span's start is a source time.
func (s *span) timedStart(b *builder) bool { return b.timed && !s.start.IsZero() }

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

func (b *builder) endRun(e *formats.Event, t time.Time) {
	if !b.open {
		return
	}
	main := b.agents[""]
	root := main.span
	// What the source left open ends with the run, innermost first.
	for i := len(b.order) - 1; i >= 0; i-- {
		b.endAgent(b.order[i], b.agents[b.order[i]], t, formats.StatusUnknown, "")
	}
	b.endCalls(nil, t)
	b.endConversation(main)
	b.endTurn(main, t, formats.StatusUnknown)

	if e.Run.SessionID != "" {
		b.session = e.Run.SessionID
	}
	if e.Run.Provider != "" {
		b.provider = e.Run.Provider
	}
	b.used(e.Run.Model)
	// gen_ai.request.model only for a run that used one model; the models
	// it used in agentconv.models.
	root.attrs = dropAttr(root.attrs, keyModel)
	root.attrs = dropAttr(root.attrs, keyProvider)
	switch len(b.models) {
	case 0:
	case 1:
		root.set(attribute.String(keyModel, b.models[0]))
		root.set(attribute.StringSlice(keyModels, b.models))
	default:
		root.set(attribute.StringSlice(keyModels, b.models))
	}
	if p := b.providerOf(b.models...); p != "" {
		root.set(attribute.String(keyProvider, p))
	}
	// The run's totals: the source's, else the sum of every agent's
	// requests, as the run view counts them. Where chat spans carry the
	// requests, the root carries the totals as agentconv.usage.*, and as
	// gen_ai.usage.* only what the requests leave out, so that the
	// gen_ai.usage.* of the trace's spans add up to the totals.
	totals := formats.RunTotals(e.Usage, b.reqUsage)
	switch {
	case e.Usage.InputTokens.OK || e.Usage.OutputTokens.OK:
		root.set(attribute.String(keyUsageFrom, "source"))
	case totals.InputTokens.OK || totals.OutputTokens.OK:
		root.set(attribute.String(keyUsageFrom, "requests"))
	}
	if b.chats == 0 && b.turnUsed == 0 {
		b.setUsage(root, totals)
	} else {
		b.setTotals(root, totals)
		b.setUsage(root, remainder(totals, b.placed))
	}
	if e.Run.ExitCode.OK {
		root.set(attribute.Int(keyExitCode, e.Run.ExitCode.V))
	}
	if e.Cut {
		root.set(attribute.Bool(keyCut, true))
	}
	b.setMessages(main)
	b.setSystem(root, b.system)
	failed := e.Status == formats.Failed || e.Status == formats.Cancelled || e.Status == formats.Denied ||
		(e.Status == formats.StatusUnknown && e.Run.ExitCode.OK && e.Run.ExitCode.V != 0)
	if failed {
		root.fail(e.Status, e.Text)
		if e.Code != "" {
			// The provider's code says more than "failed".
			root.attrs = setAttr(root.attrs, attribute.String(keyErrorType, e.Code))
		}
	} else if e.Text != "" {
		b.event(root, evNotice, t, attribute.String(keySeverity, formats.Error.String()), attribute.String(keyText, e.Text))
	}
	end := t
	if d := e.Duration; d > 0 && (root.timedStart(b) || end.Before(root.start.Add(d))) && e.Time.IsZero() {
		end = root.start.Add(d)
	}
	b.end(root, end)
	b.open = false
	b.flushHeld()
}

// flushHeld hands on the spans held while the session id was not known,
// with it if it is known now, in the session's trace.
func (b *builder) flushHeld() {
	for i := range b.held {
		h := &b.held[i]
		h.traceID = b.trace()
		if b.session != "" {
			h.attrs = setAttr(h.attrs, attribute.String(keyConversation, b.session))
		}
		b.emit(h)
		*h = spanData{}
	}
	b.held = b.held[:0]
}

func dropAttr(kvs []attribute.KeyValue, key attribute.Key) []attribute.KeyValue {
	for i := range kvs {
		if kvs[i].Key == key {
			return append(kvs[:i], kvs[i+1:]...)
		}
	}
	return kvs
}

func setAttr(kvs []attribute.KeyValue, kv attribute.KeyValue) []attribute.KeyValue {
	for i := range kvs {
		if kvs[i].Key == kv.Key {
			kvs[i] = kv
			return kvs
		}
	}
	return append(kvs, kv)
}

// remainder is what of the totals the requests do not count: for each
// count, the difference, where it is more than none.
func remainder(totals, req formats.UsageInfo) formats.UsageInfo {
	var out formats.UsageInfo
	for _, f := range usageKeys {
		if t, r := f.of(&totals), f.of(&req); t.OK && t.V > r.V {
			*f.of(&out) = formats.Some(t.V - r.V)
		}
	}
	switch c := totals.CostUSD.V - req.CostUSD.V; {
	case totals.CostUSD.OK && !req.CostUSD.OK:
		out.CostUSD = totals.CostUSD // only a run total is known
	case totals.CostUSD.OK && c > 1e-12:
		out.CostUSD = formats.Some(c)
	}
	return out
}

// usageKeys are the token counts of UsageInfo and their keys.
var usageKeys = []struct {
	key string
	of  func(*formats.UsageInfo) *formats.Opt[int64]
}{
	{keyInputTokens, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.InputTokens }},
	{keyOutputTokens, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.OutputTokens }},
	{keyCacheRead, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.CacheReadTokens }},
	{keyCacheCreation, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.CacheWriteTokens }},
	{keyReasoning, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.ReasoningTokens }},
}

// totalKey is the agentconv.usage.* twin of a gen_ai.usage.* key.
func totalKey(key string) string { return keyTotalPrefix + strings.TrimPrefix(key, "gen_ai.usage.") }

// setUsage puts counts on a span as gen_ai.usage.*: what the span itself
// used, counted nowhere else in the trace.
func (b *builder) setUsage(s *span, u formats.UsageInfo) { setUsageAs(s, u, false) }

// setTotals puts an agent's totals on its span as agentconv.usage.*.
func (b *builder) setTotals(s *span, u formats.UsageInfo) { setUsageAs(s, u, true) }

func setUsageAs(s *span, u formats.UsageInfo, total bool) {
	for _, f := range usageKeys {
		if v := f.of(&u); v.OK {
			key := f.key
			if total {
				key = totalKey(key)
			}
			s.set(attribute.Int64(key, v.V))
		}
	}
	if u.CostUSD.OK {
		key := keyCost
		if total {
			key = totalKey(key)
		}
		s.set(attribute.Float64(key, u.CostUSD.V))
	}
}

// end closes a span and hands it on. A parent is stretched to hold its
// children, so that arrival times and measured durations never make a child
// stick out of its parent.
func (b *builder) end(s *span, t time.Time) {
	if b.session != "" {
		s.attrs = setAttr(s.attrs, attribute.String(keyConversation, b.session))
	}
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
		start: s.start, end: s.end, attrs: s.attrs, events: s.events, status: s.status,
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
	if b.session == "" && b.open {
		b.held = append(b.held, b.ended)
		return
	}
	b.flushHeld()
	b.ended.traceID = b.trace()
	b.emit(&b.ended)
}
