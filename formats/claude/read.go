package claude

import (
	"bytes"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// record is every field of a Claude Code message that the readers use.
// Fields whose shape varies (content, errors) stay raw and are read by hand.
type record struct {
	Type            string      `json:"type"`
	Subtype         string      `json:"subtype"`
	SessionID       string      `json:"session_id"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	Message         *apiMessage `json:"message"`
	Event           *apiEvent   `json:"event"`
	// Error marks an assistant message that reports an API failure; in a
	// result it is the run's error.
	Error json.RawMessage `json:"error"`
	// Timestamp: newer Claude Code stamps its messages.
	Timestamp string `json:"timestamp"`

	// system/init
	Model   string `json:"model"`
	Cwd     string `json:"cwd"`
	Version string `json:"claude_code_version"`
	// system/api_retry
	Attempt    *int `json:"attempt"`
	MaxRetries *int `json:"max_retries"`
	// rate_limit_event
	RateLimitInfo *rateLimitInfo `json:"rate_limit_info"`

	// result
	IsError           *bool                      `json:"is_error"`
	DurationMS        *float64                   `json:"duration_ms"`
	Result            *string                    `json:"result"`
	TotalCostUSD      *float64                   `json:"total_cost_usd"`
	Usage             *apiUsage                  `json:"usage"`
	ModelUsage        map[string]json.RawMessage `json:"modelUsage"`
	PermissionDenials []denial                   `json:"permission_denials"`
	Errors            []json.RawMessage          `json:"errors"`
	// The provider's error of a run (result: api_error_type and
	// api_error_status, 2.1) or of a synthetic API-error message
	// (apiErrorType, apiErrorStatus).
	APIErrorType      json.RawMessage `json:"api_error_type"`
	APIErrorStatus    json.RawMessage `json:"api_error_status"`
	MsgAPIErrorType   json.RawMessage `json:"apiErrorType"`
	MsgAPIErrorStatus json.RawMessage `json:"apiErrorStatus"`
	// ToolResultMeta (2.1, user lines): how each call's permission was
	// decided.
	ToolResultMeta json.RawMessage `json:"tool_result_meta"`
	// SubagentStats (2.1) says how many subagents the process spawned.
	SubagentStats json.RawMessage `json:"subagent_stats"`

	// system/task_started, system/task_notification (2.1's background
	// tasks): the spawning call, whether it runs in the background, how
	// it ended and what it reported. Read by hand: other lines use the
	// same names for other shapes.
	ToolUseIDField json.RawMessage `json:"tool_use_id"`
	IsBackgrounded json.RawMessage `json:"is_backgrounded"`
	Status         json.RawMessage `json:"status"`
	Summary        json.RawMessage `json:"summary"`
}

// str reads a raw JSON string; "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// modelUsage is a model's entry in a result's modelUsage: the process's
// running totals of every request to that model, subagents' included.
type modelUsage struct {
	InputTokens   int64 `json:"inputTokens"`
	OutputTokens  int64 `json:"outputTokens"`
	CacheRead     int64 `json:"cacheReadInputTokens"`
	CacheCreation int64 `json:"cacheCreationInputTokens"`
}

func (m modelUsage) minus(o modelUsage) (modelUsage, bool) {
	d := modelUsage{m.InputTokens - o.InputTokens, m.OutputTokens - o.OutputTokens, m.CacheRead - o.CacheRead, m.CacheCreation - o.CacheCreation}
	return d, d.InputTokens >= 0 && d.OutputTokens >= 0 && d.CacheRead >= 0 && d.CacheCreation >= 0
}

func (m modelUsage) info() formats.UsageInfo {
	in, out, read, write := m.InputTokens, m.OutputTokens, m.CacheRead, m.CacheCreation
	u := apiUsage{InputTokens: &in, OutputTokens: &out, CacheRead: &read, CacheCreation: &write}
	return u.info()
}

// apiMessage is a record's message. It has no UnmarshalJSON of its own, so
// that it is decoded in place: with one, the decoder first skips over the
// whole message (most of a record) to find its end, then decodes it. A
// system line's message that is a string is read by decodeRecord.
type apiMessage struct {
	ID         string          `json:"id"`
	Model      string          `json:"model"`
	StopReason string          `json:"stop_reason"`
	Content    json.RawMessage `json:"content"`
	Usage      *apiUsage       `json:"usage"`
	// Text is a system line's message, which is a string (2.1's
	// system/permission_denied).
	Text string `json:"-"`
	// bs are Content's blocks once decoded (decoded): by the first call
	// of blocks, or by a decode of the record that read its content as
	// blocks at once (the session reader's), which leaves Content nil. A
	// record its first pass does not keep has light blocks (lightBlock),
	// which is all that pass reads of it.
	bs      []block
	decoded bool
}

// blocks are the message's content blocks, decoded once.
func (m *apiMessage) blocks() []block {
	if !m.decoded {
		m.bs, m.decoded = blocks(m.Content), true
	}
	return m.bs
}

// textRecord is a record whose message is a string.
type textRecord struct {
	record
	Message string `json:"message"`
}

// decodeRecord decodes a line into r, with a message that is a string as
// the message's Text: a line that fails as a record is tried again as
// one whose message is a string (failing lines are rare).
func decodeRecord(rep *formats.Report, line int, data []byte, r *record) *formats.LineError {
	err := rep.Unmarshal(line, data, r)
	if err == nil {
		return err
	}
	var t textRecord
	if rep.Unmarshal(line, data, &t) != nil {
		return err
	}
	*r = t.record
	r.Message = &apiMessage{Text: t.Message}
	return nil
}

// resultMeta is an entry of 2.1's tool_result_meta on a user line: how
// the call's permission was decided.
type resultMeta struct {
	ID                 string `json:"id"`
	NonExecutionKind   string `json:"non_execution_kind"`
	PermissionDecision *struct {
		Decision string `json:"decision"`
	} `json:"permission_decision"`
}

// rejected: the permission decision refused the call.
func rejected(kind string, decision string) bool {
	return kind == "user-rejected" || decision == "reject" || decision == "deny"
}

// metaRejected are the calls that a user line's tool_result_meta says
// were refused.
func metaRejected(raw json.RawMessage) map[string]bool {
	var metas []resultMeta
	if len(raw) == 0 || json.Unmarshal(raw, &metas) != nil {
		return nil
	}
	out := map[string]bool{}
	for _, m := range metas {
		d := ""
		if m.PermissionDecision != nil {
			d = m.PermissionDecision.Decision
		}
		if m.ID != "" && rejected(m.NonExecutionKind, d) {
			out[m.ID] = true
		}
	}
	return out
}

type apiUsage struct {
	InputTokens   *int64 `json:"input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	// CacheSplit tells the cache writes kept five minutes from those kept
	// an hour, which cost more.
	CacheSplit *struct {
		Hour *int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// hour is the count of cache writes kept an hour, nil when not given.
func (u *apiUsage) hour() *int64 {
	if u.CacheSplit == nil {
		return nil
	}
	return u.CacheSplit.Hour
}

// since is u less an earlier running total of its session, where every
// count of u is at least the earlier one's; else u as it is.
func (u apiUsage) since(prev apiUsage) apiUsage {
	hour, prevHour := u.hour(), prev.hour()
	if formats.SinceTotal([2]**int64{&u.InputTokens, &prev.InputTokens}, [2]**int64{&u.OutputTokens, &prev.OutputTokens},
		[2]**int64{&u.CacheCreation, &prev.CacheCreation}, [2]**int64{&u.CacheRead, &prev.CacheRead},
		[2]**int64{&hour, &prevHour}) && hour != nil {
		u.CacheSplit = &struct {
			Hour *int64 `json:"ephemeral_1h_input_tokens"`
		}{hour}
	}
	return u
}

// info gives the model's usage: Claude's input_tokens leave out the
// cache, the model's input counts cache reads and writes too.
func (u *apiUsage) info() formats.UsageInfo {
	in := formats.OptFrom(u.InputTokens)
	if in.OK {
		in = in.Plus(formats.OptFrom(u.CacheRead)).Plus(formats.OptFrom(u.CacheCreation))
	}
	return formats.UsageInfo{
		InputTokens:        in,
		OutputTokens:       formats.OptFrom(u.OutputTokens),
		CacheWriteTokens:   formats.OptFrom(u.CacheCreation),
		CacheWrite1hTokens: formats.OptFrom(u.hour()),
		CacheReadTokens:    formats.OptFrom(u.CacheRead),
	}
}

// usage is the model's usage of a message's or result's counts, by the
// agent's convention: Qwen Code's input_tokens include the cached tokens
// already (the OpenAI convention it gets them in).
func (d *decoder) usage(u *apiUsage) formats.UsageInfo {
	i := u.info()
	if d.copy.OpenAICounts {
		i.InputTokens = formats.OptFrom(u.InputTokens)
	}
	return i
}

// response is what the message says of the request it answers.
func (m *apiMessage) response() formats.Response {
	r := formats.Response{ID: m.ID, Model: m.Model, StopReason: m.StopReason}
	if r.Model == "<synthetic>" {
		r.Model = ""
	}
	return r
}

// block is an Anthropic content block.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
}

// apiEvent is a raw Messages API stream event (--include-partial-messages).
type apiEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID string `json:"id"`
	} `json:"message"`
	Delta *struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		Thinking   string `json:"thinking"`
		StopReason string `json:"stop_reason"`
	} `json:"delta"`
	// message_delta's usage: the message's final output count.
	Usage *struct {
		OutputTokens *int64 `json:"output_tokens"`
	} `json:"usage"`
}

