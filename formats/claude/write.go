package claude

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// runState follows one run for both writers: what the result object needs.
type runState struct {
	session, model string
	started        time.Time // the source's time of the run start, if it has one
	arrived        time.Time // when the run start was read
	answered       bool
	answer         string
	lastText       string
	streamed       string // main agent text streamed since its last message
	errors         []string
	reasons        []string // why calls that never ran were refused
	denials        []denialOut
	usage          formats.UsageInfo
	turns          int
	inResponse     bool // the main agent is in a model response
	calls          formats.CallTracker
}

// observe keeps what the result object needs from any event.
func (r *runState) observe(e *formats.Event) {
	main := e.Agent == ""
	if main {
		r.streamedText(e)
	}
	switch e.Kind {
	case formats.RunStart:
		*r = runState{session: e.Run.SessionID, model: e.Run.Model, started: e.Time, arrived: e.Arrived}
	case formats.Message, formats.TextDelta, formats.ToolCall:
		if main && !r.inResponse {
			r.inResponse = true
			r.turns++
		}
		if e.Kind == formats.Message && main && e.Text != "" {
			r.lastText = e.Text
		}
		if e.Kind == formats.ToolCall {
			r.calls.Start(e)
		}
	case formats.ToolResult, formats.UserMessage, formats.TurnEnd:
		if main {
			r.inResponse = false
		}
		if e.Kind == formats.TurnEnd && main && e.Text != "" {
			r.lastText = e.Text
		}
	case formats.Answer:
		if main {
			r.answered, r.answer = true, e.Text
		}
	case formats.Notice:
		if e.Severity == formats.Error && e.Text != "" {
			r.errors = append(r.errors, e.Text)
		}
	case formats.Usage:
		r.usage.Add(e.Usage)
	case formats.ModelChange:
		if main {
			r.model = e.Run.Model
		}
	case formats.RunEnd:
		if e.Run.SessionID != "" {
			r.session = e.Run.SessionID
		}
		if e.Run.Model != "" {
			r.model = e.Run.Model
		}
	}
}

// streamedText gathers the main agent's streamed text, which is its last
// text when no whole message follows it.
func (r *runState) streamedText(e *formats.Event) {
	switch e.Kind {
	case formats.TextDelta:
		r.streamed += e.Text
	case formats.Message:
		r.streamed = ""
	case formats.ToolCall, formats.ToolResult, formats.UserMessage, formats.TurnEnd, formats.RunEnd:
		if r.streamed != "" {
			r.lastText, r.streamed = r.streamed, ""
		}
	}
}

// deny records a refused call, and the reason when no result of the call
// said it already.
func (r *runState) deny(e *formats.Event) {
	prior := r.calls.Get(e.Call.ID)
	done := prior != nil && prior.Done
	c, _ := r.calls.Finish(e)
	d := denialOut{ToolName: e.Call.Name, ToolUseID: c.ID, ToolInput: e.Call.Args}
	if d.ToolName == "" {
		d.ToolName = c.Name
	}
	if len(d.ToolInput) == 0 {
		d.ToolInput = args(c.Args)
	}
	r.denials = append(r.denials, d)
	if !done && e.Call.Error != "" {
		r.reasons = append(r.reasons, e.Call.Error)
	}
}

// failed reads the outcome of a run from its RunEnd.
func (r *runState) failed(e *formats.Event) bool {
	switch e.Status {
	case formats.Completed:
		return false
	case formats.StatusUnknown:
		return (e.Run.ExitCode.OK && e.Run.ExitCode.V != 0) || len(r.errors) > 0
	}
	return true
}

