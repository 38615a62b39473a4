package claude

import (
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// sessOut is one record of a written session file, with Claude Code's
// field order.
type sessOut struct {
	ParentUUID        *string          `json:"parentUuid"`
	LogicalParentUUID *string          `json:"logicalParentUuid,omitempty"`
	IsSidechain       bool             `json:"isSidechain"`
	UserType          string           `json:"userType"`
	Cwd               string           `json:"cwd"`
	SessionID         string           `json:"sessionId"`
	Version           string           `json:"version,omitempty"`
	AgentID           string           `json:"agentId,omitempty"`
	Type              string           `json:"type"`
	Subtype           string           `json:"subtype,omitempty"`
	Content           string           `json:"content,omitempty"`
	Level             string           `json:"level,omitempty"`
	CompactMetadata   *compactMetaOut  `json:"compactMetadata,omitempty"`
	Message           any              `json:"message,omitempty"`
	IsCompactSummary  bool             `json:"isCompactSummary,omitempty"`
	IsAPIError        bool             `json:"isApiErrorMessage,omitempty"`
	DurationMS        *int64           `json:"durationMs,omitempty"`
	IsMeta            *bool            `json:"isMeta,omitempty"`
	UUID              string           `json:"uuid"`
	Timestamp         string           `json:"timestamp"`
	ToolUseResult     *json.RawMessage `json:"toolUseResult,omitempty"`
}

type compactMetaOut struct {
	Trigger string `json:"trigger"`
}

type sessUserMsg struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type metaOut struct {
	AgentType   string `json:"agentType"`
	Description string `json:"description"`
	ToolUseID   string `json:"toolUseId,omitempty"`
}

// sessFile is one file written: the session's, or a subagent's.
type sessFile struct {
	w    io.Writer
	c    io.Closer
	last *string // uuid of its last record: the next one's parentUuid
	rel  string  // its path under -o DIR
}

// parkedFile is the writer of a session's file closed when another
// session began (sessionWriter.park): the file is reopened, to go on, when
// it is written to again.
type parkedFile struct {
	s *sessionWriter
	f *sessFile
}

func (p parkedFile) Write(b []byte) (int, error) {
	wc, err := p.s.reopen(p.f.rel)
	if err != nil {
		p.s.fail(err)
		p.f.w = io.Discard
		return 0, err
	}
	p.f.w, p.f.c = wc, wc
	p.s.open = append(p.s.open, p.f)
	return wc.Write(b)
}

// sessAgent is what the writer keeps of a subagent.
type sessAgent struct {
	file   *sessFile // its own file; nil when written inline
	inline bool
	last   *string // inline: the uuid of its last record
	model  string
}

// sessResp is the model response an agent is writing: its records share
// the message id, model, usage and stop reason.
type queued struct {
	f     *sessFile
	rec   *sessOut
	agent string
}

type sessResp struct {
	msgs    []*messageOut
	gen     int
	info    *formats.UsageInfo
	id      string
	model   string
	usage   *usageOut
	stop    *string
	written bool
	// made: its id is the writer's, made for text or calls that no
	// usage announced.
	made bool
}

type sessionWriter struct {
	// input counts the inputs ended (EndInput); stems are the file stems
	// (session names) taken, each by the input that took it, and renamed
	// those of this input that an earlier one had taken.
	input   int
	stems   map[string]int
	renamed map[string]string
	out     io.Writer
	create  func(string) (io.WriteCloser, error)
	reopen  func(string) (io.WriteCloser, error)
	// open are the files opened since the last session's were closed.
	open    []*sessFile
	rep     *formats.Report
	view    *formats.RunView
	dialect string
	err     error

	ids  ids
	runs int
	// session is the id the run's records carry, src the source's id it
	// was made from; main is its file.
	session string
	src     string
	main    *sessFile
	files   map[string]*sessFile
	agents  map[string]*sessAgent
	// agentFiles holds whose each subagent file is (its path, less the
	// extension → the agent's id), so that two agents never share one:
	// an unsafe id's derived name may be another agent's own.
	agentFiles map[string]string
	resp       map[string]*sessResp
	// respIDs are the ids of the last responses written to the
	// session's file (RecentCalls of them): Claude Code reads a
	// response's records by its id, and a source that gives two requests
	// one id gives them close together.
	respIDs formats.CallMap[bool]
	called  map[string]bool // calls whose tool_use is written
	// streamed text of each agent, not yet written as a message.
	text     formats.TextTracker
	thinking map[string]*strings.Builder
	deltas   map[string]bool
	prompted bool
	// prevMarked: the last run's end was written (a run without a prompt
	// after it still reads as a run of its own).
	prevMarked bool
	// answered: the run's main agent wrote a response; lastText is the
	// text of its last message.
	answered bool
	lastText string
	// usage sums the usage written on the run's responses.
	wrote formats.UsageInfo
	// queue holds the records of the response being written, and those
	// after it, until the next response begins: usage that a source gives
	// after its response (and its calls' results) still goes on it.
	queue []queued
	// lastType is the type of the main agent's last user or assistant
	// record.
	lastType string
	gen      int
	last     map[string]*sessResp // each agent's last response
	// given after its response still goes on it.
	// compacted is the agent whose compaction, without a summary, was
	// the last record written (compactedOK).
	compacted   string
	compactedOK bool
	// copyTo is where the record of the event observed last goes.
	copyTo io.Writer
	// stamps times the records: Claude Code resumes from the leaf record
	// with the latest time, so times that a source without them shares
	// must strictly increase.
	stamps formats.Stamps
}

func newSessionWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &sessionWriter{out: w, create: o.Create, reopen: o.Reopen, rep: o.Report, dialect: o.Dialect,
		files: map[string]*sessFile{}, agents: map[string]*sessAgent{}, agentFiles: map[string]string{}, resp: map[string]*sessResp{},
		last: map[string]*sessResp{}, called: map[string]bool{}, thinking: map[string]*strings.Builder{}, deltas: map[string]bool{}}
}