type rateLimitInfo struct {
	Status        string   `json:"status"`
	RateLimitType string   `json:"rateLimitType"`
	Utilization   *float64 `json:"utilization"`
	ResetsAt      *float64 `json:"resetsAt"`
}

// text says what the notice says: which limit, its status, how much of it
// is used, and when it resets.
func (i *rateLimitInfo) text() string {
	var b strings.Builder
	b.WriteString("rate limit")
	if i.RateLimitType != "" {
		b.WriteString(" (" + i.RateLimitType + ")")
	}
	if i.Status != "" {
		b.WriteString(": " + i.Status)
	}
	if i.Utilization != nil {
		b.WriteString(", " + strconv.FormatFloat(*i.Utilization*100, 'f', -1, 64) + "% used")
	}
	if i.ResetsAt != nil && *i.ResetsAt > 0 {
		b.WriteString(", resets at " + time.Unix(int64(*i.ResetsAt), 0).UTC().Format(time.RFC3339))
	}
	return b.String()
}

type denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// blocks reads message content: a string is one text block.
// saysSomething: some block of an assistant message gives an event of its
// agent: text or thinking that is not empty, a tool call, or a server tool's
// result. The text of an API error is a notice of the run, not the agent's.
func saysSomething(bs []block, apiError bool) bool {
	for _, b := range bs {
		switch {
		case b.Type == "text" && b.Text != "" && !apiError, b.Type == "thinking" && b.Thinking != "",
			b.Type == "tool_use", b.Type == "server_tool_use",
			strings.HasSuffix(b.Type, "_tool_result") && b.ToolUseID != "":
			return true
		}
	}
	return false
}

func blocks(raw json.RawMessage) []block {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []block{{Type: "text", Text: s}}
		}
		return nil
	}
	var bs []block
	if json.Unmarshal(raw, &bs) != nil {
		// One odd block must not cost the others: read them one by one.
		var items []json.RawMessage
		json.Unmarshal(raw, &items)
		for _, it := range items {
			var b block
			if json.Unmarshal(it, &b) == nil {
				bs = append(bs, b)
			}
		}
	}
	return bs
}

