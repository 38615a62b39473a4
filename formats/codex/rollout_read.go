package codex

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// rolloutLine is the envelope of every rollout line.
type rolloutLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// payload is every field of the payloads this reader reads: session_meta,
// turn_context, compacted, the response items and the event messages.
type payload struct {
	Type string `json:"type"`
	// session_meta
	ID            string          `json:"id"`
	Cwd           string          `json:"cwd"`
	CLIVersion    string          `json:"cli_version"`
	Source        json.RawMessage `json:"source"`
	ModelProvider string          `json:"model_provider"`
	// the system prompt: instructions (older), base_instructions.text
	Instructions     json.RawMessage `json:"instructions"`
	BaseInstructions json.RawMessage `json:"base_instructions"`
	// agentconv's: the session id of a session it wrote from another
	// dialect, whose thread id is derived from it
	SourceSession *string `json:"agentconv_session_id"`
	// agentconv's, on the session_meta of a rollout it wrote
	Originator string `json:"originator"`
	// turn_context
	Model  string `json:"model"`
	TurnID string `json:"turn_id"`
	// response items
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Author    string          `json:"author"` // agent_message's sender
	Output    json.RawMessage `json:"output"`
	Status    string          `json:"status"`
	Action    json.RawMessage `json:"action"`
	Tools     json.RawMessage `json:"tools"`
	// event messages (and compacted's message)
	Message          *string         `json:"message"`
	Text             string          `json:"text"`
	Info             *tokenInfo      `json:"info"`
	LastAgentMessage *string         `json:"last_agent_message"`
	Reason           string          `json:"reason"`
	Command          json.RawMessage `json:"command"`
	ExitCode         *int            `json:"exit_code"`
	Duration         json.RawMessage `json:"duration"`
	AggregatedOutput string          `json:"aggregated_output"`
	Stdout           string          `json:"stdout"`
	Stderr           string          `json:"stderr"`
	Success          *bool           `json:"success"`
	Changes          json.RawMessage `json:"changes"`
	Invocation       *struct {
		Server    string          `json:"server"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"invocation"`
	Result json.RawMessage `json:"result"`
	Plan   []planStep      `json:"plan"`
	// task_complete's error, in newer Codex the only record of a failed
	// turn: {"message", "codex_error_info"}
	Error       json.RawMessage `json:"error"`
	Explanation *string         `json:"explanation"`
	// item_completed's item (0.171)
	Item json.RawMessage `json:"item"`
	// token_usage_record (0.171): a request's usage, and the thread's
	// running total, which the token_count after it repeats
	ResponseID  string          `json:"response_id"`
	Usage       *tokenUsage     `json:"usage"`
	ThreadUsage json.RawMessage `json:"thread_token_usage"`
}

type planStep struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

type tokenInfo struct {
	Total json.RawMessage `json:"total_token_usage"`
	Last  *tokenUsage     `json:"last_token_usage"`
}

// tokenUsage is Codex's TokenUsage: input_tokens include the cached ones,
// output_tokens the reasoning ones, as the event model counts them.
type tokenUsage struct {
	InputTokens           *int64 `json:"input_tokens"`
	CachedInputTokens     *int64 `json:"cached_input_tokens"`
	OutputTokens          *int64 `json:"output_tokens"`
	ReasoningOutputTokens *int64 `json:"reasoning_output_tokens"`
	TotalTokens           *int64 `json:"total_tokens"`
}

// totalKey is a running total of token counts as a key, the same however
// Codex orders or spaces its fields; "" for none.
func totalKey(raw json.RawMessage) string {
	var m map[string]json.Number
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return ""
	}
	b, _ := json.Marshal(m) // keys sorted
	return string(b)
}

func (u *tokenUsage) info() formats.UsageInfo {
	return formats.UsageInfo{InputTokens: formats.OptFrom(u.InputTokens), CacheReadTokens: formats.OptFrom(u.CachedInputTokens),
		OutputTokens: formats.OptFrom(u.OutputTokens), ReasoningTokens: formats.OptFrom(u.ReasoningOutputTokens),
		TotalTokens: formats.OptFrom(u.TotalTokens)}
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// contextType names the messages Codex adds to the conversation
// (instructions, the environment), which are kept raw.
const contextType = "response_item/message (instructions or context Codex adds)"

// pre is an event waiting for the reader to know which run it belongs to:
// records that may open the next prompt's turn (task_started, injected
// context, turn_context), and user messages that may be the prompt.
type pre struct {
	ev   *formats.Event
	cand bool // a user message that is the prompt unless Codex says otherwise
}

// rolloutReader reads a rollout. Each typed prompt starts a run; the runs
// of one rollout share its thread id. Codex writes most things twice, once
// as the response item the model sees and once as the event the UI shows
// (user_message and agent_message, agent_reasoning, exec_command_end and
// function_call_output): the first of a pair makes the event and the other
// record is carried by the next event, so that a same-dialect copy keeps it.
type rolloutReader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	q     []*formats.Event
	// blocked is the run's RunStart, waiting for its model (the
	// turn_context after the prompt): it and what follows are not given
	// out yet.
	blocked *formats.Event
	preface []pre
	done    bool

	// the record being read, and the records that made no event, carried
	// by the next one
	src formats.Carrier

	// the session
	session    string
	cwd        string
	version    string
	system     string // the session's system prompt, from its session_meta
	provider   string
	model      string
	sawUser    bool   // Codex echoes prompts as user_message events here
	lastTotal  string // the running total of the last usage read (totalKey)
	meta       bool   // a session_meta was read
	searchSeen int
	everRun    bool
	// ownTurns: the turn ids agentconv gives the tasks it writes
	// (<id>-turn-N), in a rollout it wrote; ownTask: the task that started
	// last, and has not completed, is one of them.
	ownTurns string
	ownTask  bool
	// depth: how deep a subagent's rollout this is (0: the rollout read);
	// warnedSub: the reader said it cannot read subagents' rollouts.
	depth     int
	warnedSub bool

	run rolloutRun
}

