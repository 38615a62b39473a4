package opencode

import (
	"crypto/sha256"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The export writer writes each session as `opencode export ID` prints
// it, so that `opencode import FILE` takes it into OpenCode's store and
// `opencode run --session ID` resumes it: the session's info (its id,
// directory, title), then its messages in order, each with its parts. A
// run's prompt is a user message (its text part and the model it asks);
// each model response an assistant message (its model and provider, the
// directory, tokens and cost, its time, its error) holding step-start,
// reasoning, text and tool parts (a tool part's state completed with its
// output, or error), and a step-finish with the response's tokens and
// cost where the source gave them. Runs of one session are one document.
// A subagent is a session of its own, whose parentID is its parent's and
// which its task call's metadata names: its document follows its
// parent's. With -o DIR each session goes to DIR/<session id>.json.
//
// OpenCode's ids (ses_, msg_, prt_) are a prefix, 12 hex digits of the
// time in milliseconds times 4096 plus a counter (inverted for a session,
// so that the newest sorts first) and 14 base-62 characters; OpenCode
// orders a session's messages and a message's parts by id. The writer
// makes them from the events' times, always increasing, and the base-62
// characters from the source's session id, so that the same input gives
// the same ids. A source's session id that is OpenCode's is kept.
type exportWriter struct {
	out    io.Writer
	opts   formats.WriteOptions
	docs   []*exportDoc
	bySrc  map[string]*exportDoc
	runs   int // runs without a session id
	run    *exportRun
	stamps formats.Stamps
	ids    idClock
	// copied: the document a same-dialect copy goes to (-o DIR).
	copied io.WriteCloser
	err    error
}

// The losses of the export writer's own encoding.
var (
	lossOutcomes = formats.NewQuirk("exit codes other than 0 and 1, and outcomes other than a failure (OpenCode keeps a message's error: read back as a failed run, exit 1)")
	lossErrors   = formats.NewQuirk("error notices of runs that succeeded (an error on a message fails its run)")
	lossArgs     = formats.NewQuirk("tool call arguments that are not a JSON object (written as {\"input\": …})")
)

// exportDoc is one session's document.
type exportDoc struct {
	Info     docInfo   `json:"info"`
	Messages []*docMsg `json:"messages"`
	// src is the session id of the source; file the file of -o DIR.
	src  string
	seed string
	n    int // ids made for the document
}

type docInfo struct {
	ID        string   `json:"id"`
	Slug      string   `json:"slug"`
	ProjectID string   `json:"projectID"`
	Directory string   `json:"directory"`
	ParentID  string   `json:"parentID,omitempty"`
	Title     string   `json:"title"`
	Version   string   `json:"version"`
	Time      docTimes `json:"time"`
}

type docTimes struct {
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

type docMsg struct {
	Info  msgInfo    `json:"info"`
	Parts []*docPart `json:"parts"`
	// calls: the message has tool parts; answered: one of them has its
	// result; text, reasoning: it has those parts; usage: its tokens.
	calls, answered, text, reasoning, turn bool
	usage                                  *formats.UsageInfo
	errText                                string
}

type msgInfo struct {
	ParentID   string     `json:"parentID,omitempty"`
	Role       string     `json:"role"`
	Mode       string     `json:"mode,omitempty"`
	Agent      string     `json:"agent"`
	Model      *msgModel  `json:"model,omitempty"`
	Path       *msgPath   `json:"path,omitempty"`
	Cost       *float64   `json:"cost,omitempty"`
	Tokens     *docTokens `json:"tokens,omitempty"`
	ModelID    string     `json:"modelID,omitempty"`
	ProviderID string     `json:"providerID,omitempty"`
	Time       msgTime    `json:"time"`
	Finish     string     `json:"finish,omitempty"`
	Error      *msgError  `json:"error,omitempty"`
	ID         string     `json:"id"`
	SessionID  string     `json:"sessionID"`
}

type msgModel struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
}

type msgPath struct {
	Cwd  string `json:"cwd"`
	Root string `json:"root"`
}

type msgTime struct {
	Created   int64  `json:"created"`
	Completed *int64 `json:"completed,omitempty"`
}

type msgError struct {
	Name string `json:"name"`
	Data struct {
		Message string `json:"message"`
	} `json:"data"`
}

type docTokens struct {
	Total     int64 `json:"total"`
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Write int64 `json:"write"`
		Read  int64 `json:"read"`
	} `json:"cache"`
}