// contentText is the text of a tool_result's content: a string, or the
// text blocks joined.
func contentText(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// rawStrings reads a JSON array of strings that may hold other values;
// empty strings say nothing and are left out.
func rawStrings(raws []json.RawMessage) []string {
	var out []string
	for _, r := range raws {
		var s string
		if json.Unmarshal(r, &s) == nil {
			if s != "" {
				out = append(out, s)
			}
		} else {
			out = append(out, string(r))
		}
	}
	return out
}

// call is what the decoder keeps of a tool call, for its result, its
// subagent and its denial.
type call struct {
	name    string
	agent   string
	args    json.RawMessage
	failed  string // the error text of a failed result
	ended   bool   // its result came
	denied  bool   // its result was a refusal
	refused bool   // a system/permission_denied line refused it (2.1)
}

// pendingMsg gathers the blocks of one assistant message, which Claude Code
// may print over several lines sharing message.id, until it is complete.
type pendingMsg struct {
	active   bool
	id       string
	agent    string
	line     int
	time     time.Time
	text     formats.Text
	thinking formats.Text
	// thoughts are the thinking blocks, with their signatures.
	thoughts []formats.Thought
	// usage: a message that came with its stream events (message_start)
	// keeps its usage here until its message_delta, which says why it
	// stopped and its final output count.
	usage *formats.Event
}

// think gathers a thinking block.
func (m *pendingMsg) think(b *block) {
	m.thinking.Join(b.Thinking)
	m.thoughts = append(m.thoughts, formats.Thought{Text: b.Thinking, Signature: b.Signature})
}

// decoder turns Claude Code messages into events. Both readers feed it, one
// record at a time.
type decoder struct {
	// streamedID is the message whose message_start came last.
	streamedID string
	opts       formats.ReadOptions
	// copy is the agent whose copy of Claude Code's output is read, and
	// its counts.
	copy Copy
	out  formats.EventQueue

	// The record being decoded, and the records held before it (a line of a
	// message still being gathered, a stream event that only frames
	// deltas): the next event carries them, so that a same-dialect writer
	// prints every record, in order.
	src formats.Carrier
	// heldOnly: the event being emitted ends what came before the current
	// record, so it carries the held records only.
	heldOnly bool
	// preRun are the events of system lines that came before a run (a
	// SessionStart hook's response before init): they belong to the run
	// that follows, and go out after its start, which carries their
	// records.
	preRun []*formats.Event

	open    bool
	session string
	model   string
	version string // the run's Claude Code version, from init
	// lastTime is the timestamp of the last line that had one.
	lastTime time.Time
	msg      pendingMsg
	lastText string
	// usageIDs are the ids of the messages whose usage was given, and
	// their agents': a message's lines repeat its usage, counted once,
	// until its agent's model gets its next input (newInput).
	usageIDs map[string]string
	// subUsage: a subagent's requests had usage in this run. Claude's
	// result.usage counts the main agent's alone, so the run's token
	// totals are then the sum of every request.
	subUsage bool
	// calls are the run's calls: the open ones, and of those that ended
	// the ones the result's permission_denials or a subagent's records may
	// still name (CallMap).
	calls  formats.CallMap[*call]
	agents []string // open subagents, in the order they started
	// streamed is the text each agent streamed in deltas that no whole
	// message has given yet.
	streamed map[string]*streamedText
	// errors are the run's error notices: API errors and the result's
	// errors[]. A failed run's reason is all of them, as a writer gives
	// them in errors[].
	errors []string
	// errCode is the provider's code of the run's last API error.
	errCode string
	// costSession and costTotal are the session and total_cost_usd of the
	// last result: in a session of several prompts (init/result pairs),
	// Claude Code prints the session's running total, so a run's own cost
	// is what it adds to it.
	costSession string
	costTotal   float64
	// usageSession and usageTotal are the session and the modelUsage
	// totals (by model) of the last result that the run's totals were
	// taken from: modelUsage is a running total too.
	usageSession string
	usageTotal   map[string]modelUsage
	// totals are the last result's usage of each session of the input,
	// for a copy whose result counts the session's running total.
	totals map[string]apiUsage
	// models are the models the run's messages named.
	models map[string]bool
	// background: a subagent of the run runs in the background (2.1's
	// task_started with is_backgrounded, or its task_notification). Its
	// report makes Claude Code begin a turn of the same run, with an init
	// of its own, and print one result per turn at the end.
	background bool
	// turns counts the inits of the open run that a result has not yet
	// answered, beyond its first.
	turns int
	// spawned: a subagent of the run said something.
	spawned bool
}

type streamedText struct{ text, thinking strings.Builder }

// emit queues an event of the current record. Text an agent streamed
// without its whole message becomes that message when the agent moves on
// (a call, a result, its end, the run's end): that is where a writer that
// cannot stream deltas writes it, so the two read the same.
func (d *decoder) emit(ev *formats.Event) {
	switch ev.Kind {
	case formats.TextDelta, formats.ThinkingDelta:
		st := d.streamed[ev.Agent]
		if st == nil {
			if d.streamed == nil {
				d.streamed = map[string]*streamedText{}
			}
			st = &streamedText{}
			d.streamed[ev.Agent] = st
		}
		if ev.Kind == formats.TextDelta {
			st.text.WriteString(ev.Piece())
		} else {
			st.thinking.WriteString(ev.Piece())
		}
	case formats.Message:
		delete(d.streamed, ev.Agent)
	case formats.RunStart:
		clear(d.streamed)
		d.errors = d.errors[:0]
		d.errCode = ""
	case formats.Notice:
		if ev.Severity == formats.Error && ev.NoticeText() != "" {
			d.errors = append(d.errors, ev.NoticeText())
			d.errCode = ev.Code
		}
	case formats.ToolCall, formats.ToolResult, formats.UserMessage, formats.AgentEnd, formats.Compaction:
		d.wholeStreamed(ev.Agent)
	case formats.RunEnd:
		d.wholeStreamedAll()
	}
	d.push(ev)
}

// wholeStreamedAll gives every agent's streamed text as its message, in the
// order of the agents' ids, as writers do at the end of a run.
func (d *decoder) wholeStreamedAll() {
	for _, a := range slices.Sorted(maps.Keys(d.streamed)) {
		d.wholeStreamed(a)
	}
}

// wholeStreamed gives the text an agent streamed, if any, as its message.
func (d *decoder) wholeStreamed(agent string) {
	st := d.streamed[agent]
	if st == nil {
		return
	}
	delete(d.streamed, agent)
	ev := &formats.Event{Kind: formats.Message, Agent: agent, Text: st.text.String(), Thinking: st.thinking.String()}
	if agent == "" && ev.MessageText() != "" {
		d.lastText = ev.MessageText()
	}
	d.push(ev)
}

// push queues an event; the first event of a record carries it (and the
// held records before it), the others are Continued.
func (d *decoder) push(ev *formats.Event) {
	d.src.Stamp(ev, !d.heldOnly)
	d.out.Push(ev)
}

// decode reads one record. data is the JSON object; carrier is the input
// text to pass through for it (nil when an earlier record carried it).
func (d *decoder) decode(data, carrier []byte, line int) *formats.LineError {
	d.src.Begin(carrier, line)
	var r record
	if err := decodeRecord(d.opts.Report, line, data, &r); err != nil {
		if !json.Valid(data) {
			return err
		}
		// Valid JSON of an unexpected shape: keep it as it is.
		d.opts.Report.Warn(line, "a Claude Code message with fields of unexpected types; kept as an unknown event")
		d.src.Type = formats.TypeOf(data)
		d.ensureRun("")
		d.emitRaw()
		d.hold()
		return nil
	}
	d.src.Type = r.Type
	if r.Type == "system" && r.Subtype != "" {
		d.src.Type += "/" + r.Subtype
	}
	if r.Timestamp != "" {
		if t, err := time.Parse(time.RFC3339Nano, r.Timestamp); err == nil {
			d.src.Time, d.lastTime = t, t
		}
	}
	if d.src.Time.IsZero() {
		// A line without a timestamp in a stream that has them
		// (rate_limit_event, system/status, …) takes the time of the line
		// before it, not the time it was read.
		d.src.Time = d.lastTime
	}
	switch r.Type {
	case "system":
		d.system(&r)
	case "assistant":
		d.assistant(&r)
	case "user":
		d.user(&r)
	case "result":
		d.result(&r)
	case "stream_event":
		d.streamEvent(&r)
	case "rate_limit_event":
		if r.RateLimitInfo == nil {
			d.runEvent(&r, &formats.Event{Kind: formats.Raw})
			break
		}
		d.runEvent(&r, &formats.Event{Kind: formats.Notice, Severity: formats.Info, Text: r.RateLimitInfo.text()})
	default:
		if r.Type == "" {
			d.opts.Report.Warn(line, "a message without a \"type\"; kept as an unknown event")
		}
		d.runEvent(&r, &formats.Event{Kind: formats.Raw})
	}
	d.hold()
	return nil
}

// emitRaw passes an unknown record on, with the records held before it, so
// that a same-dialect writer prints them in order (Claude Code prints a
// rate_limit_event right after the first line of a message).
func (d *decoder) emitRaw() { d.emit(&formats.Event{Kind: formats.Raw}) }

// hold keeps a record that produced no event for the next event.
func (d *decoder) hold() { d.src.Hold() }

// finish ends the input: the message being gathered is complete, and held
// records go out as one unknown event, so that nothing is dropped.
func (d *decoder) finish() {
	d.flushMsg()
	d.wholeStreamedAll()
	d.src.Begin(nil, d.src.HeldLine)
	d.src.Type = "stream_event"
	if len(d.preRun) > 0 {
		// System lines, and no run after them: their events carry them.
		pre := d.preRun
		d.preRun = nil
		for _, ev := range pre {
			d.emit(ev)
		}
	}
	if len(d.src.Held) > 0 {
		d.emit(&formats.Event{Kind: formats.Raw})
	}
}

// ensureRun opens a run when none is open, or a new one when the session
// changes.
func (d *decoder) ensureRun(session string) {
	switch {
	case !d.open:
	case session != "" && d.session != "" && session != d.session:
	default:
		if d.session == "" {
			d.session = session
		}
		return
	}
	d.startRun(formats.RunInfo{SessionID: session})
}

// usageOf is a message's usage as the stream gives it. 2.1 (2.1.285,
// 2.1.332) prints each message as its blocks end, with the usage of
// message_start, where output_tokens counts the first token or so: a
// message that does not say why it stopped has no output count then (the
// result has the run's). 2.0 and 1.0 print the final counts on each line.
func (d *decoder) usageOf(m *apiMessage) formats.UsageInfo {
	u := d.usage(m.Usage)
	if m.StopReason == "" && atLeast(d.version, 2, 1) {
		u.OutputTokens = formats.Opt[int64]{}
	}
	return u
}

// atLeast: version v (major.minor.patch) is major.minor or later.
func atLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (ma > major || ma == major && mi >= minor)
}