// rolloutRun follows one run.
type rolloutRun struct {
	open       bool
	busy       bool // events came after the RunStart
	prompted   bool
	turnOpen   bool
	started    bool // a task_started came: a task_complete ends the run
	completed  bool // the last task ended (task_complete or turn_aborted)
	aborted    bool
	errText    string // an error after the last output
	errCode    string // its code, where Codex gives one
	lastWasMsg bool   // the last output was an assistant message
	calls      map[string]*rolloutCall
	open0      int // calls started and not ended
	// echoes: what one form of a record gave, which the other form is
	// expected to repeat (from response items, and from events)
	itemText, eventText, itemThink, eventThink []string
	echoUser, echoCompact                      []string
	userItem                                   []string // prompts made from response items, for their user_message
}

type rolloutCall struct {
	name       string
	started    bool
	ended      bool
	open       int  // calls of the id without their result
	startEvent bool // started by an event_msg, not a response item
	endEvent   bool
	echoed     bool // the other form of the end came too
}

func newRolloutReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &rolloutReader{lines: formats.NewLineReader(r), opts: o, src: formats.Carrier{Dialect: o.Dialect}}
}

func (r *rolloutReader) Next() (*formats.Event, error) {
	for {
		if len(r.q) > 0 && r.q[0] != r.blocked {
			e := r.q[0]
			r.q[0] = nil
			r.q = r.q[1:]
			return e, nil
		}
		if r.done {
			if r.blocked != nil {
				r.blocked = nil
				continue
			}
			return nil, io.EOF
		}
		b, err := r.lines.Next()
		if err == io.EOF {
			r.finish()
			r.done = true
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := r.record(b, r.lines.Line()); err != nil {
			return nil, err
		}
	}
}

// stamp gives an event the current record: the first event of a record
// carries it, with the records held before it; the others are Continued.
func (r *rolloutReader) stamp(e *formats.Event) *formats.Event { return r.src.Stamp(e, true) }

// emit queues an event of the current record in the open run.
func (r *rolloutReader) emit(e *formats.Event) {
	r.ensureRun()
	r.place(r.stamp(e))
}

// own queues an event the reader makes without a record of its own.
func (r *rolloutReader) own(e *formats.Event) {
	e.Source = formats.Source{Dialect: r.opts.Dialect, Type: r.src.Type, LineNo: r.src.Line, Made: true}
	if e.Time.IsZero() {
		e.Time = r.src.Time
	}
	r.q = append(r.q, e)
}

// hold keeps the current record for the next event.
func (r *rolloutReader) hold() { r.src.Hold() }

// ensureRun opens a run if none is open: its RunStart waits for the model.
func (r *rolloutReader) ensureRun() {
	if r.run.open {
		return
	}
	r.startRun(r.stamp(&formats.Event{Kind: formats.RunStart}))
}

func (r *rolloutReader) startRun(start *formats.Event) {
	start.Kind = formats.RunStart
	start.Run = formats.RunInfo{SessionID: r.session, Model: r.model, Cwd: r.cwd, Provider: r.provider,
		AgentName: AgentName, AgentVersion: r.version, SystemInstructions: r.system}
	if start.Run.Provider == "" {
		start.Run.Provider = Provider
	}
	r.run = rolloutRun{open: true}
	r.everRun = true
	r.q = append(r.q, start)
	r.blocked = start
}

// release gives out the waiting RunStart, with the model now known.
func (r *rolloutReader) release() {
	if r.blocked != nil {
		if r.blocked.Run.Model == "" {
			r.blocked.Run.Model = r.model
		}
		r.blocked = nil
	}
}

// complete reports whether the open run ended as Codex ends a task.
func (r *rolloutReader) complete() bool {
	s := &r.run
	switch {
	case s.aborted || s.errText != "":
		return true
	case s.started:
		return s.completed
	}
	return s.prompted && s.lastWasMsg && s.open0 == 0
}

// endRun closes the open run if it ended: at the next prompt, session or
// the end of the input. A run that did not end is left to the pipeline,
// which closes it as cut.
func (r *rolloutReader) endRun(carry bool) {
	if !r.run.open {
		return
	}
	r.release()
	if r.complete() {
		end := &formats.Event{Kind: formats.RunEnd, Status: formats.Completed,
			Run: formats.RunInfo{SessionID: r.session, Provider: r.blockedProvider(), AgentName: AgentName}}
		switch {
		case r.run.aborted:
			end.Status = formats.Cancelled
		case r.run.errText != "":
			end.Status, end.Text, end.Code = formats.Failed, r.run.errText, r.run.errCode
		}
		if carry && len(r.src.Held) > 0 {
			r.q = append(r.q, r.stamp(end))
		} else {
			r.own(end)
		}
	}
	r.run = rolloutRun{}
}

func (r *rolloutReader) blockedProvider() string {
	if r.provider != "" {
		return r.provider
	}
	return Provider
}

// finish ends the input: what waited is decided, the run ends if it
// completed, and records still held go out as one unknown event.
func (r *rolloutReader) finish() {
	r.src.Rec, r.src.Line, r.src.Carried = nil, r.lines.Line(), true
	r.resolve()
	r.endRun(true)
	if len(r.src.Held) > 0 {
		r.src.Type = r.src.HeldType
		if !r.everRun {
			// Records and no run: a run for them, which the pipeline cuts.
			r.ensureRun()
		}
		r.q = append(r.q, r.stamp(&formats.Event{Kind: formats.Raw}))
	}
	r.release()
}

// resolve decides what waited in the preface: a user message is a prompt
// unless Codex echoes prompts as user_message events in this file (then it
// was context Codex added).
func (r *rolloutReader) resolve() {
	if len(r.preface) == 0 {
		return
	}
	p := r.preface
	r.preface = nil
	start := 0
	for i, e := range p {
		if e.cand && !r.sawUser {
			r.prompt(p[start:i], e.ev, false)
			start = i + 1
		}
	}
	for _, e := range p[start:] {
		if e.cand {
			e.ev.Kind, e.ev.Text, e.ev.Source.Type = formats.Raw, "", contextType
		}
		r.place(e.ev)
	}
}

// prompt starts the prompt's run (a new one if the open run had a prompt)
// with the events before it, and queues it.
func (r *rolloutReader) prompt(before []pre, ev *formats.Event, fromEvent bool) {
	if r.run.prompted || r.run.started && r.run.completed && !r.ownTask {
		// A prompt after a task ended starts a run, even after a run
		// without a prompt (one agentconv wrote, which Codex resumed);
		// but in a rollout agentconv wrote, a run of its own tasks ends at
		// the next session_meta, as it writes runs, and a task of it
		// without a prompt may come before one with a prompt.
		r.endRun(false)
	}
	if !r.run.open {
		r.startRun(&formats.Event{Time: ev.Time, Source: formats.Source{Dialect: r.opts.Dialect, Type: ev.Source.Type, LineNo: ev.Source.LineNo, Made: true}})
	}
	for _, e := range before {
		if e.cand {
			e.ev.Kind, e.ev.Text, e.ev.Source.Type = formats.Raw, "", contextType
		}
		r.place(e.ev)
	}
	r.run.prompted = true
	if !fromEvent {
		r.run.userItem = append(r.run.userItem, ev.Prompt())
	}
	r.q = append(r.q, ev)
}

// toPreface keeps an event of the current record until the prompt is known.
func (r *rolloutReader) toPreface(e *formats.Event, cand bool) {
	r.ensureRun()
	r.preface = append(r.preface, pre{ev: r.stamp(e), cand: cand})
}

// inPreface says whether a preface record's events wait.
func (r *rolloutReader) inPreface() bool {
	return r.run.prompted || len(r.preface) > 0 || r.run.started && r.run.completed
}

// wholeLine is a rollout line decoded at once, its payload with it: most
// lines are, and the payload (most of a line) is then scanned once, not
// skipped over as raw bytes and decoded again.
type wholeLine struct {
	Timestamp string   `json:"timestamp"`
	Type      string   `json:"type"`
	Payload   *payload `json:"payload"`
}

func (r *rolloutReader) record(b []byte, n int) error {
	var l rolloutLine
	var p payload
	if w := (wholeLine{}); len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &w) == nil && w.Payload != nil {
		l.Timestamp, l.Type, p = w.Timestamp, w.Type, *w.Payload
		return r.decoded(b, n, &l, &p)
	}
	// The rest (odd numbers to repair, a payload that is no object, a
	// malformed line) as the envelope, then the payload.
	if err := r.opts.Report.UnmarshalObject(n, b, &l); err != nil {
		return err
	}
	if len(l.Payload) > 0 && l.Payload[0] == '{' {
		if err := r.opts.Report.Unmarshal(n, l.Payload, &p); err != nil {
			if !json.Valid(l.Payload) {
				return err
			}
			r.opts.Report.Warn(n, "a Codex %s with fields of unexpected types; kept as an unknown event", l.Type)
			p = payload{Type: formats.TypeOf(l.Payload)}
			l.Type = "unexpected " + l.Type
		}
	} else if l.Type != "" {
		r.opts.Report.Warn(n, "a Codex %s line without a payload object; kept as an unknown event", l.Type)
		l.Type = "unexpected " + l.Type
	}
	return r.decoded(b, n, &l, &p)
}

