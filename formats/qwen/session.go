package qwen

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Session is the qwen-session dialect: the file Qwen Code keeps of each
// session, ~/.qwen/projects/<project>/chats/<session-id>.jsonl, which a
// resumed session (--resume ID) appends to, with its subagents' files in
// ~/.qwen/projects/<project>/subagents/<session-id>/agent-<id>.jsonl
// (and agent-<id>.meta.json). Read only.
//
// Its records are chained by uuid/parentUuid, each with the session's id,
// cwd, Qwen Code's version and a timestamp: user (a prompt, provenance
// real_user), assistant (a Gemini API Content: text parts, thought parts,
// functionCall parts; the model; usageMetadata, the request's counts by the
// OpenAI convention: promptTokenCount includes cachedContentTokenCount,
// candidatesTokenCount includes thoughtsTokenCount), tool_result (the
// functionResponse part, and toolCallResult: the call's status, error
// type, display) and system (attribution_snapshot, and ui_telemetry: every
// API response with its counts and response id, every API error with its
// message and status, every tool call with its duration and status,
// subagents' included). A subagent's file has the same records, with
// agentId and isSidechain; its requests are in the session's telemetry too.
var Session = formats.Dialect{
	Name:        "qwen-session",
	Aliases:     []string{"qwen-chat"},
	Description: "Qwen Code's session files `~/.qwen/projects/<project>/chats/<session-id>.jsonl`: user, assistant (Gemini parts), tool_result and system records chained by uuid/parentUuid, subagents in `../subagents/<session-id>/` (read only)",
	NewReader:   newSessionReader,
	Detect:      detectSession,
	DirFiles:    "*.jsonl",
	Places:      sessionPlaces,
	Owner:       sessionOwner,
}

// sessionPlaces: ~/.qwen/projects.
func sessionPlaces(getenv func(string) string) []string {
	if h := getenv("HOME"); h != "" {
		return []string{filepath.Join(h, ".qwen", "projects")}
	}
	return nil
}

var subagentFile = regexp.MustCompile(`^agent-(.+)\.(jsonl|meta\.json)$`)

// sessionOwner: a subagent's file <project>/subagents/<session-id>/agent-<id>.jsonl
// (or .meta.json) belongs to <project>/chats/<session-id>.jsonl.
func sessionOwner(p string) string {
	dir, name := filepath.Split(p)
	if !subagentFile.MatchString(name) {
		return ""
	}
	sess := filepath.Clean(dir)
	subs := filepath.Dir(sess)
	if filepath.Base(subs) != "subagents" {
		return ""
	}
	return filepath.Join(filepath.Dir(subs), "chats", filepath.Base(sess)+".jsonl")
}