// result builds the run's result object and reports what it cannot say.
func (r *runState) result(e *formats.Event, uuid string, lose func(string)) resultOut {
	failed := r.failed(e)
	o := resultOut{Type: "result", Subtype: "success", IsError: failed, NumTurns: r.turns,
		SessionID: r.session, PermissionDenials: r.denials, UUID: uuid}
	if o.PermissionDenials == nil {
		o.PermissionDenials = []denialOut{}
	}
	dur := e.Duration
	// Source times and read times are subtracted only from their own kind:
	// an archive read today is not a run that lasted since it was written.
	switch {
	case dur > 0:
	case !r.started.IsZero() && !e.Time.IsZero():
		dur = e.Time.Sub(r.started)
	case !r.arrived.IsZero() && !e.Arrived.IsZero():
		dur = e.Arrived.Sub(r.arrived)
	}
	if dur > 0 {
		o.DurationMS = dur.Milliseconds()
	}
	u := e.Usage
	if u.Empty() {
		u = r.usage
	}
	o.TotalCostUSD = u.CostUSD.Ptr()
	if u.InputTokens.OK || u.OutputTokens.OK || u.CacheReadTokens.OK || u.CacheWriteTokens.OK {
		o.Usage = &usageOut{InputTokens: u.InputTokens.Ptr(), CacheCreation: u.CacheWriteTokens.Ptr(),
			CacheRead: u.CacheReadTokens.Ptr(), OutputTokens: u.OutputTokens.Ptr()}
	}
	reasons := r.reasons
	if failed {
		o.Subtype = "error_during_execution"
		o.Errors = r.errors
		if len(o.Errors) == 0 {
			switch {
			case e.Text != "":
				o.Errors = []string{e.Text}
			case len(reasons) > 0:
				o.Errors, reasons = reasons, nil
			case e.Status == formats.Cancelled:
				o.Errors = []string{"the run was cancelled"}
			default:
				o.Errors = []string{"the run failed"}
			}
		}
		if r.answered && r.answer != "" {
			lose("answers of failed runs")
		}
		if e.Status == formats.Cancelled && e.Source.Dialect != "" {
			lose("cancelled run statuses (written as errors)")
		}
	} else {
		a := r.lastText
		if r.answered {
			a = r.answer
		}
		o.Result = &a
		if len(r.errors) > 0 {
			o.Errors = r.errors
		}
	}
	for range reasons {
		lose("refusal reasons")
	}
	if code := e.Run.ExitCode; code.OK && code.V != 0 && code.V != 1 {
		lose("exit codes other than 0 and 1")
	}
	return o
}

// Output records, with Claude Code's field order.

type initOut struct {
	Type           string   `json:"type"`
	Subtype        string   `json:"subtype"`
	Cwd            string   `json:"cwd"`
	SessionID      string   `json:"session_id"`
	Tools          []string `json:"tools"`
	MCPServers     []string `json:"mcp_servers"`
	Model          string   `json:"model"`
	PermissionMode string   `json:"permissionMode"`
	UUID           string   `json:"uuid"`
}

// streamEventOut is a delta as Claude Code prints it with
// --include-partial-messages: text goes out as it streams.
type streamEventOut struct {
	Type            string    `json:"type"`
	Event           deltaSpan `json:"event"`
	ParentToolUseID *string   `json:"parent_tool_use_id"`
	SessionID       string    `json:"session_id"`
	UUID            string    `json:"uuid"`
}

type deltaSpan struct {
	Type  string   `json:"type"`
	Index int      `json:"index"`
	Delta deltaOut `json:"delta"`
}

type deltaOut struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Thinking string `json:"thinking,omitempty"`
}

type assistantOut struct {
	Type            string     `json:"type"`
	Message         messageOut `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id"`
	UUID            string     `json:"uuid"`
}

type messageOut struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []any     `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        *usageOut `json:"usage,omitempty"`
}

type userOut struct {
	Type            string  `json:"type"`
	Message         userMsg `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	SessionID       string  `json:"session_id"`
	UUID            string  `json:"uuid"`
}

