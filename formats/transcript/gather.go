package transcript

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Item kinds, as the renderers (and the HTML template) name them.
const (
	kPrompt     = "prompt"
	kText       = "text"
	kThinking   = "thinking"
	kCall       = "call"
	kAgent      = "agent" // a subagent that no call of the run started
	kNotice     = "notice"
	kPermission = "permission"
	kTodos      = "todos"
	kCompaction = "compaction"
	kModel      = "model"
	kTurn       = "turn"
	kFailure    = "failure" // the run's own failure, at its end
)

// Folding: a text longer than this many lines or bytes is folded.
const (
	foldLines = 20
	foldBytes = 2000
)

// item is one thing shown in an agent's flow.
type item struct {
	Kind string
	Text string
	// Label qualifies the item: a prompt's sender, a notice's severity
	// ("error", "warning", "info"), a turn's number and status.
	Label string
	Time  string
	Bad   bool // an error, a failure or a refusal: marked
	Call  *call
	Agent *agent
	Todos []todo
	Perm  *permission
}

type todo struct {
	Box, Content string
	Done         bool
}

type permission struct {
	Name, Summary string
	Answered      bool
	Allowed       bool
	Reason        string
}

// call is a tool call and what came of it.
type call struct {
	ID       string
	Name     string
	Summary  string
	Args     string // pretty-printed JSON, or as given
	Status   string // the status's word; "" while unknown
	Mark     string // ✓ ✗ ⛔ ⊘ …
	Bad      bool
	Duration string
	Exit     string // a shell command's exit code
	Output   string
	Error    string
	Preview  bool // the output is a preview of a longer one
	Ended    bool
	Agents   []*agent // the subagents it started
}

// agent is the main agent or a subagent, with its flow of items.
type agent struct {
	ID     string
	Label  string
	Model  string
	Cwd    string
	Status string
	Mark   string
	Bad    bool
	Report string
	Tokens string
	Cost   string
	Items  []*item

	// While gathering: the item a delta streams into, its text, and
	// whether this turn showed text.
	open       *item
	openText   formats.Text
	textInTurn bool
	turns      int
	usage      formats.UsageInfo
}

// runDoc is a finished run, ready to render.
type runDoc struct {
	N        int
	Session  string
	Agent    string
	Cwd      string
	Started  string
	Outcome  string // "✓ completed", "✗ failed (exit 1)"
	Failed   bool
	Facts    []fact // the run's table
	System   string // the system instructions
	Main     *agent
	Warnings []string

	callCount int
	usage     formats.UsageInfo
}

type fact struct{ Key, Value string }

// firstPrompt is the run's first prompt, on one line, shortened.
func (d *runDoc) firstPrompt() string {
	for _, it := range d.Main.Items {
		if it.Kind == kPrompt && it.Label == "" {
			return shorten(oneLine(it.Text), 100)
		}
	}
	return ""
}

// gather builds a run's document as its events come.
type gather struct {
	main   *agent
	agents map[string]*agent
	// calls are the run's calls, by the view's record of each (a call
	// that reuses an id is another call).
	calls    map[*formats.TrackedCall]*call
	byID     map[string]*call // for events outside a pipeline's view
	text     formats.TextTracker
	thinking formats.TextTracker
	system   string
	lastErr  string
}

func newGather(e *formats.Event, v *formats.RunView) *gather {
	g := &gather{main: &agent{}, agents: map[string]*agent{}, calls: map[*formats.TrackedCall]*call{}, byID: map[string]*call{}}
	g.agents[""] = g.main
	return g
}

// agent returns an agent by id; one that never started hangs off the
// main agent.
func (g *gather) agent(id string) *agent {
	if a := g.agents[id]; a != nil {
		return a
	}
	a := &agent{ID: id, Label: id}
	g.agents[id] = a
	g.main.Items = append(g.main.Items, &item{Kind: kAgent, Agent: a})
	return a
}

func (a *agent) add(it *item) *item {
	a.open = nil
	a.Items = append(a.Items, it)
	return it
}

// lastText is the text of the agent's last text item.
func (a *agent) lastText() string {
	for i := len(a.Items) - 1; i >= 0; i-- {
		if a.Items[i].Kind == kText {
			return a.Items[i].Text
		}
	}
	return ""
}

