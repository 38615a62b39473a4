// Package pretty is a view of runs for people watching them in a terminal:
// a line per tool call with its status and duration, subagents indented
// under the call that started them, streamed text as it comes, and a
// closing line per run. It is written only; there is nothing to read back.
//
// The view prints each event as it arrives and never moves the cursor, so
// that it reads the same live in a terminal, through a pipe and in a file.
// A tool call's line is written when the call starts and left open; when its
// result comes next, the status is added to that line, and when something
// else comes first, the line ends with "…" and the result gets a line of
// its own ("↳").
package pretty

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// Dialect is the registry row of the pretty view.
var Dialect = formats.Dialect{
	Name:        "pretty",
	Description: "a live view for a terminal: a line per tool call with status and duration, subagents indented, streamed text, a closing line with status, tokens and cost (write only)",
	NewWriter:   newWriter,
	// The view shows everything of a run but other dialects' events and
	// each request's usage (its closing line has the run's totals), and
	// leaves out tool outputs (Quirks).
	Carries: formats.AllFeatures &^ (formats.ToolOutputValues | formats.SystemPrompts | formats.RawEvents | formats.PerRequestUsage),
	Quirks:  []formats.Quirk{lostOutputs},
	// The closing line counts the run's calls by how each ended, and a
	// result repeated for a call that ended is told apart for the whole
	// run.
	HoldsRun: true,
	Params: []formats.Param{{Key: ParamColor, Flag: "color", Default: "auto", Choices: []string{"auto", "always", "never"},
		Usage: "colour the pretty view: auto (only on a terminal, never with NO_COLOR set), always or never"}},
}

// ParamColor is the writer parameter that turns colour on (always), off
// (never), or on for a terminal that wants it (auto).
const ParamColor = "pretty.color"

// colorOn decides colour from the parameter, the terminal and NO_COLOR.
func colorOn(o formats.WriteOptions) bool {
	switch o.Param(ParamColor, "auto") {
	case "always":
		return true
	case "never":
		return false
	}
	return o.Terminal && o.Env("NO_COLOR") == "" && o.Env("TERM") != "dumb"
}

// Loss phrases: what the view does not show at all.
var lostOutputs = formats.NewQuirk("tool outputs")

type writer struct {
	w    io.Writer
	opts formats.WriteOptions
	// color: paint the output.
	color bool
	out   []byte // what one event prints, written at once
	err   error

	// The cursor: atBOL when the last thing printed ended its line. open
	// is the key of a call or permission line left open for its result.
	atBOL bool
	open  string
	// The text block being printed: its kind and agent.
	block      blockKind
	blockAgent string
	// lastAgent is whose line came last, so that an agent whose lines
	// resume after another's gets a header naming it.
	lastAgent string

	runs int
	run  runState
}

type blockKind uint8

const (
	noBlock blockKind = iota
	textBlock
	thinkingBlock
)

// runState is what the view keeps of the run being shown; memory is
// bounded by one run.
type runState struct {
	start     stamp
	session   string // shown in the header
	model     string
	lastError string // the last error notice printed
	agents    map[string]*agent
	calls     map[string]*call
	// ended are the calls whose result has its line: a result repeated
	// for a call already done gets no second one.
	ended    map[*formats.TrackedCall]bool
	perms    map[string]*call
	text     formats.TextTracker
	thinking formats.TextTracker
}

// agent is one agent of the run; the main agent has id "" and depth 0.
type agent struct {
	id, label string
	parent    string
	depth     int
	turns     int
	// textInTurn: text was printed in the current turn; lastText is the
	// text of its latest block (or message), so that an answer or report
	// that repeats it is not shown twice.
	textInTurn bool
	lastText   strings.Builder
	todosSeen  bool
}

// call is a tool call (or a permission request) waiting for its result.
type call struct {
	name, summary string
	agent         string
	start         stamp
}

func newWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &writer{w: w, opts: o, color: colorOn(o), atBOL: true}
}