// decoded gives the events of a line decoded into its envelope l and its
// payload p.
func (r *rolloutReader) decoded(b []byte, n int, l *rolloutLine, p *payload) error {
	r.src.Begin(append([]byte(nil), b...), n)
	r.src.Type = l.Type
	if p.Type != "" {
		r.src.Type = l.Type + "/" + p.Type
	}
	if t, err := time.Parse(time.RFC3339Nano, l.Timestamp); err == nil {
		r.src.Time = t
	}
	if preface := r.isPreface(l.Type, p); !preface && len(r.preface) > 0 {
		r.resolve()
	}
	switch l.Type {
	case "session_meta":
		r.sessionMeta(p)
	case "turn_context":
		r.turnContext(p)
	case "response_item":
		r.responseItem(p, n)
	case "event_msg":
		r.eventMsg(p, n)
	case "token_usage_record":
		// Codex 0.171 records a request's usage when the response ends,
		// before its calls' outputs; the token_count it prints after them
		// repeats it.
		if p.Usage == nil {
			r.emit(&formats.Event{Kind: formats.Raw})
			break
		}
		r.lastTotal = totalKey(p.ThreadUsage)
		r.begun()
		r.emit(&formats.Event{Kind: formats.Usage, Usage: p.Usage.info(), Response: formats.Response{ID: p.ResponseID, Model: r.model}})
	case "compacted":
		r.begun()
		if r.echo(&r.run.echoCompact) {
			r.hold()
			break
		}
		text := ""
		if p.Message != nil {
			text = *p.Message
		}
		r.emit(&formats.Event{Kind: formats.Compaction, Text: text})
		r.run.echoCompact = append(r.run.echoCompact, "")
	default:
		if l.Type == "" {
			r.opts.Report.Warn(n, "a line without a \"type\"; kept as an unknown event")
		}
		r.emit(&formats.Event{Kind: formats.Raw})
	}
	r.hold()
	return nil
}