func (s *sessionWriter) fail(err error) {
	if s.err == nil && err != nil {
		s.err = err
	}
}

// file opens (once) the file at a relative path; to a stream, every
// record goes to the output.
func (s *sessionWriter) file(rel string) *sessFile {
	if s.create == nil {
		rel = ""
	}
	if f := s.files[rel]; f != nil {
		return f
	}
	f := &sessFile{w: s.out, rel: rel}
	if s.create != nil {
		wc, err := s.create(rel)
		if err != nil {
			s.fail(err)
			f.w = io.Discard
		} else {
			f.w, f.c = wc, wc
			s.open = append(s.open, f)
		}
	}
	s.files[rel] = f
	return f
}

// sessionFor names the session of the run's records: the source's id
// when it is a UUID, else one derived from it (or, for a source without
// one, from the run's number, start and first record).
func (s *sessionWriter) sessionFor(v *formats.RunView, e *formats.Event) string {
	if s.session != "" {
		return s.session
	}
	id := v.Info.SessionID
	if id == "" {
		id = "agentconv run " + strconv.Itoa(s.runs) + " " + v.Start.Format(time.RFC3339Nano) + " " +
			e.TimeOf().Format(time.RFC3339Nano) + " " + e.Text
	}
	s.session = SessionUUID(id)
	if v.Info.SessionID != "" && s.session != v.Info.SessionID {
		s.rep.Quirk(lossSessionIDs)
	}
	return s.session
}

func (s *sessionWriter) mainFile(v *formats.RunView, e *formats.Event) *sessFile {
	if s.main == nil {
		s.main = s.file(s.stem(s.sessionFor(v, e)) + ".jsonl")
	}
	return s.main
}

// copyName is the file name of a session copied as it is: its own id,
// when that can be a file name.
func copyName(id string) string {
	if name := safeName(id); name != "" {
		return name
	}
	return SessionUUID(id)
}

// Observe follows a record that the pipeline copies as it came, and picks
// the file it goes to: its subagent's, or the session's.
func (s *sessionWriter) Observe(e *formats.Event, v *formats.RunView) {
	s.view = v
	s.follow(e, v, true)
	if e.Source.Line == nil || s.create == nil {
		s.copyTo = nil
		return
	}
	if a := s.agents[e.Agent]; a != nil && a.file != nil {
		s.copyTo = a.file.w
		return
	}
	if s.main == nil {
		s.main = s.file(s.stem(copyName(v.Info.SessionID)) + ".jsonl")
	}
	s.copyTo = s.main.w
}

