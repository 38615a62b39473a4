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
	// compact: Input is checked compact JSON (Call.ArgsCompact()).
	compact bool
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

type agentFinishedLine struct {
	envelope
	Status string `json:"status"`
	Report string `json:"report"`
	// ExitCode is not in malac's documentation: the writer adds it to the
	// main agent's agent_finished for an exit code the outcome does not
	// imply (the format takes added fields), and the reader reads it.
	ExitCode *int `json:"exit_code,omitempty"`
}

// timeLayout is RFC 3339 in UTC with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

type writer struct {
	buf    formats.JSONLine
	stamps atCache
	w      io.Writer
	opts   formats.WriteOptions
	seq    int64
	lastAt time.Time
	runs   int
	run    encoding
	// spare holds the maps of the runs' encodings, cleared for each run.
	spare encoding
}

// reset clears e's maps (made again when a run filled them past a few
// hundred, which clear would go over for each run after) and gives an
// encoding with them.
func (e *encoding) reset() encoding {
	if e.models == nil || len(e.announced)+len(e.perms) > 256 {
		*e = encoding{models: map[string]string{}, announced: map[string]bool{}, perms: map[string]*permState{}, totals: map[string]formats.UsageInfo{}}
	}
	clear(e.models)
	clear(e.announced)
	clear(e.perms)
	clear(e.totals)
	return encoding{models: e.models, announced: e.announced, perms: e.perms, totals: e.totals}
}

// encoding is what the writer keeps of the lines it wrote for one run; the
// run's meaning (outcome, answer, calls, usage) is the run view's.
type encoding struct {
	main string // the main agent's malac id
	// models is the model each agent's lines name (the main agent's
	// under ""), which sets the convention of its usage counts.
	models    map[string]string
	announced map[string]bool              // calls with a tool_started line
	perms     map[string]*permState        // by call id
	totals    map[string]formats.UsageInfo // each agent's running total
	lastError string                       // the last error notice written
	// refusedLast: the last call line written was a refusal, from which
	// the reader settles a run that did not succeed as denied.
	refusedLast bool
	// The main agent's turn: whether it did anything since its last
	// turn_finished, and that turn's status and text.
	active     bool
	turnSeen   bool
	turnStatus string
	turnText   string
}

type permState struct {
	requestID string
	resolved  bool
}

func newWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &writer{w: w, opts: o}
}

// Quirks are the losses of malac's own encoding, which the writer reports
// itself.
var Quirks = []formats.Quirk{lostReasons, formats.MergedToolErrors, formats.LateSessionIDs, lostTotals}

var (
	lostReasons = formats.NewQuirk("permission answer reasons")
	lostTotals  = formats.NewQuirk("run usage totals that differ from the per-request sums")
)

// Observe follows a record the pipeline copies verbatim: the lines the
// writer adds later (another input's runs) go on after its seq and time.
func (m *writer) Observe(e *formats.Event, _ *formats.RunView) {
	switch e.Kind {
	case formats.RunStart:
		m.begin(e)
	case formats.RunEnd:
		m.run = encoding{}
	}
	if e.Time.After(m.lastAt) {
		m.lastAt = e.Time
	}
	if e.Source.Line != nil && !e.Source.Continued {
		m.seq = max(m.seq, maxSeq(e.Source.Line))
	}
}

func (m *writer) begin(e *formats.Event) {
	m.runs++
	m.run = m.spare.reset()
	m.run.main, m.run.models[""] = e.Run.SessionID, e.Run.Model
	if m.run.main == "" {
		m.run.main = "agent-" + strconv.Itoa(m.runs)
	}
}