type docPart struct {
	Reason    string     `json:"reason,omitempty"`
	Type      string     `json:"type"`
	Text      *string    `json:"text,omitempty"`
	Synthetic bool       `json:"synthetic,omitempty"`
	Tool      string     `json:"tool,omitempty"`
	CallID    string     `json:"callID,omitempty"`
	State     *toolState `json:"state,omitempty"`
	Tokens    *docTokens `json:"tokens,omitempty"`
	Cost      *float64   `json:"cost,omitempty"`
	Time      *span      `json:"time,omitempty"`
	ID        string     `json:"id"`
	SessionID string     `json:"sessionID"`
	MessageID string     `json:"messageID"`
}

type span struct {
	Start int64  `json:"start"`
	End   *int64 `json:"end,omitempty"`
}

type toolState struct {
	Status   string          `json:"status"`
	Input    json.RawMessage `json:"input"`
	Output   *string         `json:"output,omitempty"`
	Error    *string         `json:"error,omitempty"`
	Title    string          `json:"title,omitempty"`
	Metadata map[string]any  `json:"metadata"`
	Time     span            `json:"time"`
	done     bool
}

// exportRun is the run being written: each agent's state.
type exportRun struct {
	agents map[string]*agentDoc
}

// agentDoc is what an agent of the run writes into its session.
type agentDoc struct {
	doc      *exportDoc
	cur      *docMsg // the assistant message being filled
	last     *docMsg // the last assistant message
	user     string  // the id of the last user message
	model    string
	provider string
	cwd      string
	calls    map[string]*docPart
	usage    *formats.UsageInfo // a response's usage that came before it
	errs     []string           // error notices not yet on a message
	// streamed: text deltas were written into the message since its last
	// whole message, which repeats them; said is the text written last.
	streamed bool
	said     string
	// grown gathers the deltas of the part they continue.
	grown grower
}

// grower appends deltas to the text of a part in work linear in its
// length: += copied the whole text at each delta.
type grower struct {
	text formats.Text
	of   *string
}

// add appends s to the text *p.
func (g *grower) add(p *string, s string) {
	if g.of != p {
		g.text.Set(*p)
		g.of = p
	}
	g.text.Add(s)
	*p = g.text.String()
}

func newExportWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &exportWriter{out: w, opts: o, bySrc: map[string]*exportDoc{}}
}

// Observe follows a document that the pipeline copies as it is: with -o
// DIR it goes to the file of its session.
func (w *exportWriter) Observe(e *formats.Event, _ *formats.RunView) {
	if e.Source.Line == nil || e.Source.Continued || w.opts.Create == nil {
		return
	}
	var head struct {
		Info struct {
			ID string `json:"id"`
		} `json:"info"`
	}
	_ = json.Unmarshal(e.Source.Line, &head)
	id := head.Info.ID
	if id == "" {
		w.runs++
		id = "run-" + strconv.Itoa(w.runs)
	}
	if err := w.closeCopied(); err != nil {
		w.err = err
		return
	}
	c, err := w.opts.Create(id + ".json")
	if err != nil {
		w.err = err
		return
	}
	w.copied = c
}

// closeCopied closes the file of the document copied last: it is whole,
// and goes in place.
func (w *exportWriter) closeCopied() error {
	if w.copied == nil {
		return nil
	}
	err := w.copied.Close()
	w.copied = nil
	return err
}

// CopyTo is the file of the document being copied, with -o DIR.
func (w *exportWriter) CopyTo() io.Writer { return w.copied }

