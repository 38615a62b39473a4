package pi

import (
	"bytes"
	"io"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// Session is the pi-session dialect: the file pi keeps of each session,
// ~/.pi/agent/sessions/--<cwd, / as ->--/<time>_<session id>.jsonl (under
// $PI_CODING_AGENT_SESSION_DIR, or $PI_CODING_AGENT_DIR/sessions, when
// set). Its first line is the session header; every other record is an
// entry of a tree, linked by id/parentId: message (a user prompt, an
// assistant answer with its model, usage and cost, a tool's result),
// model_change, thinking_level_change, compaction, branch_summary,
// custom, custom_message, label, session_info. pi resumes a session from
// its last entry (the leaf): the conversation is the branch from the root
// to it, which the reader follows; entries on other branches are left
// out, and said so. A prompt begins a run: a resumed session (pi
// --session ID) appends its prompt to the same file. The writer
// (session_write.go) writes what pi 0.73 resumes.
var Session = formats.Dialect{
	Name:        "pi-session",
	Description: "pi's session files `~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`: a session header, then a tree of message, model_change, thinking_level_change… entries linked by id/parentId, read along the branch pi resumes; -o DIR writes a file `pi --session ID` resumes",
	NewReader:   newSessionReader,
	NewWriter:   newSessionWriter,
	Detect:      detectSession,
	DirFiles:    "*.jsonl",
	Places:      sessionsDir,
	Files:       true,
	// A session's entries are held until its file is written.
	HoldsRun:    true,
	Bookkeeping: []string{"thinking_level_change", "label", "session_info", "custom"},
	// Each prompt starts a run of its own (FollowUpPrompts is not
	// carried): a run of several prompts comes back as several.
	Carries: formats.Timestamps | formats.WorkingDirs | formats.ModelNames | formats.UserPrompts |
		formats.AssistantText | formats.Thinking | formats.ToolCalls | formats.TokenUsage | formats.PerRequestUsage |
		formats.CacheWrites | formats.Costs | formats.RunOutcomes | formats.ModelChanges,
	Quirks: []formats.Quirk{lossUnanswered, lossLooseUsage, lossSubagentUsage, formats.ExitCodesBeyond01, formats.UnsummedRunUsage},
	Params: []formats.Param{{Key: ParamCwd, Flag: "pi-cwd",
		Usage: "pi-session names `DIR` as the session's working folder, where pi resumes it (pi refuses a session whose folder does not exist); a pi-session source is then rewritten, not copied"}},
}

// ParamCwd is the writer parameter that names the session's working
// folder.
const ParamCwd = "pi.cwd"

// entryTypes are the types of the tree's entries.
var entryTypes = map[string]bool{
	"message": true, "model_change": true, "thinking_level_change": true, "compaction": true, "branch_summary": true,
	"custom": true, "custom_message": true, "label": true, "session_info": true,
}

// detectSession: the session header, then entries with an id and a
// parentId.
func detectSession(head []byte) int {
	return detect(head, func(line []byte, typ string) bool {
		return entryTypes[typ] && bytes.Contains(line, []byte(`"parentId"`)) && bytes.Contains(line, []byte(`"id"`))
	})
}

// entry is every field of a session file's records that the reader takes.
type entry struct {
	Type      string   `json:"type"`
	ID        string   `json:"id"`
	ParentID  *string  `json:"parentId"`
	Timestamp string   `json:"timestamp"`
	Message   *message `json:"message"`
	Provider  string   `json:"provider"`
	ModelID   string   `json:"modelId"`
	Summary   string   `json:"summary"`
	// the header's
	Version *int   `json:"version"`
	Cwd     string `json:"cwd"`

	line   []byte
	lineNo int
	time   time.Time
	branch bool // on the branch pi resumes
}

type sessionReader struct {
	r      io.Reader
	opts   formats.ReadOptions
	loaded bool
	queue  []*formats.Event
	errs   []error

	x       events
	cur     *entry
	first   bool
	open    bool
	prompts int // the open run's
	run     formats.RunInfo
	last    time.Time
	// provider is the model's provider, as OpenTelemetry names it.
	provider string
}

func newSessionReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &sessionReader{r: r, opts: o}
}

func (s *sessionReader) Next() (*formats.Event, error) {
	if !s.loaded {
		s.loaded = true
		s.load()
	}
	return formats.PopLoaded(&s.queue, &s.errs)
}

func (s *sessionReader) push(e *formats.Event) {
	e.Source.Dialect = s.opts.Dialect
	if r := s.cur; r != nil {
		e.Source.LineNo = r.lineNo
		if e.Source.Type == "" {
			e.Source.Type = r.Type
		}
		if s.first {
			e.Source.Line, s.first = r.line, false
		} else {
			e.Source.Continued = true
		}
	} else if len(s.queue) > 0 || s.last != (time.Time{}) {
		// The end of a run, which no record of its own gives.
		e.Source.Made = true
	}
	if !e.Time.IsZero() {
		s.last = e.Time
	}
	s.queue = append(s.queue, e)
}