// stem is the name of the session's files under -o DIR: its own, unless
// an earlier input of the conversion wrote a session of that name (two
// files of one session id), whose files stay as they are: then the name
// with -2 (-3, …), said in a warning.
func (s *sessionWriter) stem(name string) string {
	if s.create == nil {
		return name
	}
	if r, ok := s.renamed[name]; ok {
		return r
	}
	if s.stems == nil {
		s.stems, s.renamed = map[string]int{}, map[string]string{}
	}
	owner, taken := s.stems[name]
	if !taken || owner == s.input {
		s.stems[name] = s.input
		return name
	}
	r := name
	for i := 2; ; i++ {
		r = name + "-" + strconv.Itoa(i)
		if _, taken := s.stems[r]; !taken {
			break
		}
	}
	s.stems[r] = s.input
	s.renamed[name] = r
	s.rep.Warn(0, "an earlier input holds a session of the same id (%s): this one is written to %s.jsonl, not merged with it", formats.Visible(name, true), r)
	return r
}

// EndInput closes the files of an input's sessions: the next input's are
// its own, even where a session id is the same.
func (s *sessionWriter) EndInput() {
	s.flushAllText(s.view)
	s.flushHeld()
	for _, rel := range slices.Sorted(maps.Keys(s.files)) {
		if f := s.files[rel]; f.c != nil {
			s.fail(f.c.Close())
			f.c = nil
		}
	}
	clear(s.files)
	clear(s.open)
	s.open = s.open[:0]
	clear(s.renamed)
	s.session, s.main, s.src = "", nil, ""
	s.input++
}

// park closes the files of the sessions written so far, when another
// session begins under -o DIR: they are put in place as the conversion
// goes, and a conversion of many sessions holds few files. A session
// written again reopens its file (parkedFile).
func (s *sessionWriter) park() {
	if s.reopen == nil {
		return
	}
	for _, f := range s.open {
		if f.c != nil {
			s.fail(f.c.Close())
			f.w, f.c = parkedFile{s, f}, nil
		}
	}
	clear(s.open)
	s.open = s.open[:0]
}

// CopyTo is the file of the record observed last.
func (s *sessionWriter) CopyTo() io.Writer { return s.copyTo }

// follow keeps the state of runs and agents, from events written or
// copied.
func (s *sessionWriter) follow(e *formats.Event, v *formats.RunView, copied bool) {
	switch e.Kind {
	case formats.RunStart:
		s.flushHeld()
		s.runs++
		s.ids = ids{seed: "claude-session\x00" + v.Info.SessionID + "\x00" + strconv.Itoa(s.runs)}
		if v.Info.SessionID != s.src || v.Info.SessionID == "" {
			// Another session: a file of its own.
			s.session, s.main = "", nil
			s.park()
			s.respIDs.Reset()
		}
		s.src, s.prompted, s.answered, s.wrote, s.lastText = v.Info.SessionID, false, false, formats.UsageInfo{}, ""
		clear(s.resp)
		clear(s.called)
	case formats.AgentStart:
		s.agentStart(e, v, copied || e.Source.Dialect == s.dialect)
	case formats.AgentEnd:
		if a := s.agents[e.Agent]; a != nil && a.file != nil && a.file.c != nil {
			s.flushHeld()
			s.fail(a.file.c.Close())
			a.file.c = nil
			a.file.w = io.Discard
		}
	case formats.ModelChange:
		if a := s.agents[e.Agent]; a != nil && e.Agent != "" {
			a.model = e.Run.Model
		}
	}
}

func (s *sessionWriter) agentStart(e *formats.Event, v *formats.RunView, own bool) {
	a := &sessAgent{model: e.AgentInfo.Model}
	s.agents[e.Agent] = a
	if s.create == nil || (own && e.Source.Type == "isSidechain") {
		a.inline = true
		return
	}
	sess := ""
	if own {
		sess = s.stem(copyName(v.Info.SessionID))
	} else {
		sess = s.stem(s.sessionFor(v, e))
	}
	id := agentFileID(e.Agent)
	for i := 2; ; i++ {
		owner, taken := s.agentFiles[subagentPath(sess, id, "")]
		if !taken || owner == e.Agent {
			break
		}
		id = agentFileID(e.Agent) + "-" + strconv.Itoa(i)
	}
	if want := agentFileID(e.Agent); id != want {
		s.rep.Warn(e.Source.LineNo, "subagent %q would be written to %s, another subagent's file; it goes to %s", e.Agent,
			subagentPath(sess, want, ".jsonl"), subagentPath(sess, id, ".jsonl"))
	}
	s.agentFiles[subagentPath(sess, id, "")] = e.Agent
	a.file = s.file(subagentPath(sess, id, ".jsonl"))
	desc := ""
	if c := v.Calls.Get(e.AgentInfo.ParentCall); c != nil {
		var in struct {
			Description string `json:"description"`
		}
		json.Unmarshal(c.Args, &in)
		desc = in.Description
	}
	label := e.AgentInfo.Label
	if label == "" {
		label = "general-purpose"
	}
	mw, err := s.create(subagentPath(sess, id, ".meta.json"))
	if err != nil {
		s.fail(err)
		return
	}
	s.fail(formats.WriteJSONLine(mw, metaOut{AgentType: label, Description: desc, ToolUseID: e.AgentInfo.ParentCall}))
	s.fail(mw.Close())
}