func (w *exportWriter) Write(e *formats.Event, v *formats.RunView) error {
	if w.err != nil {
		return w.err
	}
	at := w.stamps.Next(e)
	if e.Kind == formats.RunStart {
		w.start(e, at)
		return nil
	}
	if w.run == nil {
		w.start(&formats.Event{Kind: formats.RunStart, Run: v.Info}, at)
	}
	if e.Kind == formats.AgentStart {
		w.startAgent(e, at)
		return nil
	}
	a := w.agent(e.Agent, at)
	switch e.Kind {
	case formats.RunEnd:
		w.end(e, v, at)
	case formats.UserMessage:
		w.closeMsg(a, at)
		if a.user != "" && (e.AgentInfo.Label != "" || e.Agent == "" && v.Prompts <= 1) {
			// Not a prompt (another agent's message), or the run's first
			// after what it said without one (a compaction's summary in
			// a stream that never printed the prompt): a synthetic part,
			// which starts no run. A run's second prompt starts one (the
			// pipeline reports that).
			w.userMsg(a, e.Prompt(), true, at)
			break
		}
		w.userMsg(a, e.Prompt(), false, at)
	case formats.TextDelta, formats.Message:
		text, thinking := e.Text, e.Thinking
		if e.Kind == formats.TextDelta {
			a.streamed = true
			// Deltas are joined into the part they continue.
			if m := a.cur; m != nil && m.text && !m.calls {
				p := m.Parts[len(m.Parts)-1]
				if p.Type == "text" {
					a.grown.add(p.Text, text)
					a.said = *p.Text
					p.Time.End = msp64(at)
					return nil
				}
			}
		} else if a.streamed {
			// The whole message repeats the text streamed: only its
			// thinking, if the deltas did not give it, is new.
			a.streamed = false
			text = ""
			if m := a.cur; m != nil && m.reasoning {
				thinking = ""
			}
		}
		if thinking != "" {
			m := a.cur
			if m != nil && (m.text || m.calls) {
				w.closeMsg(a, at)
			}
			m = w.open(a, at)
			m.reasoning = true
			w.part(a, m, &docPart{Type: "reasoning", Text: &thinking, Time: &span{Start: ms64(at), End: msp64(at)}}, at)
		}
		if text != "" {
			// Text after calls is the model's next response: a message
			// of its own, as OpenCode keeps one per request.
			if m := a.cur; m != nil && (m.text || m.calls) {
				w.closeMsg(a, at)
			}
			m := w.open(a, at)
			m.text = true
			a.said = text
			w.part(a, m, &docPart{Type: "text", Text: &text, Time: &span{Start: ms64(at), End: msp64(at)}}, at)
		}
	case formats.Answer:
		// The run's answer, where no message said it (a result's text).
		if t := strings.TrimSpace(e.AnswerText()); t != "" && e.Agent == "" && t != strings.TrimSpace(a.said) {
			if m := a.cur; m != nil && (m.text || m.calls) {
				w.closeMsg(a, at)
			}
			text := e.AnswerText()
			m := w.open(a, at)
			m.text = true
			a.said = text
			w.part(a, m, &docPart{Type: "text", Text: &text, Time: &span{Start: ms64(at), End: msp64(at)}}, at)
		}
	case formats.ThinkingDelta:
		if m := a.cur; m != nil && m.reasoning && !m.text && !m.calls {
			p := m.Parts[len(m.Parts)-1]
			if p.Type == "reasoning" {
				a.grown.add(p.Text, e.Piece())
				p.Time.End = msp64(at)
				return nil
			}
		}
		t := e.Piece()
		m := w.open(a, at)
		m.reasoning = true
		w.part(a, m, &docPart{Type: "reasoning", Text: &t, Time: &span{Start: ms64(at), End: msp64(at)}}, at)
	case formats.TurnStart:
		w.closeMsg(a, at)
		w.open(a, at).turn = true
	case formats.TurnEnd:
		if a.cur != nil && a.cur.turn {
			w.closeMsg(a, at)
		}
	case formats.ToolCall:
		w.call(a, e, at)
	case formats.ToolResult:
		w.result(a, e, at)
	case formats.Usage:
		u := e.Usage
		if m := a.cur; m != nil && m.usage == nil && !m.answered {
			// After its calls' results, usage is the next request's.
			m.usage = &u
		} else if a.usage != nil {
			a.usage.Add(u)
		} else {
			a.usage = &u
		}
	case formats.Notice:
		if e.Severity == formats.Error && e.NoticeText() != "" {
			a.errs = append(a.errs, e.NoticeText())
		}
	case formats.ModelChange:
		if e.Run.Model != "" {
			w.closeMsg(a, at)
			a.model = e.Run.Model
		}
	case formats.AgentEnd:
		w.endAgent(a, e, at)
	}
	return nil
}

// Close writes the documents: each main session's, then its subagents'.
func (w *exportWriter) Close() error {
	if w.err != nil {
		return w.err
	}
	if err := w.closeCopied(); err != nil {
		return err
	}
	for _, d := range w.docs {
		if err := w.writeDoc(d); err != nil {
			return err
		}
	}
	w.docs = nil
	return nil
}