func (d *decoder) startRun(info formats.RunInfo) {
	d.flushMsg()
	d.open = true
	d.version = info.AgentVersion
	d.session, d.model, d.lastText = info.SessionID, info.Model, ""
	d.msg = pendingMsg{}
	clear(d.usageIDs)
	d.subUsage, d.spawned, d.background, d.turns = false, false, false, 0
	clear(d.models)
	d.calls.Reset()
	d.agents = d.agents[:0]
	info.Provider, info.AgentName = d.copy.agent()
	d.emit(&formats.Event{Kind: formats.RunStart, Run: info})
	pre := d.preRun
	d.preRun = nil
	for _, ev := range pre {
		d.emit(ev)
	}
}

func (d *decoder) system(r *record) {
	if r.Subtype == "init" {
		if d.open && d.background && r.SessionID != "" && r.SessionID == d.session {
			// A background subagent's report begins a turn of the same
			// run: the process goes on, and prints this turn's result
			// after the first's.
			d.turns++
			d.emitRaw()
			return
		}
		d.startRun(formats.RunInfo{SessionID: r.SessionID, Model: r.Model, Cwd: r.Cwd, AgentVersion: r.Version})
		return
	}
	var ev *formats.Event
	switch r.Subtype {
	case "task_started":
		if string(r.IsBackgrounded) == "true" {
			d.background = true
		}
		ev = &formats.Event{Kind: formats.Raw}
	case "task_notification":
		// A background subagent ended: its report is its end.
		d.background = true
		id := str(r.ToolUseIDField)
		if d.open && id != "" && slices.Contains(d.agents, id) {
			d.flushMsg()
			st := formats.Completed
			switch str(r.Status) {
			case "failed":
				st = formats.Failed
			case "killed", "stopped", "cancelled":
				st = formats.Cancelled
			}
			d.endAgent(id, st, str(r.Summary))
			return
		}
		ev = &formats.Event{Kind: formats.Raw}
	case "compact_boundary":
		d.flushMsg()
		ev = &formats.Event{Kind: formats.Compaction}
	case "permission_denied":
		// 2.1 says a call was refused before its tool_result does.
		id := str(r.ToolUseIDField)
		c := d.call(id)
		if id == "" || c == nil {
			ev = &formats.Event{Kind: formats.Raw}
			break
		}
		c.refused = true
		reason := ""
		if r.Message != nil {
			reason = r.Message.Text
		}
		d.runEvent(r, &formats.Event{Kind: formats.PermissionAnswer, Agent: c.agent, Call: formats.Call{ID: id, Name: c.name},
			Permission: formats.Permission{RequestID: id, Reason: reason}})
		return
	case "api_retry":
		text := "the API request failed; retrying"
		if r.Attempt != nil {
			text += " (attempt " + itoa(*r.Attempt)
			if r.MaxRetries != nil {
				text += " of " + itoa(*r.MaxRetries)
			}
			text += ")"
		}
		ev = &formats.Event{Kind: formats.Notice, Severity: formats.Warning, Text: text}
	default:
		ev = &formats.Event{Kind: formats.Raw}
	}
	d.runEvent(r, ev)
}