// isPreface: records that come before a prompt in its turn.
func (r *rolloutReader) isPreface(typ string, p *payload) bool {
	switch typ {
	case "turn_context":
		return true
	case "response_item":
		return p.Type == "message" && p.Role != "assistant"
	case "event_msg":
		return p.Type == "task_started" || p.Type == "turn_started" || p.Type == "user_message"
	}
	return false
}

func (r *rolloutReader) sessionMeta(p *payload) {
	id := p.ID
	if s := p.SourceSession; s != nil && (*s == "" || sessionUUID(*s) == p.ID) {
		id = *s
	}
	if r.meta && id == r.session {
		// The session's meta again: agentconv writes it before each run
		// of a session that has no prompt to start it.
		if r.run.open && r.run.busy {
			r.resolve()
			r.endRun(false)
			r.startRun(r.stamp(&formats.Event{}))
		}
		return
	}
	if r.run.open {
		r.resolve()
		r.endRun(false)
	}
	r.meta = true
	r.session, r.cwd, r.version = id, p.Cwd, p.CLIVersion
	r.ownTurns, r.ownTask = "", false
	if p.Originator == "agentconv" {
		r.ownTurns = p.ID + "-turn-"
	}
	r.system = systemPrompt(p)
	r.provider = ""
	if p.ModelProvider != "" && p.ModelProvider != "openai" {
		r.provider = p.ModelProvider
	}
	r.lastTotal, r.sawUser = "", false
	if parent := subagentParent(p.Source); parent != "" && r.depth == 0 {
		r.opts.Report.Warn(r.src.Line, "the rollout of a subagent of thread %s; read as a session of its own", parent)
	}
	r.startRun(r.stamp(&formats.Event{}))
}

// systemPrompt is the system prompt a session_meta gives: base_instructions
// {text} in newer rollouts, instructions (a string, or null) in older.
func systemPrompt(p *payload) string {
	var base struct {
		Text string `json:"text"`
	}
	if b := p.BaseInstructions; len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &base) == nil && base.Text != "" {
		return base.Text
	}
	var s string
	if b := p.Instructions; len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &s) == nil {
		return s
	}
	return ""
}

// subagentParent is the parent thread a subagent's session source names.
func subagentParent(src json.RawMessage) string {
	var s struct {
		Subagent struct {
			ThreadSpawn struct {
				Parent string `json:"parent_thread_id"`
			} `json:"thread_spawn"`
		} `json:"subagent"`
	}
	if len(src) == 0 || src[0] != '{' || json.Unmarshal(src, &s) != nil {
		return ""
	}
	return s.Subagent.ThreadSpawn.Parent
}

func (r *rolloutReader) turnContext(p *payload) {
	if p.Cwd != "" && r.cwd == "" {
		r.cwd = p.Cwd
	}
	if r.blocked != nil && r.run.prompted {
		if p.Model != "" {
			r.blocked.Run.Model, r.model = p.Model, p.Model
		}
		if r.blocked.Run.Cwd == "" {
			r.blocked.Run.Cwd = p.Cwd
		}
		r.release()
		return
	}
	if p.Model == "" || p.Model == r.model {
		return
	}
	r.model = p.Model
	if r.blocked != nil {
		r.blocked.Run.Model = p.Model
		return
	}
	e := &formats.Event{Kind: formats.ModelChange, Run: formats.RunInfo{Model: p.Model}}
	if r.inPreface() {
		r.toPreface(e, false)
	} else {
		r.emit(e)
	}
}

// output marks a record of the model's work: the run's start is known,
// and an error before it did not end the run.
func (r *rolloutReader) output() {
	r.begun()
	r.run.errText, r.run.errCode = "", ""
	r.run.lastWasMsg = false
}

// begun: the run's start is known.
func (r *rolloutReader) begun() {
	r.ensureRun()
	r.release()
}

// place queues an event in the open run, and follows the task it starts.
func (r *rolloutReader) place(e *formats.Event) {
	r.run.busy = true
	if e.Kind == formats.TurnStart {
		r.run.started, r.run.completed, r.run.aborted, r.run.turnOpen = true, false, false, true
	}
	r.q = append(r.q, e)
}

// echo reports whether the current record repeats one the other form of
// it already gave, and forgets that one.
func (r *rolloutReader) echo(list *[]string, texts ...string) bool {
	if len(texts) == 0 {
		texts = []string{""}
	}
	rest := append([]string(nil), *list...)
	for _, t := range texts {
		i := indexOf(rest, t)
		if i < 0 && len(rest) > 0 {
			// Codex writes both forms of everything, with the same text;
			// a file whose texts were redacted one way and the other
			// still pairs them in order.
			i = 0
		}
		if i < 0 {
			return false
		}
		rest = append(rest[:i], rest[i+1:]...)
	}
	*list = rest
	return true
}

func indexOf(list []string, s string) int {
	for i, t := range list {
		if t == s || strings.TrimSpace(t) == strings.TrimSpace(s) {
			return i
		}
	}
	return -1
}

func messageText(content json.RawMessage) string {
	if len(content) > 0 && content[0] == '"' {
		var s string
		json.Unmarshal(content, &s)
		return s
	}
	var parts []contentPart
	json.Unmarshal(content, &parts)
	var b strings.Builder
	for _, c := range parts {
		b.WriteString(c.Text)
	}
	return b.String()
}