func (w *exportWriter) writeDoc(d *exportDoc) error {
	b, err := json.MarshalIndentWithOption(d, "", "  ", json.DisableHTMLEscape())
	if err != nil {
		return err
	}
	b = append(b, '\n')
	out := w.out
	if w.opts.Create != nil {
		c, err := w.opts.Create(d.Info.ID + ".json")
		if err != nil {
			return err
		}
		if _, err := c.Write(b); err != nil {
			c.Close()
			return err
		}
		return c.Close()
	}
	_, err = out.Write(b)
	return err
}

// start begins a run: its session's document, made if new.
func (w *exportWriter) start(e *formats.Event, at time.Time) {
	src := e.Run.SessionID
	if src == "" {
		w.runs++
		src = "agentconv:run-" + strconv.Itoa(w.runs)
	}
	d := w.bySrc[src]
	if d == nil {
		d = w.newDoc(src, at)
		d.Info.Directory, d.Info.Version = e.Run.Cwd, ""
		if e.Run.AgentName == AgentName {
			d.Info.Version = e.Run.AgentVersion
		}
		if validID(src, "ses") {
			d.Info.ID = src
		}
		w.bySrc[src] = d
	}
	main := &agentDoc{doc: d, model: e.Run.Model, provider: e.Run.Provider, cwd: e.Run.Cwd, calls: map[string]*docPart{}}
	w.run = &exportRun{agents: map[string]*agentDoc{"": main}}
}

func (w *exportWriter) newDoc(src string, at time.Time) *exportDoc {
	d := &exportDoc{src: src, seed: src}
	d.Info.ID = w.ids.make("ses", at, true, d.tail("session"))
	d.Info.Slug = "agentconv-" + strings.ToLower(d.tail("slug")[:8])
	d.Info.ProjectID = "global"
	d.Info.Title = "agentconv session"
	d.Info.Time.Created, d.Info.Time.Updated = ms64(at), ms64(at)
	d.Messages = []*docMsg{}
	w.docs = append(w.docs, d)
	return d
}

// tail is 14 base-62 characters made from the document's seed and what.
func (d *exportDoc) tail(what string) string {
	d.n++
	sum := sha256.Sum256([]byte("agentconv opencode-export\x00" + d.seed + "\x00" + what + "\x00" + strconv.Itoa(d.n)))
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 14)
	for i := range b {
		b[i] = digits[int(sum[i])%62]
	}
	return string(b)
}

// idClock makes OpenCode's ids in increasing order.
type idClock struct {
	ms, n int64
}

func (c *idClock) make(prefix string, at time.Time, descending bool, tail string) string {
	t := max(at.UnixMilli(), 0)
	if t > c.ms {
		c.ms, c.n = t, 0
	}
	c.n++
	if c.n >= 4096 {
		c.ms, c.n = c.ms+1, 1
	}
	v := uint64(c.ms)*4096 + uint64(c.n)
	if descending {
		v = ^v
	}
	v &= 1<<48 - 1
	h := strconv.FormatUint(v, 16)
	return prefix + "_" + strings.Repeat("0", 12-len(h)) + h + tail
}

// validID: s is an OpenCode id of the prefix.
func validID(s, prefix string) bool {
	if len(s) != len(prefix)+1+26 || !strings.HasPrefix(s, prefix+"_") {
		return false
	}
	for i, c := range s[len(prefix)+1:] {
		hex := c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
		alnum := hex || c >= 'A' && c <= 'Z' || c >= 'g' && c <= 'z'
		if i < 12 && !hex || !alnum {
			return false
		}
	}
	return true
}

func (w *exportWriter) id(d *exportDoc, prefix string, at time.Time) string {
	return w.ids.make(prefix, at, false, d.tail(prefix))
}

// agent is an agent's state; one never started is a subagent of the main.
func (w *exportWriter) agent(id string, at time.Time) *agentDoc {
	if a := w.run.agents[id]; a != nil {
		return a
	}
	w.startAgent(&formats.Event{Kind: formats.AgentStart, Agent: id}, at)
	return w.run.agents[id]
}