// runEvent emits the event of a line that is not a message of the
// conversation (a system line, a rate limit, a type this reader does not
// know). Before init, such a line belongs to the run that follows: its
// record is held for that run's start, and its event waits for it.
func (d *decoder) runEvent(r *record, ev *formats.Event) {
	if !d.open {
		ev.Source = formats.Source{Type: d.src.Type, LineNo: d.src.Line}
		ev.Time = d.src.Time
		d.preRun = append(d.preRun, ev)
		return
	}
	d.ensureRun(r.SessionID)
	d.emit(ev)
}

// agentOf is the agent of a message: the main agent, or the subagent that
// the Task/Agent call parent_tool_use_id started, opened on first sight.
// knownAgent is the subagent a record belongs to if it has started, else
// the main agent.
func (d *decoder) knownAgent(r *record) string {
	if r.ParentToolUseID != nil {
		for _, a := range d.agents {
			if a == *r.ParentToolUseID {
				return a
			}
		}
	}
	return ""
}

func (d *decoder) agentOf(r *record) string {
	if r.ParentToolUseID == nil || *r.ParentToolUseID == "" {
		return ""
	}
	if known := d.knownAgent(r); known != "" {
		return known
	}
	id := *r.ParentToolUseID
	d.agents = append(d.agents, id)
	d.spawned = true
	info := formats.AgentInfo{ParentCall: id}
	if c := d.call(id); c != nil {
		info.Parent = c.agent
		info.Label = taskLabel(c.args)
	}
	d.emit(&formats.Event{Kind: formats.AgentStart, Agent: id, AgentInfo: info})
	return id
}

// taskLabel names a subagent from its Task/Agent call: its type, else its
// description.
func taskLabel(args json.RawMessage) string {
	var in struct {
		SubagentType string `json:"subagent_type"`
		Description  string `json:"description"`
	}
	json.Unmarshal(args, &in)
	if in.SubagentType != "" {
		return in.SubagentType
	}
	return in.Description
}

func (d *decoder) endAgent(id string, status formats.Status, report string) {
	for i, a := range d.agents {
		if a == id {
			d.agents = append(d.agents[:i], d.agents[i+1:]...)
			d.emit(&formats.Event{Kind: formats.AgentEnd, Agent: id, Status: status, Text: report})
			return
		}
	}
}

func (d *decoder) assistant(r *record) {
	m := r.Message
	if m == nil {
		d.ensureRun(r.SessionID)
		d.opts.Report.Warn(d.src.Line, "an assistant message without \"message\"; kept as an unknown event")
		d.emitRaw()
		return
	}
	d.ensureRun(r.SessionID)
	apiError := len(r.Error) > 0 && string(r.Error) != "null" || syntheticError(m)
	code := func(text string) string {
		if c := errorCode(r.MsgAPIErrorType, r.MsgAPIErrorStatus); c != "" {
			return c
		}
		return apiErrorCode(text, r.Error)
	}
	if m.Model == "<synthetic>" {
		// Claude Code's own message (an API error, …): no model call,
		// whatever usage it carries.
		m.Usage = nil
	}
	if !saysSomething(m.blocks(), apiError) {
		// Nothing said: no message, and no subagent started by it. Its
		// usage, if any, counts for an agent already known, else the run.
		if apiError {
			d.flushMsg()
			for _, b := range m.blocks() {
				if b.Type == "text" && b.Text != "" {
					d.emit(&formats.Event{Kind: formats.Notice, Agent: d.knownAgent(r), Severity: formats.Error, Text: b.Text, Code: code(b.Text)})
				}
			}
		}
		if a := d.knownAgent(r); m.Usage != nil && !d.usage(m.Usage).Empty() && !d.counted(m.ID, a) {
			d.emitUsage(a, d.usageOf(m), m.response())
		}
		return
	}
	parent := ""
	if r.ParentToolUseID != nil {
		parent = *r.ParentToolUseID
	}
	if d.msg.active && (m.ID == "" || m.ID != d.msg.id || parent != d.msg.agent) {
		d.flushMsg()
	}
	agent := d.agentOf(r)
	if !d.msg.active {
		d.msg = pendingMsg{active: true, id: m.ID, agent: agent, line: d.src.Line, time: d.src.Time}
	}
	if m.Usage != nil && !d.counted(m.ID, agent) {
		if m.ID != "" && m.ID == d.streamedID && m.StopReason == "" && d.msg.id == m.ID {
			// Its message_delta is to come.
			d.msg.usage = &formats.Event{Agent: agent, Usage: d.usageOf(m), Response: m.response()}
		} else {
			d.emitUsage(agent, d.usageOf(m), m.response())
		}
	}
	if m.Model != "" && m.Model != "<synthetic>" {
		if d.models == nil {
			d.models = map[string]bool{}
		}
		d.models[m.Model] = true
	}
	if agent == "" && m.Model != "" && m.Model != "<synthetic>" && m.Model != d.model {
		if d.model != "" {
			d.emit(&formats.Event{Kind: formats.ModelChange, Run: formats.RunInfo{Model: m.Model}})
		}
		d.model = m.Model
	}
	for _, b := range m.blocks() {
		switch b.Type {
		case "text":
			if apiError {
				d.emit(&formats.Event{Kind: formats.Notice, Agent: agent, Severity: formats.Error, Text: b.Text, Code: code(b.Text)})
			} else {
				d.msg.text.Join(b.Text)
			}
		case "thinking":
			d.msg.think(&b)
		case "tool_use", "server_tool_use":
			d.flushContent()
			d.toolUse(agent, &b)
		default:
			// A server tool's result (web_search_tool_result, …) comes in
			// the assistant message itself.
			if strings.HasSuffix(b.Type, "_tool_result") && b.ToolUseID != "" {
				d.flushContent()
				d.toolResult(agent, &b)
			}
		}
	}
}

// call is what is kept of a call, or nil.
func (d *decoder) call(id string) *call {
	c, _ := d.calls.Get(id)
	return c
}

// subagentTool says whether a call of the tool starts a subagent.
func subagentTool(name string) bool { return name == "Task" || name == "Agent" }

