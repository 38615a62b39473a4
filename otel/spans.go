package otel

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
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
	// keyAggregate marks a chat span that stands for model requests the
	// source does not list one by one: a run's (or a turn's) totals beyond
	// the requests it gave.
	keyAggregate = "agentconv.chat.aggregate"

	// The backends' own names for what they show: the session (Phoenix
	// reads OpenInference's session.id, Langfuse langfuse.session.id), the
	// kind of a span (OpenInference's span kind, Langfuse's observation
	// type), an agent's input and output as text, a request's usage as
	// Langfuse counts it (so that its total counts reasoning once), and a
	// request's cost as OpenInference names it.
	keySessionID     = "session.id"
	keyLangfuseSess  = "langfuse.session.id"
	keyOIKind        = "openinference.span.kind"
	keyLangfuseType  = "langfuse.observation.type"
	keyInputValue    = "input.value"
	keyOutputValue   = "output.value"
	keyInputMime     = "input.mime_type"
	keyOutputMime    = "output.mime_type"
	keyLangfuseUsage = "langfuse.observation.usage_details"
	keyOICost        = "llm.cost.total"
	keyOITotal       = "llm.token_count.total"

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
	// lastText is its latest whole message's text, with --otlp-content:
	// its answer where the source names none.
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
	// pending: the chat spans that ended without a cost of their own,
	// with their tokens, held until the run's end says whether the source
	// gives a cost for the whole run, which is then split over them.
	pending []pendingChat

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
		b.endAgent(e.Agent, a, t, e.Status, e.Report())
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
		b.event(b.inner(a), evNotice, t, attribute.String(keySeverity, e.Severity.String()), attribute.String(keyText, e.NoticeText()))
	case formats.Compaction:
		b.event(b.inner(a), evCompaction, t, attribute.String(keyText, e.Summary()))
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
			a.answer = b.cut(e.AnswerText())
		default:
			b.lose(lostAnswers, e.AnswerText() != "")
		}
	case formats.UserMessage:
		switch {
		case e.Prompt() == "":
		case b.cfg.content && !a.done:
			a.prompts = append(a.prompts, b.cut(e.Prompt()))
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
		pending: b.pending[:0], prevSession: b.prevSession, prevTrace: b.prevTrace, prevRoot: b.prevRoot,
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
	root.kinds("AGENT", "agent")
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

// trace is the run's trace id, from the run's first record: each run is
// a trace of its own (a session's runs are linked by their session id and
// by a link from each run's root to the previous run's), so that a
// backend shows each run's prompt and answer, and no trace grows with its
// session.
func (b *builder) trace() trace.TraceID {
	if !b.traceSet {
		b.fixAnchor()
		sum := b.hash("run", string(b.anchor))
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
	s.kinds("AGENT", "agent")
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
	var texts []string
	for _, p := range a.prompts {
		if p != "" { // all of it past a limit of 0
			msgs = append(msgs, chatMessage{Role: "user", Parts: []msgPart{{Type: partText, Content: p}}})
			texts = append(texts, p)
		}
	}
	// Phoenix shows an agent's input.value and output.value as its input
	// and output, and so does Langfuse before the messages: the prompts
	// and the answer as text.
	if len(msgs) > 0 {
		if j, err := formats.Marshal(msgs); err == nil {
			a.span.set(attribute.String(keyInputMessages, string(j)))
		}
		a.span.set(attribute.String(keyInputValue, strings.Join(texts, "\n\n")), attribute.String(keyInputMime, "text/plain"))
	}
	answer := a.answer
	if answer == "" {
		answer = a.lastText // a source that names no answer (a session file): its last text
	}
	if answer != "" {
		msgs := []chatMessage{{Role: "assistant", Parts: []msgPart{{Type: partText, Content: answer}}, FinishReason: "stop"}}
		if j, err := formats.Marshal(msgs); err == nil {
			a.span.set(attribute.String(keyOutputMsgs, string(j)))
		}
		a.span.set(attribute.String(keyOutputValue, answer), attribute.String(keyOutputMime, "text/plain"))
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
	b.setTotals(root, totals)
	b.placeRest(root, totals, t)
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
		root.fail(e.Status, e.ErrorText())
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
	if b.session != "" && b.session == b.prevSession && b.prevRoot.IsValid() {
		root.links = append(root.links, sdktrace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: b.prevTrace, SpanID: b.prevRoot, TraceFlags: trace.FlagsSampled})})
	}
	b.end(root, end)
	b.open = false
	b.flushHeld()
	b.prevSession, b.prevTrace, b.prevRoot = b.session, b.trace(), b.spanID(root)
}

// placeRest puts on chat spans what of the run's totals its requests'
// spans do not carry, so that over the trace's spans each gen_ai.usage.*
// adds up to the run's totals: tokens beyond the requests' (or all of them,
// where the source gives only the run's) on a chat span marked as
// aggregated, and a cost the source gives only for the run split over the
// chat spans by their tokens. Then the chat spans held for it go.
func (b *builder) placeRest(root *span, totals formats.UsageInfo, t time.Time) {
	rest := remainder(totals, b.placed)
	// A cost of the run that the requests' spans do not carry goes to the
	// chat spans without a cost of their own, by their tokens (nothing
	// left over: a share of 0, so that no backend prices them itself).
	split := totals.CostUSD.OK && len(b.pending) > 0
	costLeft := rest.CostUSD.V
	if split {
		rest.CostUSD = formats.Opt[float64]{}
	}
	if counted(rest) || rest.CostUSD.OK && rest.CostUSD.V != 0 {
		model := ""
		if len(b.models) == 1 {
			model = b.models[0]
		}
		b.aggregateChat(root, "chat\x00run", model, rest, root.start, t)
	}
	if split {
		weights := make([]int64, len(b.pending))
		for i := range b.pending {
			weights[i] = b.pending[i].weight
		}
		for i, c := range splitCost(costLeft, weights) {
			d := &b.pending[i].data
			d.attrs = append(d.attrs, attribute.Float64(keyCost, c), attribute.Float64(keyOICost, c))
		}
	}
	for i := range b.pending {
		b.hand(&b.pending[i].data)
		b.pending[i] = pendingChat{}
	}
	b.pending = b.pending[:0]
}