func (s *sessionWriter) Write(e *formats.Event, v *formats.RunView) error {
	s.view = v
	s.follow(e, v, false)
	if e.Source.Dialect == s.dialect {
		// An event of a session file without a record of its own (a run's
		// start or end, a subagent's): the source had nothing to write.
		return s.err
	}
	a := e.Agent
	switch e.Kind {
	case formats.RunEnd:
		s.flushAllText(v)
	case formats.ToolCall, formats.ToolResult, formats.UserMessage, formats.Compaction, formats.AgentEnd, formats.TurnEnd:
		// The agent moved on: its streamed text was a whole message.
		s.flushText(a, v)
	case formats.Usage:
		if e.Response.ID == "" {
			// Usage after the text it was spent on.
			s.flushText(a, v)
		}
	}
	switch e.Kind {
	case formats.TextDelta:
		s.text.Delta(a, e.Piece())
		s.deltas[a] = true
	case formats.ThinkingDelta:
		b := s.thinking[a]
		if b == nil {
			b = &strings.Builder{}
			s.thinking[a] = b
		}
		b.WriteString(e.Piece())
		s.deltas[a] = true
	case formats.UserMessage:
		s.lateUsage(a)
		s.resp[a] = nil
		rec := &sessOut{Type: "user", Message: sessUserMsg{Role: "user", Content: e.Prompt()}}
		if s.compacted == a && s.compactedOK {
			// The summary a compaction goes on with (claude-stream prints
			// it as a user message after compact_boundary).
			rec.IsCompactSummary = true
		} else if a == "" {
			s.prompted = true
		}
		s.record(e, v, rec)
	case formats.Message:
		// The whole message replaces the deltas that streamed it.
		s.text.Whole(a)
		thinking := e.Thinking
		if b := s.thinking[a]; b != nil && thinking == "" {
			thinking = b.String()
		}
		delete(s.thinking, a)
		delete(s.deltas, a)
		if blocks := s.content(e.MessageText(), thinking, e.Thoughts); len(blocks) > 0 {
			s.assistant(e, v, s.response(e, v, true), blocks)
		}
	case formats.ToolCall:
		s.called[e.Call.ID] = true
		s.assistant(e, v, s.response(e, v, false), []any{toolUseOut{"tool_use", e.Call.ID, e.Call.Name, args(e.Call.Args)}})
	case formats.ToolResult:
		s.lateUsage(a)
		s.resp[a] = nil
		s.toolResult(e, v)
	case formats.Usage:
		s.usage(e, v)
	case formats.Todos:
		if c := v.Calls.Last(); c == nil || c.Name != "TodoWrite" {
			s.rep.Quirk(lossLooseTodos)
		}
	case formats.Compaction:
		s.resp[a] = nil
		s.flushHeld()
		f := s.fileOf(e, v)
		prev := f.last
		if ag := s.agents[a]; ag != nil && ag.inline {
			prev = ag.last
		}
		s.record(e, v, &sessOut{Type: "system", Subtype: "compact_boundary", Content: "Conversation compacted", Level: "info",
			CompactMetadata: &compactMetaOut{Trigger: "auto"}, LogicalParentUUID: prev, ParentUUID: nil}, noParent)
		if e.Summary() != "" {
			s.record(e, v, &sessOut{Type: "user", Message: sessUserMsg{Role: "user", Content: e.Summary()}, IsCompactSummary: true})
		} else {
			s.compacted, s.compactedOK = a, true
		}
	case formats.AgentEnd:
		s.lateUsage(a)
	case formats.RunEnd:
		s.runEnd(e, v)
	}
	return s.err
}

