package claude

import (
	"bytes"
	"cmp"
	"hash/maphash"
	"io"
	"iter"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// sessRecord is what the session reader uses of a record.
type sessRecord struct {
	raw               []byte          `json:"-"`
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype"`
	UUID              string          `json:"uuid"`
	ParentUUID        *string         `json:"parentUuid"`
	LogicalParentUUID *string         `json:"logicalParentUuid"`
	SessionID         string          `json:"sessionId"`
	Timestamp         string          `json:"timestamp"`
	Cwd               string          `json:"cwd"`
	Version           string          `json:"version"`
	IsSidechain       *bool           `json:"isSidechain"`
	IsMeta            *bool           `json:"isMeta"`
	IsCompactSummary  *bool           `json:"isCompactSummary"`
	IsAPIError        *bool           `json:"isApiErrorMessage"`
	AgentID           *string         `json:"agentId"`
	Message           *apiMessage     `json:"message"`
	ToolUseResult     toolUseResult   `json:"toolUseResult"`
	Error             json.RawMessage `json:"error"`
	DurationMS        *float64        `json:"durationMs"`
	// A refused call's result (2.1): toolDenialKind "user-rejected", and
	// permissionDecision.decision "reject".
	ToolDenialKind     string `json:"toolDenialKind"`
	PermissionDecision *struct {
		Decision string `json:"decision"`
	} `json:"permissionDecision"`
	// A synthetic API-error message's error (2.1).
	APIErrorType   json.RawMessage `json:"apiErrorType"`
	APIErrorStatus json.RawMessage `json:"apiErrorStatus"`
	// Origin says where a user record came from when no person typed it:
	// kind "task-notification" is a background task's report (2.1).
	Origin *struct {
		Kind string `json:"kind"`
	} `json:"origin"`
}

// textSessRecord is a record whose message is a string.
type textSessRecord struct {
	sessRecord
	Message string `json:"message"`
}

// blockMessage is an apiMessage whose content is read as blocks of type B
// (block, or the first pass's lightBlock) in the record's one decode,
// rather than kept as bytes and decoded again.
type blockMessage[B any] struct {
	ID         string    `json:"id"`
	Model      string    `json:"model"`
	StopReason string    `json:"stop_reason"`
	Content    []B       `json:"content"`
	Usage      *apiUsage `json:"usage"`
}

type blockSessRecord[B any] struct {
	sessRecord
	Message *blockMessage[B] `json:"message"`
}

// decodeSessBlocks decodes a line into r with its message's content as
// blocks, all at once (full), or as the first pass reads them (lightBlocks)
// for a record it does not keep. A line that is not decoded that way (a
// content that is a string, a block with a field of another type, a
// number to repair) goes the way of decodeSessRecord, the same.
func decodeSessBlocks(rep *formats.Report, line int, data []byte, r *sessRecord, full bool) *formats.LineError {
	var ok bool
	if full {
		ok = decodeWithBlocks(data, r, func(bs []block) []block { return bs })
	} else {
		ok = decodeWithBlocks(data, r, fromLight)
	}
	if !ok {
		return decodeSessRecord(rep, line, data, r)
	}
	return nil
}

// decodeWithBlocks decodes a line into r with its message's content read
// as blocks of type B, given as blocks by conv; false if it does not decode
// so.
func decodeWithBlocks[B any](data []byte, r *sessRecord, conv func([]B) []block) bool {
	var x blockSessRecord[B]
	if json.Unmarshal(data, &x) != nil {
		return false
	}
	*r = x.sessRecord
	r.Message = nil
	if m := x.Message; m != nil {
		r.Message = &apiMessage{ID: m.ID, Model: m.Model, StopReason: m.StopReason, Usage: m.Usage, bs: conv(m.Content), decoded: true}
	}
	return true
}

// decodeSessRecord decodes a line into r, with a message that is a string
// as the message's Text (see decodeRecord).
func decodeSessRecord(rep *formats.Report, line int, data []byte, r *sessRecord) *formats.LineError {
	err := rep.Unmarshal(line, data, r)
	if err == nil {
		return err
	}
	var t textSessRecord
	if rep.Unmarshal(line, data, &t) != nil {
		return err
	}
	*r = t.sessRecord
	r.Message = &apiMessage{Text: t.Message}
	return nil
}

// refused: a user record says that its call's permission was refused
// (2.1).
func (r *sessRecord) refused() bool {
	d := ""
	if r.PermissionDecision != nil {
		d = r.PermissionDecision.Decision
	}
	return rejected(r.ToolDenialKind, d)
}

// notificationIn is notification with the record's user text given.
func (r *sessRecord) notificationIn(text string) bool {
	return r.Origin != nil && r.Origin.Kind == "task-notification" ||
		r.Origin == nil && r.Message != nil && strings.HasPrefix(strings.TrimSpace(text), "<task-notification>")
}

// toolUseResult is what the reader uses of a record's toolUseResult (a
// copy of the tool's output, often large): the id of the subagent that a
// Task or Agent call ran, when it is an object that says one. Any other
// shape (a string, an array) is no error.
type toolUseResult struct{ AgentID string }

func (t *toolUseResult) UnmarshalJSON(b []byte) error {
	// Most are a copy of a tool's output that names no agent: not decoded.
	if len(b) > 0 && b[0] == '{' && bytes.Contains(b, []byte(`"agentId"`)) {
		var v struct {
			AgentID string `json:"agentId"`
		}
		if json.Unmarshal(b, &v) == nil {
			t.AgentID = v.AgentID
		}
	}
	return nil
}

func (r *sessRecord) parent() string {
	if r.ParentUUID != nil && *r.ParentUUID != "" {
		return *r.ParentUUID
	}
	if r.LogicalParentUUID != nil {
		return *r.LogicalParentUUID
	}
	return ""
}

func flag(b *bool) bool { return b != nil && *b }

// sessRec is one record of a file, as the first pass keeps it: a few
// numbers, in a block of its file's records (recList), with what only
// some records have in maps of its file (see session_index.go). Its line
// is read again, and decoded (src.cur), only while its events are given.
type sessRec struct {
	src *recFile
	// where its line is: off in src (in its spool when spooled), n bytes
	// long, of hash sum.
	off int64
	sum uint64
	// t is its time in Unix nanoseconds (fTime), or in src.times
	// (fTimeAside); neither: none.
	t int64
	// the hashes of its uuid and its parent's (idSum; 0: none).
	uuid, parent uint64
	ln           int32
	n            int32
	idx          int32 // its place among its file's records
	// facts: the strings most records repeat (recFacts), in src's table.
	facts uint32
	// xoff: where its ids (the message and calls of an assistant record,
	// the results of a user record that holds only results) begin in
	// src.ids.
	xoff  uint32
	flags recFlags
}

type recFlags uint16

const (
	fSidechain recFlags = 1 << iota
	fMeta
	fCompactSumm
	fHasMsg
	// fPrompt: a person typed it (isPrompt, but for its agent and branch);
	// fHasUse: an assistant record with a tool_use block.
	fPrompt
	fHasUse
	fSpooled
	fOn // on the conversation's chain
	// fOdd: kept raw, valid JSON of an unexpected shape.
	fOdd
	// fBroken: not valid JSON (its error says why), a cut line if it is
	// the last.
	fBroken
	fAbandoned
	fErr // its error is in src.errs
	fTime
	fTimeAside
	fAgent // an inline subagent's record, its agent in src.agents
)

func (s *sessRec) is(f recFlags) bool { return s.flags&f != 0 }

func (s *sessRec) set(f recFlags, on bool) {
	if on {
		s.flags |= f
	} else {
		s.flags &^= f
	}
}

func (s *sessRec) line() int { return int(s.ln) }

// lineErr is why its line is no record; nil for a record.
func (s *sessRec) lineErr() *formats.LineError {
	if !s.is(fErr) {
		return nil
	}
	return s.src.errs[s.idx]
}

func (s *sessRec) setErr(e *formats.LineError) {
	if s.src.errs == nil {
		s.src.errs = map[int32]*formats.LineError{}
	}
	s.src.errs[s.idx] = e
	s.flags |= fErr
}

func (s *sessRec) time() time.Time {
	switch {
	case s.is(fTime):
		return time.Unix(0, s.t).UTC()
	case s.is(fTimeAside):
		return s.src.times[s.idx]
	}
	return time.Time{}
}

// setTime keeps t in 8 bytes when it is a time in UTC that they give back
// as it is, else aside.
func (s *sessRec) setTime(t time.Time) {
	s.flags &^= fTime | fTimeAside
	switch {
	case t.IsZero():
	case time.Unix(0, t.UnixNano()).UTC() == t:
		s.t, s.flags = t.UnixNano(), s.flags|fTime
	default:
		if s.src.times == nil {
			s.src.times = map[int32]time.Time{}
		}
		s.src.times[s.idx] = t
		s.flags |= fTimeAside
	}
}

// agent is the subagent the record belongs to: its file's, or the inline
// one of a sidechain record; "" for the main agent.
func (s *sessRec) agent() string {
	if s.is(fAgent) {
		return s.src.agents[s.idx]
	}
	return s.src.agent
}

func (s *sessRec) setAgent(id string) {
	if s.src.agents == nil {
		s.src.agents = map[int32]string{}
	}
	s.src.agents[s.idx] = id
	s.flags |= fAgent
}

// msgID is the hash of an assistant record's message id (the first of its
// ids); 0 for another.
func (s *sessRec) msgID() uint64 {
	if !s.is(fHasMsg) || s.typ() != "assistant" {
		return 0
	}
	return s.ids()[0]
}

// ids are the hashes (idSum) of its message id and its calls' ids (an
// assistant record), or of its results' (a user record that holds only
// results).
func (s *sessRec) ids() []uint64 {
	end := uint32(len(s.src.ids))
	if i := int(s.idx) + 1; i < s.src.recs.n {
		end = s.src.recs.at(i).xoff
	}
	return s.src.ids[s.xoff:end]
}

func (s *sessRec) hasUUID() bool { return s.uuid != 0 }

func (s *sessRec) conversation() bool { t := s.typ(); return t == "user" || t == "assistant" }

// The strings that most records repeat, from their file's table.
func (s *sessRec) typ() string       { return s.src.fact(s.facts, 0) }
func (s *sessRec) sessionID() string { return s.src.fact(s.facts, 1) }
func (s *sessRec) cwd() string       { return s.src.fact(s.facts, 2) }
func (s *sessRec) version() string   { return s.src.fact(s.facts, 3) }
func (s *sessRec) model() string     { return s.src.fact(s.facts, 4) }
func (s *sessRec) stop() string      { return s.src.fact(s.facts, 5) }

// recFacts are a record's type, session id, cwd, version, model and stop
// reason, each as its place in its file's table of strings (recFile.sym).
type recFacts [6]uint32

// recExtra is what a few records have besides: the agentId of a sidechain
// record (else its uuid), the Task/Agent calls of an assistant record, the hash of a
// sidechain prompt's text, and a user record's image blocks.
type recExtra struct {
	agentID string
	uuid    string
	tasks   []taskCall
	textSum uint64
	images  int
}

// taskCall is a Task or Agent call: its id, the hash of its prompt ("" has
// none), and its label.
type taskCall struct {
	id, label string
	prompt    uint64
	hasPrompt bool
}

var idSeed = maphash.MakeSeed()

// idSum is the hash by which the index keeps an id (a uuid, a message id,
// a call id): 0 for "", and never 0 for another.
func idSum(v string) uint64 {
	if v == "" {
		return 0
	}
	return max(maphash.String(idSeed, v), 1)
}

// xtra is what the record has besides; nil when nothing.
func (s *sessRec) xtra() *recExtra { return s.src.extras[s.idx] }

func (s *sessRec) extra() *recExtra {
	x := s.src.extras[s.idx]
	if x == nil {
		if s.src.extras == nil {
			s.src.extras = map[int32]*recExtra{}
		}
		x = &recExtra{}
		s.src.extras[s.idx] = x
	}
	return x
}

// lightBlock is what the first pass reads of a content block: the
// texts of thinking and of tool results are skipped, not decoded, and a
// result's content is kept only where it may hold an image.
type lightBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   imageProbe      `json:"content"`
}

