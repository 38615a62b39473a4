package claude

import (
	"crypto/sha1"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Quirks of the writers: what their encoding cannot keep of what they
// otherwise carry. The dialect rows list them.
var (
	lossReasons        = formats.NewQuirk("refusal reasons")
	lossTruncation     = formats.NewQuirk("tool output truncation marks")
	lossReports        = formats.NewQuirk("subagent reports apart from their call's result")
	lossLooseTodos     = formats.NewQuirk("todo lists without a TodoWrite call")
	lossSilentAgents   = formats.NewQuirk("subagents that say nothing")
	lossCalllessAgents = formats.NewQuirk("subagents without a spawning tool call (flattened into their parent)")
	lossAgentDirs      = formats.NewQuirk("subagent working directories")
	lossLateUsage      = formats.NewQuirk("token usage given after an agent's last message")
	lossUnprintedUsage = formats.NewQuirk("token usage of requests that no message carries (the run's totals are more)")
)

// run is what both writers keep of a run for its result object, besides
// the run view: only what is about Claude Code's encoding.
type run struct {
	// cacheIn: input_tokens count the cached tokens (Qwen Code's).
	cacheIn bool
	ids     ids
	arrived time.Time // when the run start was read, for a source without times
	// turns counts the main agent's model responses (num_turns).
	turns      int
	inResponse bool
	// costSession and costTotal are the session and total_cost_usd of the
	// last run: in a session of several prompts Claude Code prints the
	// session's running total.
	costSession string
	costTotal   float64
	runs        int
	// usageSession and usageTotal are the session and the running token
	// totals of the last modelUsage written.
	usageSession string
	usageTotal   formats.UsageInfo
	// dialect is the name the writer was chosen under (claude-stream, or
	// a copy of it).
	dialect string
	// tokens are the running token totals of each session written, for a
	// copy whose result counts them (sessionTokens).
	tokens map[string]formats.UsageInfo
}

// follow keeps the run's encoding state from any event, written or not.
func (r *run) follow(e *formats.Event, v *formats.RunView) {
	main := e.Agent == ""
	switch e.Kind {
	case formats.RunStart:
		r.runs++
		r.ids = ids{seed: v.Info.SessionID + "\x00" + strconv.Itoa(r.runs)}
		r.arrived, r.turns, r.inResponse = e.Arrived, 0, false
	case formats.Message, formats.TextDelta, formats.ToolCall:
		if main && !r.inResponse {
			r.inResponse = true
			r.turns++
		}
	case formats.ToolResult, formats.UserMessage, formats.TurnEnd:
		if main {
			r.inResponse = false
		}
	}
}

// sessionCost is the running total of the session's cost after this run,
// which Claude Code prints as total_cost_usd; it moves the total on. As the
// reader, it counts on from the last run's total when that run was of the
// same session.
func (r *run) sessionCost(v *formats.RunView) *float64 {
	c := v.Usage.CostUSD
	if !c.OK {
		return nil
	}
	total := max(c.V, 0)
	if r.costSession == v.Info.SessionID && v.Info.SessionID != "" {
		total = roundCost(r.costTotal + total)
	}
	r.costSession, r.costTotal = v.Info.SessionID, total
	return &total
}

// sessionTokens is the session's running token total after the run (v):
// what a copy with OpenAI counts (Qwen Code) prints in a result, which
// after a resume counts the session's earlier runs too. Only the copies
// keep it.
func (r *run) sessionTokens(v *formats.RunView) formats.UsageInfo {
	u := v.Usage
	if !r.cacheIn {
		return u
	}
	id := v.Info.SessionID
	if id == "" {
		return u
	}
	if r.tokens == nil {
		r.tokens = map[string]formats.UsageInfo{}
	}
	if prev, ok := r.tokens[id]; ok {
		u.InputTokens = u.InputTokens.Plus(prev.InputTokens)
		u.OutputTokens = u.OutputTokens.Plus(prev.OutputTokens)
		u.CacheReadTokens = u.CacheReadTokens.Plus(prev.CacheReadTokens)
		u.CacheWriteTokens = u.CacheWriteTokens.Plus(prev.CacheWriteTokens)
	}
	r.tokens[id] = u
	return u
}

// roundCost drops the noise that adding and subtracting dollars in binary
// leaves (0.578 - 0.2 = 0.37799999999999995).
func roundCost(c float64) float64 { return math.Round(c*1e12) / 1e12 }

// result builds the run's result object from the view and reports what it
// cannot say.
// perMessage: the stream's messages carry each request's usage, so that
// result.usage counts the main agent's alone, as Claude Code's does; a
// claude-json result, which has no messages, carries the run's totals.
func (r *run) result(e *formats.Event, v *formats.RunView, rep *formats.Report, written map[string]bool, perMessage bool) resultOut {
	failed := !v.Success()
	o := resultOut{Type: "result", Subtype: "success", IsError: failed, NumTurns: r.turns,
		SessionID: v.Info.SessionID, PermissionDenials: []denialOut{}}
	dur := e.Duration
	// Source times and read times are subtracted only from their own kind:
	// an archive read today is not a run that lasted since it was written.
	switch {
	case dur > 0:
	case !v.Start.IsZero() && !e.Time.IsZero():
		dur = e.Time.Sub(v.Start)
	case !r.arrived.IsZero() && !e.Arrived.IsZero():
		dur = e.Arrived.Sub(r.arrived)
	}
	if dur > 0 {
		o.DurationMS = dur.Milliseconds()
	}
	o.TotalCostUSD = r.sessionCost(v)
	u := r.sessionTokens(v) // Qwen's counts the session's every request
	if perMessage && !r.cacheIn {
		u = mainUsage(v) // Claude's counts the main agent's
	}
	if u.InputTokens.OK || u.OutputTokens.OK || u.CacheReadTokens.OK || u.CacheWriteTokens.OK {
		o.Usage = usageIn(u, r.cacheIn)
	}
	// Reasons of refusals that no tool_result said.
	var reasons []string
	for _, d := range v.Refusals {
		dn := denialOut{ToolName: d.Name, ToolUseID: d.CallID, ToolInput: json.RawMessage("{}")}
		if c := v.Calls.Get(d.CallID); c != nil {
			dn.ToolInput = args(c.Args)
			if dn.ToolName == "" {
				dn.ToolName = c.Name
			}
		}
		o.PermissionDenials = append(o.PermissionDenials, dn)
		if d.Reason != "" && !written[d.CallID] {
			reasons = append(reasons, d.Reason)
		}
	}
	errs := errorTexts(v.Errors)
	if failed {
		o.Subtype = "error_during_execution"
		if len(errs) == 0 {
			if len(reasons) > 0 {
				errs, reasons = reasons, nil
			} else {
				errs = []string{v.Failure}
			}
		}
		if v.Answered() && v.Answer() != "" {
			rep.Quirk(formats.FailedRunAnswers)
		}
		if v.Status == formats.Cancelled && !e.Synthetic {
			rep.Quirk(formats.CancelledRunsAsErrors)
		}
	} else {
		a := v.Answer()
		o.Result = &a
	}
	if len(errs) > 0 {
		o.Errors = errs
	}
	rep.QuirkN(lossReasons, len(reasons))
	// A failed run reads back with exit code 1, or 2 when the last call
	// to end was refused; the refusals written only in permission_denials
	// end their calls last, at the result.
	back := 1
	if v.Stopped {
		back = 2
	}
	for _, d := range v.Refusals {
		if !written[d.CallID] {
			back = 2
		}
	}
	if c := v.ExitCode; failed && c != back {
		rep.Quirk(formats.ExitCodesBeyondRefusal)
	}
	o.UUID = r.ids.uuid()
	return o
}

// modelUsage writes, for a run with subagents whose totals are more than
// the requests the stream prints (a subagent's last response, which Claude
// Code does not print), the totals as Claude Code's modelUsage: the
// session's running totals, under the run's model. (Without subagents,
// result.usage holds the totals.) The dialects that copy
// claude-stream have no modelUsage: they lose the difference.
func (r *run) modelUsage(o *resultOut, v *formats.RunView, rep *formats.Report) {
	sub := false
	for _, a := range v.Agents {
		sub = sub || !a.Usage.Empty()
	}
	u, req := v.Usage, v.RequestUsage()
	if !sub || !(u.InputTokens.V > req.InputTokens.V || u.OutputTokens.V > req.OutputTokens.V ||
		u.CacheReadTokens.V > req.CacheReadTokens.V || u.CacheWriteTokens.V > req.CacheWriteTokens.V) {
		return
	}
	model := v.Info.Model
	if r.dialect != Stream.Name || model == "" {
		rep.Quirk(lossUnprintedUsage)
		return
	}
	total := u
	if r.usageSession == v.Info.SessionID && v.Info.SessionID != "" {
		total.Add(r.usageTotal)
	}
	r.usageSession, r.usageTotal = v.Info.SessionID, total
	out := usageOf(total)
	o.ModelUsage = modelUsages{model: {InputTokens: out.InputTokens, OutputTokens: out.OutputTokens,
		CacheRead: out.CacheRead, CacheCreation: out.CacheCreation}}
}

// modelUsages is Claude's modelUsage: token totals by model.
type modelUsages map[string]modelUsageOut

type modelUsageOut struct {
	InputTokens   *int64 `json:"inputTokens"`
	OutputTokens  *int64 `json:"outputTokens"`
	CacheRead     *int64 `json:"cacheReadInputTokens,omitempty"`
	CacheCreation *int64 `json:"cacheCreationInputTokens,omitempty"`
}

// errorTexts are the run's errors as errors[] holds them: each once, and
// without the run's error message when it only joins the others, as the
// reader makes it.
func errorTexts(all []string) []string {
	var out []string
	for _, s := range all {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if n := len(out); n > 1 && out[n-1] == strings.Join(out[:n-1], "\n") {
		out = out[:n-1]
	}
	return out
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
	ModelUsage        modelUsages `json:"modelUsage,omitempty"`
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

// usageOf writes the model's usage as Claude's: input_tokens without the
// cache reads and writes, which have counts of their own.
func usageOf(u formats.UsageInfo) *usageOut { return usageIn(u, false) }

// usageIn writes the model's usage as Claude's, or as Qwen Code's
// (cacheIn): input_tokens with the cached tokens.
func usageIn(u formats.UsageInfo, cacheIn bool) *usageOut {
	in := u.InputTokens
	if in.OK && !cacheIn {
		in.V = max(in.V-u.CacheReadTokens.V-u.CacheWriteTokens.V, 0)
	}
	return &usageOut{InputTokens: in.Ptr(), CacheCreation: u.CacheWriteTokens.Ptr(),
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

// The claude-stream writer.

type streamWriter struct {
	w    io.Writer
	rep  *formats.Report
	view *formats.RunView
	run  run
	err  error

	text     formats.TextTracker
	thinking map[string]*strings.Builder
	deltas   map[string]bool   // agents with streamed text not yet written
	open     map[string]string // agent → id of the message it is writing
	usage    map[string]*formats.UsageInfo
	// held is the last assistant line, not yet written, of heldAgent.
	held      *assistantOut
	heldAgent string
	parents   map[string]*string // subagent → its parent_tool_use_id
	models    map[string]string  // subagent → its model
	reports   map[string]string  // Task call → its subagent's report
	todoCall  map[string]bool
	said      map[string]bool // subagents with a record written: claude has none for a silent one
	told      map[string]bool // calls whose error a tool_result says
}

func newStreamWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return newStreamWriterAs(w, o, Copy{})
}

func newStreamWriterAs(w io.Writer, o formats.WriteOptions, c Copy) formats.Writer {
	s := &streamWriter{w: w, rep: o.Report}
	s.run.dialect = o.Dialect
	s.run.cacheIn = c.OpenAICounts // Qwen Code's input_tokens count the cache
	s.reset()
	return s
}

func (s *streamWriter) reset() {
	s.flushHeld()
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
	s.told = map[string]bool{}
}

func (s *streamWriter) line(v any) {
	s.flushHeld()
	if s.err != nil {
		return
	}
	s.err = formats.WriteJSONLine(s.w, v)
}

// hold keeps an assistant line back until the next line, so that the
// usage of its request, which many sources give after the response,
// goes on it as Claude Code puts it.
func (s *streamWriter) hold(a string, m *assistantOut) {
	s.flushHeld()
	s.held, s.heldAgent = m, a
}

func (s *streamWriter) flushHeld() {
	if m := s.held; m != nil {
		s.held = nil
		if s.err == nil {
			s.err = formats.WriteJSONLine(s.w, m)
		}
	}
}

// Observe follows a record that the pipeline copies as it came: the
// session's running cost goes on.
func (s *streamWriter) Observe(e *formats.Event, v *formats.RunView) {
	s.view = v
	s.run.follow(e, v)
	if e.Kind == formats.RunEnd {
		s.run.sessionCost(v)
		s.run.sessionTokens(v)
		s.reset()
	}
}

func (s *streamWriter) Write(e *formats.Event, v *formats.RunView) error {
	s.view = v
	s.run.follow(e, v)
	a := e.Agent
	switch e.Kind {
	case formats.RunStart:
		s.reset()
		s.line(initOut{Type: "system", Subtype: "init", Cwd: e.Run.Cwd, SessionID: v.Info.SessionID,
			Tools: []string{}, MCPServers: []string{}, Model: e.Run.Model, PermissionMode: "default", UUID: s.run.ids.uuid()})
	case formats.TextDelta:
		s.text.Delta(a, e.Piece())
		s.deltas[a] = true
		index := 0
		if s.thinking[a] != nil {
			index = 1
		}
		s.delta(a, index, deltaOut{Type: "text_delta", Text: e.Piece()})
	case formats.ThinkingDelta:
		b := s.thinking[a]
		if b == nil {
			b = &strings.Builder{}
			s.thinking[a] = b
		}
		b.WriteString(e.Piece())
		s.deltas[a] = true
		s.delta(a, 0, deltaOut{Type: "thinking_delta", Thinking: e.Piece()})
	case formats.Message:
		// The whole message replaces the deltas that streamed it.
		s.text.Whole(a)
		thinking, thoughts := e.Thinking, e.Thoughts
		if b := s.thinking[a]; b != nil {
			if thinking == "" {
				thinking = b.String()
			}
			delete(s.thinking, a)
		}
		delete(s.deltas, a)
		blocks, _ := content(e.MessageText(), thinking, thoughts, false)
		s.assistant(a, true, blocks...)
	case formats.ToolCall:
		s.flushText(a)
		s.assistant(a, false, toolUseOut{"tool_use", e.Call.ID, e.Call.Name, args(e.Call.Args)})
		s.todoCall[a] = e.Call.Name == "TodoWrite"
	case formats.ToolResult:
		s.flushText(a)
		s.toolResult(e)
	case formats.UserMessage:
		s.flushText(a)
		s.user(a, textOut{"text", e.Prompt()})
	case formats.Usage:
		// A request's usage goes on the agent's message just written, if
		// it has none, else with its next message.
		if h := s.held; h != nil && s.heldAgent == a && h.Message.Usage == nil && s.usage[a] == nil {
			h.Message.Usage = usageIn(e.Usage, s.run.cacheIn)
			s.flushHeld()
			break
		}
		u := s.usage[a]
		if u == nil {
			u = &formats.UsageInfo{}
			s.usage[a] = u
		}
		u.Add(e.Usage)
	case formats.Todos:
		if !s.todoCall[a] {
			s.rep.Quirk(lossLooseTodos)
		}
		s.todoCall[a] = false
	case formats.Compaction:
		s.flushText(a)
		c := compactOut{Type: "system", Subtype: "compact_boundary", SessionID: v.Info.SessionID, UUID: s.run.ids.uuid()}
		c.CompactMetadata.Trigger = "auto"
		s.line(c)
	case formats.ModelChange:
		if a != "" {
			s.models[a] = e.Run.Model
		}
	case formats.AgentStart:
		s.agentStart(e)
	case formats.AgentEnd:
		s.flushText(a)
		if a != "" && !s.said[a] {
			s.rep.Quirk(lossSilentAgents)
		}
		if e.Report() != "" {
			if p := s.parents[a]; p != nil && v.Calls.Get(*p) != nil && !v.Calls.Get(*p).Done {
				s.reports[*p] = e.Report()
			} else {
				s.rep.Quirk(lossReports)
			}
		}
		delete(s.open, a)
	case formats.TurnEnd:
		s.flushText(a)
		delete(s.open, a)
	case formats.RunEnd:
		s.flushAllText()
		s.rep.QuirkN(lossReports, len(s.reports))
		if len(s.usage) > 0 {
			// Usage after an agent's last message has no message to go on.
			s.rep.QuirkN(lossLateUsage, len(s.usage))
		}
		o := s.run.result(e, v, s.rep, s.told, true)
		s.run.modelUsage(&o, v, s.rep)
		s.line(o)
		s.reset()
	}
	return s.err
}

// content is a message's blocks: its thinking, then its text. Thinking
// that the source gave as Anthropic blocks (thoughts) goes out as those
// blocks, each with its signature; other thinking is one block without a
// signature. signedOnly (a session file, whose messages Claude Code sends
// back to the API, which refuses a thinking block without its signature)
// leaves out every block without one, and says how many it dropped.
func content(text, thinking string, thoughts []formats.Thought, signedOnly bool) (c []any, dropped int) {
	if len(thoughts) == 0 && thinking != "" {
		thoughts = []formats.Thought{{Text: thinking}}
	}
	for _, t := range thoughts {
		if signedOnly && t.Signature == "" {
			dropped++
			continue
		}
		c = append(c, thinkingOut{"thinking", t.Text, t.Signature})
	}
	if text != "" {
		c = append(c, textOut{"text", text})
	}
	return c, dropped
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
	blocks, _ := content(s.text.Flush(a), thinking, nil, false)
	s.assistant(a, true, blocks...)
}

// assistant writes an assistant message line; fresh starts a new message
// id, else the blocks join the message the agent is writing.
func (s *streamWriter) assistant(a string, fresh bool, blocks ...any) {
	if len(blocks) == 0 {
		return
	}
	m := messageOut{ID: s.open[a], Type: "message", Role: "assistant", Model: s.modelOf(a), Content: blocks}
	if fresh || m.ID == "" {
		m.ID = s.run.ids.message()
		s.open[a] = m.ID
		if u := s.usage[a]; u != nil {
			m.Usage = usageIn(*u, s.run.cacheIn)
			delete(s.usage, a)
		}
	}
	s.said[a] = true
	s.hold(a, &assistantOut{Type: "assistant", Message: m, ParentToolUseID: s.parents[a], SessionID: s.session(), UUID: s.run.ids.uuid()})
}

func (s *streamWriter) session() string { return s.view.Info.SessionID }

// delta writes a streamed fragment; the whole message follows where the
// agent moves on.
func (s *streamWriter) delta(a string, index int, d deltaOut) {
	if d.Text == "" && d.Thinking == "" {
		return
	}
	s.said[a] = true
	s.line(streamEventOut{Type: "stream_event", Event: deltaSpan{Type: "content_block_delta", Index: index, Delta: d},
		ParentToolUseID: s.parents[a], SessionID: s.session(), UUID: s.run.ids.uuid()})
}

func (s *streamWriter) modelOf(a string) string {
	if m := s.models[a]; m != "" && a != "" {
		return m
	}
	return s.view.Info.Model
}

func (s *streamWriter) user(a string, blocks ...any) {
	delete(s.open, a)
	s.said[a] = true
	s.line(userOut{Type: "user", Message: userMsg{Role: "user", Content: blocks}, ParentToolUseID: s.parents[a],
		SessionID: s.session(), UUID: s.run.ids.uuid()})
}

func (s *streamWriter) toolResult(e *formats.Event) {
	c := &e.Call
	if c.Status == formats.Denied {
		// The refusal goes into the result's permission_denials. A reason
		// in Claude Code's words also goes into a tool_result, where it
		// reads back as the refusal; any other would read back as a
		// failure besides it, so it goes into errors[], or is lost.
		if isRefusal(c.Error) {
			s.told[c.ID] = true
			s.user(e.Agent, toolResultOut{c.ID, "tool_result", c.Error, true})
		}
		return
	}
	out := c.Output.Text()
	if c.Error != "" {
		s.told[c.ID] = true
		if out == "" {
			out = c.Error
		} else {
			out += "\n" + c.Error
			s.rep.Quirk(formats.MergedToolErrors)
		}
	}
	if r, ok := s.reports[c.ID]; ok {
		if r != out {
			s.rep.Quirk(lossReports)
		}
		delete(s.reports, c.ID)
	}
	if c.Truncated {
		s.rep.Quirk(lossTruncation)
	}
	s.user(e.Agent, toolResultOut{c.ID, "tool_result", out, c.Status != formats.Completed})
}

func (s *streamWriter) agentStart(e *formats.Event) {
	info := e.AgentInfo
	if info.ParentCall != "" {
		p := info.ParentCall
		s.parents[e.Agent] = &p
	} else {
		// No call to hang it on: its events go to its parent's.
		s.parents[e.Agent] = s.parents[info.Parent]
		s.rep.Quirk(lossCalllessAgents)
	}
	if info.Model != "" {
		s.models[e.Agent] = info.Model
	}
	if info.Cwd != "" {
		s.rep.Quirk(lossAgentDirs)
	}
}

// flushAllText writes every agent's streamed text, in the order of the
// agents' ids.
func (s *streamWriter) flushAllText() {
	for _, a := range slices.Sorted(maps.Keys(s.deltas)) {
		s.flushText(a)
	}
}

// Close writes text still streaming when the input ended without ending its
// run (the pipeline ends every run, but a writer may be used without it).
func (s *streamWriter) Close() error {
	s.flushAllText()
	s.flushHeld()
	return s.err
}

// mainUsage is the run's token totals less its subagents': Claude's
// result.usage counts the main agent's requests alone (its cost counts
// every agent's).
func mainUsage(v *formats.RunView) formats.UsageInfo {
	u := v.Usage
	less := func(o *formats.Opt[int64], sub formats.Opt[int64]) {
		if o.OK && sub.OK {
			o.V = max(0, o.V-sub.V)
		}
	}
	for _, a := range v.Agents {
		less(&u.InputTokens, a.Usage.InputTokens)
		less(&u.OutputTokens, a.Usage.OutputTokens)
		less(&u.CacheReadTokens, a.Usage.CacheReadTokens)
		less(&u.CacheWriteTokens, a.Usage.CacheWriteTokens)
		less(&u.ReasoningTokens, a.Usage.ReasoningTokens)
		less(&u.TotalTokens, a.Usage.TotalTokens)
	}
	return u
}
