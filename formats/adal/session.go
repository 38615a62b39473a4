package adal

import (
	"bytes"
	"io"
	"path/filepath"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Session is the adal-session dialect: the file AdaL keeps of each
// conversation, ~/.adal/sessions/conversation_<id>.jsonl, which a resumed
// session (-r ID) appends to. Read only.
//
// Its records: metadata (conversation_id, user_id, platform, version,
// project_path), turn_created (one per prompt), message (the user's prompt;
// an assistant step whose metadata.calls hold each call's id, function
// name and kwargs, observation, output and status; the final answer, with
// metadata.is_final_answer and its status) and usage, one per model call
// (model, input_tokens, output_tokens, cached_read_input_tokens,
// cache_creation_tokens, reasoning_tokens, source main or subagent). No
// output format of AdaL has token counts: only these files do. A refused
// call has status cancelled and its output's metadata.permission set, its
// observation the reason; a run that stopped at it ends with a final
// message of status cancelled.
//
// The writer (session_write.go) writes what AdaL 1.8.6 resumes with
// `adal -r ID`.
var Session = formats.Dialect{
	Name:        "adal-session",
	Description: "AdaL's session file ~/.adal/sessions/conversation_<id>.jsonl: prompts, steps with their calls, answers and the usage of each model call; -o DIR writes conversation_<id>.jsonl and <id>_metadata.json, which `adal -r ID` resumes",
	NewReader:   newSessionReader,
	NewWriter:   newSessionWriter,
	Detect:      detectSession,
	DirFiles:    "conversation_*.jsonl",
	Places:      sessionPlaces,
	Files:       true,
	// A session keeps prompts, the main agent's text and reasoning, its
	// calls with their outputs (any JSON value), statuses and refusals, the
	// usage of each model call (a subagent's too), and the run's outcome;
	// a subagent's own calls are not the main model's, and its text has
	// no place.
	Carries: formats.Timestamps | formats.WorkingDirs | formats.UserPrompts | formats.FollowUpPrompts | formats.AssistantText |
		formats.Thinking | formats.ToolCalls | formats.CancelledCalls | formats.Refusals | formats.ToolOutputValues |
		formats.TokenUsage | formats.PerRequestUsage | formats.CacheWrites | formats.ReasoningTokens | formats.RunOutcomes,
	Quirks: []formats.Quirk{formats.MergedToolErrors, lossUnanswered, formats.PromptsNeverGiven, formats.ZeroTokenCounts, formats.UnsummedRunUsage, lossExitCodes},
}

// sessionPlaces: ~/.adal/sessions.
func sessionPlaces(getenv func(string) string) []string {
	if h := getenv("HOME"); h != "" {
		return []string{filepath.Join(h, ".adal", "sessions")}
	}
	return nil
}

// sessionRecord is every field of a session file's records that the
// reader takes.
type sessionRecord struct {
	Type string `json:"type"`
	// metadata
	ConversationID string `json:"conversation_id"`
	Version        string `json:"version"`
	ProjectPath    string `json:"project_path"`
	CreatedAt      string `json:"created_at"`
	// turn_created, message, usage
	TurnID    string `json:"turn_id"`
	Timestamp string `json:"timestamp"`
	// message
	MessageID string          `json:"message_id"`
	Role      string          `json:"role"`
	Content   *string         `json:"content"`
	Metadata  json.RawMessage `json:"metadata"`
	// usage
	Model         string `json:"model"`
	InputTokens   *int64 `json:"input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
	CacheRead     *int64 `json:"cached_read_input_tokens"`
	CacheCreation *int64 `json:"cache_creation_tokens"`
	Reasoning     *int64 `json:"reasoning_tokens"`
	Source        string `json:"source"`
}

// stepMeta is the metadata of an assistant message.
type stepMeta struct {
	Thinking    *string       `json:"thinking"`
	Preamble    *string       `json:"preamble"`
	Calls       []sessionCall `json:"calls"`
	Observation *string       `json:"observation"`
	Final       bool          `json:"is_final_answer"`
	Status      string        `json:"status"`
}

type sessionCall struct {
	ID       string `json:"id"`
	Function struct {
		Name   string          `json:"name"`
		Kwargs json.RawMessage `json:"kwargs"`
	} `json:"function"`
	Observation *string `json:"observation"`
	Output      *struct {
		Output    json.RawMessage `json:"output"`
		IsPreview bool            `json:"is_preview"`
		Metadata  *struct {
			// Permission, when set, says the call was refused
			// ("unattended": nobody could approve it).
			Permission *string `json:"permission"`
		} `json:"metadata"`
	} `json:"output"`
	Status string `json:"status"`
}

// detectSession claims lines with a session file's record types and the
// fields that only AdaL's have: a conversation_id, a turn_id. It looks at
// the head's first lines, as the detectors of other streams do.
func detectSession(head []byte) int {
	score := 0
	for _, line := range formats.HeadLines(head, 8) {
		if line[0] != '{' {
			continue
		}
		var r struct {
			Type           string           `json:"type"`
			ConversationID *string          `json:"conversation_id"`
			TurnID         *string          `json:"turn_id"`
			TurnIndex      *json.RawMessage `json:"turn_index"`
			MessageID      *string          `json:"message_id"`
			Source         *string          `json:"source"`
		}
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		switch {
		case r.Type == "metadata" && r.ConversationID != nil,
			r.Type == "turn_created" && r.TurnID != nil && r.TurnIndex != nil,
			r.Type == "message" && r.TurnID != nil && r.MessageID != nil,
			r.Type == "usage" && r.TurnID != nil && r.Source != nil:
			score = 95
		default:
			return 0
		}
	}
	return score
}

type sessionReader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	queue formats.EventQueue
	// session, cwd, version: what the metadata record says.
	session, cwd, version string
	// open: a run was started and has not ended.
	open bool
	// turns: turn_created records read; a run opened by the metadata
	// record takes the first.
	turns int
	// started: the metadata record opened a run that no turn has yet.
	started bool
	// refused: the run's last call ended refused.
	refused bool
	// lastError is the error text an assistant step gave in the run.
	lastError string
}

func newSessionReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &sessionReader{lines: formats.NewLineReader(r), opts: o}
}

func (r *sessionReader) Next() (*formats.Event, error) {
	for {
		if e := r.queue.Pop(); e != nil {
			return e, nil
		}
		line, err := r.lines.Next()
		if err != nil {
			return nil, err
		}
		line = bytes.Clone(line)
		n := r.lines.Line()
		var rec sessionRecord
		if err := r.opts.Report.Unmarshal(n, line, &rec); err != nil {
			return nil, err
		}
		if err := r.record(&rec, line, n); err != nil {
			return nil, err
		}
	}
}

// sessionTime reads AdaL's timestamps, which have no zone (the
// machine's local time, taken as UTC).
func sessionTime(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04:05.999999", s)
	if err != nil {
		t, _ = time.Parse(time.RFC3339Nano, s)
	}
	return t
}

func (r *sessionReader) record(rec *sessionRecord, line []byte, n int) error {
	r.queue.Begin(formats.Source{Dialect: r.opts.Dialect, Type: rec.Type, Line: line, LineNo: n})
	at := sessionTime(rec.Timestamp)
	add := func(e *formats.Event) {
		e.Time = at
		r.queue.Add(e)
	}
	switch rec.Type {
	case "metadata":
		// What the runs of the file start with: it opens the first, so
		// that a copy keeps it.
		r.session, r.cwd, r.version = rec.ConversationID, rec.ProjectPath, rec.Version
		r.open, r.started, r.lastError, r.refused = true, true, "", false
		e := &formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: r.session, Cwd: r.cwd, AgentName: "adal", AgentVersion: r.version}}
		e.Time = sessionTime(rec.CreatedAt)
		r.queue.Add(e)
	case "turn_created":
		r.turns++
		if r.started {
			// The turn of the run its metadata opened.
			r.started = false
			add(&formats.Event{Kind: formats.Raw, Source: formats.Source{Known: true}})
			return nil
		}
		r.open, r.lastError, r.refused = true, "", false
		add(&formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: r.session, Cwd: r.cwd, AgentName: "adal", AgentVersion: r.version}})
	case "usage":
		u := formats.UsageInfo{OutputTokens: formats.OptFrom(rec.OutputTokens), CacheReadTokens: formats.OptFrom(rec.CacheRead),
			CacheWriteTokens: formats.OptFrom(rec.CacheCreation), ReasoningTokens: formats.OptFrom(rec.Reasoning)}
		if rec.InputTokens != nil {
			// AdaL's input_tokens are Anthropic's: without the cache's.
			u.InputTokens = formats.Some(*rec.InputTokens + formats.Deref(rec.CacheRead) + formats.Deref(rec.CacheCreation))
		}
		add(&formats.Event{Kind: formats.Usage, Usage: u, Response: formats.Response{Model: rec.Model}})
	case "message":
		content := formats.Deref(rec.Content)
		if rec.Role == "user" {
			add(&formats.Event{Kind: formats.UserMessage, Text: content})
			return nil
		}
		var m stepMeta
		if len(rec.Metadata) > 0 && string(rec.Metadata) != "null" {
			if err := r.opts.Report.Unmarshal(n, rec.Metadata, &m); err != nil {
				return err
			}
		}
		if m.Final {
			r.final(&m, content, add)
			return nil
		}
		if t, p := formats.Deref(m.Thinking), formats.Deref(m.Preamble); t != "" || p != "" {
			add(&formats.Event{Kind: formats.Message, Text: p, Thinking: t})
		}
		if len(m.Calls) == 0 && content != "" && m.Observation != nil && *m.Observation == content {
			// A step that gave no calls but an observation: the error
			// the model call failed with.
			r.lastError = content
			add(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: content})
		}
		// A step's calls are the model's answer, their results its next
		// input: the calls first, then the results, so that the step's
		// Usage goes with all its calls.
		var results []*formats.Event
		for _, c := range m.Calls {
			add(&formats.Event{Kind: formats.ToolCall, Call: formats.Call{ID: c.ID, Name: c.Function.Name, Args: c.Function.Kwargs}})
			res := formats.Call{ID: c.ID, Name: c.Function.Name, Status: formats.Completed}
			r.refused = false
			switch {
			case c.Output != nil && c.Output.Metadata != nil && c.Output.Metadata.Permission != nil:
				// Refused: its observation is the reason; its output,
				// what the tool says of a call it did not make.
				res.Status, res.Error = formats.Denied, formats.Deref(c.Observation)
				r.refused = true
				results = append(results, &formats.Event{Kind: formats.ToolResult, Call: res})
				continue
			case c.Status == "cancelled":
				res.Status = formats.Cancelled
			case c.Status != "success":
				res.Status = formats.Failed
			}
			if c.Output != nil && len(c.Output.Output) > 0 && string(c.Output.Output) != "null" {
				text, value, ok := outputValue(c.Output.Output)
				if !ok {
					return formats.Errorf(n, "call %q: output is not valid JSON", c.ID)
				}
				res.Output, res.Truncated = formats.ValueOutput(value, text), c.Output.IsPreview
			} else {
				res.Output = formats.TextOutput(formats.Deref(c.Observation))
			}
			results = append(results, &formats.Event{Kind: formats.ToolResult, Call: res})
		}
		for _, e := range results {
			add(e)
		}
	default:
		r.opts.Report.Warn(n, "adal-session record type %q is not known; kept as an unknown event", rec.Type)
		add(&formats.Event{Kind: formats.Raw})
	}
	return nil
}

// final ends the run with its final answer: its text on success, else the
// error the run failed with.
func (r *sessionReader) final(m *stepMeta, content string, add func(*formats.Event)) {
	if !r.open {
		return
	}
	r.open = false
	if m.Status == "success" {
		if t := formats.Deref(m.Thinking); t != "" || content != "" {
			add(&formats.Event{Kind: formats.Message, Text: content, Thinking: t})
		}
		add(&formats.Event{Kind: formats.Answer, Text: content})
		add(&formats.Event{Kind: formats.RunEnd, Status: formats.Completed, Run: formats.RunInfo{SessionID: r.session, ExitCode: formats.Some(0)}})
		return
	}
	if m.Status == "cancelled" {
		// Stopped at the refusal it ended with (exit 2), or cancelled.
		if r.refused {
			add(&formats.Event{Kind: formats.RunEnd, Status: formats.Denied, Run: formats.RunInfo{SessionID: r.session, ExitCode: formats.Some(2)}})
		} else {
			add(&formats.Event{Kind: formats.RunEnd, Status: formats.Cancelled, Text: r.lastError, Run: formats.RunInfo{SessionID: r.session}})
		}
		return
	}
	why := r.lastError
	if why == "" {
		why = content
	}
	add(&formats.Event{Kind: formats.RunEnd, Status: formats.Failed, Text: why, Run: formats.RunInfo{SessionID: r.session, ExitCode: formats.Some(1)}})
}