func (w *writer) Write(e *formats.Event, v *formats.RunView) error {
	if w.err != nil {
		return w.err
	}
	w.out = w.out[:0]
	if w.run.agents == nil && e.Kind != formats.RunStart {
		w.beginRun(e) // without a RunStart: no header, but the run's clock starts
	}
	switch e.Kind {
	case formats.RunStart:
		w.beginRun(e)
	case formats.RunEnd:
		w.endRun(e, v)
	case formats.AgentStart:
		w.agentStart(e)
	case formats.AgentEnd:
		w.agentEnd(e)
	case formats.TurnStart:
		w.turnStart(e)
	case formats.TurnEnd:
		w.turnEnd(e)
	case formats.UserMessage:
		w.userMessage(e)
	case formats.TextDelta:
		w.run.text.Delta(e.Agent, e.Piece())
		w.text(w.agent(e.Agent), textBlock, e.Piece())
	case formats.ThinkingDelta:
		w.run.thinking.Delta(e.Agent, e.Piece())
		w.text(w.agent(e.Agent), thinkingBlock, e.Piece())
	case formats.Message:
		w.message(e)
	case formats.Answer:
		w.answer(e)
	case formats.ToolCall:
		w.callStart(e)
	case formats.ToolResult:
		w.callEnd(e, v)
	case formats.PermissionRequest:
		w.permissionRequest(e)
	case formats.PermissionAnswer:
		w.permissionAnswer(e)
	case formats.Todos:
		w.todos(e)
	case formats.Compaction:
		w.compaction(e)
	case formats.Notice:
		w.notice(e)
	case formats.ModelChange:
		a := w.agent(e.Agent)
		w.line(a, w.paint(dim, "⇄ model "+oneLine(e.Run.Model)))
	}
	return w.flush()
}

func (w *writer) flush() error {
	if len(w.out) > 0 {
		_, w.err = w.w.Write(w.out)
	}
	return w.err
}

// Close ends a line left open.
func (w *writer) Close() error {
	if w.err != nil {
		return w.err
	}
	w.out = w.out[:0]
	w.endLine()
	return w.flush()
}

func (w *writer) print(s ...string) {
	for _, p := range s {
		w.out = append(w.out, p...)
	}
}

// endLine finishes whatever line is unfinished: a call line left open is
// marked as still running, a text block ends.
func (w *writer) endLine() {
	if w.open != "" && !w.atBOL {
		w.print(w.paint(dim, " …"))
	}
	if !w.atBOL {
		w.print("\n")
	}
	w.atBOL, w.open, w.block = true, "", noBlock
}

// startLine begins a line of agent a, with a header first when the agent's
// lines resume after another agent's.
func (w *writer) startLine(a *agent) {
	w.endLine()
	if a.id != "" && w.lastAgent != a.id && !w.descends(w.lastAgent, a.id) {
		w.print(w.gutter(a.depth-1), w.paint(blue, "  ├ "+a.label), "\n")
	}
	w.lastAgent = a.id
	w.print(w.gutter(a.depth))
	w.atBOL = false
}

// line prints a whole line of agent a.
func (w *writer) line(a *agent, s ...string) {
	w.startLine(a)
	w.print(s...)
	w.print("\n")
	w.atBOL = true
}

// details prints the lines of a longer text below a line of agent a.
func (w *writer) details(a *agent, code, text string) {
	lines, more := firstLines(text, detailLines)
	for _, l := range lines {
		w.line(a, "    ", w.paint(code, l))
	}
	if more > 0 {
		w.line(a, "    ", w.paint(dim, "… +"+itoa(more)+" more lines"))
	}
}

// gutter is the prefix of a line at a depth: a bar per level of subagent.
func (w *writer) gutter(depth int) string {
	if depth <= 0 {
		return ""
	}
	return w.paint(blue, strings.Repeat("  │ ", depth))
}

// emptyPrefix is the prefix of an empty line of text, without the blank
// that would separate it from the text.
func (w *writer) emptyPrefix(depth int, kind blockKind) string {
	if kind == thinkingBlock {
		return w.gutter(depth) + w.paint(dim, "┊")
	}
	if depth <= 0 {
		return ""
	}
	return w.paint(blue, strings.TrimRight(strings.Repeat("  │ ", depth), " "))
}

// descends reports whether agent id is anc or one of its subagents.
func (w *writer) descends(id, anc string) bool {
	for seen := 0; seen <= len(w.run.agents); seen++ {
		if id == anc {
			return true
		}
		if id == "" {
			return false
		}
		a := w.run.agents[id]
		if a == nil {
			return false
		}
		id = a.parent
	}
	return false
}

// agent returns the agent with an id, making it up for events of an agent
// that never started (as a subagent of the main agent).
func (w *writer) agent(id string) *agent {
	if a := w.run.agents[id]; a != nil {
		return a
	}
	return w.addAgent(id, id, "")
}