// imageProbe keeps a result's content only when it names an image.
type imageProbe struct{ raw json.RawMessage }

func (p *imageProbe) UnmarshalJSON(b []byte) error {
	if bytes.Contains(b, []byte(`"image"`)) {
		p.raw = append(json.RawMessage(nil), b...)
	}
	return nil
}

// light are the message's blocks as the first pass reads them: those
// decoded with the record, else lightBlocks.
func (m *apiMessage) light() []block {
	if m.decoded {
		return m.bs
	}
	return lightBlocks(m.Content)
}

// lightBlocks is blocks for the first pass: the same blocks, with what
// lightBlock reads of each.
func lightBlocks(raw json.RawMessage) []block {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return blocks(raw)
	}
	var ls []lightBlock
	if json.Unmarshal(raw, &ls) != nil {
		return blocks(raw)
	}
	return fromLight(ls)
}

// fromLight gives light blocks as blocks, with what they read.
func fromLight(ls []lightBlock) []block {
	if ls == nil {
		return nil
	}
	bs := make([]block, len(ls))
	for i, l := range ls {
		bs[i] = block{Type: l.Type, Text: l.Text, ID: l.ID, Name: l.Name, Input: l.Input, ToolUseID: l.ToolUseID, Content: l.Content.raw}
	}
	return bs
}

// lighten keeps what the first pass needs of a record read whole, and
// drops the rest.
func lighten(rec *sessRec) {
	x, in := rec.src.dec, rec.src
	f := recFacts{in.symOf(x.Type), in.symOf(x.SessionID), in.symOf(x.Cwd), in.symOf(x.Version)}
	rec.uuid, rec.parent = idSum(x.UUID), idSum(x.parent())
	rec.set(fSidechain, flag(x.IsSidechain))
	rec.set(fMeta, flag(x.IsMeta))
	rec.set(fCompactSumm, flag(x.IsCompactSummary))
	if x.AgentID != nil && *x.AgentID != "" {
		rec.extra().agentID = *x.AgentID
	} else if rec.is(fSidechain) && x.UUID != "" {
		rec.extra().uuid = x.UUID // its agent's id when it starts one
	}
	if m := x.Message; m != nil && !rec.is(fOdd) {
		rec.flags |= fHasMsg
		f[4], f[5] = in.symOf(m.Model), in.symOf(m.StopReason)
		switch x.Type {
		case "assistant":
			in.ids = append(in.ids, idSum(m.ID))
			for _, bl := range m.light() {
				if bl.Type != "tool_use" {
					continue
				}
				rec.flags |= fHasUse
				if bl.ID != "" {
					in.ids = append(in.ids, idSum(bl.ID))
				}
				if subagentTool(bl.Name) {
					var inp struct {
						Prompt string `json:"prompt"`
					}
					json.Unmarshal(bl.Input, &inp)
					rec.extra().tasks = append(rec.extra().tasks, taskCall{id: bl.ID, label: taskLabel(bl.Input),
						prompt: lineSum([]byte(inp.Prompt)), hasPrompt: inp.Prompt != ""})
				}
			}
		case "user":
			bs := m.light()
			rec.set(fPrompt, promptRecord(rec, bs))
			only := len(bs) > 0
			images := 0
			for _, bl := range bs {
				switch bl.Type {
				case "tool_result":
					if !bytes.Contains(bl.Content, []byte(`"image"`)) {
						break // no image block: not worth decoding
					}
					for _, inner := range blocks(bl.Content) {
						if inner.Type == "image" {
							images++
						}
					}
				case "image":
					images++
					only = false
				default:
					only = false
				}
			}
			if only {
				for _, bl := range bs {
					in.ids = append(in.ids, idSum(bl.ToolUseID))
				}
			}
			if images > 0 {
				rec.extra().images = images
			}
			if rec.is(fSidechain) {
				rec.extra().textSum = lineSum([]byte(textOf(bs)))
			}
		}
	}
	rec.facts = in.factsOf(f)
	rec.src.dec = nil
}