func (d *decoder) toolUse(agent string, b *block) {
	d.calls.Set(b.ID, &call{name: b.Name, agent: agent, args: b.Input})
	d.emit(&formats.Event{Kind: formats.ToolCall, Agent: agent, Call: formats.Call{ID: b.ID, Name: b.Name, Args: b.Input}})
	if b.Name == "TodoWrite" {
		var in struct {
			Todos []struct {
				Content string `json:"content"`
				Status  string `json:"status"`
			} `json:"todos"`
		}
		if json.Unmarshal(b.Input, &in) == nil && in.Todos != nil {
			todos := make([]formats.Todo, len(in.Todos))
			for i, t := range in.Todos {
				todos[i] = formats.Todo{Content: t.Content, Status: t.Status}
			}
			d.emit(&formats.Event{Kind: formats.Todos, Agent: agent, Todos: todos})
		}
	}
}

// flushContent emits the text gathered so far as a Message, keeping the
// message open for its further blocks.
func (d *decoder) flushContent() {
	m := &d.msg
	if !m.active || (m.text.Len() == 0 && m.thinking.Len() == 0) {
		return
	}
	d.heldOnly = m.line != d.src.Line
	text := m.text.String()
	d.emit(&formats.Event{Kind: formats.Message, Agent: m.agent, Text: text, Thinking: m.thinking.String(), Thoughts: m.thoughts,
		Time: m.time, Source: formats.Source{Type: "assistant", LineNo: m.line}})
	d.heldOnly = false
	if m.agent == "" && text != "" {
		d.lastText = text
	}
	m.text.Reset()
	m.thinking.Reset()
	m.thoughts = nil
}

// flushMsg ends the message being gathered.
func (d *decoder) flushMsg() {
	if u := d.msg.usage; u != nil {
		// A streamed message whose message_delta never came.
		d.msg.usage = nil
		d.emitUsage(u.Agent, u.Usage, u.Response)
	}
	d.flushContent()
	d.msg = pendingMsg{}
}

// counted reports whether the usage of message id was given already, and
// notes that it is now.
func (d *decoder) counted(id, agent string) bool {
	if id == "" {
		return false
	}
	if _, ok := d.usageIDs[id]; ok {
		return true
	}
	if d.usageIDs == nil {
		d.usageIDs = map[string]string{}
	}
	d.usageIDs[id] = agent
	return false
}

// newInput: the agent's model gets its next input (a prompt, its calls'
// results), so a message of it that follows is another request, whatever
// its id.
func (d *decoder) newInput(agent string) {
	for id, a := range d.usageIDs {
		if a == agent {
			delete(d.usageIDs, id)
		}
	}
}

func (d *decoder) user(r *record) {
	d.flushMsg()
	d.ensureRun(r.SessionID)
	if r.Message == nil {
		d.emitRaw()
		return
	}
	bs := r.Message.blocks()
	agent := ""
	for _, b := range bs {
		// Only a record that gives an event opens its subagent: the writer
		// has no record for a subagent that says nothing.
		if b.Type == "text" || b.Type == "tool_result" {
			agent = d.agentOf(r)
			d.newInput(agent)
			break
		}
	}
	refused := metaRejected(r.ToolResultMeta)
	for _, b := range bs {
		switch b.Type {
		case "text":
			d.emit(&formats.Event{Kind: formats.UserMessage, Agent: agent, Text: b.Text})
		case "tool_result":
			if refused[b.ToolUseID] {
				if c := d.call(b.ToolUseID); c != nil {
					c.refused = true
				}
			}
			d.toolResult(agent, &b)
		}
	}
}

// resultText is a tool result's content as text: its text blocks' texts,
// or the JSON of results without text blocks (search results, …).
func resultText(content json.RawMessage) string {
	out := contentText(content)
	if c := bytes.TrimSpace(content); out == "" && len(c) > 0 && c[0] == '[' && !bytes.Contains(c, []byte(`"text"`)) {
		out = strings.ToValidUTF8(string(c), "\uFFFD")
	}
	return out
}

// resultOutput is a tool result's content as a call's output: a string
// left undecoded (formats.JSONOutput), for the pipeline to decode only
// for a writer that needs its text; else resultText.
func resultOutput(content json.RawMessage) formats.Output {
	c := bytes.TrimSpace(content)
	if len(c) > 0 && c[0] == '"' {
		// Only a literal the scanner checks: what it passes decodes to
		// the text contentText gives.
		sc := formats.JSONScanner{B: c}
		if text, escaped, high, ok := sc.String(); ok && sc.End() && (!high || utf8.Valid(text)) {
			return formats.CheckedJSONOutput(c, escaped)
		}
	}
	return formats.TextOutput(resultText(content))
}

func (d *decoder) toolResult(agent string, b *block) {
	out := resultText(b.Content)
	c := d.call(b.ToolUseID)
	res := formats.Call{ID: b.ToolUseID, Status: formats.Completed, Output: formats.TextOutput(out)}
	if b.IsError != nil && *b.IsError {
		res.Status, res.Output, res.Error = formats.Failed, formats.TextOutput(""), out
		if d.copy.refused(out) || c != nil && c.refused {
			// The result's permission_denials will list it: it ends here,
			// once, as refused.
			res.Status = formats.Denied
		}
	}
	if c == nil {
		// A result without its call still ends it, for permission_denials.
		c = &call{agent: agent}
		d.calls.Set(b.ToolUseID, c)
	}
	res.Name = c.name
	c.ended = true
	c.denied = res.Status == formats.Denied
	if res.Status == formats.Failed {
		c.failed = out
	}
	if res.Status == formats.Completed && !c.refused && !subagentTool(c.name) {
		// Nothing names it again but a late repeat: a refused or failed
		// call may be in the result's permission_denials, a subagent's
		// records may follow its call's result (in the background).
		d.calls.End(b.ToolUseID)
	}
	d.endAgent(b.ToolUseID, res.Status, out)
	d.emit(&formats.Event{Kind: formats.ToolResult, Agent: agent, Call: res})
}

func (d *decoder) streamEvent(r *record) {
	d.ensureRun(r.SessionID)
	if r.Event == nil {
		return
	}
	switch r.Event.Type {
	case "message_start":
		if r.Event.Message != nil && d.msg.active && d.msg.id != r.Event.Message.ID {
			d.flushMsg()
		}
		if r.Event.Message != nil {
			d.streamedID = r.Event.Message.ID
		}
	case "message_delta":
		if u := d.msg.usage; u != nil && r.Event.Delta != nil {
			// The message's end: its usage goes out with why it stopped
			// and its final output count.
			d.msg.usage = nil
			u.Response.StopReason = r.Event.Delta.StopReason
			if r.Event.Usage != nil && r.Event.Usage.OutputTokens != nil {
				u.Usage.OutputTokens = formats.Some(*r.Event.Usage.OutputTokens)
			}
			d.emitUsage(u.Agent, u.Usage, u.Response)
		}
	case "content_block_delta":
		if r.Event.Delta == nil {
			return
		}
		// An empty delta says nothing, and opens no subagent.
		switch r.Event.Delta.Type {
		case "text_delta":
			if r.Event.Delta.Text == "" {
				return
			}
			d.emit(&formats.Event{Kind: formats.TextDelta, Agent: d.agentOf(r), Text: r.Event.Delta.Text})
		case "thinking_delta":
			if r.Event.Delta.Thinking == "" {
				return
			}
			d.emit(&formats.Event{Kind: formats.ThinkingDelta, Agent: d.agentOf(r), Text: r.Event.Delta.Thinking})
		}
	}
	// Other stream events only frame the deltas: the record is held.
}

