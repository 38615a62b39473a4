package malac

import (
	"bytes"
	"io"
	"strconv"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The lines the writer prints: the envelope, then the fields of the type,
// in the order the seed lists them.
type envelope struct {
	Agent string `json:"agent"`
	Seq   int64  `json:"seq"`
	At    string `json:"at"`
	Type  string `json:"type"`
}

type agentStartedLine struct {
	envelope
	Label  string  `json:"label"`
	Parent *string `json:"parent"`
	Model  *string `json:"model"`
	Cwd    *string `json:"cwd"`
}

type textLine struct {
	envelope
	Text string `json:"text"`
}

type modelLine struct {
	envelope
	Model string `json:"model"`
}

type messageLine struct {
	envelope
	Message assistantMessage `json:"message"`
}

// assistantMessage is the shape this writer gives assistant_message.message,
// which malac does not document; the reader also reads other shapes.
type assistantMessage struct {
	Role    string         `json:"role"`
	Content []contentBlock `json:"content"`
}

type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Thinking string `json:"thinking,omitempty"`
}

type toolStartedLine struct {
	envelope
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool"`
	Summary string          `json:"summary"`
	Input   json.RawMessage `json:"input"`
}

type permissionRequestedLine struct {
	envelope
	RequestID string          `json:"request_id"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Summary   string          `json:"summary"`
	Input     json.RawMessage `json:"input"`
}

type permissionResolvedLine struct {
	envelope
	RequestID string `json:"request_id"`
	Allowed   bool   `json:"allowed"`
}

type todosLine struct {
	envelope
	Items []todoItem `json:"items"`
}

type todoItem struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}

type usageLine struct {
	envelope
	Turn          *usageObject `json:"turn"`
	Total         *usageObject `json:"total"`
	ContextTokens *int64       `json:"context_tokens"`
}

type compactedLine struct {
	envelope
	Summary string `json:"summary"`
}

type noticeLine struct {
	envelope
	Level   string `json:"level"`
	Message string `json:"message"`
}

type turnFinishedLine struct {
	envelope
	Status string `json:"status"`
	Text   string `json:"text"`
}

type agentFinishedLine struct {
	envelope
	Status string `json:"status"`
	Report string `json:"report"`
}

// timeLayout is RFC 3339 in UTC with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

type writer struct {
	buf    formats.JSONLine
	w      io.Writer
	opts   formats.WriteOptions
	seq    int64
	lastAt time.Time
	runs   int
	run    writerRun
}

// writerRun is what the writer follows of one run.
type writerRun struct {
	main   string // the main agent's malac id
	model  string
	calls  formats.CallTracker
	text   formats.TextTracker
	perms  map[string]*permState // by call id
	totals map[string]formats.UsageInfo
	usage  bool // a usage line was written
	timed  bool // the source had times
	// The main agent's turn: whether it did anything since its last
	// turn_finished, and that turn's status and text.
	active     bool
	turnSeen   bool
	turnStatus string
	turnText   string
	lastText   string // the main agent's last assistant text
	answered   bool
	answer     string
	lastError  string
}

type permState struct {
	requestID string
	resolved  bool
}

func newWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &writer{w: w, opts: o}
}

func (m *writer) lose(what string) { m.opts.Report.Lose(what) }

func (m *writer) Write(e *formats.Event) error {
	if e.Source.From(m.opts.Dialect) && (e.Source.Line != nil || e.Source.Continued) {
		// Same dialect: the record goes out as it came; the state still
		// follows, in case the pipeline closes a cut run.
		m.follow(e)
		if e.Time.After(m.lastAt) {
			m.lastAt = e.Time
		}
		if e.Source.Continued {
			return nil
		}
		m.seq = max(m.seq, maxSeq(e.Source.Line))
		return formats.WriteRawLine(m.w, e.Source.Line)
	}
	if !e.Time.IsZero() {
		m.run.timed = true
	}
	if e.Agent == "" {
		switch e.Kind {
		case formats.ToolCall, formats.ToolResult, formats.TextDelta, formats.Message, formats.UserMessage:
			m.run.active = true
		}
	}
	switch e.Kind {
	case formats.RunStart:
		m.follow(e)
		label := e.Run.AgentName
		if label == "" {
			label = "main"
		}
		return m.line(agentStartedLine{m.env(e, "agent_started"), label, nil, formats.NilIfEmpty(e.Run.Model), formats.NilIfEmpty(e.Run.Cwd)})
	case formats.AgentStart:
		if e.AgentInfo.ParentCall != "" {
			m.lose("links from subagents to the calls that started them")
		}
		parent := m.agentID(e.AgentInfo.Parent)
		return m.line(agentStartedLine{m.env(e, "agent_started"), e.AgentInfo.Label, &parent, formats.NilIfEmpty(e.AgentInfo.Model), formats.NilIfEmpty(e.AgentInfo.Cwd)})
	case formats.AgentEnd:
		return m.line(agentFinishedLine{m.env(e, "agent_finished"), statusWord(e.Status), e.Text})
	case formats.ModelChange:
		if e.Agent == "" {
			m.run.model = e.Run.Model
		}
		return m.line(modelLine{m.env(e, "model_changed"), e.Run.Model})
	case formats.UserMessage:
		return m.line(textLine{m.env(e, "user_message"), e.Text})
	case formats.TextDelta:
		m.run.text.Delta(e.Agent, e.Text)
		return m.line(textLine{m.env(e, "text_delta"), e.Text})
	case formats.ThinkingDelta:
		return m.line(textLine{m.env(e, "thinking_delta"), e.Text})
	case formats.Message:
		m.run.text.Whole(e.Agent)
		if e.Agent == "" && e.Text != "" {
			m.run.lastText = e.Text
		}
		var blocks []contentBlock
		if e.Thinking != "" {
			blocks = append(blocks, contentBlock{Type: "thinking", Thinking: e.Thinking})
		}
		blocks = append(blocks, contentBlock{Type: "text", Text: e.Text})
		return m.line(messageLine{m.env(e, "assistant_message"), assistantMessage{"assistant", blocks}})
	case formats.ToolCall:
		m.endText(e.Agent)
		m.run.calls.Start(e)
		return m.line(toolStartedLine{m.env(e, "tool_started"), e.Call.ID, e.Call.Name, e.Call.Summary, args(e.Call.Args)})
	case formats.ToolResult:
		m.endText(e.Agent)
		return m.result(e)
	case formats.PermissionRequest:
		m.perm(e.Call.ID).requestID = e.Permission.RequestID
		return m.line(permissionRequestedLine{m.env(e, "permission_requested"), e.Permission.RequestID, e.Call.ID, e.Call.Name, e.Call.Summary, args(e.Call.Args)})
	case formats.PermissionAnswer:
		if e.Permission.Reason != "" {
			m.lose("permission answer reasons")
		}
		if e.Call.ID != "" {
			m.perm(e.Call.ID).resolved = true
		}
		return m.line(permissionResolvedLine{m.env(e, "permission_resolved"), e.Permission.RequestID, e.Permission.Allowed})
	case formats.Todos:
		items := make([]todoItem, len(e.Todos))
		for i, t := range e.Todos {
			items[i] = todoItem{t.Content, t.Status}
		}
		return m.line(todosLine{m.env(e, "todos"), items})
	case formats.Usage:
		return m.usage(e, e.Usage)
	case formats.Compaction:
		return m.line(compactedLine{m.env(e, "compacted"), e.Text})
	case formats.Notice:
		if e.Severity == formats.Error {
			m.run.lastError = e.Text
		}
		return m.line(noticeLine{m.env(e, "notice"), e.Severity.String(), e.Text})
	case formats.TurnEnd:
		m.endText(e.Agent)
		text := e.Text
		if e.Agent == "" {
			if text == "" && m.run.active && e.Status.OK() {
				// The source ends turns without their text: it is the
				// text the agent wrote last in the turn.
				text = m.run.lastText
			}
			m.run.active, m.run.turnSeen = false, true
			m.run.turnStatus, m.run.turnText = statusWord(e.Status), text
		}
		return m.line(turnFinishedLine{m.env(e, "turn_finished"), statusWord(e.Status), text})
	case formats.Answer:
		if e.Agent != "" {
			m.lose("subagent answers")
			return nil
		}
		m.run.answered, m.run.answer = true, e.Text
	case formats.Raw:
		m.lose("unknown " + e.Source.Dialect + " events")
	case formats.RunEnd:
		return m.end(e)
	}
	return nil
}

// follow keeps the run's state for an event written verbatim.
func (m *writer) follow(e *formats.Event) {
	switch e.Kind {
	case formats.RunStart:
		m.runs++
		m.run = writerRun{main: e.Run.SessionID, model: e.Run.Model, perms: map[string]*permState{}, totals: map[string]formats.UsageInfo{}}
		m.run.calls.DropOutputs = true // outputs are written as they come
		if m.run.main == "" {
			m.run.main = "agent-" + strconv.Itoa(m.runs)
		}
	case formats.ToolCall:
		m.run.calls.Start(e)
	case formats.ToolResult:
		m.run.calls.Finish(e)
	case formats.RunEnd:
		m.run = writerRun{}
	}
}

// env makes the envelope of the next line.
func (m *writer) env(e *formats.Event, typ string) envelope {
	m.seq++
	return envelope{Agent: m.agentID(e.Agent), Seq: m.seq, At: m.at(e).UTC().Format(timeLayout), Type: typ}
}

// at is the event's time: the source's, else its arrival, but never before
// a time already written, so that the lines the writer adds to a timed
// source (a cut run's end) do not go back in time.
func (m *writer) at(e *formats.Event) time.Time {
	t := e.TimeOf()
	if e.Time.IsZero() && t.Before(m.lastAt) {
		t = m.lastAt
	}
	if t.After(m.lastAt) {
		m.lastAt = t
	}
	return t
}

func (m *writer) agentID(agent string) string {
	if agent == "" {
		return m.run.main
	}
	return agent
}

func (m *writer) line(v any) error { return formats.WriteJSONLine(m.w, v) }

func (m *writer) perm(callID string) *permState {
	if m.run.perms == nil {
		m.run.perms = map[string]*permState{}
	}
	p := m.run.perms[callID]
	if p == nil {
		p = &permState{}
		m.run.perms[callID] = p
	}
	return p
}

// endText notes the main agent's streamed text as its last text.
func (m *writer) endText(agent string) {
	if t := m.run.text.Flush(agent); t != "" && agent == "" {
		m.run.lastText = t
	}
}

// result writes a call's end. A call the source never announced (an AdaL
// refusal) is announced first; a refused call is asked and refused, as
// malac shows a refusal, unless the source already said so.
func (m *writer) result(e *formats.Event) error {
	if e.Call.Error != "" {
		e.DecodeOutput() // the error text is merged into it
	}
	c, started := m.run.calls.Finish(e)
	if !started {
		if err := m.line(toolStartedLine{m.env(e, "tool_started"), c.ID, c.Name, c.Summary, args(c.Args)}); err != nil {
			return err
		}
	}
	out := e.Call.Output
	switch e.Call.Status {
	case formats.Denied:
		p := m.perm(c.ID)
		if p.requestID == "" {
			p.requestID = "perm-" + c.ID
			if err := m.line(permissionRequestedLine{m.env(e, "permission_requested"), p.requestID, c.ID, c.Name, c.Summary, args(c.Args)}); err != nil {
				return err
			}
		}
		if !p.resolved {
			p.resolved = true
			if err := m.line(permissionResolvedLine{m.env(e, "permission_resolved"), p.requestID, false}); err != nil {
				return err
			}
		}
		out = joinText(e.Call.Output, e.Call.Error)
	case formats.Cancelled:
		// The pipeline cancels the calls of a cut run (no source dialect);
		// their output says they did not complete, so nothing is lost.
		if e.Source.Dialect != "" {
			m.lose("cancelled tool calls (written as failed)")
		}
		fallthrough
	default:
		if e.Call.Error != "" && e.Call.Output != "" {
			m.lose("tool error texts (merged into the output)")
		}
		out = joinText(e.Call.Output, e.Call.Error)
	}
	var millis *int64
	if e.Duration > 0 {
		ms := e.Duration.Milliseconds()
		millis = &ms
	}
	name := e.Call.Name
	if name == "" {
		name = c.Name
	}
	// Built by hand: this line carries the tool output, most of the bytes
	// of a conversion, and the kept source JSON is copied as it is.
	env := m.env(e, "tool_finished")
	j := m.buf.Begin().Str("agent", env.Agent).Int("seq", env.Seq).Str("at", env.At).Str("type", env.Type).
		Str("call_id", c.ID).Str("tool", name)
	if e.Call.Error == "" && len(e.Call.OutputJSON) > 0 {
		j.Raw("output", e.Call.OutputJSON)
	} else {
		j.Str("output", out)
	}
	j.Bool("is_error", !e.Call.Status.OK())
	if millis != nil {
		j.Int("millis", *millis)
	} else {
		j.Null("millis")
	}
	_, err := j.WriteTo(m.w)
	return err
}

// TakesRawOutput: tool outputs are copied as JSON, undecoded.
func (m *writer) TakesRawOutput() {}

// usage writes a usage line: the request's counts, and the agent's running
// total.
func (m *writer) usage(e *formats.Event, turn formats.UsageInfo) error {
	if m.run.totals == nil {
		m.run.totals = map[string]formats.UsageInfo{}
	}
	t := m.run.totals[e.Agent]
	t.Add(turn)
	t.ContextTokens = formats.Opt[int64]{}
	m.run.totals[e.Agent] = t
	m.run.usage = true
	return m.line(usageLine{m.env(e, "usage"), toUsageObject(turn), toUsageObject(t), turn.ContextTokens.Ptr()})
}

// end closes a run. malac has no run end: the outcome is the main agent's
// last turn_finished, so one is written unless the last one already says
// it; the error goes out as a notice.
func (m *writer) end(e *formats.Event) error {
	r := &m.run
	m.endText("")
	defer func() { m.run = writerRun{} }()
	if e.Run.Model != "" && e.Run.Model != r.model {
		if err := m.line(modelLine{m.env(e, "model_changed"), e.Run.Model}); err != nil {
			return err
		}
	}
	if e.Run.SessionID != "" && e.Run.SessionID != r.main {
		m.lose("session ids given only at the run's end")
	}
	status := m.outcome(e, r)
	if e.Run.ExitCode.OK && e.Run.ExitCode.V != impliedExit(status) {
		m.lose("exit codes other than 0, 1 and 2")
	}
	if e.Duration > 0 && !r.timed {
		m.lose("run durations")
	}
	if !e.Usage.Empty() {
		if !r.usage {
			if err := m.line(usageLine{m.env(e, "usage"), nil, toUsageObject(e.Usage), e.Usage.ContextTokens.Ptr()}); err != nil {
				return err
			}
		} else if !sameUsage(e.Usage, r.totals) {
			m.lose("run usage totals that differ from the per-request sums")
		}
	}
	if msg := e.Text; !status.OK() && msg != "" && msg != r.lastError && status != formats.Denied {
		level := "error"
		if status == formats.Cancelled {
			level = "warning"
		}
		if err := m.line(noticeLine{m.env(e, "notice"), level, msg}); err != nil {
			return err
		}
	}
	// The final turn's text is the answer; a failed run without one
	// ends with an empty text rather than its last remark.
	var text string
	switch {
	case r.answered:
		text = r.answer
	case !r.active && r.turnSeen:
		text = r.turnText
	case status.OK():
		text = r.lastText
	}
	word := statusWord(status)
	if r.turnSeen && !r.active && r.turnText == text && r.turnStatus == word {
		return nil
	}
	return m.line(turnFinishedLine{m.env(e, "turn_finished"), word, text})
}

// outcome is the run's status, read from its exit code and errors when the
// source gives no status.
func (m *writer) outcome(e *formats.Event, r *writerRun) formats.Status {
	if e.Status != formats.StatusUnknown {
		return e.Status
	}
	switch {
	case e.Run.ExitCode.OK && e.Run.ExitCode.V == 2:
		return formats.Denied
	case e.Run.ExitCode.OK && e.Run.ExitCode.V != 0, !e.Run.ExitCode.OK && r.lastError != "":
		return formats.Failed
	}
	return formats.Completed
}

// impliedExit is the exit code a reader derives from a malac outcome.
func impliedExit(s formats.Status) int {
	switch s {
	case formats.Completed:
		return 0
	case formats.Denied:
		return 2
	}
	return 1
}

func sameUsage(u formats.UsageInfo, totals map[string]formats.UsageInfo) bool {
	var sum formats.UsageInfo
	for _, t := range totals {
		sum.Add(t)
	}
	u.ContextTokens = formats.Opt[int64]{}
	return u == sum
}

func (m *writer) Close() error { return nil }

// maxSeq is the highest seq of the lines of a verbatim record.
func maxSeq(rec []byte) int64 {
	var top int64
	for _, l := range bytes.Split(rec, []byte{'\n'}) {
		var env struct {
			Seq int64 `json:"seq"`
		}
		if json.Unmarshal(l, &env) == nil {
			top = max(top, env.Seq)
		}
	}
	return top
}

func args(a json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(a)) == 0 {
		return json.RawMessage("{}")
	}
	return a
}

func joinText(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "\n" + b
}