// counted: a usage has a token count.
func counted(u formats.UsageInfo) bool {
	for _, f := range usageKeys {
		if f.of(&u).OK {
			return true
		}
	}
	return false
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

// pendingChat is a chat span held for its share of the run's cost.
type pendingChat struct {
	data   spanData
	weight int64
}

// tokens is what a cost is split by: the input tokens (cache included)
// and the output tokens.
func tokens(u formats.UsageInfo) int64 { return u.InputTokens.V + u.OutputTokens.V }

// splitCost splits a cost over spans by their weights (evenly where none
// has any), in nano-dollars, with what rounding leaves over on the
// heaviest, so that the parts add up to the cost.
func splitCost(cost float64, weights []int64) []float64 {
	parts := make([]float64, len(weights))
	if len(weights) == 0 {
		return parts
	}
	var sum float64
	heaviest := 0
	for i, w := range weights {
		sum += float64(w)
		if w > weights[heaviest] {
			heaviest = i
		}
	}
	nanos := math.Round(cost * 1e9)
	given := 0.0
	for i, w := range weights {
		if i == heaviest {
			continue
		}
		share := 1 / float64(len(weights))
		if sum > 0 {
			share = float64(w) / sum
		}
		parts[i] = math.Floor(nanos*share) / 1e9
		given += parts[i]
	}
	parts[heaviest] = cost - given
	return parts
}

// flushHeld hands on the spans held while the session id was not known,
// with it if it is known now, in the session's trace.
func (b *builder) flushHeld() {
	for i := range b.held {
		h := &b.held[i]
		h.traceID = b.trace()
		h.attrs = b.sessionAttrs(h.attrs)
		b.emit(h)
		*h = spanData{}
	}
	b.held = b.held[:0]
}

// sessionAttrs puts the run's session id on a span, as the GenAI
// conventions, Langfuse and OpenInference (Phoenix) name it, so that each
// backend shows the runs of a session together.
func (b *builder) sessionAttrs(kvs []attribute.KeyValue) []attribute.KeyValue {
	if b.session == "" {
		return kvs
	}
	kvs = setAttr(kvs, attribute.String(keyConversation, b.session))
	kvs = setAttr(kvs, attribute.String(keyLangfuseSess, b.session))
	return setAttr(kvs, attribute.String(keySessionID, b.session))
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
		} else {
			s.set(attribute.Float64(keyOICost, u.CostUSD.V))
		}
		s.set(attribute.Float64(key, u.CostUSD.V))
	}
	if !total {
		if j := langfuseUsage(u); j != "" {
			s.set(attribute.String(keyLangfuseUsage, j))
		}
		// Phoenix's converter totals a span only where it has both
		// counts; its total is what Phoenix sums.
		if u.InputTokens.OK || u.OutputTokens.OK {
			s.set(attribute.Int64(keyOITotal, u.InputTokens.V+u.OutputTokens.V))
		}
	}
}

// langfuseUsage is a request's usage as Langfuse counts it: input less
// the cache reads and writes, which it counts apart, output less the
// reasoning, and the total, so that no token counts twice in it (Langfuse
// up to 3.205 added reasoning to a total of the gen_ai.usage.* keys that
// counts it already). "" without tokens.
func langfuseUsage(u formats.UsageInfo) string {
	if !u.InputTokens.OK && !u.OutputTokens.OK && !u.CacheReadTokens.OK && !u.CacheWriteTokens.OK && !u.ReasoningTokens.OK {
		return ""
	}
	b := []byte{'{'}
	add := func(k string, v int64) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		b = strconv.AppendInt(b, v, 10)
	}
	// Langfuse adds the parts up: where a source's parts exceed its
	// input or output (a run total that contradicts its requests), they
	// are cut to them, so that the sum stays the count.
	in, out := u.InputTokens.V, u.OutputTokens.V
	read := min(u.CacheReadTokens.V, in)
	write := min(u.CacheWriteTokens.V, in-read)
	reasoning := min(u.ReasoningTokens.V, out)
	if !u.InputTokens.OK {
		read, write = u.CacheReadTokens.V, u.CacheWriteTokens.V // only the parts are known
		in = read + write
	}
	if !u.OutputTokens.OK {
		reasoning = u.ReasoningTokens.V
		out = reasoning
	}
	if u.InputTokens.OK {
		add("input", in-read-write)
	}
	if u.OutputTokens.OK {
		add("output", out-reasoning)
	}
	if u.CacheReadTokens.OK {
		add("input_cached_tokens", read)
	}
	if u.CacheWriteTokens.OK {
		add("input_cache_creation", write)
	}
	if u.ReasoningTokens.OK {
		add("output_reasoning_tokens", reasoning)
	}
	add("total", in+out)
	return string(append(b, '}'))
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
		b.pending = append(b.pending, pendingChat{data: b.ended, weight: s.weight})
		return
	}
	b.hand(&b.ended)
}

// hand gives a span that ended to emit, in the run's trace; while the
// run's session id is not known, it is held.
func (b *builder) hand(d *spanData) {
	if b.session == "" && b.open {
		b.held = append(b.held, *d)
		return
	}
	b.flushHeld()
	d.traceID = b.trace()
	b.emit(d)
}
