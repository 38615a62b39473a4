package opencode

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// Export is the opencode-export dialect: the JSON document `opencode
// export ID` prints of one session: its info (id, directory, version,
// totals) and its messages, each with its info (role; for an assistant
// message its model, its time and its error, if any) and its parts. A
// subagent's session is a session of its own, which the document names
// (the task call's metadata) but does not hold: one input may hold both
// documents, one after the other. The writer (export_write.go) writes
// what `opencode import FILE` takes in.
var Export = formats.Dialect{
	Name: "opencode-export",
	Description: "OpenCode `opencode export ID`: one JSON document of a session's info and its messages with their parts; " +
		"-o DIR writes <session id>.json, which `opencode import FILE` takes in and `opencode run --session ID` resumes",
	NewReader: newExportReader,
	NewWriter: newExportWriter,
	Detect:    detectExport,
	Files:     true,
	DirFiles:  "ses_*.json",
	// The document of a session is written whole at its end.
	HoldsRun: true,
	// A document keeps prompts (one run each), text, reasoning, tool
	// calls with their text outputs, errors and refusals, durations, each
	// response's tokens and cost, the model, the directory, a subagent as
	// a session of its own named by its call, and a failure as an error.
	Carries: formats.Timestamps | formats.WorkingDirs | formats.ModelNames | formats.UserPrompts | formats.AssistantText |
		formats.Thinking | formats.ToolCalls | formats.ToolDurations | formats.Refusals | formats.Subagents | formats.SubagentCalls |
		formats.SubagentText | formats.SubagentReports | formats.SubagentToolCalls | formats.TokenUsage | formats.PerRequestUsage |
		formats.CacheWrites | formats.ReasoningTokens | formats.Costs | formats.RunOutcomes | formats.SubagentPrompts |
		formats.SubagentThinking,
	Quirks: []formats.Quirk{formats.UnansweredCallsFailed, formats.PromptsNeverGiven, formats.UnsummedRunUsage, lossOutcomes, lossErrors, lossArgs},
}

// sessionInfo is a session's info (the export's info, a session row).
type sessionInfo struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentID"`
	Directory string `json:"directory"`
	Version   string `json:"version"`
	Title     string `json:"title"`
	Time      struct {
		Created int64 `json:"created"`
		Updated int64 `json:"updated"`
	} `json:"time"`
}

// messageInfo is a message's info (the export's, a message row's data).
type messageInfo struct {
	ID         string `json:"id"`
	SessionID  string `json:"sessionID"`
	Role       string `json:"role"`
	ParentID   string `json:"parentID"`
	ModelID    string `json:"modelID"`
	ProviderID string `json:"providerID"`
	Agent      string `json:"agent"`
	Model      *struct {
		ModelID string `json:"modelID"`
	} `json:"model"`
	Path *struct {
		Cwd string `json:"cwd"`
	} `json:"path"`
	Time struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Error *sessionError `json:"error"`
}

type message struct {
	Info  messageInfo `json:"info"`
	Parts []*part     `json:"parts"`
}

// session is a session and its messages, in order.
type session struct {
	Info     sessionInfo `json:"info"`
	Messages []*message  `json:"messages"`
}

// builder turns sessions into events: each prompt of a main session (a
// user message) and the assistant messages that answer it are a run;
// a task call's child session, when held, is its subagent, nested.
type builder struct {
	dialect  string
	children map[string]*session
	used     map[string]bool
	// raw are the documents read, by session: the first event of each
	// session carries its document, for a copy into its own dialect.
	raw map[*session][]byte
}

// carry puts s's document on the first of its events.
func (b *builder) carry(s *session, evs []*formats.Event) {
	if raw := b.raw[s]; raw != nil && len(evs) > 0 {
		evs[0].Source.Line, evs[0].Source.Continued = raw, false
	}
}

// src is the source of an event of a session: a part of its document
// (Continued), when the first event carries the document; a database's
// events carry no record, and say nothing of one.
func (b *builder) src(typ string) formats.Source {
	return formats.Source{Dialect: b.dialect, Type: typ, Continued: b.raw != nil}
}