func (w *writer) addAgent(id, label, parent string) *agent {
	a := &agent{id: id, label: shorten(oneLine(label), nameWidth), parent: parent}
	if id != "" {
		p := w.agent(parent)
		if w.descends(parent, id) {
			// A cycle in the parentage: hang the agent off the main one.
			p, a.parent = w.run.agents[""], ""
		}
		a.depth = p.depth + 1
	}
	w.run.agents[id] = a
	return a
}

func (w *writer) beginRun(e *formats.Event) {
	w.endLine()
	if w.runs > 0 {
		w.print("\n")
	}
	w.run = runState{start: stampOf(e), session: e.Run.SessionID, model: e.Run.Model,
		agents: map[string]*agent{}, calls: map[string]*call{}, perms: map[string]*call{}, ended: map[*formats.TrackedCall]bool{}}
	w.addAgent("", "", "")
	w.lastAgent = ""
	if e.Kind != formats.RunStart {
		return
	}
	parts := []string{w.paint(bold+";"+cyan, "▶ run")}
	add := func(s string) {
		if s = oneLine(s); s != "" {
			parts = append(parts, s)
		}
	}
	add(e.Run.SessionID)
	model := e.Run.Model
	if model != "" && e.Run.Provider != "" {
		model += " (" + e.Run.Provider + ")"
	}
	add(model)
	add(e.Run.AgentName)
	add(e.Run.Cwd)
	if !e.Time.IsZero() {
		add(e.Time.UTC().Format("2006-01-02 15:04:05Z"))
	}
	w.line(w.run.agents[""], strings.Join(parts, w.paint(dim, " · ")))
}

func (w *writer) endRun(e *formats.Event, v *formats.RunView) {
	main := w.run.agents[""]
	w.endLine()
	if e.ErrorText() != "" && strings.TrimSpace(e.ErrorText()) != strings.TrimSpace(w.run.lastError) {
		w.problem(main, w.paint(boldRed, "✗"), e.ErrorText(), red)
	}
	var parts []string
	switch v.Status {
	case formats.Completed:
		parts = append(parts, w.paint(bold+";"+green, "■ ✓ completed"))
	case formats.Cancelled:
		parts = append(parts, w.paint(bold+";"+yellow, "■ ⊘ cancelled"))
	default:
		parts = append(parts, w.paint(boldRed, "■ ✗ "+v.Status.String()))
	}
	if v.Cut {
		parts[0] += w.paint(boldRed, " (cut short)")
	}
	if !v.Success() {
		parts = append(parts, "exit "+itoa(v.ExitCode))
	}
	if s := calls(v.Calls.All()); s != "" {
		parts = append(parts, s)
	}
	if s := oneLine(e.Run.SessionID); s != "" && s != w.run.session {
		parts = append(parts, "session "+s)
	}
	if m := oneLine(e.Run.Model); m != "" && m != w.run.model {
		parts = append(parts, m)
	}
	u := v.Usage
	if !e.Usage.TotalTokens.OK && (e.Usage.InputTokens.OK || e.Usage.OutputTokens.OK) {
		// A total summed over requests would not match the run's parts.
		u.TotalTokens = formats.Opt[int64]{}
	}
	if t := tokens(u); t != "" {
		parts = append(parts, t)
	}
	if u.ContextTokens.OK {
		parts = append(parts, "context "+count(u.ContextTokens.V))
	}
	if u.CostUSD.OK {
		parts = append(parts, cost(u.CostUSD.V))
	}
	if e.Duration > 0 {
		parts = append(parts, duration(e.Duration))
	} else if d, ok := w.run.start.since(e); ok {
		parts = append(parts, duration(d))
	}
	w.line(main, strings.Join(parts, w.paint(dim, " · ")))
	w.run = runState{}
	w.runs++
}

// calls counts a run's calls, each once, and those that failed, were
// refused or cancelled.
func calls(all []*formats.TrackedCall) string {
	if len(all) == 0 {
		return ""
	}
	var n [4]int
	for _, c := range all {
		switch c.Status {
		case formats.Failed:
			n[1]++
		case formats.Denied:
			n[2]++
		case formats.Cancelled:
			n[3]++
		}
	}
	s := itoa(len(all)) + " calls"
	if len(all) == 1 {
		s = "1 call"
	}
	for i, what := range []string{"", "failed", "denied", "cancelled"} {
		if i > 0 && n[i] > 0 {
			s += ", " + itoa(n[i]) + " " + what
		}
	}
	return s
}