func summaryTexts(raw json.RawMessage) []string {
	var parts []contentPart
	json.Unmarshal(raw, &parts)
	var out []string
	for _, c := range parts {
		if c.Text != "" {
			out = append(out, c.Text)
		}
	}
	return out
}

func (r *rolloutReader) responseItem(p *payload, n int) {
	switch p.Type {
	case "message":
		text := messageText(p.Content)
		switch {
		case p.Role == "assistant":
			r.output()
			r.run.lastWasMsg = true
			if text == "" || r.echo(&r.run.eventText, text) {
				return // nothing said, or the agent_message said it
			}
			r.emit(&formats.Event{Kind: formats.Message, Text: text})
			r.run.itemText = append(r.run.itemText, text)
		case p.Role != "user" || injected(text):
			// Developer and system instructions, context Codex adds: not
			// prompts, kept as they are.
			e := &formats.Event{Kind: formats.Raw, Source: formats.Source{Type: contextType}}
			if r.inPreface() {
				r.toPreface(e, false)
			} else {
				r.emit(e)
			}
		case r.echo(&r.run.echoUser, text):
			// The model's copy of a prompt the user_message gave.
		default:
			r.toPreface(&formats.Event{Kind: formats.UserMessage, Text: text}, true)
		}
	case "agent_message":
		// A message of another agent of the team (0.171's subagents): a
		// task for a subagent (its prompt), or a subagent's FINAL_ANSWER to
		// its parent, which the model reads as a user message.
		ev := &formats.Event{Kind: formats.UserMessage, Text: messageText(p.Content)}
		if r.run.prompted {
			ev.AgentInfo.Label = p.Author
			r.emit(ev)
		} else {
			r.toPreface(ev, true)
		}
	case "reasoning":
		r.output()
		texts := summaryTexts(p.Summary)
		texts = append(texts, summaryTexts(p.Content)...)
		if len(texts) == 0 || r.echo(&r.run.eventThink, texts...) {
			return
		}
		r.emit(&formats.Event{Kind: formats.ThinkingDelta, Text: strings.Join(texts, "\n\n")})
		r.run.itemThink = append(r.run.itemThink, texts...)
	case "function_call", "custom_tool_call", "local_shell_call":
		r.output()
		id := p.CallID
		c := formats.Call{ID: id, Name: namespaced(p.Namespace, p.Name)}
		switch p.Type {
		case "function_call":
			c.Args = argsObject(p.Arguments)
		case "custom_tool_call":
			c.Args, _ = formats.Marshal(struct {
				Input string `json:"input"`
			}{rawString(orNull(p.Input))})
		default:
			c.Name = "local_shell"
			c.Args = append(json.RawMessage(nil), orNull(p.Action)...)
		}
		r.startCall(c, false)
	case "function_call_output", "custom_tool_call_output":
		r.output()
		res, d := outputResult(p.Output, r.opts.Figures)
		res.ID = p.CallID
		r.endCall(res, d, false)
	case "web_search_call":
		r.output()
		r.searchSeen++
		it := item{Type: typeSearch, Action: p.Action}
		var a searchAction
		json.Unmarshal(p.Action, &a)
		it.Query = a.Query
		if it.Query == "" && len(a.Queries) > 0 {
			it.Query = a.Queries[0]
		}
		id := "web_search_" + strconv.Itoa(n)
		c := callOf(id, &it)
		r.startCall(c, false)
		st := statusWords.Parse(p.Status)
		if st == formats.StatusUnknown || st == formats.Running {
			st = formats.Completed
		}
		r.endCall(formats.Call{ID: id, Name: c.Name, Status: st}, 0, false)
	case "tool_search_call":
		r.output()
		r.startCall(formats.Call{ID: p.CallID, Name: "tool_search", Args: argsObject(p.Arguments)}, false)
	case "tool_search_output":
		r.output()
		c := formats.Call{ID: p.CallID, Status: formats.Completed}
		if t := nilIfNull(p.Tools); t != nil {
			c.Output = formats.TextOutput(compact(t))
		}
		r.endCall(c, 0, false)
	case "ghost_snapshot", "compaction", "compaction_summary":
		// Codex's own bookkeeping (a snapshot of the worktree, an
		// encrypted compaction): nothing of the event model.
		r.emit(&formats.Event{Kind: formats.Raw})
	default:
		r.emit(&formats.Event{Kind: formats.Raw})
	}
}

// namespaced is the full name of a tool of a namespace, which newer Codex
// (0.171) writes apart from the tool's name: an MCP server's namespace is
// mcp__<server>, and its tools mcp__<server>__<tool>, as Codex named them
// before and as exec --json and Claude Code name them; another namespace's
// tool (collaboration's spawn_agent) is <namespace>.<tool>.
func namespaced(namespace, name string) string {
	switch {
	case namespace == "":
		return name
	case strings.HasPrefix(namespace, "mcp__"):
		return strings.TrimSuffix(namespace, "__") + "__" + name
	}
	return namespace + "." + name
}

// argsObject is a function call's arguments: the JSON object in the
// string, else the string under "arguments".
func argsObject(raw json.RawMessage) json.RawMessage {
	if len(raw) > 0 && raw[0] == '{' {
		return append(json.RawMessage(nil), raw...)
	}
	s := rawString(orNull(raw))
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := formats.Marshal(struct {
		Arguments string `json:"arguments"`
	}{s})
	return b
}

// outputWrapper is the output of Codex's shell tools before 0.46, which
// agentconv writes too: {"output", "metadata": {"exit_code",
// "duration_seconds"}}, with agentconv's "success" and "error" for a call
// that failed without an exit code.
type outputWrapper struct {
	Output   *string `json:"output"`
	Metadata *struct {
		ExitCode *int     `json:"exit_code"`
		Duration *float64 `json:"duration_seconds"`
	} `json:"metadata"`
	Success *bool   `json:"success"`
	Error   *string `json:"error"`
	// text is the output's string as scanWrapper found it, not yet
	// unquoted (content, escaped, high: formats.JSONScanner.String).
	text          []byte
	escaped, high bool
}