// flushText writes an agent's streamed text that no Message completed.
func (s *sessionWriter) flushText(a string, v *formats.RunView) {
	if !s.deltas[a] {
		return
	}
	delete(s.deltas, a)
	thinking := ""
	if b := s.thinking[a]; b != nil {
		thinking = b.String()
		delete(s.thinking, a)
	}
	text := s.text.Flush(a)
	blocks := s.content(text, thinking, nil)
	if len(blocks) == 0 {
		return
	}
	e := &formats.Event{Kind: formats.Message, Agent: a, Text: text, Time: v.Last}
	s.assistant(e, v, s.response(e, v, true), blocks)
}

// content is a message's blocks as a session file holds them: thinking
// only with its signature (Claude Code sends it back to the API, which
// refuses it unsigned: another model's reasoning, or a cut stream's).
func (s *sessionWriter) content(text, thinking string, thoughts []formats.Thought) []any {
	blocks, dropped := content(text, thinking, thoughts, true)
	s.rep.QuirkN(lossUnsignedThinking, dropped)
	return blocks
}

func (s *sessionWriter) flushAllText(v *formats.RunView) {
	for _, a := range slices.Sorted(maps.Keys(s.deltas)) {
		s.flushText(a, v)
	}
}

// runEnd writes how the run ended, as Claude Code says it: nothing for a
// finished turn (its last response ended it), an interruption record for
// a cancelled run, an API error's record for a failed one.
func (s *sessionWriter) runEnd(e *formats.Event, v *formats.RunView) {
	for _, a := range slices.Sorted(maps.Keys(s.resp)) {
		s.lateUsage(a)
	}
	if a := v.Answer(); a != "" && a != s.lastText && e.Status == formats.Completed {
		// An answer that no message gave (a source with only the run's
		// result) is the run's last response.
		r := s.response(&formats.Event{}, v, true)
		s.assistant(e, v, r, []any{textOut{"text", a}})
	}
	if m := s.lastQueued(); m != nil {
		if m != nil && m.StopReason == nil && e.Status == formats.Completed {
			stop := "end_turn"
			m.StopReason = &stop
		}
		if u := v.Usage; m != nil && m.Usage == nil && v.Requests == 0 && (u.InputTokens.OK || u.OutputTokens.OK) {
			// A source with only the run's totals: they are the usage of
			// its last response.
			m.Usage = usageOf(u)
			s.wrote.Add(u)
		}
	}
	s.flushHeld()
	marked := !e.Cut
	switch {
	case e.Cut:
		if s.lastType == "assistant" && v.Calls.OpenCount() == 0 {
			// Nothing says it was cut: it stops on a response, with no
			// call left without its result.
			s.rep.Quirk(lossCutRuns)
		}
	case e.Status == formats.Completed:
	case e.Status == formats.Cancelled:
		s.record(e, v, &sessOut{Type: "user", Message: sessUserMsg{Role: "user", Content: []any{textOut{"text", "[Request interrupted by user]"}}}})
	case v.FailureSaid:
		m := &messageOut{ID: s.ids.message(), Type: "message", Role: "assistant", Model: "<synthetic>",
			Content: []any{textOut{"text", v.Failure}}}
		s.record(e, v, &sessOut{Type: "assistant", Message: m, IsAPIError: true})
	default:
		// Without words for it, the run is left as a cut one reads.
		s.rep.Quirk(lossFailedRuns)
		marked = false
	}
	if marked {
		// Claude Code's mark that the turn ended, with its duration.
		rec := &sessOut{Type: "system", Subtype: "turn_duration", IsMeta: new(bool)}
		dur := e.Duration
		if dur <= 0 && !v.Start.IsZero() && !e.Time.IsZero() {
			dur = e.Time.Sub(v.Start)
		}
		if ms := dur.Milliseconds(); ms > 0 {
			rec.DurationMS = &ms
		}
		s.record(e, v, rec)
	}
	if !e.Cut && (e.Status == formats.Failed || e.Status == formats.Denied) && v.ExitCode != 1 ||
		e.Status == formats.Cancelled && v.ExitCode != 1 {
		s.rep.Quirk(formats.ExitCodesBeyond01)
	}
	if !s.prompted {
		s.rep.Quirk(formats.PromptsNeverGiven)
		if s.runs > 1 && !s.prevMarked {
			s.rep.Quirk(lossPromptlessRuns)
		}
	}
	s.prevMarked = marked
	u := v.Usage
	if u.InputTokens.V != s.wrote.InputTokens.V || u.OutputTokens.V != s.wrote.OutputTokens.V ||
		u.CacheReadTokens.V != s.wrote.CacheReadTokens.V {
		s.rep.Quirk(lossRunUsage)
	}
	s.flushHeld()
}