// startAgent makes a subagent's session, whose parent is its parent's,
// and names it in the call that spawned it.
func (w *exportWriter) startAgent(e *formats.Event, at time.Time) {
	if w.run.agents[e.Agent] != nil {
		return
	}
	parent := w.run.agents[e.AgentInfo.Parent]
	if parent == nil {
		parent = w.run.agents[""]
	}
	d := w.newDoc(parent.doc.src+"/"+e.Agent, at)
	d.Info.ParentID = parent.doc.Info.ID
	d.Info.Version = parent.doc.Info.Version
	d.Info.Directory = e.AgentInfo.Cwd
	if d.Info.Directory == "" {
		d.Info.Directory = parent.doc.Info.Directory
	}
	if e.AgentInfo.Label != "" {
		d.Info.Title = e.AgentInfo.Label
	}
	model := e.AgentInfo.Model
	if model == "" {
		model = parent.model
	}
	a := &agentDoc{doc: d, model: model, provider: parent.provider, cwd: d.Info.Directory, calls: map[string]*docPart{}}
	w.run.agents[e.Agent] = a
	if p := parent.calls[e.AgentInfo.ParentCall]; p != nil && p.State != nil {
		if p.State.Metadata == nil {
			p.State.Metadata = map[string]any{}
		}
		p.State.Metadata["sessionId"] = d.Info.ID
	}
}

func (w *exportWriter) endAgent(a *agentDoc, e *formats.Event, at time.Time) {
	w.closeMsg(a, at)
	if e.Report() == "" {
		return
	}
	// The report is the task call's output, when its result has none.
	for _, p := range w.run.agents[""].calls {
		if p.State != nil && p.State.Metadata["sessionId"] == a.doc.Info.ID && p.State.done && (p.State.Output == nil || *p.State.Output == "") {
			t := e.Report()
			p.State.Output = &t
		}
	}
}

// userMsg writes a user message; synthetic: its text is not the user's
// (OpenCode's mark for what it adds to a conversation), which starts no run.
func (w *exportWriter) userMsg(a *agentDoc, text string, synthetic bool, at time.Time) {
	d := a.doc
	m := &docMsg{Info: msgInfo{Role: "user", Agent: "build", Time: msgTime{Created: ms64(at)},
		Model: &msgModel{ProviderID: provider(a.provider, a.model), ModelID: modelName(a.model)}}}
	m.Info.ID, m.Info.SessionID = w.id(d, "msg", at), d.Info.ID
	d.Messages = append(d.Messages, m)
	a.user = m.Info.ID
	if d.Info.Title == "agentconv session" && text != "" && d.Info.ParentID == "" && !synthetic {
		d.Info.Title = title(text)
	}
	w.part(a, m, &docPart{Type: "text", Text: &text, Synthetic: synthetic}, at)
	d.touch(at)
}

func title(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 50 {
		s = string(r[:50])
	}
	return s
}

func (d *exportDoc) touch(at time.Time) {
	if t := ms64(at); t > d.Info.Time.Updated {
		d.Info.Time.Updated = t
	}
}

// open returns the assistant message being filled, or a new one.
func (w *exportWriter) open(a *agentDoc, at time.Time) *docMsg {
	if a.cur != nil {
		return a.cur
	}
	d := a.doc
	if a.user == "" {
		// An answer without its prompt: OpenCode's assistant message
		// names the user message it answers, which the source never gave.
		w.opts.Report.Quirk(formats.PromptsNeverGiven)
		w.userMsg(a, "", false, at)
	}
	m := &docMsg{Info: msgInfo{ParentID: a.user, Role: "assistant", Mode: "build", Agent: "build",
		Path: &msgPath{Cwd: a.cwd, Root: "/"}, ModelID: modelName(a.model), ProviderID: provider(a.provider, a.model),
		Time: msgTime{Created: ms64(at)}}}
	m.Info.ID, m.Info.SessionID = w.id(d, "msg", at), d.Info.ID
	d.Messages = append(d.Messages, m)
	w.part(a, m, &docPart{Type: "step-start"}, at)
	m.usage, a.usage = a.usage, nil
	a.cur, a.last = m, m
	return m
}

func (w *exportWriter) part(a *agentDoc, m *docMsg, p *docPart, at time.Time) {
	p.ID, p.SessionID, p.MessageID = w.id(a.doc, "prt", at), a.doc.Info.ID, m.Info.ID
	m.Parts = append(m.Parts, p)
	a.doc.touch(at)
}