func (d *decoder) result(r *record) {
	d.flushMsg()
	if d.open && d.turns > 0 && (r.SessionID == "" || r.SessionID == d.session) {
		// The result of a turn before the run's last (a background
		// subagent's report began another): the run goes on, and its last
		// result, whose totals run over every turn, ends it.
		d.turns--
		for _, e := range rawStrings(r.Errors) {
			d.emit(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: e})
		}
		d.emitRaw()
		return
	}
	d.ensureRun(r.SessionID)
	// The main agent's streamed text may be the answer.
	d.wholeStreamed("")
	failed := (r.IsError != nil && *r.IsError) || (r.Subtype != "" && r.Subtype != "success")
	errs := rawStrings(r.Errors)
	// The refusals go to the agents still open, before they end; a
	// refusal of an agent that ended is the run's to say.
	live := func(agent string) string {
		if slices.Contains(d.agents, agent) {
			return agent
		}
		return ""
	}
	for _, dn := range r.PermissionDenials {
		if c := d.call(dn.ToolUseID); c != nil && c.denied {
			// Its tool_result ended it already, as refused: a call ends once.
			continue
		}
		if c := d.call(dn.ToolUseID); c != nil && c.ended {
			// The call ended already, failed, its result saying the refusal
			// in other words: the denial is the answer to its permission,
			// not a second end.
			d.emit(&formats.Event{Kind: formats.PermissionAnswer, Agent: live(c.agent), Call: formats.Call{ID: dn.ToolUseID, Name: c.name},
				Permission: formats.Permission{RequestID: dn.ToolUseID, Reason: c.failed}})
			continue
		}
		ev := &formats.Event{Kind: formats.ToolResult, Call: formats.Call{ID: dn.ToolUseID, Name: dn.ToolName, Args: dn.ToolInput, Status: formats.Denied}}
		if c := d.call(dn.ToolUseID); c != nil {
			ev.Agent = c.agent
		}
		if ev.Call.Error == "" && len(errs) == 1 && len(r.PermissionDenials) == 1 {
			// A run stopped by a refusal says why in its one error.
			ev.Call.Error = errs[0]
		}
		d.emit(ev)
	}
	for len(d.agents) > 0 {
		d.endAgent(d.agents[len(d.agents)-1], formats.Cancelled, "")
	}
	for _, e := range errs {
		d.emit(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: e})
	}
	if !failed {
		answer := d.lastText
		if r.Result != nil && *r.Result != "" {
			answer = *r.Result
		}
		if answer != "" {
			d.emit(&formats.Event{Kind: formats.Answer, Text: answer})
		}
	}
	end := &formats.Event{Kind: formats.RunEnd, Status: formats.Completed,
		Run: formats.RunInfo{SessionID: r.SessionID, Model: d.model, ExitCode: formats.Some(0)}}
	if end.Run.SessionID == "" {
		end.Run.SessionID = d.session
	}
	if end.Run.Model == "" && len(r.ModelUsage) == 1 {
		for m := range r.ModelUsage {
			end.Run.Model = m
		}
	}
	if failed {
		// Claude Code prints no exit code: the run view settles it, 1, or 2
		// for a run that stopped on a refused call.
		end.Status, end.Run.ExitCode = formats.Failed, formats.Opt[int]{}
		end.Text = errorText(r.Error)
		if end.ErrorText() == "" {
			end.Text = strings.Join(d.errors, "\n")
			end.Code = d.errCode
		}
		if end.ErrorText() == "" && r.Result != nil {
			end.Text = *r.Result
		}
		if c := errorCode(r.APIErrorType, r.APIErrorStatus); c != "" {
			end.Code = c
		} else if end.Code == "" && r.Result != nil {
			end.Code = apiErrorCode(*r.Result, nil) // "API Error: 529 {…}"
		}
		switch {
		case end.ErrorText() != "":
		case r.Subtype != "" && r.Subtype != "success":
			end.Text = "the run ended with " + r.Subtype
		default:
			end.Text = "the run failed"
		}
	}
	// The run's totals: result.usage counts the main agent's requests
	// alone; where subagents ran, modelUsage (the process's running totals
	// by model, as total_cost_usd is) counts theirs too. Without either,
	// the pipeline sums the requests the stream printed.
	totals, ok := d.modelTotals(end.Run.SessionID, r.ModelUsage)
	switch {
	case ok && (d.subUsage || d.spawned || statsSpawned(r.SubagentStats)):
		end.Usage = totals
	case r.Usage != nil && !d.subUsage:
		end.Usage = d.usage(d.runUsage(end.Run.SessionID, r.Usage))
	}
	if r.TotalCostUSD != nil {
		cost := *r.TotalCostUSD
		if d.costSession == end.Run.SessionID && end.Run.SessionID != "" && cost >= d.costTotal {
			cost = math.Round((cost-d.costTotal)*1e12) / 1e12
		}
		d.costSession, d.costTotal = end.Run.SessionID, *r.TotalCostUSD
		end.Usage.CostUSD = formats.Some(cost)
	}
	if r.DurationMS != nil && *r.DurationMS > 0 {
		end.Duration = msDuration(*r.DurationMS)
	}
	d.emit(end)
	d.open = false
	d.msg = pendingMsg{}
}

// runUsage is the run's own part of a result's usage. A copy with OpenAI
// counts (Qwen Code) prints, after a resume, the session's running total:
// where the session's earlier result is in the same input (its stdouts one
// after the other), the run counts from that total.
func (d *decoder) runUsage(session string, u *apiUsage) *apiUsage {
	if !d.copy.OpenAICounts || session == "" {
		return u
	}
	if d.totals == nil {
		d.totals = map[string]apiUsage{}
	}
	prev, seen := d.totals[session]
	d.totals[session] = *u
	if !seen {
		return u
	}
	own := u.since(prev)
	return &own
}