// subagent is one subagent's transcript: inline sidechain records of the
// session file, or a file of its own.
type subagent struct {
	id     string
	label  string
	call   string // the Task/Agent call that spawned it
	recs   []*sessRec
	file   string // its file, "" when inline
	src    *recFile
	inline bool
	done   bool // its events were given
	open   bool // AgentStart given, AgentEnd not yet
}

// sessionReader reads a whole session file, and its subagents' files,
// before it gives its first event: which branch of the file is the
// conversation is known only at its last record. It keeps only an index
// of the records, and reads each again when its events are given (see
// session_index.go).
type sessionReader struct {
	in     io.Reader
	opts   formats.ReadOptions
	loaded bool
	b      *sessBuild
	pos    int
	// held: the bytes of lines it holds decoded between its passes
	// (heldBudget; tests set others).
	held int
}

type sessItem struct {
	ev  *formats.Event
	err error
}

func newSessionReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &sessionReader{in: r, opts: o, held: heldBudget}
}

func (s *sessionReader) Next() (*formats.Event, error) {
	if !s.loaded {
		s.loaded = true
		if err := s.load(); err != nil {
			return nil, err
		}
	}
	b := s.b
	for s.pos >= len(b.out) {
		b.out, s.pos = b.out[:0], 0
		if !b.step() {
			return nil, io.EOF
		}
	}
	it := b.out[s.pos]
	b.out[s.pos] = sessItem{}
	s.pos++
	if e := it.ev; e != nil && e.Source.Line == nil && !e.Source.Continued {
		// A run's start and end, a subagent's end: the reader's own.
		e.Source.Made = true
	}
	return it.ev, it.err
}

// readRecords reads the records of one file. cut: its last line was cut
// in the middle, and is left out.
//
// It keeps of each record what lighten keeps, after each has seen it read
// whole, and notes in src where its line is, to be read again.
func readRecords(r io.Reader, rep *formats.Report, warnPrefix string, src *recFile, each func(*sessRec)) (cut bool, err error) {
	lines := formats.NewLineReader(r)
	defer src.done()
	recs := &src.recs
	var last time.Time
	for {
		b, err := lines.Next()
		if err == io.EOF {
			if n := recs.n; n > 0 && recs.at(n-1).is(fBroken) {
				// A last line cut in the middle: the session is being
				// written (or its writer was killed). What came before
				// stands; the run it was part of is cut.
				rec := recs.at(n - 1)
				rep.Warn(rec.line(), "the last line is cut in the middle (%s): the session is being written, or its writer stopped; it is left out, and its run is cut", rec.lineErr().Msg)
				src.dropLast()
				return true, nil
			}
			return false, nil
		}
		var le *formats.LineError
		if err != nil {
			if e, ok := err.(*formats.LineError); ok {
				le = e
			} else {
				return false, err
			}
		}
		rec := recs.add()
		rec.src, rec.idx, rec.ln, rec.xoff = src, int32(recs.n-1), int32(lines.Line()), uint32(len(src.ids))
		if le != nil {
			rec.setErr(le)
		} else {
			src.dec = &sessRecord{}
			// A record kept for the second pass is decoded whole, once;
			// another only as far as the first pass looks.
			if e := decodeSessBlocks(rep, rec.line(), b, src.dec, src.holds(rec, b)); e != nil {
				if !json.Valid(b) {
					rec.setErr(e)
					rec.flags |= fBroken
				} else {
					rec.flags |= fOdd
					src.dec = &sessRecord{Type: formats.TypeOf(b)}
					rep.Warn(rec.line(), "%sa Claude Code record with fields of unexpected types; kept as an unknown event", warnPrefix)
				}
			}
			t := time.Time{}
			if src.dec.Timestamp != "" {
				if pt, err := time.Parse(time.RFC3339Nano, src.dec.Timestamp); err == nil {
					t, last = pt, pt
				}
			}
			if t.IsZero() {
				// A record without a timestamp (last-prompt, cost-state, …)
				// takes the time of the record before it.
				t = last
			}
			rec.setTime(t)
			if rec.lineErr() == nil {
				src.keep(rec, lines.Offset(), b)
				src.hold(rec, b)
				if each != nil {
					each(rec)
				}
				lighten(rec)
			}
			src.dec = nil
		}
		if rec.lineErr() != nil && warnPrefix != "" {
			// A bad line of a subagent's file: the pipeline names the
			// session file, so the warning names this one.
			rep.Warn(0, "%sline %d: %s; skipped", warnPrefix, rec.line(), rec.lineErr().Msg)
			src.dropLast()
			continue
		}
	}
}

type agentMeta struct {
	AgentType   string `json:"agentType"`
	Description string `json:"description"`
	ToolUseID   string `json:"toolUseId"`
}

func (s *sessionReader) load() error {
	rep := s.opts.Report
	b := &sessBuild{opts: s.opts, rep: rep, agents: map[string]*subagent{}, callAgent: map[string]*subagent{},
		agentCall: map[string]string{}, lastUsage: map[uint64]*sessRec{}, lastStop: map[uint64]string{},
		calls: map[uint64]sessCall{}, msg: map[string]*pendingMsg{}}
	s.b = b
	name := s.opts.Path
	if name == "" {
		name = "the session"
	}
	b.budget = s.held
	b.src = &recFile{name: name, try: s.opts.Path, repaired: true, budget: &b.budget}
	cut, err := readRecords(s.in, rep, "", b.src, b.scanner())
	if err != nil {
		b.src.close()
		return err
	}
	b.main, b.cut = &b.src.recs, cut
	b.chain()
	b.src.ids = nil // only the chain reads them
	b.inlineAgents()
	if s.opts.Path != "" {
		b.agentFiles(s.opts.Path)
	}
	b.link()
	b.imageCount = b.images()
	return nil
}

// sessCall is what the session reader keeps of a call of the run: its
// name and agent (in the main file's table of strings), and whether its
// result came.
type sessCall struct {
	name, agent uint32
	ended       bool
}

// sessBuild turns the records into events.
type sessBuild struct {
	opts formats.ReadOptions
	rep  *formats.Report
	// quiet takes the warnings of the second pass's decoding (the first
	// pass gave them).
	quiet *formats.Report
	// budget: the bytes of lines the files may still hold decoded between
	// the passes (recFile.held).
	budget int
	main   *recList // b.src.recs
	src    *recFile // where the main records are read again
	out    []sessItem
	// next is the main record whose events step gives next; over: the
	// events after the last record are given too.
	next int
	over bool
	// imageCount: the conversation's image blocks, told at the end.
	imageCount int

	agents    map[string]*subagent
	order     []*subagent
	callAgent map[string]*subagent // spawning call → its subagent
	// agentCall: agent id → the call whose result names it (toolUseResult.agentId).
	agentCall map[string]string
	// lastUsage is the last record of a message id (idSum) that has a
	// usage, until the message's usage is given; lastStop the last stop
	// reason of one.
	lastUsage map[uint64]*sessRec
	lastStop  map[uint64]string
	// calls are the run's calls, by the hash of their id (idSum).
	calls map[uint64]sessCall
	// alone: the file is a subagent's, read without its session.
	alone bool
	// cut: the file's last line was cut in the middle.
	cut bool

	// the run
	open      bool
	prompted  bool // the run has a prompt, or a response
	session   string
	model     string
	cancelled bool
	// failed: the run's last response is an API error, whose text it is;
	// outcomeLine is the line of the record that says how the run ended.
	failed      string
	failCode    string
	outcomeLine int
	// ended: the main agent's last response ended its turn (stop_reason
	// end_turn).
	ended   bool
	endedID string
	// turnEnded: a turn_duration record said the turn ended (a response
	// after it with no prompt between is a run of its own: a run resumed
	// without its prompt); turnMS sums the durations of the run's turns.
	turnEnded   bool
	turnMS      float64
	lastTime    time.Time
	lastAsst    *sessRec // the main agent's last conversation record
	lastMsg     uint64   // its message id's hash
	lastWasAsst bool
	// localDone: the last record is a slash command's output.
	localDone bool

	// held: records of one file that gave no event yet; the next event of
	// that file carries them.
	held map[string][][]byte
	// msg is the assistant message being gathered, per agent.
	msg map[string]*pendingMsg
	// abandoned counts the records of abandoned branches.
	abandoned int
	// compactText: a compact_boundary's summary, by the boundary's uuid.
	summaries map[string]string
	summaryOf map[string]bool // uuids of summary records a boundary took
}