// closeMsg ends the assistant message being filled: its tokens and cost,
// and a step-finish that holds them where the source gave them.
func (w *exportWriter) closeMsg(a *agentDoc, at time.Time) {
	m := a.cur
	if m == nil {
		return
	}
	a.cur = nil
	if len(a.errs) > 0 {
		m.errText = a.errs[len(a.errs)-1]
		a.errs = nil
	}
	done := ms64(at)
	m.Info.Time.Completed = &done
	reason := "stop"
	if m.calls {
		reason = "tool-calls"
	}
	m.Info.Finish = reason
	tok, cost := docUsage(m.usage)
	m.Info.Tokens, m.Info.Cost = tok, &cost
	if m.usage != nil {
		c := cost
		w.part(a, m, &docPart{Type: "step-finish", Reason: reason, Tokens: tok, Cost: &c}, at)
	}
}

// docUsage is usage as OpenCode counts it: input without the cache, and
// output without the reasoning.
func docUsage(u *formats.UsageInfo) (*docTokens, float64) {
	t := &docTokens{}
	if u == nil {
		return t, 0
	}
	t.Cache.Read, t.Cache.Write = u.CacheReadTokens.V, u.CacheWriteTokens.V+u.CacheWrite1hTokens.V
	t.Input = max(u.InputTokens.V-t.Cache.Read-t.Cache.Write, 0)
	t.Reasoning = u.ReasoningTokens.V
	t.Output = max(u.OutputTokens.V-t.Reasoning, 0)
	if tt := u.Total(); tt.OK {
		t.Total = tt.V
	} else {
		t.Total = t.Input + t.Output + t.Reasoning + t.Cache.Read + t.Cache.Write
	}
	return t, u.CostUSD.V
}

func (w *exportWriter) call(a *agentDoc, e *formats.Event, at time.Time) {
	m := a.cur
	if m != nil && m.answered {
		// The model responds again after results: a new message, as
		// OpenCode keeps one per request, in a turn too.
		w.closeMsg(a, at)
	}
	m = w.open(a, at)
	m.calls = true
	input := e.Call.Args
	if len(input) == 0 {
		input = json.RawMessage("{}")
	} else if t := strings.TrimSpace(string(input)); !strings.HasPrefix(t, "{") {
		w.opts.Report.Quirk(lossArgs)
		input = json.RawMessage(`{"input":` + t + `}`)
	}
	p := &docPart{Type: "tool", Tool: e.Call.Name, CallID: e.Call.ID,
		State: &toolState{Status: "running", Input: append(json.RawMessage(nil), input...), Title: e.Call.Summary, Time: span{Start: ms64(at)},
			Metadata: map[string]any{}}}
	w.part(a, m, p, at)
	a.calls[e.Call.ID] = p
}

func (w *exportWriter) result(a *agentDoc, e *formats.Event, at time.Time) {
	p := a.calls[e.Call.ID]
	if p == nil {
		// A result without its call: the call goes in the open message.
		w.call(a, &formats.Event{Kind: formats.ToolCall, Call: formats.Call{ID: e.Call.ID, Name: e.Call.Name}}, at)
		p = a.calls[e.Call.ID]
	}
	st := p.State
	st.done = true
	end := ms64(at)
	if e.Duration > 0 {
		end = st.Time.Start + e.Duration.Milliseconds()
	}
	st.Time.End = &end
	out := e.Call.Output.Text()
	switch e.Call.Status {
	case formats.Completed, formats.StatusUnknown:
		st.Status = "completed"
		st.Output = &out
	default:
		st.Status = "error"
		msg := e.Call.Error
		if msg == "" {
			msg = out
		}
		if e.Call.Status == formats.Denied && !refused(msg) {
			msg = strings.TrimSpace("The user rejected permission to use this specific tool call. " + msg)
		}
		if msg == "" {
			msg = "The tool call failed."
		}
		st.Error = &msg
		if out != "" && out != msg {
			st.Output = &out
		}
	}
	if st.Title == "" {
		st.Title = e.Call.Name
	}
	if e.Call.ExitCode.OK || e.Call.Truncated {
		if st.Metadata == nil {
			st.Metadata = map[string]any{}
		}
		if e.Call.ExitCode.OK {
			st.Metadata["exit"] = e.Call.ExitCode.V
		}
		st.Metadata["truncated"] = e.Call.Truncated
	}
	if st.Metadata == nil {
		st.Metadata = map[string]any{}
	}
	for _, m := range a.doc.Messages {
		if len(m.Parts) > 0 && m.Info.ID == p.MessageID {
			m.answered = true
			if m == a.cur && !m.turn {
				// The model responds again after results: a new message.
				w.closeMsg(a, at)
			}
		}
	}
}