// exitCode is the command's exit code, when the wrapper gives one.
func (w *outputWrapper) exitCode() *int {
	if w.Metadata == nil {
		return nil
	}
	return w.Metadata.ExitCode
}

// failed: the wrapper says that the call failed, by its exit code or by
// success false.
func (w *outputWrapper) failed() bool {
	c := w.exitCode()
	return c != nil && *c != 0 || w.Success != nil && !*w.Success
}

// outputResult reads a function call's output: a string (plain, or the
// wrapper above), a list of content items, or {content, success}.
//
// figures: the call's output is read for its figures alone (see
// formats.ReadOptions): a successful call's text is not given.
func outputResult(raw json.RawMessage, figures bool) (c formats.Call, d time.Duration) {
	c.Status = formats.Completed
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		s := rawString(raw)
		if w, ok := wrapped(s, figures); ok {
			c.Output = formats.TextOutput(*w.Output)
			if w.Metadata != nil && w.Metadata.Duration != nil && *w.Metadata.Duration > 0 {
				d = time.Duration(*w.Metadata.Duration * float64(time.Second))
			}
			c.ExitCode = formats.OptFrom(w.exitCode())
			if w.failed() {
				c.Status = formats.Failed
				if e := w.exitCode(); e != nil && *e != 0 {
					c.Error = "exit code " + strconv.Itoa(*e)
				}
			}
			if w.Error != nil {
				c.Error = *w.Error
			}
			return c, d
		}
		c.Output = formats.TextOutput(s)
	case raw[0] == '[':
		c.Output = formats.TextOutput(messageText(raw))
	case raw[0] == '{':
		var o struct {
			Content string `json:"content"`
			Success *bool  `json:"success"`
		}
		json.Unmarshal(raw, &o)
		c.Output = formats.TextOutput(o.Content)
		if o.Success != nil && !*o.Success {
			c.Status = formats.Failed
		}
	default:
		c.Output = formats.TextOutput(string(raw))
	}
	return c, d
}

// wrapped reads an output that is the wrapper object, and nothing else.
// With figures, a successful call's output is "".
func wrapped(s string, figures bool) (outputWrapper, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, `{"output"`) {
		return outputWrapper{}, false
	}
	// The scanner only reads: t's bytes need no copy.
	if w, ok, sure := scanWrapper(unsafe.Slice(unsafe.StringData(t), len(t))); sure {
		if !ok || w.Output != nil {
			return w, ok
		}
		text := ""
		if figures && !w.failed() {
			w.Output = &text
			return w, true
		}
		if text, ok = formats.Unquote(w.text, w.escaped, w.high); ok {
			w.Output = &text
			return w, true
		}
		// A text the scanner does not unquote: the decoder's.
	}
	return decodeWrapper(t)
}

// decodeWrapper reads the wrapper with the decoder: its keys as a map,
// then the wrapper.
func decodeWrapper(t string) (outputWrapper, bool) {
	var w outputWrapper
	var keys map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &keys) != nil {
		return w, false
	}
	for k := range keys {
		if wrapperKey(k) < 0 {
			return w, false
		}
	}
	if json.Unmarshal([]byte(t), &w) != nil || w.Output == nil {
		return w, false
	}
	return w, true
}

// wrapperKey is k's place among the wrapper's keys; -1 for another key.
func wrapperKey(k string) int {
	switch k {
	case "output":
		return 0
	case "metadata":
		return 1
	case "success":
		return 2
	case "error":
		return 3
	}
	return -1
}

// scanWrapper reads the wrapper object b in one scan. An output that is a
// string is left in w.text, and Output nil, for the caller to unquote
// (formats.Unquote) if it needs it: an output is most of the object. sure
// is false where it leaves the answer to the decoder: a key escaped or
// given twice, a value that does not decode, or b not one valid value.
func scanWrapper(b []byte) (w outputWrapper, ok, sure bool) {
	s := formats.JSONScanner{B: b}
	if !s.Expect('{') {
		return w, false, false
	}
	var seen [4]bool
	for {
		k, escaped, _, ok := s.String()
		if !ok || escaped || !s.Expect(':') {
			return w, false, false
		}
		i := wrapperKey(string(k))
		if i < 0 {
			return w, false, true // another key: not the wrapper
		}
		if seen[i] {
			return w, false, false
		}
		seen[i] = true
		start := s.I
		if i == 0 && s.Space() == '"' {
			content, escaped, high, ok := s.String()
			if !ok || high && !utf8.Valid(content) {
				return w, false, false
			}
			w.text, w.escaped, w.high = content, escaped, high
		} else {
			if !s.Skip() {
				return w, false, false
			}
			var err error
			switch v := b[start:s.I]; i {
			case 0:
				err = json.Unmarshal(v, &w.Output)
			case 1:
				err = json.Unmarshal(v, &w.Metadata)
			case 2:
				err = json.Unmarshal(v, &w.Success)
			case 3:
				err = json.Unmarshal(v, &w.Error)
			}
			if err != nil {
				return w, false, false
			}
		}
		switch s.Space() {
		case ',':
			s.I++
		case '}':
			s.I++
			if !s.End() {
				return w, false, false
			}
			return w, w.Output != nil || w.text != nil, true
		default:
			return w, false, false
		}
	}
}