// chain marks the records of abandoned branches, following the
// conversation as Claude Code rebuilds it when it resumes the file: the
// chain of parents that ends at the last user or assistant record of the
// main agent,
//   - where a parent missing from the file (a compaction whose logical
//     parent Claude Code did not write) goes on from the record before it
//     in the file, for the requests before it were made and billed;
//   - with the records that a parallel call puts on sibling branches: the
//     other records of an assistant message on the chain (same
//     message.id), and the tool results of its calls, each of which
//     Claude Code chains to its own tool_use record (or to a progress
//     record of it).
//
// Other user and assistant records of the main agent are on branches left
// by a rewind or an edited prompt.
func (b *sessBuild) chain() {
	// byUUID: the main agent's records with a uuid, by it and then by
	// their place; find gives the last of a uuid (-1: none).
	var byUUID []int32
	var leaf *sessRec
	sidechains, mainRecs := 0, 0
	for r := range b.main.all() {
		if r.lineErr() != nil || r.is(fOdd) {
			continue
		}
		if r.is(fSidechain) {
			sidechains++
			continue
		}
		if r.hasUUID() {
			byUUID = append(byUUID, r.idx)
		}
		if r.conversation() && r.hasUUID() {
			leaf = r
			mainRecs++
		}
	}
	if mainRecs == 0 && sidechains > 0 {
		b.alone = true
	}
	if leaf == nil {
		return
	}
	slices.SortFunc(byUUID, func(i, j int32) int {
		if c := cmp.Compare(b.main.at(int(i)).uuid, b.main.at(int(j)).uuid); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})
	find := func(id uint64) *sessRec {
		n := sort.Search(len(byUUID), func(k int) bool { return b.main.at(int(byUUID[k])).uuid > id })
		if id == 0 || n == 0 {
			return nil
		}
		if r := b.main.at(int(byUUID[n-1])); r.uuid == id {
			return r
		}
		return nil
	}
	// before is the main agent's record before r in the file.
	before := func(r *sessRec) *sessRec {
		for i := int(r.idx) - 1; i >= 0; i-- {
			if p := b.main.at(i); p.lineErr() == nil && !p.is(fOdd) && !p.is(fSidechain) && p.hasUUID() {
				return p
			}
		}
		return nil
	}
	for r := leaf; r != nil && !r.is(fOn); {
		r.flags |= fOn
		p := r.parent
		next := find(p)
		if next == nil && p != 0 {
			next = before(r)
		}
		r = next
	}
	// The sibling branches of parallel calls: the message ids and call ids
	// of the records on the chain that a record off it has.
	wanted := map[uint64]bool{}
	for r := range b.main.all() {
		if r.is(fOn) || r.lineErr() != nil || r.is(fOdd) || r.is(fSidechain) || !r.hasUUID() || !r.is(fHasMsg) {
			continue
		}
		switch r.typ() {
		case "assistant":
			wanted[r.msgID()] = true
		case "user":
			for _, id := range r.ids() {
				wanted[id] = true
			}
		}
	}
	msgs, calls := map[uint64]bool{}, map[uint64]bool{}
	note := func(r *sessRec) {
		if len(wanted) == 0 || r.typ() != "assistant" || !r.is(fHasMsg) {
			return
		}
		if id := r.msgID(); id != 0 && wanted[id] {
			msgs[id] = true
		}
		for _, id := range r.ids()[1:] {
			if wanted[id] {
				calls[id] = true
			}
		}
	}
	for r := range b.main.all() {
		if r.is(fOn) {
			note(r)
		}
	}
	for grew := true; grew; {
		grew = false
		for r := range b.main.all() {
			if r.is(fOn) || r.lineErr() != nil || r.is(fOdd) || r.is(fSidechain) || !r.hasUUID() {
				continue
			}
			if p := find(r.parent); p == nil || !p.is(fOn) {
				continue
			}
			// A progress record between a call and the next block of its
			// message is on the way to it.
			if !r.conversation() || r.is(fHasMsg) && (r.typ() == "assistant" && r.msgID() != 0 && msgs[r.msgID()] ||
				r.typ() == "user" && answers(r, calls)) {
				r.flags |= fOn
				note(r)
				grew = true
			}
		}
	}
	for r := range b.main.all() {
		if r.lineErr() == nil && !r.is(fOdd) && !r.is(fSidechain) && r.conversation() && r.hasUUID() && !r.is(fOn) {
			r.flags |= fAbandoned
			b.abandoned++
		}
	}
	if b.abandoned > 0 {
		b.rep.Warn(0, "%d records are on abandoned branches of the session (a rewind or an edited prompt): only the conversation that ends at the last record is converted; they are lost, except to claude-session, which copies them", b.abandoned)
	}
}

// answers: a user record holds only results of the calls given.
func answers(r *sessRec, calls map[uint64]bool) bool {
	ids := r.ids()
	if len(ids) == 0 {
		return false
	}
	for _, id := range ids {
		if !calls[id] {
			return false
		}
	}
	return true
}

// scanner notes, over every record of a file as the first pass reads
// it, what later records say of earlier ones: the usage and stop reason a
// message id ends with, and the agents that results name.
func (b *sessBuild) scanner() func(*sessRec) {
	if b.summaries == nil {
		b.summaries, b.summaryOf = map[string]string{}, map[string]bool{}
	}
	boundary := map[string]bool{}
	return func(r *sessRec) {
		if r.lineErr() != nil || r.is(fOdd) {
			return
		}
		if m := r.src.dec.Message; r.src.dec.Type == "assistant" && m != nil && m.ID != "" {
			if m.Usage != nil {
				b.lastUsage[idSum(m.ID)] = r
			}
			if m.StopReason != "" {
				b.lastStop[idSum(m.ID)] = m.StopReason
			}
		}
		if r.src.dec.Type == "system" && r.src.dec.Subtype == "compact_boundary" && r.src.dec.UUID != "" {
			boundary[r.src.dec.UUID] = true
		}
		if r.src.dec.Type == "user" && flag(r.src.dec.IsCompactSummary) && boundary[r.src.dec.parent()] && r.src.dec.Message != nil {
			b.summaries[r.src.dec.parent()] = textOf(r.src.dec.Message.blocks())
			b.summaryOf[r.src.dec.UUID] = true
		}
		if id := r.src.dec.ToolUseResult.AgentID; r.src.dec.Type == "user" && r.src.dec.Message != nil && id != "" {
			for _, bl := range r.src.dec.Message.blocks() {
				if bl.Type == "tool_result" && bl.ToolUseID != "" {
					b.agentCall[id] = bl.ToolUseID
					break
				}
			}
		}
	}
}

// inlineAgents groups the sidechain records of the session file (older
// versions) by agent: its agentId, else its parent's agent, else the
// chain it starts.
func (b *sessBuild) inlineAgents() {
	agentOf := map[uint64]string{}
	for r := range b.main.all() {
		if r.lineErr() != nil || r.is(fOdd) || !r.is(fSidechain) {
			continue
		}
		id := ""
		switch {
		case r.xtra() != nil && r.xtra().agentID != "":
			id = r.xtra().agentID
		case agentOf[r.parent] != "":
			id = agentOf[r.parent]
		case r.hasUUID():
			id = "sidechain-" + r.xtra().uuid
		default:
			id = "sidechain"
		}
		if r.hasUUID() {
			agentOf[r.uuid] = id
		}
		r.setAgent(id)
		a := b.agents[id]
		if a == nil {
			a = &subagent{id: id, inline: true}
			b.agents[id] = a
			b.order = append(b.order, a)
		}
		a.recs = append(a.recs, r)
	}
}