// load reads the file's entries, marks the branch from the last entry
// to the root, and makes the events, in the file's order.
func (s *sessionReader) load() {
	lines := formats.NewLineReader(s.r)
	var all []*entry
	byID := map[string]*entry{}
	for {
		b, err := lines.Next()
		if err != nil {
			if err != io.EOF {
				s.errs = append(s.errs, err)
			}
			break
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		e := &entry{line: bytes.Clone(b), lineNo: lines.Line()}
		if le := s.opts.Report.UnmarshalObject(e.lineNo, e.line, e); le != nil {
			s.errs = append(s.errs, le)
			continue
		}
		e.time, _ = time.Parse(time.RFC3339Nano, e.Timestamp)
		all = append(all, e)
		if e.ID != "" && e.Type != "session" {
			byID[e.ID] = e
		}
	}
	// The leaf of each session (an input may hold several, each after its
	// header) is its last entry; the branch is its ancestors (pi's
	// SessionManager: the leaf is the last entry read).
	start := 0
	for i := 0; i <= len(all); i++ {
		if i < len(all) && (all[i].Type != "session" || i == start) {
			continue
		}
		var leaf *entry
		for j := i - 1; j >= start && leaf == nil; j-- {
			if all[j].Type != "session" && all[j].ID != "" {
				leaf = all[j]
			}
		}
		for e := leaf; e != nil && !e.branch; {
			e.branch = true
			if e.ParentID == nil {
				break
			}
			e = byID[*e.ParentID]
		}
		start = i
	}
	off := 0
	for _, e := range all {
		if e.Type != "session" && !e.branch {
			off++
		}
	}
	if off > 0 && s.opts.Report != nil {
		s.opts.Report.Warn(0, "%d entries are on branches of the session that pi does not resume (its conversation is the branch that ends at the last entry): they are left out", off)
	}
	// The run's model, from the branch's first model_change or answer,
	// and its provider.
	model, provider := "", ""
	for _, e := range all {
		if !e.branch {
			continue
		}
		if e.Type == "model_change" && e.ModelID != "" {
			model, provider = e.ModelID, e.Provider
			break
		}
		if e.Type == "message" && e.Message != nil && e.Message.Role == "assistant" && e.Message.Model != "" {
			model, provider = e.Message.Model, e.Message.Provider
			break
		}
	}
	s.x = events{emit: s.push, model: model}
	s.provider = otelProvider(provider)
	for _, e := range all {
		s.cur, s.first = e, true
		s.entry(e)
	}
	s.cur = nil
	s.endRun()
}

// entry makes the events of one record.
func (s *sessionReader) entry(e *entry) {
	if e.Type == "session" && e.ParentID == nil {
		s.endRun()
		s.run = formats.RunInfo{SessionID: e.ID, Cwd: e.Cwd, AgentName: AgentName, Model: s.x.model, Provider: s.provider}
		s.startRun(e.time)
		return
	}
	if !e.branch {
		s.push(&formats.Event{Kind: formats.Raw, Time: e.time, Source: formats.Source{Type: "off-branch " + e.Type}})
		return
	}
	if !s.open {
		s.startRun(e.time) // entries without a header before them
	}
	switch e.Type {
	case "message":
		m := e.Message
		if m == nil {
			s.push(&formats.Event{Kind: formats.Raw, Time: e.time})
			return
		}
		if m.Role == "user" && m.text() != "" {
			s.prompts++
			if s.prompts > 1 {
				// A prompt after the run's first: pi ran again (a
				// resume, or the next prompt of a session).
				s.endRun()
				s.startRun(e.time)
				s.prompts = 1
			}
		}
		n := len(s.queue)
		s.x.message(m, e.time)
		if len(s.queue) == n {
			s.push(&formats.Event{Kind: formats.Raw, Time: e.time, Source: formats.Source{Known: true}})
		}
	case "model_change":
		if e.ModelID != "" && e.ModelID != s.x.model {
			s.x.model = e.ModelID
			s.push(&formats.Event{Kind: formats.ModelChange, Time: e.time, Run: formats.RunInfo{Model: e.ModelID}})
			return
		}
		s.push(&formats.Event{Kind: formats.Raw, Time: e.time, Source: formats.Source{Known: true}})
	case "compaction":
		s.push(&formats.Event{Kind: formats.Compaction, Time: e.time, Text: e.Summary})
	default:
		s.push(&formats.Event{Kind: formats.Raw, Time: e.time})
	}
}

func (s *sessionReader) startRun(at time.Time) {
	s.open = true
	s.prompts = 0
	s.x.lastText, s.x.stop, s.x.errMsg = "", "", ""
	run := s.run
	run.Model = s.x.model
	s.push(&formats.Event{Kind: formats.RunStart, Time: at, Run: run})
}

func (s *sessionReader) endRun() {
	if !s.open {
		return
	}
	s.open = false
	cur := s.cur
	s.cur = nil
	s.x.end(s.last, s.run)
	s.cur, s.first = cur, cur != nil && s.first
}