// lateUsage reports usage that came after an agent's responses, with no
// response left to carry it.
func (s *sessionWriter) lateUsage(a string) {
	if r := s.resp[a]; r != nil && !r.written && r.usage != nil {
		s.rep.Quirk(lossLateUsage)
		delete(s.resp, a)
	}
}

// response is the response an agent's message or call belongs to: the one
// its usage opened, else the one it is writing (a call joins its text),
// else a new one.
func (s *sessionWriter) response(e *formats.Event, v *formats.RunView, message bool) *sessResp {
	a := e.Agent
	r := s.resp[a]
	if r == nil || (message && r.written) {
		s.flushHeld()
		r = &sessResp{id: s.ids.message(), made: true}
		s.resp[a] = r
	}
	if r.model == "" {
		r.model = s.modelOf(a, v)
	}
	return r
}

// respID is the id of a response the source names id: its own, unless
// an earlier response of the file has it (a source that gives two
// requests one id), whose records it would join; else one made (made).
func (s *sessionWriter) respID(id string) (_ string, made bool) {
	if _, seen := s.respIDs.Get(id); id == "" || seen {
		return s.ids.message(), true
	}
	s.respIDs.Set(id, true)
	s.respIDs.End(id)
	return id, false
}

func (s *sessionWriter) modelOf(a string, v *formats.RunView) string {
	if ag := s.agents[a]; ag != nil && ag.model != "" && a != "" {
		return ag.model
	}
	return v.Info.Model
}

func (s *sessionWriter) usage(e *formats.Event, v *formats.RunView) {
	a := e.Agent
	u := usageOf(e.Usage)
	r := s.resp[a]
	if e.Response.ID == "" && (r == nil || !r.written) {
		r = s.last[a]
	}
	if r != nil && r.written && r.usage == nil && (e.Response.ID == "" || e.Response.ID == r.id || r.made && r.gen == s.gen) {
		// Usage given after its response goes on its records, with the
		// response's id where the writer made one (they are still held).
		r.usage = u
		if r.gen != s.gen {
			s.rep.Quirk(lossLateUsage)
			return
		}
		s.wrote.Add(e.Usage)
		if id := e.Response.ID; id != "" && id != r.id {
			r.id, r.made = s.respID(id)
		}
		if stop := e.Response.StopReason; stop != "" && r.stop == nil {
			r.stop = &stop
		}
		for _, m := range r.msgs {
			m.Usage, m.ID, m.StopReason = u, r.id, r.stop
		}
		return
	}
	info := e.Usage
	s.lateUsage(a)
	s.flushHeld()
	r = &sessResp{model: e.Response.Model, usage: u, info: &info}
	r.id, _ = s.respID(e.Response.ID)
	if e.Response.StopReason != "" {
		stop := e.Response.StopReason
		r.stop = &stop
	}
	if r.model == "" {
		r.model = s.modelOf(a, v)
	}
	s.resp[a] = r
}

func (s *sessionWriter) assistant(e *formats.Event, v *formats.RunView, r *sessResp, blocks []any) {
	if len(blocks) == 0 {
		return
	}
	if !r.written && r.info != nil {
		s.wrote.Add(*r.info)
	}
	r.written = true
	if e.Agent == "" {
		s.answered = true
		if e.Kind == formats.Message || e.Kind == formats.RunEnd {
			s.lastText = e.Text
		}
	}
	m := &messageOut{ID: r.id, Type: "message", Role: "assistant", Model: r.model, Content: blocks,
		StopReason: r.stop, Usage: r.usage}
	r.msgs, r.gen = append(r.msgs, m), s.gen
	s.last[e.Agent] = r
	s.record(e, v, &sessOut{Type: "assistant", Message: m})
}