// unanswered ends the calls that have no result as failed ones.
func (w *exportWriter) unanswered(a *agentDoc, at time.Time) {
	for _, m := range a.doc.Messages {
		for _, p := range m.Parts {
			if p.State != nil && !p.State.done {
				w.opts.Report.Quirk(formats.UnansweredCallsFailed)
				msg := "Tool execution aborted"
				end := max(ms64(at), p.State.Time.Start)
				p.State.Status, p.State.Error, p.State.Time.End, p.State.done = "error", &msg, &end, true
				if p.State.Metadata == nil {
					p.State.Metadata = map[string]any{}
				}
			}
		}
	}
}

// end closes the run: every agent's last message, the run's usage where
// no request gave it, and its failure as its last message's error.
func (w *exportWriter) end(e *formats.Event, v *formats.RunView, at time.Time) {
	main := w.run.agents[""]
	// In a fixed order: the messages made here take ids in turn.
	for _, id := range slices.Sorted(maps.Keys(w.run.agents)) {
		a := w.run.agents[id]
		if a.usage != nil || id == "" && (len(a.errs) > 0 || !v.Success()) && a.cur == nil {
			w.open(a, at)
		}
		w.closeMsg(a, at)
		w.unanswered(a, at)
	}
	if v.Prompts == 0 && main.user == "" {
		w.opts.Report.Quirk(formats.PromptsNeverGiven)
	}
	if v.Requests == 0 && !v.Usage.Empty() && main.last != nil {
		// Run totals from a source without per-request usage: the last
		// response's.
		u := v.Usage
		m := main.last
		m.usage = &u
		tok, cost := docUsage(&u)
		m.Info.Tokens, m.Info.Cost = tok, &cost
		c := cost
		w.part(main, m, &docPart{Type: "step-finish", Reason: m.Info.Finish, Tokens: tok, Cost: &c}, at)
	} else if s, u := v.RequestUsage(), v.Usage; s.InputTokens.V != u.InputTokens.V || s.OutputTokens.V != u.OutputTokens.V ||
		s.CacheReadTokens.V != u.CacheReadTokens.V || s.CostUSD.V != u.CostUSD.V {
		w.opts.Report.Quirk(formats.UnsummedRunUsage)
	}
	// Errors: OpenCode keeps one on a message, and reads a run with one as
	// failed.
	for _, a := range w.run.agents {
		for _, m := range a.doc.Messages {
			if m.errText == "" || m.Info.Error != nil {
				continue
			}
			if v.Success() {
				w.opts.Report.Quirk(lossErrors)
				m.errText = ""
				continue
			}
			m.Info.Error = &msgError{Name: "UnknownError"}
			m.Info.Error.Data.Message = m.errText
		}
	}
	if !v.Success() {
		if v.Status != formats.Failed || v.ExitCode != 1 {
			w.opts.Report.Quirk(lossOutcomes)
		}
		if m := main.last; m != nil && m.Info.Error == nil {
			m.Info.Error = &msgError{Name: "UnknownError"}
			m.Info.Error.Data.Message = v.Failure
		}
	}
	if main.doc.Info.Directory == "" {
		main.doc.Info.Directory = v.Info.Cwd
	}
	w.run = nil
}

// modelName is a model as OpenCode's messages name it, without its
// provider; provider is its provider: the one before a slash, else the
// run's, else unknown.
func modelName(m string) string {
	if _, after, ok := strings.Cut(m, "/"); ok {
		m = after
	}
	if m == "" {
		return "unknown" // OpenCode's import requires one
	}
	return m
}

func provider(run, m string) string {
	if before, _, ok := strings.Cut(m, "/"); ok && before != "" {
		return before
	}
	if run != "" {
		return run
	}
	return "unknown"
}

func ms64(t time.Time) int64 { return max(t.UnixMilli(), 0) }

func msp64(t time.Time) *int64 {
	v := ms64(t)
	return &v
}