// agentFiles reads the subagents' files beside the session file:
// <dir>/<session-id>/subagents/agent-<id>.jsonl, with agent-<id>.meta.json.
func (b *sessBuild) agentFiles(p string) {
	if owner := sessionOwner(p); owner != "" {
		b.alone = true
		if _, err := os.Stat(owner); err != nil {
			b.rep.Warn(0, "%s is a subagent's file whose session file %s is missing; converted on its own, under a run of its own", p, owner)
		}
		return
	}
	dir := filepath.Join(strings.TrimSuffix(p, filepath.Ext(p)), "subagents")
	names, _ := filepath.Glob(filepath.Join(dir, "agent-*.jsonl"))
	sort.Strings(names)
	// 2.0 versions wrote agent-<id>.jsonl beside the session file: those
	// of the agents its results name.
	var flat []string
	for id := range b.agentCall {
		if safeName(id) == "" {
			continue
		}
		f := filepath.Join(filepath.Dir(p), "agent-"+id+".jsonl")
		if _, err := os.Stat(filepath.Join(dir, "agent-"+id+".jsonl")); err == nil {
			continue
		}
		if _, err := os.Stat(f); err == nil {
			flat = append(flat, f)
		}
	}
	sort.Strings(flat)
	names = append(names, flat...)
	for _, name := range names {
		m := subagentFile.FindStringSubmatch(filepath.Base(name))
		if m == nil {
			continue
		}
		id := m[1]
		f, err := formats.OpenFound(name)
		if err != nil {
			b.rep.Warn(0, "cannot read the subagent's file %s (%v); its events are left out", name, err)
			continue
		}
		src := &recFile{name: name, path: name, direct: true, budget: &b.budget}
		_, err = readRecords(f, b.rep, name+": ", src, b.scanner())
		f.Close()
		if err != nil {
			b.rep.Warn(0, "reading the subagent's file %s failed (%v); the records before are kept", name, err)
		}
		a := b.agents[id]
		if a == nil {
			a = &subagent{id: id}
			b.agents[id] = a
			b.order = append(b.order, a)
		} else if a.inline {
			// The same agent inline and in a file: keep both, apart.
			a = &subagent{id: id + "-file"}
			b.agents[a.id] = a
			b.order = append(b.order, a)
		}
		a.file, a.src = name, src
		src.agent, src.ids = a.id, nil // only the main file's chain reads ids
		a.recs = slices.Collect(src.recs.all())
		var meta agentMeta
		if mb, err := formats.ReadFound(strings.TrimSuffix(name, ".jsonl")+".meta.json", 1<<20); err == nil {
			if json.Unmarshal(mb, &meta) != nil {
				b.rep.Warn(0, "%s.meta.json is not the JSON object expected; the subagent is linked by its results instead", strings.TrimSuffix(name, ".jsonl"))
			}
		}
		a.label = meta.AgentType
		if a.label == "" {
			a.label = meta.Description
		}
		a.call = meta.ToolUseID
	}
}

// link finds each subagent's spawning call: its meta.json's toolUseId,
// else the call whose result names the agent, else, for an inline
// sidechain, the Task/Agent call whose prompt is its first prompt.
func (b *sessBuild) link() {
	prompts := map[uint64]string{} // hash of a Task prompt → call id
	var taskCalls []string
	label := map[string]string{}
	callLine := map[string]int{}
	all := []iter.Seq[*sessRec]{b.main.all()}
	for _, a := range b.order {
		if !a.inline {
			all = append(all, slices.Values(a.recs))
		}
	}
	for k, recs := range all {
		for r := range recs {
			if r.lineErr() != nil || r.is(fOdd) || r.typ() != "assistant" || !r.is(fHasMsg) || r.xtra() == nil {
				continue
			}
			for _, t := range r.xtra().tasks {
				if t.hasPrompt {
					prompts[t.prompt] = t.id
				}
				taskCalls = append(taskCalls, t.id)
				if k == 0 {
					callLine[t.id] = r.line()
				} else {
					callLine[t.id] = math.MaxInt // a subagent file's lines are not the session's
				}
				label[t.id] = t.label
			}
		}
	}
	used := map[string]bool{}
	for _, a := range b.order {
		if a.call == "" {
			a.call = b.agentCall[a.id]
		}
		if a.call == "" && a.inline {
			for _, r := range a.recs {
				if r.typ() == "user" && r.is(fHasMsg) {
					if c, ok := prompts[r.extra().textSum]; ok {
						a.call = c
					}
					break
				}
			}
		}
		if a.call == "" && a.inline && len(a.recs) > 0 {
			// Older versions name nothing: the latest Task/Agent call
			// before the sidechain that no agent has yet.
			for i := len(taskCalls) - 1; i >= 0; i-- {
				c := taskCalls[i]
				if b.callAgent[c] == nil && callLine[c] < a.recs[0].line() {
					a.call = c
					break
				}
			}
		}
		if a.call != "" && b.callAgent[a.call] == nil {
			b.callAgent[a.call] = a
			used[a.call] = true
		} else if a.call != "" {
			a.call = "" // two agents for one call: the second stands alone
		}
		if a.label == "" {
			a.label = label[a.call]
		}
	}
	named := 0
	for id := range b.agentCall {
		if b.agents[id] == nil {
			named++
		}
	}
	if named > 0 {
		where := "they are not in the input (read from standard input, a session file's subagents cannot be found)"
		if b.opts.Path != "" {
			where = "their files are not in " + filepath.Join(strings.TrimSuffix(b.opts.Path, ".jsonl"), "subagents")
		}
		b.rep.Warn(0, "the session names %d subagent(s) whose records are missing: %s; their calls' results are kept", named, where)
	}
}