func (s *sessionWriter) toolResult(e *formats.Event, v *formats.RunView) {
	c := &e.Call
	if c.ID != "" && !s.called[c.ID] && c.Status == formats.Denied {
		// A refusal whose call the source never gave (claude-stream's
		// permission_denials): the call goes first, with its name.
		s.assistant(e, v, s.response(e, v, true), []any{toolUseOut{"tool_use", c.ID, c.Name, args(c.Args)}})
	}
	delete(s.called, c.ID) // a call ends once
	out := c.Output.Text()
	isErr := c.Status != formats.Completed
	if c.Error != "" {
		if out == "" {
			out = c.Error
		} else {
			out += "\n" + c.Error
			s.rep.Quirk(formats.MergedToolErrors)
		}
	}
	var tur json.RawMessage
	if ag := spawned(c.ID, v); ag != "" {
		st := "completed"
		if isErr {
			st = "failed"
		}
		tur, _ = formats.Marshal(struct {
			Status  string `json:"status"`
			AgentID string `json:"agentId"`
			Content []any  `json:"content"`
		}{st, ag, []any{textOut{"text", out}}})
	} else {
		text := out
		if isErr {
			text = "Error: " + out
		}
		tur, _ = formats.Marshal(text)
	}
	s.record(e, v, &sessOut{Type: "user", Message: sessUserMsg{Role: "user", Content: []any{toolResultOut{c.ID, "tool_result", out, isErr}}},
		ToolUseResult: &tur})
}

// spawned is the subagent a call spawned, if any.
func spawned(call string, v *formats.RunView) string {
	if call == "" {
		return ""
	}
	for _, a := range v.Agents {
		if a.ParentCall == call {
			return a.ID
		}
	}
	return ""
}

func (s *sessionWriter) fileOf(e *formats.Event, v *formats.RunView) *sessFile {
	if a := s.agents[e.Agent]; a != nil && a.file != nil {
		return a.file
	}
	return s.mainFile(v, e)
}

// noParent: a record that starts a chain of its own (a compact boundary).
const noParent = true

// record writes a record with its envelope, chained to the last record of
// its file (or of its inline subagent). It is queued until the next
// response begins.
// the next, so that usage given after it still goes on it.
func (s *sessionWriter) record(e *formats.Event, v *formats.RunView, rec *sessOut, root ...bool) {
	if rec.Subtype != "compact_boundary" {
		s.compactedOK = false
	}
	f := s.fileOf(e, v)
	rec.UserType = "external"
	rec.Cwd = v.Info.Cwd
	rec.SessionID = s.sessionFor(v, e)
	if v.Info.AgentName == AgentName {
		rec.Version = v.Info.AgentVersion
	}
	rec.UUID = s.ids.uuid()
	rec.Timestamp = s.stamps.Next(e).UTC().Format("2006-01-02T15:04:05.000Z")
	last := &f.last
	if a := s.agents[e.Agent]; a != nil && e.Agent != "" {
		rec.IsSidechain = true
		rec.AgentID = e.Agent
		if a.inline {
			last = &a.last
		}
	}
	if len(root) == 0 {
		rec.ParentUUID = *last
	}
	id := rec.UUID
	*last = &id
	if e.Agent == "" && (rec.Type == "user" || rec.Type == "assistant") {
		s.lastType = rec.Type
	}
	s.queue = append(s.queue, queued{f, rec, e.Agent})
}

func (s *sessionWriter) flushHeld() {
	for _, q := range s.queue {
		s.fail(formats.WriteJSONLine(q.f.w, q.rec))
	}
	clear(s.queue)
	s.queue = s.queue[:0]
	s.gen++
}

// lastQueued is the main agent's last response record still queued.
func (s *sessionWriter) lastQueued() *messageOut {
	for i := len(s.queue) - 1; i >= 0; i-- {
		if q := s.queue[i]; q.agent == "" && q.rec.Type == "assistant" {
			m, _ := q.rec.Message.(*messageOut)
			return m
		}
	}
	return nil
}

// Close writes what is held and closes the files, in the order of their
// names.
func (s *sessionWriter) Close() error {
	s.flushAllText(s.view)
	s.flushHeld()
	for _, rel := range slices.Sorted(maps.Keys(s.files)) {
		if f := s.files[rel]; f.c != nil {
			s.fail(f.c.Close())
			f.c = nil
		}
	}
	return s.err
}