// problem prints an error or refusal: a mark, and its text on the line when
// short, below it when not.
func (w *writer) problem(a *agent, mark, text, code string) {
	lines, more := firstLines(text, detailLines+1)
	if len(lines) == 0 {
		w.line(a, mark)
		return
	}
	w.line(a, mark, " ", w.paint(code, lines[0]))
	for _, l := range lines[1:] {
		w.line(a, "  ", w.paint(code, l))
	}
	if more > 0 {
		w.line(a, "  ", w.paint(dim, "… +"+itoa(more)+" more lines"))
	}
}

func (w *writer) agentStart(e *formats.Event) {
	if e.Agent == "" {
		return // the main agent is the run itself
	}
	parent, info := e.AgentInfo.Parent, []string{}
	pc := e.AgentInfo.ParentCall
	if c := w.run.calls[pc]; c != nil && pc != "" {
		parent = c.agent
		if w.open != "call:"+pc {
			// Its call's line is not the one above: say which it is.
			info = append(info, "for "+strings.TrimSpace(c.name+"  "+c.summary))
		}
	}
	label := e.AgentInfo.Label
	if label == "" {
		label = e.Agent
	}
	a := w.addAgent(e.Agent, label, parent)
	w.endLine()
	for _, s := range []string{e.AgentInfo.Model, e.AgentInfo.Cwd} {
		if s = oneLine(s); s != "" {
			info = append(info, s)
		}
	}
	head := w.paint(blue, "  ┌ ") + w.paint(bold, a.label)
	if len(info) > 0 {
		head += w.paint(dim, " · "+strings.Join(info, " · "))
	}
	w.print(w.gutter(a.depth-1), head, "\n")
	w.lastAgent = a.id
}

func (w *writer) agentEnd(e *formats.Event) {
	a := w.agent(e.Agent)
	if a.id == "" {
		return
	}
	w.endLine()
	w.print(w.gutter(a.depth-1), w.paint(blue, "  └ "), w.paint(bold, a.label), " ", w.status(e.Status, ""))
	report := strings.TrimSpace(e.Report())
	if report != "" && !a.repeats(report) {
		lines, more := firstLines(report, 1)
		r := shorten(oneLine(lines[0]), inlineWidth)
		if more > 0 {
			r += w.paint(dim, " (+"+itoa(more)+" lines)")
		}
		w.print(w.paint(dim, " · "), r)
	}
	w.print("\n")
	w.lastAgent = a.parent
}

func (w *writer) turnStart(e *formats.Event) {
	a := w.agent(e.Agent)
	a.turns++
	a.textInTurn = false
	if a.turns > 1 {
		w.line(a, w.paint(dim, "· turn "+itoa(a.turns)))
	}
}

func (w *writer) turnEnd(e *formats.Event) {
	a := w.agent(e.Agent)
	// Deltas that no whole message repeated are done with.
	w.run.text.Flush(e.Agent)
	w.run.thinking.Flush(e.Agent)
	if t := strings.TrimSpace(e.FinalText()); t != "" && !a.textInTurn && !a.repeats(t) {
		w.textBlock(a, e.FinalText())
	}
	a.textInTurn = false
	switch e.Status {
	case formats.Failed:
		w.line(a, w.paint(boldRed, "✗ turn failed"))
	case formats.Cancelled:
		w.line(a, w.paint(yellow, "⊘ turn cancelled"))
	}
}

func (w *writer) userMessage(e *formats.Event) {
	a := w.agent(e.Agent)
	lines, more := firstLines(e.Prompt(), 6)
	for i, l := range lines {
		mark := "  "
		if i == 0 {
			mark = "› "
		}
		w.line(a, w.paint(bold+";"+magenta, mark+l))
	}
	if more > 0 {
		w.line(a, w.paint(dim, "  … +"+itoa(more)+" more lines"))
	}
}

func (w *writer) message(e *formats.Event) {
	a := w.agent(e.Agent)
	if e.Thinking != "" && !w.run.thinking.Whole(e.Agent) {
		w.text(a, thinkingBlock, e.Thinking)
		w.endLine()
	}
	if w.run.text.Whole(e.Agent) {
		a.lastText.Reset() // the deltas printed it
		a.lastText.WriteString(e.MessageText())
	} else if e.MessageText() != "" {
		w.textBlock(a, e.MessageText())
	}
}

func (w *writer) answer(e *formats.Event) {
	a := w.agent(e.Agent)
	w.run.text.Flush(e.Agent)
	if t := strings.TrimSpace(e.AnswerText()); t != "" && !a.repeats(t) {
		w.textBlock(a, e.AnswerText())
	}
}