// runs gives the events of a main session.
func (b *builder) runs(s *session) []*formats.Event {
	var out []*formats.Event
	open := false
	var failure, code string
	var last time.Time
	model := ""
	end := func() {
		if !open {
			return
		}
		e := &formats.Event{Kind: formats.RunEnd, Time: last, Status: formats.Completed, Source: b.src("end"),
			Run: formats.RunInfo{SessionID: s.Info.ID, AgentName: AgentName, Model: model}}
		if failure != "" {
			e.Status, e.Text, e.Code = formats.Failed, failure, code
			e.Run.ExitCode = formats.Some(1)
		}
		out = append(out, e)
		open, failure, code = false, "", ""
	}
	for _, m := range s.Messages {
		t := ms(m.Info.Time.Created)
		if t.After(last) {
			last = t
		}
		if m.Info.Role == "user" && open && syntheticOnly(m) {
			// Text OpenCode (or a conversion) put in the conversation,
			// not the user's: the run goes on.
			out = append(out, &formats.Event{Kind: formats.UserMessage, Time: t, Text: partsText(m, true),
				AgentInfo: formats.AgentInfo{Label: "synthetic"}, Source: b.src("message")})
			continue
		}
		if m.Info.Role == "user" {
			end()
			open = true
			if m.Info.Model != nil {
				model = m.Info.Model.ModelID
			}
			out = append(out, &formats.Event{Kind: formats.RunStart, Time: t, Source: b.src("session"),
				Run: formats.RunInfo{SessionID: s.Info.ID, AgentName: AgentName, AgentVersion: s.Info.Version, Cwd: s.Info.Directory, Model: model}})
			out = append(out, b.prompt(m, "", t)...)
			continue
		}
		if !open {
			// An answer without its prompt: a run of its own.
			open = true
			out = append(out, &formats.Event{Kind: formats.RunStart, Time: t, Source: b.src("session"),
				Run: formats.RunInfo{SessionID: s.Info.ID, AgentName: AgentName, AgentVersion: s.Info.Version, Cwd: s.Info.Directory}})
		}
		if m.Info.ModelID != "" {
			model = m.Info.ModelID
		}
		evs, mt := b.answer(m, "")
		out = append(out, evs...)
		if mt.After(last) {
			last = mt
		}
		if m.Info.Error != nil {
			failure, code = m.Info.Error.message(), m.Info.Error.Name
		}
	}
	end()
	return out
}

// unnamed puts the child sessions of parent that no call of it names (a
// subagent whose call its source did not give, written as opencode-export)
// at the end of its last run, each as a subagent.
func (b *builder) unnamed(parent *session, sessions []*session, evs []*formats.Event) []*formats.Event {
	end := -1
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == formats.RunEnd {
			end = i
			break
		}
	}
	if end < 0 {
		return evs
	}
	var sub []*formats.Event
	for _, s := range sessions {
		if s.Info.ParentID != parent.Info.ID || b.used[s.Info.ID] {
			continue
		}
		t := ms(s.Info.Time.Created)
		sub = append(sub, &formats.Event{Kind: formats.AgentStart, Agent: s.Info.ID, Time: t, Source: b.src("session"),
			AgentInfo: formats.AgentInfo{Label: s.Info.Title}})
		sub = append(sub, b.spawn(s.Info.ID, "")...)
		sub = append(sub, &formats.Event{Kind: formats.AgentEnd, Agent: s.Info.ID, Time: evs[end].Time, Status: formats.Completed, Source: b.src("session")})
	}
	if sub == nil {
		return evs
	}
	return append(append(append([]*formats.Event(nil), evs[:end]...), sub...), evs[end:]...)
}

// syntheticOnly: a user message whose text is all synthetic.
func syntheticOnly(m *message) bool {
	n := 0
	for _, p := range m.Parts {
		if p.Type == "text" && p.Text != "" {
			if !p.Synthetic {
				return false
			}
			n++
		}
	}
	return n > 0
}