// record is every field of a session file's records that the reader takes.
type record struct {
	UUID      string `json:"uuid"`
	SessionID string `json:"sessionId"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	// Provenance is real_user for a prompt.
	Provenance string   `json:"provenance"`
	Cwd        string   `json:"cwd"`
	Version    string   `json:"version"`
	Model      string   `json:"model"`
	Subtype    string   `json:"subtype"`
	Message    *content `json:"message"`
	Usage      *struct {
		Prompt     *int64 `json:"promptTokenCount"`
		Candidates *int64 `json:"candidatesTokenCount"`
		Thoughts   *int64 `json:"thoughtsTokenCount"`
		Total      *int64 `json:"totalTokenCount"`
		Cached     *int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	ToolCallResult *struct {
		CallID     string `json:"callId"`
		Status     string `json:"status"`
		ErrorType  string `json:"errorType"`
		DurationMS *int64 `json:"durationMs"`
		// ResultDisplay is a subagent's outcome (type task_execution) for
		// the call that spawned it; other tools' are text.
		ResultDisplay json.RawMessage `json:"resultDisplay"`
	} `json:"toolCallResult"`
	SystemPayload *struct {
		UIEvent *telemetry `json:"uiEvent"`
	} `json:"systemPayload"`
	AgentID string `json:"agentId"`

	line   []byte
	lineNo int
	time   time.Time
}

// content is a Gemini API Content.
type content struct {
	Role  string `json:"role"`
	Parts []struct {
		Text         *string `json:"text"`
		Thought      bool    `json:"thought"`
		FunctionCall *struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
		FunctionResponse *struct {
			ID       string `json:"id"`
			Name     string `json:"name"`
			Response *struct {
				Output json.RawMessage `json:"output"`
				Error  json.RawMessage `json:"error"`
			} `json:"response"`
		} `json:"functionResponse"`
	} `json:"parts"`
}

// telemetry is a ui_telemetry record's event.
type telemetry struct {
	Name       string `json:"event.name"`
	ResponseID string `json:"response_id"`
	Model      string `json:"model"`
	Input      *int64 `json:"input_token_count"`
	Output     *int64 `json:"output_token_count"`
	Cached     *int64 `json:"cached_content_token_count"`
	Thoughts   *int64 `json:"thoughts_token_count"`
	Total      *int64 `json:"total_token_count"`
	ErrorMsg   string `json:"error_message"`
	ErrorType  string `json:"error_type"`
	CallID     string `json:"call_id"`
	DurationMS *int64 `json:"duration_ms"`
	SubagentID string `json:"subagent_id"`
	// A tool call's: the tool, its arguments, its status (success, error,
	// cancelled), the user's decision (reject: refused), its error.
	FunctionName string          `json:"function_name"`
	FunctionArgs json.RawMessage `json:"function_args"`
	Status       string          `json:"status"`
	Decision     string          `json:"decision"`
	Error        string          `json:"error"`
	// PromptID is <session id>#<subagent id>#<n>, the subagent's id empty
	// for the main agent.
	PromptID string `json:"prompt_id"`
	// SubagentName is the subagent's type (general-purpose), and
	// SubagentTask its task's description.
	SubagentName string `json:"subagent_name"`
	SubagentTask string `json:"subagent_task_name"`
}

// subagent is the id of the subagent whose request or call the telemetry
// is, "" for the main agent's.
func (t *telemetry) subagent() string {
	if t.SubagentID != "" {
		return t.SubagentID
	}
	if _, rest, ok := strings.Cut(t.PromptID, "#"); ok {
		if id, _, ok := strings.Cut(rest, "#"); ok {
			return id
		}
	}
	return ""
}

// probe is what detection looks at in a line.
type probe struct {
	Type          string           `json:"type"`
	UUID          *json.RawMessage `json:"uuid"`
	SessionID     *json.RawMessage `json:"sessionId"`
	SystemPayload *json.RawMessage `json:"systemPayload"`
	Message       *struct {
		Parts *json.RawMessage `json:"parts"`
	} `json:"message"`
}

// detectSession claims the lines of Qwen Code's records: the envelope of
// Claude Code's session files (uuid, parentUuid, sessionId), whose
// messages hold Gemini parts (Claude's hold content), and whose system
// records hold a systemPayload.
func detectSession(head []byte) int {
	return formats.DetectByTypes(head, func(line []byte, _ string) bool {
		var p probe
		// parentUuid is null on a chain's first record.
		if json.Unmarshal(line, &p) != nil || p.UUID == nil || p.SessionID == nil || !bytes.Contains(line, []byte(`"parentUuid"`)) {
			return false
		}
		switch p.Type {
		case "user", "assistant", "tool_result":
			return p.Message != nil && p.Message.Parts != nil
		case "system":
			return p.SystemPayload != nil
		}
		return false
	})
}

// subagent is a subagent's file, read with its session's.
type subagent struct {
	id      string // agentId
	call    string // the call that spawned it (meta.json's toolUseId)
	label   string
	status  string // meta.json's
	records []*record
	used    bool
}

type sessionReader struct {
	r      io.Reader
	opts   formats.ReadOptions
	loaded bool
	queue  []*formats.Event
	errs   []error

	records []*record
	agents  []*subagent
	byCall  map[string]*subagent
	// filed: the subagents whose records are in files, whose requests
	// their records' usage gives.
	filed map[string]bool
	// durations of the calls, and the models of the subagents, from the
	// telemetry.
	durations map[string]time.Duration
	models    map[string]string
	// unfiled are the subagents of the open run whose files are missing,
	// known from the session's telemetry alone, by id and by the call
	// that spawned them; calls are the main agent's calls of the run.
	unfiled       map[string]*unfiledAgent
	unfiledByCall map[string]*unfiledAgent
	calls         []string

	// The run being read.
	open     bool
	session  string
	cwd      string
	version  string
	model    string
	lastText string
	// failed is the API error after the main agent's last response.
	failed *telemetry
	last   time.Time
	src    *record
}

// unfiledAgent is a subagent whose file is missing: it starts at its
// first request or call in the telemetry, and ends where the call that
// spawned it ends.
type unfiledAgent struct {
	id, call string
	ended    bool
}

func newSessionReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &sessionReader{r: r, opts: o, byCall: map[string]*subagent{}, filed: map[string]bool{}, durations: map[string]time.Duration{},
		models: map[string]string{}, unfiled: map[string]*unfiledAgent{}, unfiledByCall: map[string]*unfiledAgent{}}
}

func (s *sessionReader) Next() (*formats.Event, error) {
	if !s.loaded {
		s.loaded = true
		s.load()
	}
	return formats.PopLoaded(&s.queue, &s.errs)
}

// readRecords reads a file's records; a bad line is an error of its own.
func readRecords(r io.Reader, rep *formats.Report, errs *[]error) []*record {
	lines := formats.NewLineReader(r)
	var out []*record
	for {
		b, err := lines.Next()
		if err != nil {
			if err != io.EOF {
				*errs = append(*errs, err)
			}
			return out
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		rec := &record{line: bytes.Clone(b), lineNo: lines.Line()}
		if le := rep.UnmarshalObject(rec.lineNo, rec.line, rec); le != nil {
			*errs = append(*errs, le)
			continue
		}
		rec.time, _ = time.Parse(time.RFC3339Nano, rec.Timestamp)
		out = append(out, rec)
	}
}

// load reads the whole file, and its subagents' files beside it, then
// makes the events.
func (s *sessionReader) load() {
	s.records = readRecords(s.r, s.opts.Report, &s.errs)
	s.agentFiles()
	for _, r := range s.records {
		t := r.event()
		switch {
		case t == nil:
		case t.Name == "qwen-code.tool_call" && t.CallID != "" && t.DurationMS != nil:
			s.durations[t.CallID] = time.Duration(*t.DurationMS) * time.Millisecond
		case t.Name == "qwen-code.api_response" && t.SubagentID != "" && t.Model != "" && s.models[t.SubagentID] == "":
			s.models[t.SubagentID] = t.Model
		}
	}
	for _, r := range s.records {
		s.record(r, "")
	}
	s.endRun()
}

// agentFiles reads the subagents' files of the session:
// <project>/subagents/<session-id>/agent-<id>.jsonl, with
// agent-<id>.meta.json.
func (s *sessionReader) agentFiles() {
	if s.opts.Path == "" || filepath.Base(filepath.Dir(s.opts.Path)) != "chats" {
		return
	}
	id := strings.TrimSuffix(filepath.Base(s.opts.Path), ".jsonl")
	dir := filepath.Join(filepath.Dir(filepath.Dir(s.opts.Path)), "subagents", id)
	files, _ := filepath.Glob(filepath.Join(dir, "agent-*.jsonl"))
	sort.Strings(files)
	for _, f := range files {
		fh, err := formats.OpenFound(f)
		if err != nil {
			s.warn("cannot read the subagent's file %s (%v); its events are left out", f, err)
			continue
		}
		var errs []error
		recs := readRecords(fh, s.opts.Report, &errs)
		fh.Close()
		if len(errs) > 0 {
			s.warn("%s: %v; the records before are kept", f, errs[0])
		}
		a := &subagent{id: strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "agent-"), ".jsonl"), records: recs}
		for _, r := range recs {
			if r.AgentID != "" {
				a.id = r.AgentID
				break
			}
		}
		var meta struct {
			AgentType   string `json:"agentType"`
			Description string `json:"description"`
			ToolUseID   string `json:"toolUseId"`
			Status      string `json:"status"`
		}
		if b, err := os.ReadFile(strings.TrimSuffix(f, ".jsonl") + ".meta.json"); err == nil && json.Unmarshal(b, &meta) == nil {
			a.call, a.status, a.label = meta.ToolUseID, meta.Status, meta.AgentType
			if meta.Description != "" {
				a.label = strings.TrimSpace(a.label + ": " + meta.Description)
			}
		}
		s.agents = append(s.agents, a)
		s.filed[a.id] = true
		if a.call != "" {
			s.byCall[a.call] = a
		}
	}
	// A subagent without meta.json: Qwen Code names it <type>-<call id>.
	for _, a := range s.agents {
		if a.call != "" {
			continue
		}
		for _, r := range s.records {
			if r.Message == nil {
				continue
			}
			for _, p := range r.Message.Parts {
				if c := p.FunctionCall; c != nil && c.ID != "" && strings.HasSuffix(a.id, "-"+c.ID) && s.byCall[c.ID] == nil {
					a.call = c.ID
					s.byCall[c.ID] = a
				}
			}
		}
	}
}

func (s *sessionReader) warn(format string, args ...any) {
	if s.opts.Report != nil {
		s.opts.Report.Warn(0, format, args...)
	}
}

func (r *record) event() *telemetry {
	if r.Type != "system" || r.SystemPayload == nil {
		return nil
	}
	return r.SystemPayload.UIEvent
}

// emit queues an event of record r (nil: of no record of its own).
func (s *sessionReader) emit(r *record, e *formats.Event) {
	e.Source.Dialect = s.opts.Dialect
	if r != nil {
		e.Time = r.time
		if !r.time.IsZero() {
			s.last = r.time
		}
		e.Source.LineNo = r.lineNo
		if s.src == r {
			e.Source.Continued = true
		} else {
			e.Source.Line = r.line
			s.src = r
		}
	} else {
		e.Source.Made = true
	}
	s.queue = append(s.queue, e)
}

// startRun opens a run at record r.
func (s *sessionReader) startRun(r *record) {
	s.endRun()
	s.open = true
	s.session, s.cwd, s.version = r.SessionID, r.Cwd, r.Version
	s.lastText, s.failed = "", nil
	clear(s.unfiled)
	clear(s.unfiledByCall)
	s.calls = s.calls[:0]
	s.emit(r, &formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: r.SessionID, Model: s.model,
		Cwd: r.Cwd, AgentName: AgentName, AgentVersion: r.Version}})
}

// endRun closes the open run: failed when an API error came after the
// main agent's last response (Qwen Code gave up), else completed.
func (s *sessionReader) endRun() {
	if !s.open {
		return
	}
	s.open = false
	for _, a := range s.unfiled {
		if !a.ended {
			// Its call never ended: the run's end ends it.
			a.ended = true
			s.emit(nil, &formats.Event{Kind: formats.AgentEnd, Agent: a.id, Time: s.last})
		}
	}
	end := &formats.Event{Kind: formats.RunEnd, Status: formats.Completed, Time: s.last,
		Run: formats.RunInfo{SessionID: s.session, Model: s.model, Cwd: s.cwd, AgentName: AgentName, AgentVersion: s.version}}
	if f := s.failed; f != nil {
		end.Status, end.Text, end.Code = formats.Failed, f.ErrorMsg, f.ErrorType
		if end.ErrorText() == "" {
			end.Text = "the run failed"
		}
	} else if s.lastText != "" {
		s.emit(nil, &formats.Event{Kind: formats.Answer, Text: s.lastText, Time: s.last})
	}
	s.emit(nil, end)
}

// record makes the events of one record of agent (""; the main agent).
func (s *sessionReader) record(r *record, agent string) {
	if agent == "" && !s.open && r.Type != "user" {
		// Records before any prompt (a subagent's file read alone begins
		// with its prompt; anything else): a run of their own.
		s.startRun(r)
	}
	switch r.Type {
	case "user":
		s.user(r, agent)
	case "assistant":
		s.assistant(r, agent)
	case "tool_result":
		s.toolResults(r, agent)
	case "system":
		s.system(r, agent)
	}
}

func (s *sessionReader) user(r *record, agent string) {
	text := r.Message.text(false)
	if agent == "" && (r.Provenance == "real_user" || r.Provenance == "") && text != "" {
		s.startRun(r)
	}
	if text != "" {
		s.emit(r, &formats.Event{Kind: formats.UserMessage, Agent: agent, Text: text})
	}
	s.toolResults(r, agent)
}

// text joins the text parts of a content, or its thought parts.
func (c *content) text(thought bool) string {
	if c == nil {
		return ""
	}
	var parts []string
	for _, p := range c.Parts {
		if p.Text != nil && p.Thought == thought && *p.Text != "" && p.FunctionCall == nil && p.FunctionResponse == nil {
			parts = append(parts, *p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (s *sessionReader) assistant(r *record, agent string) {
	if r.Model != "" && agent == "" {
		if s.model != "" && s.model != r.Model {
			s.emit(r, &formats.Event{Kind: formats.ModelChange, Run: formats.RunInfo{Model: r.Model}})
		}
		s.model = r.Model
	}
	if agent == "" {
		s.failed = nil
	}
	text, thinking := r.Message.text(false), r.Message.text(true)
	if text != "" || thinking != "" {
		s.emit(r, &formats.Event{Kind: formats.Message, Agent: agent, Text: text, Thinking: thinking})
		if agent == "" && text != "" {
			s.lastText = text
		}
	}
	if u := r.Usage; u != nil && (agent == "" || s.filed[agent]) {
		info := formats.UsageInfo{InputTokens: formats.OptFrom(u.Prompt), OutputTokens: formats.OptFrom(u.Candidates),
			CacheReadTokens: formats.OptFrom(u.Cached), ReasoningTokens: formats.OptFrom(u.Thoughts),
			TotalTokens: formats.OptFrom(u.Total)}
		model := r.Model
		if model == "" {
			model = s.models[agent]
		}
		s.emit(r, &formats.Event{Kind: formats.Usage, Agent: agent, Usage: info, Response: formats.Response{Model: model}})
	}
	if r.Message == nil {
		return
	}
	for _, p := range r.Message.Parts {
		c := p.FunctionCall
		if c == nil {
			continue
		}
		args := c.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		s.emit(r, &formats.Event{Kind: formats.ToolCall, Agent: agent, Call: formats.Call{ID: c.ID, Name: c.Name, Args: args}})
		if agent == "" {
			s.calls = append(s.calls, c.ID)
		}
		if a := s.byCall[c.ID]; a != nil && !a.used && agent == "" {
			s.subagent(r, a)
		}
	}
}

// subagent gives a subagent's file's events where its spawning call
// begins.
func (s *sessionReader) subagent(r *record, a *subagent) {
	a.used = true
	s.emit(r, &formats.Event{Kind: formats.AgentStart, Agent: a.id, AgentInfo: formats.AgentInfo{Label: a.label, ParentCall: a.call}})
	var report string
	for _, sr := range a.records {
		s.record(sr, a.id)
		if sr.Type == "assistant" {
			if t := sr.Message.text(false); t != "" {
				report = t
			}
		}
	}
	st := formats.Completed
	switch a.status {
	case "failed", "error":
		st = formats.Failed
	case "cancelled", "aborted":
		st = formats.Cancelled
	}
	s.emit(nil, &formats.Event{Kind: formats.AgentEnd, Agent: a.id, Status: st, Text: report, Time: s.last})
}

func (s *sessionReader) toolResults(r *record, agent string) {
	if r.Message == nil {
		return
	}
	for _, p := range r.Message.Parts {
		fr := p.FunctionResponse
		if fr == nil {
			continue
		}
		c := formats.Call{ID: fr.ID, Name: fr.Name, Status: formats.Completed}
		var dur time.Duration
		if fr.Response != nil {
			c.Output = formats.TextOutput(jsonText(fr.Response.Output))
			c.Error = jsonText(fr.Response.Error)
		}
		if tr := r.ToolCallResult; tr != nil && (tr.CallID == "" || tr.CallID == fr.ID) {
			switch {
			case tr.ErrorType == "execution_denied":
				c.Status = formats.Denied
			case tr.Status == "error":
				c.Status = formats.Failed
			case tr.Status == "cancelled":
				c.Status = formats.Cancelled
			}
			if tr.DurationMS != nil {
				dur = time.Duration(*tr.DurationMS) * time.Millisecond
			}
		}
		if c.Error != "" && c.Status == formats.Completed {
			c.Status = formats.Failed
		}
		if d, ok := s.durations[fr.ID]; ok && dur == 0 {
			dur = d
		}
		if a := s.unfiledByCall[fr.ID]; a != nil && agent == "" && !a.ended {
			s.endUnfiled(r, a)
		}
		s.emit(r, &formats.Event{Kind: formats.ToolResult, Agent: agent, Call: c, Duration: dur})
	}
}

// jsonText is a JSON string's text, or the JSON of another value.
func jsonText(b json.RawMessage) string {
	if len(b) == 0 || string(b) == "null" {
		return ""
	}
	var str string
	if json.Unmarshal(b, &str) == nil {
		return str
	}
	return string(b)
}

func (s *sessionReader) system(r *record, agent string) {
	t := r.event()
	if t == nil || agent != "" {
		return
	}
	switch t.Name {
	case "qwen-code.api_response":
		if t.SubagentID != "" {
			if !s.filed[t.SubagentID] {
				// A subagent whose file is missing: its requests are known
				// from the session's telemetry alone.
				s.startUnfiled(r, t)
				s.emit(r, &formats.Event{Kind: formats.Usage, Agent: t.SubagentID, Usage: t.usage(), Response: formats.Response{ID: t.ResponseID, Model: t.Model}})
			}
			return
		}
		s.failed = nil
	case "qwen-code.tool_call":
		if id := t.subagent(); id != "" && !s.filed[id] && t.CallID != "" {
			// A call of a subagent whose file is missing: the telemetry
			// says the tool, its arguments and how it ended, not its
			// output.
			if s.startUnfiled(r, t) == nil {
				return
			}
			args := t.FunctionArgs
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
			s.emit(r, &formats.Event{Kind: formats.ToolCall, Agent: id, Call: formats.Call{ID: t.CallID, Name: t.FunctionName, Args: args}})
			c := formats.Call{ID: t.CallID, Name: t.FunctionName, Status: formats.Completed, Error: t.Error}
			switch {
			case t.Decision == "reject":
				c.Status = formats.Denied
			case t.Status == "cancelled":
				c.Status = formats.Cancelled
			case t.Status == "error" || t.Error != "":
				c.Status = formats.Failed
			}
			var dur time.Duration
			if t.DurationMS != nil {
				dur = time.Duration(*t.DurationMS) * time.Millisecond
			}
			s.emit(r, &formats.Event{Kind: formats.ToolResult, Agent: id, Call: c, Duration: dur})
		}
	case "qwen-code.api_error":
		if t.SubagentID != "" {
			return
		}
		s.failed = t
		s.emit(r, &formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: t.ErrorMsg, Code: t.ErrorType})
	}
}

// startUnfiled starts, at its first telemetry, a subagent whose file is
// missing, and returns it (nil once it ended). Qwen Code names a subagent
// <type>-<call id>: the call of the run's main agent whose id ends its id
// spawned it.
func (s *sessionReader) startUnfiled(r *record, t *telemetry) *unfiledAgent {
	id := t.subagent()
	if a := s.unfiled[id]; a != nil {
		if a.ended {
			return nil
		}
		return a
	}
	a := &unfiledAgent{id: id}
	for _, c := range slices.Backward(s.calls) {
		if strings.HasSuffix(id, "-"+c) && s.unfiledByCall[c] == nil {
			a.call = c
			s.unfiledByCall[c] = a
			break
		}
	}
	s.unfiled[id] = a
	model := t.Model
	if model == "" {
		model = s.models[id]
	}
	label := t.SubagentName // as its meta.json makes it
	if t.SubagentTask != "" {
		label = strings.TrimSpace(label + ": " + t.SubagentTask)
	}
	s.emit(r, &formats.Event{Kind: formats.AgentStart, Agent: id, AgentInfo: formats.AgentInfo{Label: label, ParentCall: a.call, Model: model}})
	return a
}

// endUnfiled ends a subagent whose file is missing at the result of the
// call that spawned it, which says its outcome and its last response's
// text (its report).
func (s *sessionReader) endUnfiled(r *record, a *unfiledAgent) {
	a.ended = true
	var d struct {
		Type   string `json:"type"`
		Status string `json:"status"`
		Result string `json:"result"`
	}
	if tr := r.ToolCallResult; tr != nil && len(tr.ResultDisplay) > 0 && tr.ResultDisplay[0] == '{' {
		json.Unmarshal(tr.ResultDisplay, &d)
	}
	st := formats.StatusUnknown
	switch d.Status {
	case "completed":
		st = formats.Completed
	case "failed", "error":
		st = formats.Failed
	case "cancelled", "aborted":
		st = formats.Cancelled
	}
	if d.Result != "" {
		// The subagent's last response, which its file would hold.
		s.emit(r, &formats.Event{Kind: formats.Message, Agent: a.id, Text: d.Result})
	}
	s.emit(r, &formats.Event{Kind: formats.AgentEnd, Agent: a.id, Status: st, Text: d.Result})
}

// usage is a telemetry's counts: input_token_count includes the cache.
func (t *telemetry) usage() formats.UsageInfo {
	return formats.UsageInfo{InputTokens: formats.OptFrom(t.Input), OutputTokens: formats.OptFrom(t.Output),
		CacheReadTokens: formats.OptFrom(t.Cached), ReasoningTokens: formats.OptFrom(t.Thoughts), TotalTokens: formats.OptFrom(t.Total)}
}