// textBlock prints a whole text of an agent as its own block.
func (w *writer) textBlock(a *agent, text string) {
	w.endLine()
	w.text(a, textBlock, text)
	w.endLine()
}

// repeats reports whether a text is what the agent's last text said.
func (a *agent) repeats(text string) bool {
	return strings.TrimSpace(text) == strings.TrimSpace(a.lastText.String())
}

// text prints a piece of text or thinking of an agent as it streams: a
// block starts on a line of its own, and each of its lines carries the
// agent's prefix; thinking is dimmed and marked.
func (w *writer) text(a *agent, kind blockKind, s string) {
	if s == "" {
		return
	}
	if kind == textBlock {
		a.textInTurn = true
	}
	if w.block != kind || w.blockAgent != a.id {
		if kind == textBlock {
			a.lastText.Reset()
		}
		w.startLine(a)
		w.print(w.marker(kind))
		w.block, w.blockAgent = kind, a.id
	}
	code := ""
	if kind == thinkingBlock {
		code = dim
	}
	s = clean(s)
	if kind == textBlock {
		a.lastText.WriteString(s)
	}
	for s != "" {
		seg, rest, nl := strings.Cut(s, "\n")
		if w.atBOL {
			if seg == "" {
				w.print(w.emptyPrefix(a.depth, kind)) // no trailing blanks
			} else {
				w.print(w.gutter(a.depth), w.marker(kind))
			}
			w.atBOL = false
		}
		if code != "" {
			w.print(w.paint(code, seg))
		} else {
			w.print(seg)
		}
		if nl {
			w.print("\n")
			w.atBOL = true
		}
		s = rest
	}
	w.lastAgent = a.id
}

func (w *writer) marker(kind blockKind) string {
	if kind == thinkingBlock {
		return w.paint(dim, "┊ ")
	}
	return ""
}

func (w *writer) callStart(e *formats.Event) {
	a := w.agent(e.Agent)
	c := &call{name: callName(e.Call), summary: summarize(e.Call), agent: a.id, start: stampOf(e)}
	w.run.calls[e.Call.ID] = c
	w.startLine(a)
	w.print(w.callText("▸ ", c))
	w.open = "call:" + e.Call.ID
}

func callName(c formats.Call) string {
	if n := oneLine(c.Name); n != "" {
		return shorten(n, nameWidth)
	}
	return "tool"
}

func (w *writer) callText(glyph string, c *call) string {
	s := w.paint(cyan, glyph) + w.paint(bold, c.name)
	if c.summary != "" {
		s += "  " + c.summary
	}
	return s
}

func (w *writer) callEnd(e *formats.Event, v *formats.RunView) {
	if t := v.Calls.Get(e.Call.ID); t != nil {
		if w.run.ended[t] {
			return // a result repeated for a call already done
		}
		w.run.ended[t] = true
	}
	c, started := w.run.calls[e.Call.ID]
	if started {
		delete(w.run.calls, e.Call.ID)
		if c.summary == "" {
			c.summary = summarize(e.Call)
		}
	} else {
		c = &call{name: callName(e.Call), summary: summarize(e.Call), agent: e.Agent}
	}
	a := w.agent(c.agent)
	d := e.Duration
	if d <= 0 && started {
		if since, ok := c.start.since(e); ok {
			d = since
		}
	}
	if w.open != "call:"+e.Call.ID || w.atBOL {
		glyph := "▸ "
		if started {
			glyph = "↳ "
		}
		w.startLine(a)
		w.print(w.callText(glyph, c))
	}
	w.open = ""
	w.print(" ", w.status(e.Call.Status, dur(d)))

	// A failed call shows why: its error, else its output, which is then
	// the error. The output of a call that went well is not shown.
	why, output := e.Call.Error, e.Call.Output.Text()
	if why == "" && e.Call.Status == formats.Failed {
		why, output = output, ""
	}
	if e.Call.Status == formats.Completed || e.Call.Status == formats.StatusUnknown {
		why = ""
	}
	if strings.TrimSpace(why) != "" && fitsInline(why) {
		w.print(w.paint(dim, ": "), w.paint(red, oneLine(why)))
		why = ""
	}
	w.print("\n")
	w.atBOL = true
	if strings.TrimSpace(why) != "" {
		w.details(a, red, why)
	}
	if output != "" {
		w.opts.Report.Quirk(lostOutputs)
	}
}