func (g *gather) add(e *formats.Event, v *formats.RunView) {
	switch e.Kind {
	case formats.RunStart:
		g.system = clean(e.Run.SystemInstructions)
		return
	case formats.RunEnd, formats.Usage, formats.Raw:
		return
	case formats.AgentStart:
		g.agentStart(e, v)
		return
	}
	a := g.agent(e.Agent)
	switch e.Kind {
	case formats.TextDelta:
		g.text.Delta(e.Agent, e.Piece())
		g.stream(a, kText, e.Piece())
		a.textInTurn = true
		return
	case formats.ThinkingDelta:
		g.thinking.Delta(e.Agent, e.Piece())
		g.stream(a, kThinking, e.Piece())
		return
	}
	a.open = nil
	switch e.Kind {
	case formats.AgentEnd:
		a.Status, a.Mark, a.Bad = statusWord(e.Status), mark(e.Status), bad(e.Status)
		if r := strings.TrimSpace(e.Report()); r != "" && r != strings.TrimSpace(a.lastText()) {
			a.Report = clean(e.Report())
		}
		if av := v.Agent(e.Agent); av != nil {
			a.usage = av.Usage
		}
	case formats.TurnStart:
		a.turns++
		a.textInTurn = false
		if a.turns > 1 {
			a.add(&item{Kind: kTurn, Label: "turn " + strconv.Itoa(a.turns)})
		}
	case formats.TurnEnd:
		g.text.Flush(e.Agent)
		g.thinking.Flush(e.Agent)
		if t := strings.TrimSpace(e.FinalText()); t != "" && !a.textInTurn && t != strings.TrimSpace(a.lastText()) {
			a.add(&item{Kind: kText, Text: clean(e.FinalText())})
		}
		a.textInTurn = false
		switch e.Status {
		case formats.Failed, formats.Cancelled:
			a.add(&item{Kind: kTurn, Label: "turn " + statusWord(e.Status), Bad: e.Status == formats.Failed})
		}
	case formats.UserMessage:
		label := ""
		if e.AgentInfo.Label != "" {
			label = "from " + clean(e.AgentInfo.Label)
		} else if e.Agent != "" {
			label = "task"
		}
		a.add(&item{Kind: kPrompt, Text: clean(e.Prompt()), Label: label, Time: clock(e)})
	case formats.Message:
		if e.Thinking != "" && !g.thinking.Whole(e.Agent) {
			a.add(&item{Kind: kThinking, Text: clean(e.Thinking)})
		} else if e.Thinking == "" {
			g.thinking.Whole(e.Agent)
		}
		if !g.text.Whole(e.Agent) && strings.TrimSpace(e.MessageText()) != "" {
			a.add(&item{Kind: kText, Text: clean(e.MessageText())})
			a.textInTurn = true
		}
	case formats.Answer:
		g.text.Flush(e.Agent)
		if t := strings.TrimSpace(e.AnswerText()); t != "" && t != strings.TrimSpace(a.lastText()) {
			a.add(&item{Kind: kText, Text: clean(e.AnswerText())})
		}
	case formats.ToolCall:
		c := g.callOf(e, v, a)
		g.fill(c, e)
	case formats.ToolResult:
		c := g.callOf(e, v, a)
		g.fill(c, e)
		g.result(c, e)
	case formats.PermissionRequest:
		a.add(&item{Kind: kPermission, Perm: &permission{Name: callName(e.Call), Summary: summary(e.Call)}})
	case formats.PermissionAnswer:
		p := &permission{Name: callName(e.Call), Summary: summary(e.Call)}
		// The request's item, when it is the agent's last of its kind.
		for i := len(a.Items) - 1; i >= 0; i-- {
			if it := a.Items[i]; it.Kind == kPermission && !it.Perm.Answered {
				p = it.Perm
				break
			}
		}
		p.Answered, p.Allowed, p.Reason = true, e.Permission.Allowed, clean(e.Permission.Reason)
		if !hasItem(a, p) {
			a.add(&item{Kind: kPermission, Perm: p})
		}
	case formats.Todos:
		it := &item{Kind: kTodos}
		done := 0
		for _, t := range e.Todos {
			box, ok := todoBox(t.Status)
			if ok {
				done++
			}
			it.Todos = append(it.Todos, todo{Box: box, Content: clean(t.Content), Done: ok})
		}
		it.Label = strconv.Itoa(done) + "/" + strconv.Itoa(len(e.Todos)) + " done"
		a.add(it)
	case formats.Compaction:
		a.add(&item{Kind: kCompaction, Text: clean(e.Summary())})
	case formats.Notice:
		it := &item{Kind: kNotice, Label: e.Severity.String(), Text: clean(e.NoticeText()), Bad: e.Severity == formats.Error}
		if it.Bad {
			g.lastErr = e.NoticeText()
		}
		a.add(it)
	case formats.ModelChange:
		a.add(&item{Kind: kModel, Text: clean(e.Run.Model)})
	}
}