// textOf is the text of blocks: their text blocks' texts, one a line.
func textOf(bs []block) string {
	var parts []string
	for _, bl := range bs {
		if bl.Type == "text" {
			parts = append(parts, bl.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// emit queues an event of a record of agent's file. The first event of a
// record carries its line, and the lines held before it.
func (b *sessBuild) emit(r *sessRec, ev *formats.Event) {
	ev.Source.Dialect = b.opts.Dialect
	if r != nil {
		if ev.Source.Type == "" {
			ev.Source.Type = recType(r)
		}
		if ev.Source.LineNo == 0 {
			ev.Source.LineNo = r.line()
		}
		if ev.Time.IsZero() {
			ev.Time = r.time()
		}
	}
	if ev.Time.IsZero() {
		// An event of no record of its own (a subagent's end, held
		// records) happens where the file is.
		ev.Time = b.lastTime
	}
	if !ev.Time.IsZero() {
		b.lastTime = ev.Time
	}
	b.out = append(b.out, sessItem{ev: ev})
}

// carry gives the event the record's line (and the held lines of its
// file), once; later events of the record are Continued.
func (b *sessBuild) carry(r *sessRec, ev *formats.Event, carried *bool) {
	if !*carried {
		*carried = true
		if line := b.takeHeld(b.fileOf(r.agent())); line != nil {
			ev.Source.Line = append(append(line, '\n'), r.src.dec.raw...)
		} else {
			ev.Source.Line = r.src.dec.raw // the record's own copy: nothing changes it
		}
	} else {
		ev.Source.Continued = true
	}
	b.emit(r, ev)
}

// hold keeps a record that gave no event for the next event of its file.
func (b *sessBuild) hold(r *sessRec) {
	file := b.fileOf(r.agent())
	if b.held == nil {
		b.held = map[string][][]byte{}
	}
	b.held[file] = append(b.held[file], r.src.dec.raw)
}

// fileOf is the file whose records an agent's events carry: its own, or
// the main one for a subagent whose records are inline there.
func (b *sessBuild) fileOf(agent string) string {
	if a := b.agents[agent]; a != nil && a.inline {
		return ""
	}
	return agent
}

// takeHeld returns the records held for a file, joined, and forgets them;
// nil when none are.
func (b *sessBuild) takeHeld(file string) []byte {
	h := b.held[file]
	if len(h) == 0 {
		return nil
	}
	delete(b.held, file)
	return bytes.Join(h, []byte{'\n'})
}

// emitHeld gives the records still held for a file as an unknown event.
func (b *sessBuild) emitHeld(file string) {
	if line := b.takeHeld(file); line != nil {
		b.emit(nil, &formats.Event{Kind: formats.Raw, Agent: file, Source: formats.Source{Type: "held", Line: line}})
	}
}

func recType(r *sessRec) string {
	t := r.src.dec.Type
	if t == "system" && r.src.dec.Subtype != "" {
		t += "/" + r.src.dec.Subtype
	}
	return t
}

// isPrompt: a record of what a person typed: a user record of the main
// agent with text, that is neither meta, a compaction's summary, a
// command's output, nor an interruption.
func isPrompt(r *sessRec) bool {
	return r.is(fPrompt) && r.agent() == "" && !r.is(fAbandoned)
}

// promptRecord is isPrompt of a record read whole, but for its agent and
// its branch, which are known later.
// bs are the blocks of its content.
func promptRecord(r *sessRec, bs []block) bool {
	if r.lineErr() != nil || r.is(fOdd) || r.src.dec.Type != "user" || flag(r.src.dec.IsSidechain) ||
		flag(r.src.dec.IsMeta) || flag(r.src.dec.IsCompactSummary) || r.src.dec.Message == nil || r.src.dec.notificationIn(textOf(bs)) {
		return false
	}
	text, hasText := "", false
	for _, bl := range bs {
		switch bl.Type {
		case "tool_result":
			return false
		case "text", "image":
			hasText = true
			text += bl.Text
		}
	}
	t := strings.TrimSpace(text)
	return hasText && !strings.HasPrefix(t, "<local-command-") && !interruption(t)
}

func interruption(t string) bool { return strings.HasPrefix(t, "[Request interrupted by user") }

// firstFacts takes the session id, cwd and version a record has that info
// does not have yet.
func firstFacts(info *formats.RunInfo, r *sessRec) {
	if r.lineErr() != nil || r.is(fOdd) {
		return
	}
	if info.SessionID == "" {
		info.SessionID = r.sessionID()
	}
	if info.Cwd == "" {
		info.Cwd = r.cwd()
	}
	if info.AgentVersion == "" {
		info.AgentVersion = r.version()
	}
}

func (b *sessBuild) startRun(at int) {
	info := formats.RunInfo{Provider: Provider, AgentName: AgentName}
	prompted := false
	for i := at; i < b.main.n; i++ {
		r := b.main.at(i)
		if r.lineErr() != nil || r.is(fOdd) || r.is(fSidechain) || r.is(fAbandoned) {
			continue
		}
		if isPrompt(r) {
			if prompted {
				break // the next run's
			}
			prompted = true
		}
		// Each fact from the first record that has it: 2.0 and 2.1 begin
		// with bookkeeping (queue-operation, …) that has a session id and
		// no cwd or version.
		firstFacts(&info, r)
		if m := r.model(); r.typ() == "assistant" && r.is(fHasMsg) && m != "" && m != "<synthetic>" {
			info.Model = m
			break
		}
	}
	if b.alone {
		for _, a := range b.order {
			for _, r := range a.recs {
				firstFacts(&info, r)
			}
		}
	}
	b.open, b.prompted, b.cancelled, b.failed, b.failCode, b.ended = true, false, false, "", "", false
	b.turnEnded, b.turnMS = false, 0
	b.session, b.model = info.SessionID, info.Model
	b.lastAsst, b.lastWasAsst, b.localDone = nil, false, false
	clear(b.calls)
	var t time.Time
	if at < b.main.n {
		t = b.main.at(at).time()
	}
	b.emit(nil, &formats.Event{Kind: formats.RunStart, Run: info, Time: t, Source: formats.Source{Type: "run"}})
}

// endRun closes the run: completed (or cancelled by an interruption)
// when a new prompt comes, or at the end of a session whose last response
// ended its turn; a session file that stops in the middle of a turn is
// left open, for the pipeline to close as cut.
func (b *sessBuild) endRun(final bool) {
	b.flushAll()
	if final && !b.finished() {
		// Whatever is held goes out, so that nothing is dropped.
		b.flushHeld()
		b.open = false
		return
	}
	for _, a := range b.order {
		if a.open {
			b.endAgent(a, formats.Completed, "")
		}
	}
	if final {
		// Held records of subagents' files go out before the end.
		for _, file := range slices.Sorted(maps.Keys(b.held)) {
			if file != "" {
				b.emitHeld(file)
			}
		}
	}
	st := formats.Completed
	ev := &formats.Event{Kind: formats.RunEnd, Status: st, Time: b.lastTime,
		Run: formats.RunInfo{SessionID: b.session, Model: b.model}, Source: formats.Source{Type: "run"}}
	switch {
	case b.cancelled:
		ev.Status = formats.Cancelled
	case b.failed != "":
		ev.Status, ev.Text, ev.Code = formats.Failed, b.failed, b.failCode
	}
	if b.turnMS > 0 {
		ev.Duration = msDuration(b.turnMS)
	}
	if ev.Status != formats.Completed {
		// The record that said so went out with its notice.
		ev.Source.Continued, ev.Source.LineNo = true, b.outcomeLine
	}
	if final {
		if line := b.takeHeld(""); line != nil {
			ev.Source.Line = line
		}
	}
	b.emit(nil, ev)
	if final {
		b.flushHeld()
	}
	b.open = false
}

// finished: Claude Code said the turn ended (turn_duration, an
// interruption, an API error), even with a call left without its result;
// or every call has its result and the last record is a response that
// calls nothing more. Session files carry no stop reason on most records
// (stop_reason is null but on a few), so a missing one says nothing. Only a
// call left without its result, or a last line cut in the middle, leaves
// the run cut.
func (b *sessBuild) finished() bool {
	if b.cut {
		return false
	}
	if b.cancelled || b.failed != "" || b.turnEnded {
		return true
	}
	for _, c := range b.calls {
		if !c.ended {
			return false
		}
	}
	if b.localDone {
		return true
	}
	if b.lastAsst == nil || !b.lastWasAsst {
		return false
	}
	a := b.lastAsst
	stop := b.lastStop[b.lastMsg]
	if stop == "" {
		stop = a.stop()
	}
	return stop != "tool_use" && !a.is(fHasUse)
}

// flushHeld gives the records still held as an unknown event each file.
func (b *sessBuild) flushHeld() {
	for _, file := range slices.Sorted(maps.Keys(b.held)) {
		b.emitHeld(file)
	}
}

// step gives the events of the next main record, or those after the last
// one; false when all are given.
func (b *sessBuild) step() bool {
	if b.next < b.main.n {
		i := b.next
		b.next++
		r := b.main.at(i)
		// Nothing looks back at a main record given by its place (startRun
		// looks ahead): the index's blocks go, so that it shrinks as the
		// second pass goes on.
		defer b.main.free(i + 1)
		if r.lineErr() != nil {
			b.flushAll()
			b.out = append(b.out, sessItem{err: r.lineErr()})
			return true
		}
		if r.agent() != "" {
			if !b.open {
				b.startRun(i)
			}
			b.process(r)
			return true
		}
		switch {
		case !b.open:
			b.startRun(i)
		case isPrompt(r) && b.prompted:
			b.endRun(false)
			b.startRun(i)
		case b.turnEnded && r.typ() == "assistant" && r.is(fHasMsg) && !r.is(fAbandoned):
			b.endRun(false)
			b.startRun(i)
		case !r.is(fAbandoned) && r.sessionID() != "" && b.session != "" && r.sessionID() != b.session && r.conversation():
			b.endRun(false)
			b.startRun(i)
		}
		b.process(r)
		return true
	}
	if b.over {
		return false
	}
	b.emitEnd()
	b.over = true
	if n := b.imageCount; n > 0 {
		b.rep.Warn(0, "%d image blocks of the session have no place in the event model: only claude-session output keeps them", n)
	}
	b.src.close()
	return true
}

// stop gives an error that ends the reading: a record that cannot be
// read again.
func (b *sessBuild) stop(err error) {
	b.flushAll()
	b.out = append(b.out, sessItem{err: err})
	b.next, b.over = b.main.n, true
	b.src.close()
	for _, a := range b.order {
		if a.src != nil {
			a.src.close()
		}
	}
}

// process reads a record again, gives its events, and forgets it.
func (b *sessBuild) process(r *sessRec) {
	if b.over {
		return
	}
	was := r.src.dec
	if held := r.src.take(r); held != nil {
		r.src.dec = held
		b.record(r)
		r.src.dec = was
		return
	}
	raw, err := r.src.read(r)
	if err != nil {
		b.stop(err)
		return
	}
	r.src.dec = &sessRecord{}
	if r.is(fOdd) {
		r.src.dec.Type = formats.TypeOf(raw)
	} else {
		// Read as the first pass read it; its warnings were given then.
		if b.quiet == nil {
			b.quiet = formats.NewReport(io.Discard)
		}
		decodeSessBlocks(b.quiet, r.line(), raw, r.src.dec, true)
	}
	r.src.dec.raw = raw
	b.record(r)
	r.src.dec = was
}

// emitEnd gives the events after the last main record.
func (b *sessBuild) emitEnd() {
	if !b.open && (len(b.order) > 0 || len(b.held) > 0) {
		b.startRun(b.main.n)
	}
	// Subagents whose spawning call never ended, or that no call spawned.
	for _, a := range b.order {
		if !a.done && !a.inline {
			b.agentEvents(a)
		}
	}
	if b.open {
		b.endRun(true)
	}
}

// record gives the events of one record.
func (b *sessBuild) record(r *sessRec) {
	carried := false
	if r.is(fOdd) {
		b.flushMsg(r.agent())
		b.carry(r, &formats.Event{Kind: formats.Raw, Agent: r.agent()}, &carried)
		return
	}
	if r.is(fAbandoned) || b.summaryOf[r.src.dec.UUID] {
		b.hold(r)
		return
	}
	agent := r.agent()
	if a := b.agents[agent]; a != nil && !a.open {
		b.startAgent(a)
	}
	switch r.src.dec.Type {
	case "assistant":
		b.assistant(r, agent, &carried)
	case "user":
		b.user(r, agent, &carried)
	case "system":
		if r.src.dec.Subtype == "turn_duration" && agent == "" {
			b.flushMsg(agent)
			b.turnEnded = true
			if r.src.dec.DurationMS != nil && *r.src.dec.DurationMS > 0 {
				b.turnMS += *r.src.dec.DurationMS
			}
			b.carry(r, &formats.Event{Kind: formats.TurnEnd, Status: formats.Completed}, &carried)
			return
		}
		if r.src.dec.Subtype == "compact_boundary" {
			b.flushMsg(agent)
			b.carry(r, &formats.Event{Kind: formats.Compaction, Agent: agent, Text: b.summaries[r.src.dec.UUID]}, &carried)
			return
		}
		b.flushMsg(agent)
		b.carry(r, &formats.Event{Kind: formats.Raw, Agent: agent}, &carried)
	default:
		if r.src.dec.Type == "" {
			b.rep.Warn(r.line(), "a record without a \"type\"; kept as an unknown event")
		}
		// Records between the blocks of one message (a progress record)
		// do not end it.
		b.carry(r, &formats.Event{Kind: formats.Raw, Agent: agent}, &carried)
	}
}

func (b *sessBuild) startAgent(a *subagent) {
	a.open = true
	info := formats.AgentInfo{Label: a.label, ParentCall: a.call}
	if c, ok := b.calls[idSum(a.call)]; ok {
		info.Parent = b.src.sym(c.agent)
	}
	for _, r := range a.recs {
		if m := r.model(); r.typ() == "assistant" && r.is(fHasMsg) && m != "" && m != "<synthetic>" {
			info.Model = m
			break
		}
	}
	typ := "subagents"
	if a.inline {
		typ = "isSidechain"
	}
	var t time.Time
	if len(a.recs) > 0 {
		t = a.recs[0].time()
	}
	b.emit(nil, &formats.Event{Kind: formats.AgentStart, Agent: a.id, AgentInfo: info, Time: t, Source: formats.Source{Type: typ}})
}

func (b *sessBuild) endAgent(a *subagent, st formats.Status, report string) {
	if !a.open {
		return
	}
	b.flushMsg(a.id)
	if !a.inline {
		b.emitHeld(a.id)
	}
	a.open = false
	b.emit(nil, &formats.Event{Kind: formats.AgentEnd, Agent: a.id, Status: st, Text: report, Source: formats.Source{Type: "subagent"}})
}

// agentEvents gives a subagent file's events, where its spawning call's
// result comes (or at the end of the session).
func (b *sessBuild) agentEvents(a *subagent) {
	if a.done {
		return
	}
	a.done = true
	if !a.open {
		b.startAgent(a)
	}
	for _, r := range a.recs {
		b.process(r)
	}
	if a.src != nil {
		a.src.close()
	}
}

func (b *sessBuild) flushAll() {
	for _, a := range slices.Sorted(maps.Keys(b.msg)) {
		b.flushMsg(a)
	}
}

// flushMsg ends the message an agent is giving: its text and thinking are
// one Message event, carrying the records it was gathered from.
func (b *sessBuild) flushMsg(agent string) {
	m := b.msg[agent]
	if m == nil {
		return
	}
	delete(b.msg, agent)
	b.flushText(agent, m)
}

func (b *sessBuild) flushText(agent string, m *pendingMsg) {
	if m.text.Len() == 0 && m.thinking.Len() == 0 {
		return
	}
	ev := &formats.Event{Kind: formats.Message, Agent: agent, Text: m.text.String(), Thinking: m.thinking.String(), Thoughts: m.thoughts,
		Time: m.time, Source: formats.Source{Type: "assistant", LineNo: m.line}}
	if line := b.takeHeld(b.fileOf(agent)); line != nil {
		ev.Source.Line = line
	} else {
		ev.Source.Continued = true
	}
	b.emit(nil, ev)
	m.text.Reset()
	m.thinking.Reset()
	m.thoughts = nil
}

func (b *sessBuild) assistant(r *sessRec, agent string, carried *bool) {
	m := r.src.dec.Message
	if m == nil {
		b.flushMsg(agent)
		b.rep.Warn(r.line(), "an assistant record without \"message\"; kept as an unknown event")
		b.carry(r, &formats.Event{Kind: formats.Raw, Agent: agent}, carried)
		return
	}
	apiError := flag(r.src.dec.IsAPIError) || (len(r.src.dec.Error) > 0 && string(r.src.dec.Error) != "null") || syntheticError(m)
	code := func(text string) string {
		if c := errorCode(r.src.dec.APIErrorType, r.src.dec.APIErrorStatus); c != "" {
			return c
		}
		return apiErrorCode(text, r.src.dec.Error)
	}
	if agent == "" || b.alone {
		b.prompted = true
		b.lastAsst, b.lastMsg, b.lastWasAsst, b.localDone = r, idSum(m.ID), true, false
		stop := m.StopReason
		if s := b.lastStop[idSum(m.ID)]; s != "" && m.ID != "" {
			stop = s
		}
		b.ended, b.endedID = stop == "end_turn" && !apiError, m.ID
		b.turnEnded = false
		b.failed, b.failCode = "", ""
		if apiError {
			b.failed = strings.TrimSpace(textOf(m.blocks()))
			if b.failed == "" {
				b.failed = "the API request failed"
			}
			b.failCode = code(b.failed)
			b.outcomeLine = r.line()
		}
	}
	if p := b.msg[agent]; p != nil && (m.ID == "" || m.ID != p.id) {
		b.flushMsg(agent)
	}
	p := b.msg[agent]
	if p == nil {
		p = &pendingMsg{active: true, id: m.ID, agent: agent, line: r.line(), time: r.time()}
		b.msg[agent] = p
	}
	var evs []*formats.Event
	// Claude Code's own message (an API error, …) is no model call.
	// A message's usage is given once: its entry in lastUsage goes then
	// (a message whose records have none has no entry).
	id := idSum(m.ID)
	last, pending := b.lastUsage[id]
	if (m.ID == "" || pending) && m.Model != "<synthetic>" {
		u := m.Usage
		if pending && last != r {
			// The usage the message ends with, of a later record.
			var err error
			if u, err = last.src.usage(last); err != nil {
				b.stop(err)
				return
			}
		}
		if u != nil && !u.info().Empty() {
			delete(b.lastUsage, id)
			resp := m.response()
			if s := b.lastStop[id]; s != "" {
				resp.StopReason = s
			}
			evs = append(evs, &formats.Event{Kind: formats.Usage, Agent: agent, Usage: u.info(), Response: resp})
		}
	}
	if agent == "" && m.Model != "" && m.Model != "<synthetic>" && m.Model != b.model {
		if b.model != "" {
			evs = append(evs, &formats.Event{Kind: formats.ModelChange, Run: formats.RunInfo{Model: m.Model}})
		}
		b.model = m.Model
	}
	for _, bl := range m.blocks() {
		switch {
		case bl.Type == "text" && apiError:
			evs = append(evs, &formats.Event{Kind: formats.Notice, Agent: agent, Severity: formats.Error, Text: bl.Text, Code: code(bl.Text)})
		case bl.Type == "text":
			p.text.Join(bl.Text)
		case bl.Type == "thinking":
			p.think(&bl)
		case bl.Type == "tool_use" || bl.Type == "server_tool_use":
			evs = append(evs, b.callEvents(agent, bl)...)
		case strings.HasSuffix(bl.Type, "_tool_result") && bl.ToolUseID != "":
			evs = append(evs, b.resultEvent(agent, bl))
		}
	}
	if len(evs) == 0 {
		// The record's text waits for the rest of its message.
		b.hold(r)
		return
	}
	// Text gathered before a call goes first, as one message.
	if hasKind(evs, formats.ToolCall, formats.ToolResult, formats.Notice) {
		b.hold(r)
		b.flushText(agent, p)
		for _, ev := range evs {
			b.carryHeld(r, agent, ev, carried)
		}
		return
	}
	for _, ev := range evs {
		b.carry(r, ev, carried)
	}
}

// carryHeld: an event of a record already held (its text went first).
func (b *sessBuild) carryHeld(r *sessRec, agent string, ev *formats.Event, carried *bool) {
	var line []byte
	if !*carried {
		line = b.takeHeld(b.fileOf(agent))
	}
	if line != nil {
		ev.Source.Line = line
	} else {
		ev.Source.Continued = true
	}
	*carried = true
	b.emit(r, ev)
}

func hasKind(evs []*formats.Event, kinds ...formats.Kind) bool {
	for _, e := range evs {
		for _, k := range kinds {
			if e.Kind == k {
				return true
			}
		}
	}
	return false
}

func (b *sessBuild) callEvents(agent string, bl block) []*formats.Event {
	b.calls[idSum(bl.ID)] = sessCall{name: b.src.symOf(bl.Name), agent: b.src.symOf(agent)}
	evs := []*formats.Event{{Kind: formats.ToolCall, Agent: agent, Call: formats.Call{ID: bl.ID, Name: bl.Name, Args: bl.Input}}}
	if bl.Name == "TodoWrite" {
		var in struct {
			Todos []struct {
				Content string `json:"content"`
				Status  string `json:"status"`
			} `json:"todos"`
		}
		if json.Unmarshal(bl.Input, &in) == nil && in.Todos != nil {
			todos := make([]formats.Todo, len(in.Todos))
			for i, t := range in.Todos {
				todos[i] = formats.Todo{Content: t.Content, Status: t.Status}
			}
			evs = append(evs, &formats.Event{Kind: formats.Todos, Agent: agent, Todos: todos})
		}
	}
	return evs
}

func (b *sessBuild) resultEvent(agent string, bl block) *formats.Event {
	failed := bl.IsError != nil && *bl.IsError
	out := ""
	res := formats.Call{ID: bl.ToolUseID, Status: formats.Completed}
	switch {
	case failed:
		// A failed call's text says whether it was refused.
		out = resultText(bl.Content)
	case b.opts.Figures:
	default:
		res.Output = resultOutput(bl.Content)
	}
	if failed {
		res.Status, res.Output, res.Error = formats.Failed, formats.TextOutput(""), out
		if isRefusal(out) {
			res.Status = formats.Denied
		}
	}
	if c, ok := b.calls[idSum(bl.ToolUseID)]; ok {
		res.Name = b.src.sym(c.name)
		c.ended = true
		b.calls[idSum(bl.ToolUseID)] = c
	}
	return &formats.Event{Kind: formats.ToolResult, Agent: agent, Call: res}
}

func (b *sessBuild) user(r *sessRec, agent string, carried *bool) {
	b.flushMsg(agent)
	m := r.src.dec.Message
	if m == nil {
		b.carry(r, &formats.Event{Kind: formats.Raw, Agent: agent}, carried)
		return
	}
	if agent == "" || b.alone {
		b.lastWasAsst, b.ended, b.failed, b.turnEnded, b.localDone = false, false, "", false, false
	}
	if flag(r.src.dec.IsCompactSummary) {
		b.carry(r, &formats.Event{Kind: formats.Compaction, Agent: agent, Text: textOf(m.blocks())}, carried)
		return
	}
	if flag(r.src.dec.IsMeta) {
		b.carry(r, &formats.Event{Kind: formats.Raw, Agent: agent, Source: formats.Source{Type: "user/isMeta"}}, carried)
		return
	}
	bs := m.blocks()
	text := strings.TrimSpace(textOf(bs))
	switch {
	case agent == "" && interruption(text):
		b.cancelled, b.outcomeLine = true, r.line()
		b.lastWasAsst = true // the turn ended there
		b.carry(r, &formats.Event{Kind: formats.Notice, Severity: formats.Warning, Text: text}, carried)
		return
	case r.src.dec.notificationIn(text):
		// A background task's report, given to the model: the run goes on.
		b.carry(r, &formats.Event{Kind: formats.Notice, Agent: agent, Severity: formats.Info, Text: text}, carried)
		return
	case agent == "" && strings.HasPrefix(text, "<local-command-"):
		// A slash command's output: the command ran, Claude Code's turn
		// has nothing more to do.
		b.localDone = true
		b.carry(r, &formats.Event{Kind: formats.Raw, Source: formats.Source{Type: "user/local-command"}}, carried)
		return
	}
	gave := false
	for _, bl := range bs {
		switch bl.Type {
		case "text":
			if agent == "" {
				b.prompted = true
			}
			b.carry(r, &formats.Event{Kind: formats.UserMessage, Agent: agent, Text: bl.Text}, carried)
			gave = true
		case "tool_result":
			ev := b.resultEvent(agent, bl)
			if ev.Call.Status == formats.Failed && r.src.dec.refused() {
				ev.Call.Status = formats.Denied
			}
			if _, ok := b.calls[idSum(bl.ToolUseID)]; !ok && b.callAgent[bl.ToolUseID] == nil && ev.Call.Status != formats.Denied {
				// A result whose call the run never gave (a file cut out of
				// its session): it ends no call, and is kept as it is (the
				// pipeline says so, by its type).
				b.carry(r, &formats.Event{Kind: formats.Raw, Agent: agent, Source: formats.Source{Type: "user (a tool result without its call)"}}, carried)
				gave = true
				continue
			}
			if a := b.callAgent[bl.ToolUseID]; a != nil {
				// The subagent it spawned: its file's events go here, before
				// its result; an inline one ends here.
				if !a.inline {
					b.agentEvents(a)
				}
				report := ev.Call.Output.Decoded()
				if ev.Call.Status != formats.Completed {
					report = ev.Call.Error
				}
				b.endAgent(a, ev.Call.Status, report)
			}
			b.carry(r, ev, carried)
			gave = true
		}
	}
	if !gave {
		b.carry(r, &formats.Event{Kind: formats.Raw, Agent: agent}, carried)
	}
}

// images counts the image blocks of the conversation's user records, and
// of their tool results.
func (b *sessBuild) images() int {
	n := 0
	count := func(recs iter.Seq[*sessRec]) {
		for r := range recs {
			if r.lineErr() != nil || r.is(fOdd) || r.is(fAbandoned) || r.typ() != "user" || !r.is(fHasMsg) || r.xtra() == nil {
				continue
			}
			n += r.xtra().images
		}
	}
	count(b.main.all())
	for _, a := range b.order {
		if !a.inline {
			count(slices.Values(a.recs))
		}
	}
	return n
}