// partsText is a message's text parts, the synthetic ones or the others.
func partsText(m *message, synthetic bool) string {
	var texts []string
	for _, p := range m.Parts {
		if p.Type == "text" && p.Synthetic == synthetic && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// prompt is a user message's text, as the prompt of agent.
func (b *builder) prompt(m *message, agent string, t time.Time) []*formats.Event {
	var texts []string
	for _, p := range m.Parts {
		if p.Type == "text" && !p.Synthetic && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	return []*formats.Event{{Kind: formats.UserMessage, Agent: agent, Time: t, Text: strings.Join(texts, "\n"), Source: b.src("message")}}
}

// answer is an assistant message's parts, and its error, as agent's; and
// the message's last time. A step's events go in the order of its model
// request: what it said and the calls it made (with the subagents they
// started), its usage (the step's finish), then the calls' results, by
// their ends, and the step's end. Each has the time the source gives it:
// text and reasoning their part's start, a call its start and its result
// its end; a step's usage none (its finish has no time of its own), its
// end the message's completion.
func (b *builder) answer(m *message, agent string) ([]*formats.Event, time.Time) {
	var out, results []*formats.Event
	t := ms(m.Info.Time.Created)
	done := ms(m.Info.Time.Completed)
	last := t
	if done.After(last) {
		last = done
	}
	endResults := func() {
		slices.SortStableFunc(results, func(a, b *formats.Event) int { return a.Time.Compare(b.Time) })
		out = append(out, results...)
		results = nil
	}
	for _, p := range m.Parts {
		pt := t
		if p.Time != nil {
			if p.Time.Start != nil {
				pt = ms(*p.Time.Start)
			} else if p.Time.End != nil {
				pt = ms(*p.Time.End)
			}
		}
		for _, e := range partEvents(p, agent, pt, b.spawn) {
			if e.Source.Dialect == "" {
				e.Source = b.src(p.Type)
			}
			switch {
			case e.Kind == formats.ToolResult && e.Agent == agent:
				results = append(results, e)
				continue
			case e.Kind == formats.Usage && e.Agent == agent:
				e.Time = time.Time{}
				out = append(out, e)
				endResults()
				continue
			case e.Kind == formats.TurnEnd && e.Agent == agent:
				e.Time = done
			}
			out = append(out, e)
		}
	}
	endResults()
	if m.Info.Error != nil {
		out = append(out, &formats.Event{Kind: formats.Notice, Agent: agent, Severity: formats.Error, Time: last,
			Text: m.Info.Error.message(), Code: m.Info.Error.Name, Source: b.src("error")})
	}
	return out, last
}

// spawn gives the events of the child session a task call started, as its
// subagent's, when the source holds it.
func (b *builder) spawn(child, call string) []*formats.Event {
	s := b.children[child]
	if s == nil || b.used[child] {
		return nil
	}
	b.used[child] = true
	var out []*formats.Event
	for _, m := range s.Messages {
		if m.Info.Role == "user" {
			out = append(out, b.prompt(m, child, ms(m.Info.Time.Created))...)
			continue
		}
		evs, _ := b.answer(m, child)
		out = append(out, evs...)
	}
	b.carry(s, out)
	return out
}

// events gives every main session's runs; a child session that no task
// call names is a run of its own.
func (b *builder) events(sessions []*session) []*formats.Event {
	b.children, b.used = map[string]*session{}, map[string]bool{}
	for _, s := range sessions {
		if s.Info.ParentID != "" {
			b.children[s.Info.ID] = s
		}
	}
	var out []*formats.Event
	for _, s := range sessions {
		if s.Info.ParentID == "" {
			evs := b.runs(s)
			evs = b.unnamed(s, sessions, evs)
			b.carry(s, evs)
			out = append(out, evs...)
		}
	}
	for _, s := range sessions {
		if s.Info.ParentID != "" && !b.used[s.Info.ID] {
			evs := b.runs(s)
			b.carry(s, evs)
			out = append(out, evs...)
		}
	}
	return out
}

// detectExport claims a JSON document whose first key is info, holding a
// session's slug and projectID, with messages after it.
func detectExport(head []byte) int {
	h := bytes.TrimSpace(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")))
	if len(h) == 0 || h[0] != '{' {
		return 0
	}
	rest := bytes.TrimLeft(h[1:], " \t\r\n")
	if !bytes.HasPrefix(rest, []byte(`"info"`)) {
		return 0
	}
	info := bytes.Index(rest, []byte(`"messages"`))
	if info < 0 {
		info = len(rest)
	}
	in := rest[:info]
	if bytes.Contains(in, []byte(`"slug"`)) && bytes.Contains(in, []byte(`"projectID"`)) {
		return 90
	}
	return 0
}

// sliceReader gives events made beforehand.
type sliceReader struct {
	evs  []*formats.Event
	err  error
	load func() ([]*formats.Event, error)
}

func (r *sliceReader) Next() (*formats.Event, error) {
	if r.load != nil {
		r.evs, r.err = r.load()
		r.load = nil
	}
	if len(r.evs) == 0 {
		if r.err != nil {
			err := r.err
			r.err = nil
			return nil, err
		}
		return nil, io.EOF
	}
	e := r.evs[0]
	r.evs = r.evs[1:]
	return e, nil
}

func newExportReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &sliceReader{load: func() ([]*formats.Event, error) {
		vr := formats.NewValueReader(r)
		var sessions []*session
		raw := map[*session][]byte{}
		for {
			v, line, err := vr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			var s session
			if err := o.Report.UnmarshalObject(line, v, &s); err != nil {
				return nil, err
			}
			if s.Info.ID == "" {
				return nil, formats.Errorf(line, "not an OpenCode export: the document has no info.id (expected `opencode export ID`'s output)")
			}
			sessions = append(sessions, &s)
			raw[&s] = append([]byte(nil), v...)
		}
		b := builder{dialect: o.Dialect, raw: raw}
		return b.events(sessions), nil
	}}
}