func (r *rolloutReader) call(id string) *rolloutCall {
	if r.run.calls == nil {
		r.run.calls = map[string]*rolloutCall{}
	}
	c := r.run.calls[id]
	if c == nil {
		c = &rolloutCall{}
		r.run.calls[id] = c
	}
	return c
}

// startCall starts a call, unless the other form of it (the response
// item, or the event) already did. A second call of the same form with an
// open call's id is a call of its own (the pipeline warns).
func (r *rolloutReader) startCall(c formats.Call, event bool) {
	rc := r.call(c.ID)
	if rc.open > 0 && rc.startEvent != event {
		return
	}
	rc.started, rc.name, rc.startEvent = true, c.Name, event
	rc.open++
	r.run.open0++
	r.emit(&formats.Event{Kind: formats.ToolCall, Call: c})
}

// endCall ends a call, unless the other form of its end already did. A
// result for a call that already has its result is kept raw, with a
// warning: no call gets two results.
func (r *rolloutReader) endCall(c formats.Call, d time.Duration, event bool) {
	rc := r.call(c.ID)
	if rc.ended && rc.open == 0 {
		if rc.endEvent != event && !rc.echoed {
			rc.echoed = true
			return
		}
		r.opts.Report.Warn(r.src.Line, "another result for tool call %q, which had its result; kept as an unknown event", c.ID)
		r.emit(&formats.Event{Kind: formats.Raw, Source: formats.Source{Type: r.src.Type + " (a second result)"}})
		return
	}
	if rc.open > 0 {
		rc.open--
		r.run.open0--
	}
	rc.ended, rc.endEvent, rc.echoed = true, event, false
	if c.Name == "" {
		c.Name = rc.name
	}
	r.emit(&formats.Event{Kind: formats.ToolResult, Call: c, Duration: d})
}

// duration reads a Rust Duration, {"secs", "nanos"}, or a number of seconds.
func duration(raw json.RawMessage) time.Duration {
	var d struct {
		Secs  int64 `json:"secs"`
		Nanos int64 `json:"nanos"`
	}
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &d) == nil {
		return time.Duration(d.Secs)*time.Second + time.Duration(d.Nanos)
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil && f > 0 {
		return time.Duration(f * float64(time.Second))
	}
	return 0
}