func hasItem(a *agent, p *permission) bool {
	for _, it := range a.Items {
		if it.Perm == p {
			return true
		}
	}
	return false
}

// stream adds a delta to the agent's open item of that kind, or opens one.
func (g *gather) stream(a *agent, kind, s string) {
	if a.open == nil || a.open.Kind != kind {
		a.add(&item{Kind: kind})
		a.open = a.Items[len(a.Items)-1]
		a.openText.Reset()
	}
	a.openText.Add(clean(s))
	a.open.Text = a.openText.String()
}

// callOf finds the call an event belongs to, by the view's record of it,
// or adds it to the agent's flow.
func (g *gather) callOf(e *formats.Event, v *formats.RunView, a *agent) *call {
	t := v.Calls.Get(e.Call.ID)
	if t != nil {
		if c := g.calls[t]; c != nil {
			return c
		}
	} else if c := g.byID[e.Call.ID]; c != nil && (e.Kind == formats.ToolResult && !c.Ended) {
		return c
	}
	c := &call{ID: e.Call.ID}
	if t != nil {
		g.calls[t] = c
	}
	g.byID[e.Call.ID] = c
	a.add(&item{Kind: kCall, Call: c})
	return c
}

// fill takes what the event says of the call's name and arguments.
func (g *gather) fill(c *call, e *formats.Event) {
	if c.Name == "" {
		c.Name = callName(e.Call)
	}
	if s := summary(e.Call); s != "" && c.Summary == "" {
		c.Summary = s
	}
	if len(bytes.TrimSpace(e.Call.Args)) > 0 {
		c.Args = prettyJSON(e.Call.Args)
	}
}

// result takes the end of a call.
func (g *gather) result(c *call, e *formats.Event) {
	c.Ended = true
	c.Status, c.Mark, c.Bad = statusWord(e.Call.Status), mark(e.Call.Status), bad(e.Call.Status)
	if e.Duration > 0 {
		c.Duration = duration(e.Duration)
	}
	if e.Call.ExitCode.OK {
		c.Exit = strconv.Itoa(e.Call.ExitCode.V)
	}
	c.Output = clean(e.Call.Output.Decoded())
	c.Error = clean(e.Call.Error)
	c.Preview = e.Call.Truncated
}

// agentStart nests a subagent under the call that started it, or under
// its parent agent's flow when no call of the run did.
func (g *gather) agentStart(e *formats.Event, v *formats.RunView) {
	if e.Agent == "" {
		return
	}
	a := g.agents[e.Agent]
	if a == nil {
		a = &agent{ID: e.Agent}
		g.agents[e.Agent] = a
	} else {
		g.unhang(a)
	}
	a.Label = clean(e.AgentInfo.Label)
	if a.Label == "" {
		a.Label = clean(e.Agent)
	}
	a.Model, a.Cwd = clean(e.AgentInfo.Model), clean(e.AgentInfo.Cwd)
	var c *call
	if pc := e.AgentInfo.ParentCall; pc != "" {
		if t := v.Calls.Get(pc); t != nil {
			c = g.calls[t]
		}
		if c == nil {
			c = g.byID[pc]
		}
	}
	if c != nil {
		c.Agents = append(c.Agents, a)
		return
	}
	parent := g.main
	if p := g.agents[e.AgentInfo.Parent]; p != nil && p != a {
		parent = p
	}
	parent.add(&item{Kind: kAgent, Agent: a})
}