type userMsg struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type textOut struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type thinkingOut struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type toolUseOut struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type toolResultOut struct {
	ToolUseID string `json:"tool_use_id"`
	Type      string `json:"type"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

type compactOut struct {
	Type            string `json:"type"`
	Subtype         string `json:"subtype"`
	SessionID       string `json:"session_id"`
	UUID            string `json:"uuid"`
	CompactMetadata struct {
		Trigger string `json:"trigger"`
	} `json:"compact_metadata"`
}

type usageOut struct {
	InputTokens   *int64 `json:"input_tokens,omitempty"`
	CacheCreation *int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheRead     *int64 `json:"cache_read_input_tokens,omitempty"`
	OutputTokens  *int64 `json:"output_tokens,omitempty"`
}

type denialOut struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

type resultOut struct {
	Type              string      `json:"type"`
	Subtype           string      `json:"subtype"`
	IsError           bool        `json:"is_error"`
	DurationMS        int64       `json:"duration_ms"`
	DurationAPIMS     int64       `json:"duration_api_ms"`
	NumTurns          int         `json:"num_turns"`
	Result            *string     `json:"result,omitempty"`
	SessionID         string      `json:"session_id"`
	TotalCostUSD      *float64    `json:"total_cost_usd,omitempty"`
	Usage             *usageOut   `json:"usage,omitempty"`
	PermissionDenials []denialOut `json:"permission_denials"`
	Errors            []string    `json:"errors,omitempty"`
	UUID              string      `json:"uuid"`
}

func args(a json.RawMessage) json.RawMessage {
	if len(a) == 0 {
		return json.RawMessage("{}")
	}
	return a
}

func usageOf(u formats.UsageInfo) *usageOut {
	return &usageOut{InputTokens: u.InputTokens.Ptr(), CacheCreation: u.CacheWriteTokens.Ptr(),
		CacheRead: u.CacheReadTokens.Ptr(), OutputTokens: u.OutputTokens.Ptr()}
}

// ids makes the synthetic ids a written stream needs, from the session and
// a counter: the same input gives the same ids.
type ids struct {
	seed string
	n    int
}

func (g *ids) hash() [20]byte {
	g.n++
	return sha1.Sum([]byte(g.seed + "\x00" + strconv.Itoa(g.n)))
}

// uuid is a name-based (version 5) UUID.
func (g *ids) uuid() string {
	h := g.hash()
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func (g *ids) message() string {
	h := g.hash()
	return fmt.Sprintf("msg_%x", h[:12])
}

// isClaude reports whether an event comes from one of this package's
// dialects: everything such an event holds, a Claude Code stream holds.
func isClaude(e *formats.Event) bool {
	return e.Source.Dialect == Stream.Name || e.Source.Dialect == JSON.Name
}

// The claude-stream writer.

type streamWriter struct {
	w     io.Writer
	opts  formats.WriteOptions
	run   runState
	ids   ids
	runs  int
	quiet bool // the event is passed through: keep state, write nothing
	err   error

	text     formats.TextTracker
	thinking map[string]*strings.Builder
	deltas   map[string]bool   // agents with streamed text not yet written
	open     map[string]string // agent → id of the message it is writing
	usage    map[string]*formats.UsageInfo
	parents  map[string]*string // subagent → its parent_tool_use_id
	models   map[string]string
	reports  map[string]string // Task call → its subagent's report
	todoCall map[string]bool
	said     map[string]bool // subagents with a record written: claude has none for a silent one
}

func newStreamWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	s := &streamWriter{w: w, opts: o}
	s.reset()
	return s
}

func (s *streamWriter) reset() {
	s.text.Reset()
	s.thinking = map[string]*strings.Builder{}
	s.deltas = map[string]bool{}
	s.open = map[string]string{}
	s.usage = map[string]*formats.UsageInfo{}
	s.parents = map[string]*string{}
	s.models = map[string]string{}
	s.reports = map[string]string{}
	s.todoCall = map[string]bool{}
	s.said = map[string]bool{}
}

func (s *streamWriter) line(v any) {
	if s.quiet || s.err != nil {
		return
	}
	s.err = formats.WriteJSONLine(s.w, v)
}

func (s *streamWriter) Write(e *formats.Event) error {
	// Records of claude-stream, and the messages claude-json holds (the
	// --verbose array, or result objects), go out as they came.
	fromJSON := e.Source.From(JSON.Name)
	s.quiet = (e.Source.From(s.opts.Dialect) || fromJSON) && (e.Source.Line != nil || e.Source.Continued)
	same := isClaude(e)
	lose := func(what string) {
		if !same {
			s.opts.Report.Lose(what)
		}
	}
	if !e.Time.IsZero() {
		lose("event timestamps")
	}
	s.run.observe(e)
	a := e.Agent
	switch e.Kind {
	case formats.RunStart:
		s.start(e)
	case formats.TextDelta:
		s.text.Delta(a, e.Text)
		s.deltas[a] = true
		index := 0
		if s.thinking[a] != nil {
			index = 1
		}
		s.delta(a, index, deltaOut{Type: "text_delta", Text: e.Text})
	case formats.ThinkingDelta:
		b := s.thinking[a]
		if b == nil {
			b = &strings.Builder{}
			s.thinking[a] = b
		}
		b.WriteString(e.Text)
		s.deltas[a] = true
		s.delta(a, 0, deltaOut{Type: "thinking_delta", Thinking: e.Text})
	case formats.Message:
		// The whole message replaces the deltas that streamed it.
		s.text.Whole(a)
		text := e.Text
		thinking := e.Thinking
		if b := s.thinking[a]; b != nil {
			if thinking == "" {
				thinking = b.String()
			}
			delete(s.thinking, a)
		}
		delete(s.deltas, a)
		s.assistant(a, true, content(text, thinking)...)
	case formats.ToolCall:
		s.flushText(a)
		s.assistant(a, false, toolUseOut{"tool_use", e.Call.ID, e.Call.Name, args(e.Call.Args)})
		s.todoCall[a] = e.Call.Name == "TodoWrite"
	case formats.ToolResult:
		s.flushText(a)
		s.toolResult(e, lose)
	case formats.UserMessage:
		s.flushText(a)
		s.user(a, textOut{"text", e.Text})
	case formats.Usage:
		if s.open[a] == "" {
			u := s.usage[a]
			if u == nil {
				u = &formats.UsageInfo{}
				s.usage[a] = u
			}
			u.Add(e.Usage)
		}
	case formats.Todos:
		if !s.todoCall[a] {
			lose("todo lists")
		}
		s.todoCall[a] = false
	case formats.Compaction:
		s.flushText(a)
		c := compactOut{Type: "system", Subtype: "compact_boundary", SessionID: s.run.session, UUID: s.ids.uuid()}
		c.CompactMetadata.Trigger = "auto"
		s.line(c)
		if e.Text != "" {
			lose("compaction summaries")
		}
	case formats.Notice:
		if e.Severity != formats.Error {
			lose("notices below error")
		}
	case formats.ModelChange:
		s.models[a] = e.Run.Model
	case formats.PermissionRequest:
		lose("permission requests")
	case formats.PermissionAnswer:
		lose("permission answers")
	case formats.AgentStart:
		s.agentStart(e, lose)
	case formats.AgentEnd:
		s.flushText(a)
		if a != "" && !s.said[a] {
			lose("subagents that say nothing")
		}
		if e.Text != "" {
			if p := s.parents[a]; p != nil && s.run.calls.Get(*p) != nil && !s.run.calls.Get(*p).Done {
				s.reports[*p] = e.Text
			} else {
				lose("subagent reports")
			}
		}
		delete(s.open, a)
	case formats.TurnEnd:
		s.flushText(a)
		delete(s.open, a)
		lose("turn boundaries")
	case formats.Answer:
		if a != "" {
			lose("subagent answers")
		}
	case formats.Raw:
		if !s.quiet {
			lose("unknown " + e.Source.Dialect + " events")
		}
	case formats.RunEnd:
		s.end(e, lose)
	}
	switch {
	case !s.quiet || s.err != nil || e.Source.Line == nil:
	case fromJSON:
		s.err = s.values(e)
	default:
		s.err = formats.WriteRawLine(s.w, e.Source.Line)
	}
	return s.err
}

// values writes the messages of a claude-json record one per line: the
// elements of a --verbose array, or result objects, after an init line of
// their own, which a stream always starts with.
func (s *streamWriter) values(e *formats.Event) error {
	if e.Kind == formats.RunStart && e.Source.Type == "result" {
		s.quiet = false
		s.start(e)
		if s.err != nil {
			return s.err
		}
	}
	v := formats.NewValueReader(bytes.NewReader(e.Source.Line))
	v.Elements = true
	var buf bytes.Buffer
	for {
		b, _, err := v.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		buf.Reset()
		if err := json.Compact(&buf, b); err != nil {
			return err
		}
		if err := formats.WriteRawLine(s.w, buf.Bytes()); err != nil {
			return err
		}
	}
}

func (s *streamWriter) start(e *formats.Event) {
	s.reset()
	s.runs++
	s.ids = ids{seed: s.run.session + "\x00" + strconv.Itoa(s.runs)}
	s.line(initOut{Type: "system", Subtype: "init", Cwd: e.Run.Cwd, SessionID: s.run.session,
		Tools: []string{}, MCPServers: []string{}, Model: e.Run.Model, PermissionMode: "default", UUID: s.ids.uuid()})
}

func content(text, thinking string) []any {
	var c []any
	if thinking != "" {
		c = append(c, thinkingOut{"thinking", thinking, ""})
	}
	if text != "" {
		c = append(c, textOut{"text", text})
	}
	return c
}

// flushText writes an agent's streamed text that no Message completed.
func (s *streamWriter) flushText(a string) {
	if !s.deltas[a] {
		return
	}
	delete(s.deltas, a)
	thinking := ""
	if b := s.thinking[a]; b != nil {
		thinking = b.String()
		delete(s.thinking, a)
	}
	s.assistant(a, true, content(s.text.Flush(a), thinking)...)
}

// assistant writes an assistant message line; fresh starts a new message
// id, else the blocks join the message the agent is writing.
func (s *streamWriter) assistant(a string, fresh bool, blocks ...any) {
	if len(blocks) == 0 {
		return
	}
	m := messageOut{ID: s.open[a], Type: "message", Role: "assistant", Model: s.modelOf(a), Content: blocks}
	if fresh || m.ID == "" {
		m.ID = s.ids.message()
		s.open[a] = m.ID
		if u := s.usage[a]; u != nil {
			m.Usage = usageOf(*u)
			delete(s.usage, a)
		}
	}
	s.said[a] = true
	s.line(assistantOut{Type: "assistant", Message: m, ParentToolUseID: s.parents[a], SessionID: s.run.session, UUID: s.ids.uuid()})
}

// delta writes a streamed fragment; the whole message follows where the
// agent moves on.
func (s *streamWriter) delta(a string, index int, d deltaOut) {
	if d.Text == "" && d.Thinking == "" {
		return
	}
	s.said[a] = true
	s.line(streamEventOut{Type: "stream_event", Event: deltaSpan{Type: "content_block_delta", Index: index, Delta: d},
		ParentToolUseID: s.parents[a], SessionID: s.run.session, UUID: s.ids.uuid()})
}

func (s *streamWriter) modelOf(a string) string {
	if m := s.models[a]; m != "" {
		return m
	}
	return s.run.model
}

func (s *streamWriter) user(a string, blocks ...any) {
	delete(s.open, a)
	s.said[a] = true
	s.line(userOut{Type: "user", Message: userMsg{Role: "user", Content: blocks}, ParentToolUseID: s.parents[a],
		SessionID: s.run.session, UUID: s.ids.uuid()})
}

func (s *streamWriter) toolResult(e *formats.Event, lose func(string)) {
	c := &e.Call
	if c.Status == formats.Denied {
		// The refusal goes into the result's permission_denials, and its
		// reason into errors: a tool_result here would read back as a
		// failure besides the refusal.
		s.run.deny(e)
		return
	}
	s.run.calls.Finish(e)
	out := c.Output
	if c.Error != "" {
		if out == "" {
			out = c.Error
		} else {
			out += "\n" + c.Error
			lose("tool error texts (merged into the output)")
		}
	}
	if r, ok := s.reports[c.ID]; ok {
		if r != out {
			lose("subagent reports")
		}
		delete(s.reports, c.ID)
	}
	if e.Duration > 0 {
		lose("tool call durations")
	}
	if c.Truncated {
		lose("tool output truncation marks")
	}
	if c.Status == formats.Cancelled && e.Source.Dialect != "" {
		lose("cancelled tool call statuses (written as errors)")
	}
	s.user(e.Agent, toolResultOut{c.ID, "tool_result", out, c.Status != formats.Completed})
}

func (s *streamWriter) agentStart(e *formats.Event, lose func(string)) {
	info := e.AgentInfo
	if info.ParentCall != "" {
		p := info.ParentCall
		s.parents[e.Agent] = &p
	} else {
		// No call to hang it on: its events go to its parent's.
		s.parents[e.Agent] = s.parents[info.Parent]
		lose("subagents without a spawning tool call (flattened into their parent)")
	}
	if info.Model != "" {
		s.models[e.Agent] = info.Model
	}
}

// flushAllText writes every agent's streamed text, in the order of the
// agents' ids.
func (s *streamWriter) flushAllText() {
	for _, a := range slices.Sorted(maps.Keys(s.deltas)) {
		s.flushText(a)
	}
}

func (s *streamWriter) end(e *formats.Event, lose func(string)) {
	s.flushAllText()
	for range s.reports {
		lose("subagent reports")
	}
	s.line(s.run.result(e, s.ids.uuid(), lose))
	s.reset()
	s.run = runState{}
}

// Close writes text still streaming when the input ended without ending its
// run (the pipeline ends every run, but a writer may be used without it).
func (s *streamWriter) Close() error {
	s.flushAllText()
	return s.err
}