// modelTotals is the run's part of a result's modelUsage: the running
// totals less those of the session's last result, summed over the models
// the run's messages named (a helper model that only titles the session or
// warms a subagent up is left out) or over every model when no message
// named one (--output-format json).
func (d *decoder) modelTotals(session string, raw map[string]json.RawMessage) (formats.UsageInfo, bool) {
	cur := map[string]modelUsage{}
	for m, b := range raw {
		var u modelUsage
		if json.Unmarshal(b, &u) == nil {
			cur[m] = u
		}
	}
	if len(cur) == 0 {
		return formats.UsageInfo{}, false
	}
	var base map[string]modelUsage
	if session != "" && session == d.usageSession {
		base = d.usageTotal
	}
	d.usageSession, d.usageTotal = session, cur
	var sum modelUsage
	named := false
	for m := range cur {
		named = named || d.models[m]
	}
	for m, u := range cur {
		if named && !d.models[m] {
			continue
		}
		if b, ok := base[m]; ok {
			if diff, ok := u.minus(b); ok {
				u = diff
			}
		}
		sum = modelUsage{sum.InputTokens + u.InputTokens, sum.OutputTokens + u.OutputTokens, sum.CacheRead + u.CacheRead, sum.CacheCreation + u.CacheCreation}
	}
	return sum.info(), true
}

// statsSpawned: a result's subagent_stats (2.1) says subagents ran.
func statsSpawned(raw json.RawMessage) bool {
	var st struct {
		Spawned int `json:"spawned"`
	}
	return json.Unmarshal(raw, &st) == nil && st.Spawned > 0
}

// syntheticError: a message Claude Code made itself to say that the API
// request failed (1.0 marks it with no error field).
func syntheticError(m *apiMessage) bool {
	if m.Model != "<synthetic>" {
		return false
	}
	for _, b := range m.blocks() {
		if b.Type == "text" && strings.HasPrefix(b.Text, "API Error") {
			return true
		}
	}
	return false
}

// errorCode is the provider's code of an error that Claude Code names
// (2.1): its type, else the type the API gives its HTTP status.
func errorCode(typ, status json.RawMessage) string {
	if t := str(typ); t != "" {
		return t
	}
	var n int
	if json.Unmarshal(status, &n) == nil {
		return apiErrorTypes[n]
	}
	return ""
}

// apiErrorTypes are the Messages API's error types by HTTP status.
var apiErrorTypes = map[int]string{400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
	403: "permission_error", 404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
	500: "api_error", 504: "timeout_error", 529: "overloaded_error"}

// apiErrorCode is the provider's code of an API error: the error type in
// Claude Code's "API Error: 529 {…}" text, else the message's error word.
func apiErrorCode(text string, raw json.RawMessage) string {
	if i := strings.IndexByte(text, '{'); i >= 0 && strings.HasPrefix(text, "API Error") {
		var body struct {
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(text[i:]), &body) == nil && body.Error.Type != "" {
			return body.Error.Type
		}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "unknown" {
		return s
	}
	return ""
}

// errorText reads a result's error: a string, or an object with a message
// (and a type, said when there is no message).
func errorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &o) == nil {
		if o.Message != "" {
			return o.Message
		}
		return o.Type
	}
	return ""
}

// recordSource yields records: lines of NDJSON, or JSON values.
type recordSource interface {
	// next returns a record, the text to pass through for it (nil when an
	// earlier record carried it) and its line.
	next() (data, carrier []byte, line int, err error)
}

// reader is a formats.Reader over a record source.
type reader struct {
	src recordSource
	dec decoder
	eof bool
}

func newReader(src recordSource, o formats.ReadOptions, c Copy) *reader {
	return &reader{src: src, dec: decoder{opts: o, copy: c, src: formats.Carrier{Dialect: o.Dialect}}}
}

func (r *reader) Next() (*formats.Event, error) {
	for r.dec.out.Len() == 0 {
		if r.eof {
			return nil, io.EOF
		}
		data, carrier, line, err := r.src.next()
		if err == io.EOF {
			r.eof = true
			r.dec.finish()
			continue
		}
		if err != nil {
			return nil, err
		}
		if le := r.dec.decode(data, carrier, line); le != nil {
			return nil, le
		}
	}
	return r.dec.out.Pop(), nil
}

// lineSource reads NDJSON (claude-stream).
type lineSource struct{ lines *formats.LineReader }

func (s *lineSource) next() ([]byte, []byte, int, error) {
	b, err := s.lines.Next()
	if err != nil {
		return nil, nil, s.lines.Line(), err
	}
	return b, b, s.lines.Line(), nil
}

// valueSource reads top-level JSON values (claude-json): result objects,
// pretty-printed or not, and arrays of messages, whose elements are records
// and whose text the first of them carries.
type valueSource struct {
	values  *formats.ValueReader
	items   []json.RawMessage
	carrier []byte
	line    int
}

func (s *valueSource) next() ([]byte, []byte, int, error) {
	for len(s.items) == 0 {
		b, line, err := s.values.Next()
		if err != nil {
			return nil, nil, line, err
		}
		if len(b) == 0 || b[0] != '[' {
			if len(b) == 0 || b[0] != '{' {
				return nil, nil, line, formats.Errorf(line, "expected a JSON object or array: %s", formats.Snippet(b))
			}
			return b, b, line, nil
		}
		var items []json.RawMessage
		if err := formats.Unmarshal(line, b, &items); err != nil {
			return nil, nil, line, err
		}
		if len(items) == 0 {
			continue
		}
		s.items, s.carrier, s.line = items, append([]byte(nil), b...), line
	}
	it := s.items[0]
	s.items = s.items[1:]
	carrier := s.carrier
	s.carrier = nil
	return it, carrier, s.line, nil
}

// emitUsage gives a request's usage, and what the message says of it.
func (d *decoder) emitUsage(agent string, u formats.UsageInfo, resp formats.Response) {
	if d.copy.OpenAICounts {
		// Qwen Code prints a message per content block, the request's
		// usage on one of them and 0/0 on the others; its result's usage
		// counts its subagents' requests too.
		if u.InputTokens.V == 0 && u.OutputTokens.V == 0 {
			return
		}
		d.emit(&formats.Event{Kind: formats.Usage, Agent: agent, Usage: u, Response: resp})
		return
	}
	if agent != "" {
		d.subUsage = true
	}
	d.emit(&formats.Event{Kind: formats.Usage, Agent: agent, Usage: u, Response: resp})
}