// unhang takes an agent out of the main flow, where its events put it
// before it started.
func (g *gather) unhang(a *agent) {
	items := g.main.Items[:0]
	for _, it := range g.main.Items {
		if it.Kind != kAgent || it.Agent != a {
			items = append(items, it)
		}
	}
	g.main.Items = items
}

// finish makes the run's document from the view (e is its RunEnd; nil
// for a run that never ended).
func (g *gather) finish(e *formats.Event, v *formats.RunView, n int) *runDoc {
	d := &runDoc{N: n, Main: g.main, System: g.system, Session: clean(v.Info.SessionID), Cwd: clean(v.Info.Cwd),
		callCount: v.Calls.Count(), usage: v.Usage}
	agentName := clean(v.Info.AgentName)
	if agentName != "" && v.Info.AgentVersion != "" {
		agentName += " " + clean(v.Info.AgentVersion)
	}
	d.Agent = agentName
	if !v.Start.IsZero() {
		d.Started = v.Start.UTC().Format("2006-01-02 15:04:05Z")
	}
	// The outcome.
	switch {
	case e == nil:
		d.Outcome = "… not ended"
	case v.Success():
		d.Outcome = "✓ completed"
	default:
		d.Outcome = mark(v.Status) + " " + v.Status.String() + " (exit " + strconv.Itoa(v.ExitCode) + ")"
		d.Failed = v.Status != formats.Cancelled
	}
	if v.Cut {
		d.Outcome += ", cut short"
	}
	add := func(k, val string) {
		if val != "" {
			d.Facts = append(d.Facts, fact{k, val})
		}
	}
	add("session", d.Session)
	add("agent", d.Agent)
	model := strings.Join(cleanAll(v.Models), ", ")
	if model == "" {
		model = clean(v.Info.Model)
	}
	if model != "" && v.Info.Provider != "" {
		model += " (" + clean(v.Info.Provider) + ")"
	}
	add("model", model)
	add("directory", d.Cwd)
	add("started", d.Started)
	if e != nil && e.Duration > 0 {
		add("duration", duration(e.Duration))
	} else if !v.Start.IsZero() && v.Last.After(v.Start) {
		add("duration", duration(v.Last.Sub(v.Start)))
	}
	add("outcome", d.Outcome)
	add("tool calls", callsFact(v.Calls.All()))
	add("tokens", tokens(v.Usage))
	if v.Usage.ContextTokens.OK {
		add("context", count(v.Usage.ContextTokens.V))
	}
	if v.Usage.CostUSD.OK {
		add("cost", cost(v.Usage.CostUSD.V))
	}
	// The run's failure, unless its last error said it already.
	if e != nil && !v.Success() && v.Failure != "" && strings.TrimSpace(v.Failure) != strings.TrimSpace(g.lastErr) {
		g.main.add(&item{Kind: kFailure, Label: v.Status.String(), Text: clean(v.Failure), Bad: d.Failed})
	}
	// Calls the run left open, and subagents' usage.
	for _, a := range g.agents {
		if a != g.main {
			if t := tokens(a.usage); t != "" {
				a.Tokens = t
			}
			if a.usage.CostUSD.OK {
				a.Cost = cost(a.usage.CostUSD.V)
			}
		}
	}
	for t, c := range g.calls {
		if !c.Ended && t.Done {
			c.Status, c.Mark, c.Bad = statusWord(t.Status), mark(t.Status), bad(t.Status)
		}
	}
	return d
}