func (m *writer) Write(e *formats.Event, v *formats.RunView) error {
	if m.run.models == nil && e.Kind != formats.RunStart {
		m.begin(&formats.Event{}) // an event before any run, outside a pipeline
	}
	if e.Agent == "" {
		switch e.Kind {
		case formats.ToolCall, formats.ToolResult, formats.TextDelta, formats.Message, formats.UserMessage:
			m.run.active = true
		}
	}
	switch e.Kind {
	case formats.RunStart:
		m.begin(e)
		label := e.Run.AgentName
		if label == "" {
			label = "main"
		}
		return m.agentStarted(agentStartedLine{m.env(e, "agent_started"), label, nil, formats.NilIfEmpty(e.Run.Model), formats.NilIfEmpty(e.Run.Cwd)})
	case formats.AgentStart:
		parent := m.agentID(e.AgentInfo.Parent)
		m.run.models[e.Agent] = e.AgentInfo.Model
		return m.agentStarted(agentStartedLine{m.env(e, "agent_started"), e.AgentInfo.Label, &parent, formats.NilIfEmpty(e.AgentInfo.Model), formats.NilIfEmpty(e.AgentInfo.Cwd)})
	case formats.AgentEnd:
		return m.agentFinished(agentFinishedLine{m.env(e, "agent_finished"), statusWord(e.Status), e.Report(), nil})
	case formats.ModelChange:
		m.run.models[e.Agent] = e.Run.Model
		return m.strs(m.env(e, "model_changed"), "model", e.Run.Model)
	case formats.UserMessage:
		return m.strs(m.env(e, "user_message"), "text", e.Prompt())
	case formats.TextDelta:
		return m.strs(m.env(e, "text_delta"), "text", e.Piece())
	case formats.ThinkingDelta:
		return m.strs(m.env(e, "thinking_delta"), "text", e.Piece())
	case formats.Message:
		var blocks []contentBlock
		if e.Thinking != "" {
			blocks = append(blocks, contentBlock{Type: "thinking", Thinking: e.Thinking})
		}
		blocks = append(blocks, contentBlock{Type: "text", Text: e.MessageText()})
		return m.line(messageLine{m.env(e, "assistant_message"), assistantMessage{"assistant", blocks}})
	case formats.ToolCall:
		m.run.announced[e.Call.ID] = true
		return m.toolStarted(startedLine(m.env(e, "tool_started"), &e.Call))
	case formats.ToolResult:
		return m.result(e, v)
	case formats.PermissionRequest:
		m.perm(e.Call.ID).requestID = e.Permission.RequestID
		return m.line(permissionRequestedLine{m.env(e, "permission_requested"), e.Permission.RequestID, e.Call.ID, e.Call.Name, e.Call.Summary, args(e.Call.Args)})
	case formats.PermissionAnswer:
		if e.Permission.Reason != "" {
			m.opts.Report.Quirk(lostReasons)
		}
		if e.Call.ID != "" {
			m.perm(e.Call.ID).resolved = true
		}
		if !e.Permission.Allowed {
			m.run.refusedLast = true
		}
		return m.line(permissionResolvedLine{m.env(e, "permission_resolved"), e.Permission.RequestID, e.Permission.Allowed})
	case formats.Todos:
		items := make([]todoItem, len(e.Todos))
		for i, t := range e.Todos {
			items[i] = todoItem{t.Content, t.Status}
		}
		return m.line(todosLine{m.env(e, "todos"), items})
	case formats.Usage:
		return m.usage(e)
	case formats.Compaction:
		return m.strs(m.env(e, "compacted"), "summary", e.Summary())
	case formats.Notice:
		if e.Severity == formats.Error {
			m.run.lastError = e.NoticeText()
		}
		return m.strs(m.env(e, "notice"), "level", e.Severity.String(), "message", e.NoticeText())
	case formats.TurnEnd:
		text := e.FinalText()
		if e.Agent == "" {
			if text == "" && m.run.active && e.Status.OK() {
				// The source ends turns without their text: it is the
				// text the agent wrote last in the turn.
				text = v.LastText
			}
			m.run.active, m.run.turnSeen = false, true
			m.run.turnStatus, m.run.turnText = statusWord(e.Status), text
		}
		return m.strs(m.env(e, "turn_finished"), "status", statusWord(e.Status), "text", text)
	case formats.RunEnd:
		return m.end(e, v)
	}
	return nil
}

// env makes the envelope of the next line.
func (m *writer) env(e *formats.Event, typ string) envelope {
	m.seq++
	return envelope{Agent: m.agentID(e.Agent), Seq: m.seq, At: m.stamps.format(m.at(e)), Type: typ}
}

// atCache formats the times of lines: lines of one millisecond share
// their string, and lines of one second the work of the date and clock.
type atCache struct {
	sec, ms int64
	set     bool
	buf     []byte
	str     string
}

// The seconds of the years 0 to 9999, whose times appendAt writes by hand.
const (
	minHandSec = -62167219200
	maxHandSec = 253402300799
)