func (r *rolloutReader) eventMsg(p *payload, n int) {
	msg := ""
	if p.Message != nil {
		msg = *p.Message
	}
	switch p.Type {
	case "user_message":
		r.sawUser = true
		if r.echo(&r.run.userItem, msg) {
			return // the prompt's response item made it
		}
		// The prompt: a user message waiting for it is its copy, and the
		// others were context.
		var before []pre
		var match *formats.Event
		for _, e := range r.preface {
			if e.cand && match == nil && strings.TrimSpace(e.ev.Prompt()) == strings.TrimSpace(msg) {
				match = e.ev
				continue
			}
			before = append(before, e)
		}
		r.preface = nil
		if match != nil {
			r.prompt(before, match, true)
			return
		}
		ev := r.stamp(&formats.Event{Kind: formats.UserMessage, Text: msg})
		r.prompt(before, ev, true)
		r.run.echoUser = append(r.run.echoUser, msg)
	case "agent_message":
		r.output()
		r.run.lastWasMsg = true
		if msg == "" || r.echo(&r.run.itemText, msg) {
			return
		}
		r.emit(&formats.Event{Kind: formats.Message, Text: msg})
		r.run.eventText = append(r.run.eventText, msg)
	case "agent_reasoning", "agent_reasoning_raw_content":
		r.output()
		if p.Text == "" || r.echo(&r.run.itemThink, p.Text) {
			return
		}
		r.emit(&formats.Event{Kind: formats.ThinkingDelta, Text: p.Text})
		r.run.eventThink = append(r.run.eventThink, p.Text)
	case "token_count":
		if p.Info == nil || p.Info.Last == nil {
			return // rate limits only
		}
		total := totalKey(p.Info.Total)
		if total != "" && total == r.lastTotal {
			// The same count again, or the token_usage_record's that
			// came before it: no new request.
			return
		}
		r.lastTotal = total
		r.begun()
		r.emit(&formats.Event{Kind: formats.Usage, Usage: p.Info.Last.info(), Response: formats.Response{Model: r.model}})
	case "task_started", "turn_started":
		r.ownTask = r.ownTurns != "" && strings.HasPrefix(p.TurnID, r.ownTurns)
		e := &formats.Event{Kind: formats.TurnStart}
		if r.inPreface() {
			r.toPreface(e, false)
		} else {
			r.emit(e)
		}
	case "task_complete", "turn_complete":
		r.begun()
		r.ownTask = false
		if msg, code, ok := taskError(p.Error); ok {
			// Newer Codex writes a failed turn's error only here.
			r.emit(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: msg, Code: code})
			r.run.errText, r.run.errCode = msg, code
		}
		st := formats.Completed
		if r.run.errText != "" {
			st = formats.Failed
		}
		if r.run.turnOpen || !r.run.started {
			r.emit(&formats.Event{Kind: formats.TurnEnd, Status: st})
		}
		if p.LastAgentMessage != nil && *p.LastAgentMessage != "" {
			r.emit(&formats.Event{Kind: formats.Answer, Text: *p.LastAgentMessage})
		}
		r.run.started, r.run.completed, r.run.turnOpen = true, true, false
	case "turn_aborted":
		r.begun()
		if r.run.turnOpen || !r.run.started {
			r.emit(&formats.Event{Kind: formats.TurnEnd, Status: formats.Cancelled, Text: p.Reason})
		}
		r.run.started, r.run.completed, r.run.aborted, r.run.turnOpen = true, true, true, false
	case "error":
		r.emit(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: msg})
		r.run.errText, r.run.errCode = msg, ""
		if msg == "" {
			r.run.errText = "error"
		}
	case "warning", "stream_error":
		r.emit(&formats.Event{Kind: formats.Notice, Severity: formats.Warning, Text: msg})
	case "background_event":
		r.emit(&formats.Event{Kind: formats.Notice, Severity: formats.Info, Text: msg})
	case "context_compacted":
		if r.echo(&r.run.echoCompact) {
			return
		}
		r.emit(&formats.Event{Kind: formats.Compaction})
		r.run.echoCompact = append(r.run.echoCompact, "")
	case "plan_update":
		todos := make([]formats.Todo, len(p.Plan))
		for i, s := range p.Plan {
			todos[i] = formats.Todo{Content: s.Step, Status: s.Status}
		}
		r.emit(&formats.Event{Kind: formats.Todos, Todos: todos})
	case "exec_command_begin":
		r.output()
		var cmd []string
		json.Unmarshal(p.Command, &cmd)
		args, _ := formats.Marshal(struct {
			Command []string `json:"command"`
		}{cmd})
		r.startCall(formats.Call{ID: p.CallID, Name: "shell", Args: args, Summary: strings.Join(cmd, " ")}, true)
	case "exec_command_end":
		r.output()
		c := formats.Call{ID: p.CallID, Status: formats.Completed, Output: formats.TextOutput(p.AggregatedOutput)}
		if c.Output.Text() == "" {
			c.Output = formats.TextOutput(p.Stdout + p.Stderr)
		}
		c.ExitCode = formats.OptFrom(p.ExitCode)
		if p.ExitCode != nil && *p.ExitCode != 0 {
			c.Status, c.Error = formats.Failed, "exit code "+strconv.Itoa(*p.ExitCode)
		}
		r.endCall(c, duration(p.Duration), true)
	case "patch_apply_begin":
		r.output()
		args, _ := formats.Marshal(struct {
			Changes json.RawMessage `json:"changes"`
		}{orNull(p.Changes)})
		r.startCall(formats.Call{ID: p.CallID, Name: "apply_patch", Args: args}, true)
	case "patch_apply_end":
		r.output()
		c := formats.Call{ID: p.CallID, Status: formats.Completed, Output: formats.TextOutput(p.Stdout)}
		if p.Success != nil && !*p.Success {
			c.Status, c.Error = formats.Failed, p.Stderr
		}
		r.endCall(c, 0, true)
	case "mcp_tool_call_begin", "mcp_tool_call_end":
		r.output()
		c := formats.Call{ID: p.CallID}
		if p.Invocation != nil {
			c.Name = "mcp__" + p.Invocation.Server + "__" + p.Invocation.Tool
			if p.Invocation.Server == "" {
				c.Name = p.Invocation.Tool
			}
			c.Args = append(json.RawMessage(nil), orNull(p.Invocation.Arguments)...)
			if string(c.Args) == "null" {
				c.Args = json.RawMessage("{}")
			}
		}
		if p.Type == "mcp_tool_call_begin" {
			r.startCall(c, true)
			break
		}
		c.Status = formats.Completed
		var out string
		out, c.Error = mcpResultText(p.Result)
		c.Output = formats.TextOutput(out)
		if c.Error != "" {
			c.Status = formats.Failed
		}
		r.endCall(c, duration(p.Duration), true)
	case "item_completed":
		var it subagentItem
		r.emit(&formats.Event{Kind: formats.Raw})
		if len(p.Item) > 0 && json.Unmarshal(p.Item, &it) == nil && it.Type == "SubAgentActivity" && it.Kind == "started" && it.ThreadID != "" {
			r.subagent(it)
		}
	case "web_search_begin", "web_search_end", "exec_command_output_delta", "agent_message_delta",
		"agent_reasoning_delta", "agent_reasoning_section_break":
		// The web_search_call item says the search; deltas repeat what
		// their whole message says.
	default:
		r.emit(&formats.Event{Kind: formats.Raw})
	}
}

// taskError reads the error of a task_complete: {"message",
// "codex_error_info"}, whose info is a word (context_window_exceeded) or
// an object named by its one key ({"http_connection_failed": {…}}), the
// error's code.
func taskError(raw json.RawMessage) (msg, code string, ok bool) {
	var e struct {
		Message string          `json:"message"`
		Info    json.RawMessage `json:"codex_error_info"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &e) != nil {
		return "", "", false
	}
	msg = e.Message
	if msg == "" {
		msg = "error"
	}
	var word string
	var named map[string]json.RawMessage
	switch {
	case json.Unmarshal(e.Info, &word) == nil:
		code = word
	case json.Unmarshal(e.Info, &named) == nil && len(named) == 1:
		for k := range named {
			code = k
		}
	}
	return msg, code, true
}

// mcpResultText reads an MCP call's result: {"Ok": CallToolResult} or
// {"Err": message}.
func mcpResultText(raw json.RawMessage) (output, errText string) {
	var res struct {
		Ok *struct {
			Content []mcpContent `json:"content"`
			IsError *bool        `json:"is_error"`
		} `json:"Ok"`
		Err *string `json:"Err"`
	}
	if json.Unmarshal(raw, &res) != nil {
		return "", ""
	}
	if res.Err != nil {
		return "", *res.Err
	}
	if res.Ok == nil {
		return "", ""
	}
	var parts []string
	for _, c := range res.Ok.Content {
		if c.Text != "" {
			parts = append(parts, c.Text)
		}
	}
	output = strings.Join(parts, "\n")
	if res.Ok.IsError != nil && *res.Ok.IsError {
		errText = output
		if errText == "" {
			errText = "error"
		}
	}
	return output, errText
}