func cleanAll(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if s = clean(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// callsFact counts a run's calls and those that failed, were refused or
// cancelled.
func callsFact(all []*formats.TrackedCall) string {
	if len(all) == 0 {
		return ""
	}
	var failed, denied, cancelled int
	for _, c := range all {
		switch c.Status {
		case formats.Failed:
			failed++
		case formats.Denied:
			denied++
		case formats.Cancelled:
			cancelled++
		}
	}
	s := strconv.Itoa(len(all))
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{failed, "failed"}, {denied, "refused"}, {cancelled, "cancelled"}} {
		if p.n > 0 {
			parts = append(parts, strconv.Itoa(p.n)+" "+p.what)
		}
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

func statusWord(s formats.Status) string {
	switch s {
	case formats.Denied:
		return "refused"
	case formats.StatusUnknown:
		return ""
	}
	return s.String()
}

func mark(s formats.Status) string {
	switch s {
	case formats.Completed:
		return "✓"
	case formats.Failed:
		return "✗"
	case formats.Denied:
		return "⛔"
	case formats.Cancelled:
		return "⊘"
	case formats.Running:
		return "…"
	}
	return "·"
}

func bad(s formats.Status) bool { return s == formats.Failed || s == formats.Denied }

// todoBox is a task's box by its status word, and whether it is done.
func todoBox(status string) (string, bool) {
	switch status {
	case "completed", "done":
		return "☑", true
	case "in_progress", "running", "active":
		return "◐", false
	}
	return "☐", false
}

func clock(e *formats.Event) string {
	if e.Time.IsZero() {
		return ""
	}
	return e.Time.UTC().Format("15:04:05")
}

func callName(c formats.Call) string {
	if n := oneLine(c.Name); n != "" {
		return shorten(n, 60)
	}
	return "tool"
}

// summary is a call's short description: the source's own, else the
// argument a person knows it by.
func summary(c formats.Call) string {
	if c.Summary != "" {
		return shorten(oneLine(c.Summary), 100)
	}
	return shorten(oneLine(argSummary(c.Args)), 100)
}

// summaryKeys are the arguments that name what a call acts on, best first.
var summaryKeys = []string{"command", "cmd", "file_path", "filePath", "notebook_path", "path",
	"pattern", "query", "url", "description", "prompt"}

func argSummary(args json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return ""
	}
	for _, k := range summaryKeys {
		raw, ok := m[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
		var argv []string
		if json.Unmarshal(raw, &argv) == nil && len(argv) > 0 {
			if len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") {
				return argv[2]
			}
			return strings.Join(argv, " ")
		}
	}
	return ""
}

// prettyJSON indents a JSON value; anything else is shown as it is.
func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return clean(string(raw))
	}
	s := b.String()
	if s == "{}" || s == "null" {
		return ""
	}
	return clean(s)
}

// clean makes untrusted text safe to show: invalid UTF-8 and the control
// characters (formats.Unsafe: escape sequences, bidirectional overrides)
// become U+FFFD; line breaks and tabs stay, carriage returns go.
func clean(s string) string {
	ok := utf8.ValidString(s)
	for _, r := range s {
		if !ok {
			break
		}
		if formats.Unsafe(r) && r != '\n' && r != '\t' {
			ok = false
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\r':
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case formats.Unsafe(r):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// oneLine puts text on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(clean(s)), " ") }

// shorten cuts s to n runes, marking the cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// long: a text folded rather than shown whole.
func long(s string) bool { return len(s) > foldBytes || strings.Count(s, "\n") >= foldLines }

// lines describes a text's size for a fold's summary.
func lines(s string) string {
	n := strings.Count(strings.TrimRight(s, "\n"), "\n") + 1
	if n == 1 {
		return strconv.Itoa(len(s)) + " bytes"
	}
	return strconv.Itoa(n) + " lines"
}

// tokens describes usage: the total and its parts as known.
func tokens(u formats.UsageInfo) string {
	total := u.Total()
	var parts []string
	add := func(o formats.Opt[int64], what string) {
		if o.OK && (o.V != 0 || what == "in" || what == "out") {
			parts = append(parts, count(o.V)+" "+what)
		}
	}
	add(u.InputTokens, "in")
	add(u.OutputTokens, "out")
	add(u.CacheReadTokens, "cache read")
	add(u.CacheWriteTokens, "cache write")
	add(u.ReasoningTokens, "reasoning")
	switch {
	case total.OK && len(parts) > 0:
		return count(total.V) + " (" + strings.Join(parts, ", ") + ")"
	case total.OK:
		return count(total.V)
	}
	return strings.Join(parts, ", ")
}

// count, cost and duration print as every human view of agentconv does
// (formats.Count, formats.Dollars, formats.Elapsed).
var count, cost, duration = formats.Count, formats.Dollars, formats.Elapsed