func (c *atCache) format(t time.Time) string {
	sec, ms := t.Unix(), int64(t.Nanosecond()/1e6)
	switch {
	case c.set && sec == c.sec && ms == c.ms:
		return c.str
	case c.set && sec == c.sec:
		n := len(c.buf) - len("000Z")
		c.buf = append(c.buf[:n], byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
	default:
		c.buf = appendAt(c.buf[:0], t)
		c.sec, c.set = sec, sec >= minHandSec && sec <= maxHandSec
	}
	c.ms, c.str = ms, string(c.buf)
	return c.str
}

// appendAt appends t as timeLayout formats it, by hand for the years of
// four digits: the time of every line is a good part of the writer's work.
func appendAt(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, timeLayout)
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	two := func(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }
	b = two(b, year/100)
	b = two(b, year%100)
	b = two(append(b, '-'), int(month))
	b = two(append(b, '-'), day)
	b = two(append(b, 'T'), hour)
	b = two(append(b, ':'), minute)
	b = two(append(b, ':'), sec)
	return append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// toolStarted writes a tool_started line, built by hand (one for every
// call) unless its input is not valid JSON, which the encoder reports.
func (m *writer) toolStarted(l toolStartedLine) error {
	j := m.envelope(l.envelope).Str("call_id", l.CallID).Str("tool", l.Tool).Str("summary", l.Summary)
	if !j.CompactChecked("input", l.Input, l.compact) {
		return m.line(l)
	}
	_, err := j.WriteTo(m.w)
	return err
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

// The lines of every run, built by hand as the encoder would write
// them: a run of one answer is three or four lines, and the encoder's
// work for each was most of the writer's.

// strs writes a line of env and string fields, given as key, value, ….
func (m *writer) strs(env envelope, kv ...string) error {
	j := m.envelope(env)
	for i := 0; i+1 < len(kv); i += 2 {
		j.Str(kv[i], kv[i+1])
	}
	_, err := j.WriteTo(m.w)
	return err
}

func (m *writer) agentStarted(l agentStartedLine) error {
	j := m.envelope(l.envelope).Str("label", l.Label)
	for _, f := range [...]struct {
		k string
		v *string
	}{{"parent", l.Parent}, {"model", l.Model}, {"cwd", l.Cwd}} {
		if f.v == nil {
			j.Null(f.k)
		} else {
			j.Str(f.k, *f.v)
		}
	}
	_, err := j.WriteTo(m.w)
	return err
}

func (m *writer) agentFinished(l agentFinishedLine) error {
	j := m.envelope(l.envelope).Str("status", l.Status).Str("report", l.Report)
	if l.ExitCode != nil {
		j.Int("exit_code", int64(*l.ExitCode))
	}
	_, err := j.WriteTo(m.w)
	return err
}

func (m *writer) envelope(env envelope) *formats.JSONLine {
	return m.buf.Begin().Str("agent", env.Agent).Int("seq", env.Seq).Str("at", env.At).Str("type", env.Type)
}

func (m *writer) perm(callID string) *permState {
	p := m.run.perms[callID]
	if p == nil {
		p = &permState{}
		m.run.perms[callID] = p
	}
	return p
}

// result writes a call's end. A call the source never announced (an AdaL
// refusal) is announced first; a refused call is asked and refused, as
// malac shows a refusal, unless the source already said so.
func (m *writer) result(e *formats.Event, v *formats.RunView) error {
	if e.Call.Error != "" {
		e.Call.Output.Decode() // the error text is merged into it
	}
	c := v.Calls.Get(e.Call.ID)
	if c == nil { // not the view of this run: never in a pipeline
		c = &formats.TrackedCall{Call: e.Call, Agent: e.Agent}
	}
	if !m.run.announced[c.ID] {
		m.run.announced[c.ID] = true
		if err := m.toolStarted(startedLine(m.env(e, "tool_started"), &c.Call)); err != nil {
			return err
		}
	}
	if e.Call.Status == formats.Denied {
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
	}
	m.run.refusedLast = e.Call.Status == formats.Denied
	if e.Call.Status != formats.Denied && e.Call.Error != "" && e.Call.Output.Text() != "" {
		m.opts.Report.Quirk(formats.MergedToolErrors)
	}
	out := joinText(e.Call.Output.Text(), e.Call.Error)
	name := e.Call.Name
	if name == "" {
		name = c.Name
	}
	// Built by hand: this line carries the tool output, most of the bytes
	// of a conversion, and the kept source JSON is copied as it is.
	env := m.env(e, "tool_finished")
	j := m.envelope(env).Str("call_id", c.ID).Str("tool", name)
	if e.Call.Error == "" && e.Call.Output.Undecoded() {
		j.Output("output", e.Call.Output)
	} else {
		j.Str("output", out)
	}
	j.Bool("is_error", !e.Call.Status.OK())
	if e.Duration > 0 {
		j.Int("millis", e.Duration.Milliseconds())
	} else {
		j.Null("millis")
	}
	_, err := j.WriteTo(m.w)
	return err
}

// TakesRawOutput: tool outputs are copied as JSON, undecoded.
func (m *writer) TakesRawOutput() {}

// usage writes a usage line: the request's counts, and the agent's running
// total, in the convention of the agent's model.
func (m *writer) usage(e *formats.Event) error {
	t := m.run.totals[e.Agent]
	t.Add(e.Usage)
	t.ContextTokens = formats.Opt[int64]{}
	m.run.totals[e.Agent] = t
	model := m.run.models[e.Agent]
	return m.line(usageLine{m.env(e, "usage"), toUsageObject(e.Usage, model), toUsageObject(t, model), e.Usage.ContextTokens.Ptr()})
}

// end closes a run. malac has no run end: the outcome is the main agent's
// last turn_finished, so one is written unless the last one already says
// it; the error goes out as a notice, and an exit code that malac's
// outcome does not imply goes on the main agent's agent_finished.
func (m *writer) end(e *formats.Event, v *formats.RunView) error {
	r := &m.run
	defer func() { m.run = encoding{} }()
	if e.Run.Model != "" && e.Run.Model != r.models[""] {
		r.models[""] = e.Run.Model
		if err := m.strs(m.env(e, "model_changed"), "model", e.Run.Model); err != nil {
			return err
		}
	}
	if e.Run.SessionID != "" && e.Run.SessionID != r.main {
		m.opts.Report.Quirk(formats.LateSessionIDs)
	}
	if !v.Usage.Empty() && !sameUsage(v.Usage, r.totals) {
		// The run's totals are the sum of each agent's last total: the
		// main agent's last one makes up the difference.
		if u, ok := mainTotal(v.Usage, r.totals); ok {
			if err := m.line(usageLine{m.env(e, "usage"), nil, toUsageObject(u, r.models[""]), v.Usage.ContextTokens.Ptr()}); err != nil {
				return err
			}
		} else {
			m.opts.Report.Quirk(lostTotals)
		}
	}
	status := v.Status
	if msg := e.ErrorText(); !status.OK() && msg != "" && msg != r.lastError && status != formats.Denied {
		level := "error"
		if status == formats.Cancelled {
			level = "warning"
		}
		if err := m.strs(m.env(e, "notice"), "level", level, "message", msg); err != nil {
			return err
		}
	}
	// The final turn's text is the answer; a failed run without one
	// ends with an empty text rather than its last remark.
	var text string
	switch {
	case v.Answered():
		text = v.Answer()
	case !r.active && r.turnSeen:
		text = r.turnText
	case status.OK():
		text = v.Answer()
	}
	word := statusWord(status)
	if !r.turnSeen || r.active || r.turnText != text || r.turnStatus != word {
		if err := m.strs(m.env(e, "turn_finished"), "status", word, "text", text); err != nil {
			return err
		}
	}
	if code := v.ExitCode; code != readExit(status, r.refusedLast) {
		return m.agentFinished(agentFinishedLine{m.env(e, "agent_finished"), word, "", &code})
	}
	return nil
}

// readExit is the exit code the reader settles for a malac outcome without
// an exit_code: 0 for success, 2 for a run whose last call line was a
// refusal, else 1.
func readExit(s formats.Status, refusedLast bool) int {
	switch {
	case s == formats.Completed:
		return 0
	case refusedLast:
		return 2
	}
	return 1
}

// mainTotal is the main agent's total that makes the run's totals with
// the subagents' totals; ok is false when no count can (a subagent's count
// above the run's, or one the run lacks).
func mainTotal(run formats.UsageInfo, totals map[string]formats.UsageInfo) (formats.UsageInfo, bool) {
	var subs formats.UsageInfo
	for agent, t := range totals {
		if agent != "" {
			subs.Add(t)
		}
	}
	ok := true
	less := func(a, b formats.Opt[int64]) formats.Opt[int64] {
		if b.OK && (!a.OK || b.V > a.V) {
			ok = false
		}
		return formats.Opt[int64]{V: a.V - b.V, OK: a.OK}
	}
	u := formats.UsageInfo{
		InputTokens:      less(run.InputTokens, subs.InputTokens),
		OutputTokens:     less(run.OutputTokens, subs.OutputTokens),
		CacheReadTokens:  less(run.CacheReadTokens, subs.CacheReadTokens),
		CacheWriteTokens: less(run.CacheWriteTokens, subs.CacheWriteTokens),
		TotalTokens:      less(run.TotalTokens, subs.TotalTokens),
		CostUSD:          formats.Opt[float64]{V: run.CostUSD.V - subs.CostUSD.V, OK: run.CostUSD.OK},
	}
	if subs.CostUSD.OK && (!run.CostUSD.OK || subs.CostUSD.V > run.CostUSD.V) {
		ok = false
	}
	return u, ok
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

// startedLine is the tool_started line of a call: its input compact as
// its reader checked it, or to be compacted.
func startedLine(env envelope, c *formats.Call) toolStartedLine {
	return toolStartedLine{env, c.ID, c.Name, c.Summary, args(c.Args), c.ArgsCompact()}
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