// dur prints a call's duration, or nothing when it is unknown.
func dur(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return duration(d)
}

// status marks an outcome: green ✓, red ✗ for a failure, ⛔ for a refusal,
// ⊘ for a cancellation; then the duration, dimmed.
func (w *writer) status(s formats.Status, d string) string {
	var mark string
	switch s {
	case formats.Completed:
		mark = w.paint(green, "✓")
	case formats.Failed:
		mark = w.paint(boldRed, "✗ failed")
	case formats.Denied:
		mark = w.paint(boldRed, "⛔ denied")
	case formats.Cancelled:
		mark = w.paint(yellow, "⊘ cancelled")
	case formats.Running:
		mark = w.paint(dim, "… running")
	default:
		mark = w.paint(dim, "·")
	}
	if d != "" {
		mark += " " + w.paint(dim, d)
	}
	return mark
}

func (w *writer) permissionRequest(e *formats.Event) {
	a := w.agent(e.Agent)
	c := &call{name: callName(e.Call), summary: summarize(e.Call), agent: a.id, start: stampOf(e)}
	w.run.perms[e.Permission.RequestID] = c
	w.startLine(a)
	w.print(w.paint(yellow, "? "), "permission for ", w.paint(bold, c.name))
	if c.summary != "" {
		w.print("  ", c.summary)
	}
	w.open = "permission:" + e.Permission.RequestID
}

func (w *writer) permissionAnswer(e *formats.Event) {
	id := e.Permission.RequestID
	c, asked := w.run.perms[id]
	if asked {
		delete(w.run.perms, id)
	} else {
		c = &call{name: callName(e.Call), summary: summarize(e.Call), agent: e.Agent}
	}
	a := w.agent(c.agent)
	if w.open != "permission:"+id || w.atBOL {
		w.startLine(a)
		w.print(w.paint(yellow, "? "), "permission for ", w.paint(bold, c.name))
		if c.summary != "" {
			w.print("  ", c.summary)
		}
	}
	w.open = ""
	if e.Permission.Allowed {
		w.print(" → ", w.paint(green, "allowed"))
	} else {
		w.print(" → ", w.paint(boldRed, "⛔ refused"))
	}
	if r := oneLine(e.Permission.Reason); r != "" {
		w.print(w.paint(dim, ": "+shorten(r, inlineWidth)))
	}
	w.print("\n")
	w.atBOL = true
}

// todos prints the task list in full the first time an agent shows one,
// then a line with its progress and the task in hand.
func (w *writer) todos(e *formats.Event) {
	a := w.agent(e.Agent)
	done, now := 0, ""
	for _, t := range e.Todos {
		switch todoBox(t.Status) {
		case doneBox:
			done++
		case busyBox:
			if now == "" {
				now = t.Content
			}
		}
	}
	head := "☰ todos " + itoa(done) + "/" + itoa(len(e.Todos)) + " done"
	if now != "" {
		head += " · now: " + shorten(oneLine(now), summaryWidth)
	}
	w.line(a, w.paint(cyan, head))
	if a.todosSeen {
		return
	}
	a.todosSeen = true
	for _, t := range e.Todos {
		w.line(a, "    ", todoBox(t.Status), " ", shorten(oneLine(t.Content), detailWidth))
	}
}

const (
	doneBox = "☑"
	busyBox = "◐"
	openBox = "☐"
)

// todoBox is a task's box by its status word ("pending" is not under way,
// whatever ParseStatus makes of it).
func todoBox(status string) string {
	switch status {
	case "completed", "done":
		return doneBox
	case "in_progress", "running", "active":
		return busyBox
	}
	return openBox
}

func (w *writer) compaction(e *formats.Event) {
	a := w.agent(e.Agent)
	s := "⟲ context compacted"
	if t := oneLine(e.Summary()); t != "" {
		s += ": " + shorten(t, inlineWidth)
	}
	w.line(a, w.paint(dim, s))
}

func (w *writer) notice(e *formats.Event) {
	a := w.agent(e.Agent)
	switch e.Severity {
	case formats.Error:
		w.problem(a, w.paint(boldRed, "✗"), e.NoticeText(), red)
		w.run.lastError = e.NoticeText()
	case formats.Warning:
		w.problem(a, w.paint(yellow, "⚠"), e.NoticeText(), yellow)
	default:
		w.problem(a, w.paint(dim, "ℹ"), e.NoticeText(), dim)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
