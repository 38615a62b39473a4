package cliagents

import (
	"io"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// record is every field any cli-agents event has.
type record struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ToolName string          `json:"toolName"`
	ToolID   string          `json:"toolId"`
	Args     json.RawMessage `json:"args"`
	Success  *bool           `json:"success"`
	Output   json.RawMessage `json:"output"`
	Error    json.RawMessage `json:"error"`
	Message  string          `json:"message"`
	Severity string          `json:"severity"`
	Result   *runResult      `json:"result"`
	Provider string          `json:"provider"`
	Event    json.RawMessage `json:"event"`
}

// runResult is the crate's RunResult, camelCase, null for unknown.
type runResult struct {
	Success   bool            `json:"success"`
	Text      *string         `json:"text"`
	ExitCode  *int            `json:"exitCode"`
	Stats     *runStats       `json:"stats"`
	SessionID *string         `json:"sessionId"`
	Stderr    *string         `json:"stderr"`
	CostUSD   *float64        `json:"costUsd"`
	Signal    json.RawMessage `json:"signal,omitempty"`
}

type runStats struct {
	InputTokens  *int64 `json:"inputTokens"`
	OutputTokens *int64 `json:"outputTokens"`
	TotalTokens  *int64 `json:"totalTokens"`
	CachedTokens *int64 `json:"cachedTokens"`
	DurationMs   *int64 `json:"durationMs"`
	ToolCalls    *int64 `json:"toolCalls"`
}

// providerEvent is what the reader takes from a raw event's payload: the
// facts of the run that Claude's system/init, Codex's thread.started and
// Gemini's init carry.
type providerEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	ThreadID  string `json:"thread_id"`
	Model     string `json:"model"`
	Cwd       string `json:"cwd"`
}

// cancelledText is what the crate puts in a cancelled run's result.
const cancelledText = "Cancelled."

type reader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	queue formats.EventQueue
	// open: an event of the current run was read (runs end with done).
	open    bool
	session string
	// provider is the provider the run's opening raw event names, whose
	// convention its stats follow.
	provider string
	names    map[string]string // tool id → tool name, for tool_end
}

func newReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &reader{lines: formats.NewLineReader(r), opts: o}
}

func (r *reader) Next() (*formats.Event, error) {
	for r.queue.Len() == 0 {
		if err := r.readRecord(); err != nil {
			return nil, err
		}
	}
	return r.queue.Pop(), nil
}

func (r *reader) readRecord() error {
	line, err := r.lines.Next()
	if err != nil {
		return err
	}
	n := r.lines.Line()
	var rec record
	if err := r.opts.Report.UnmarshalObject(n, line, &rec); err != nil {
		return err
	}
	r.queue.Record(formats.Source{Dialect: r.opts.Dialect, Type: rec.Type, Line: append([]byte(nil), line...), LineNo: n},
		r.events(&rec, n)...)
	return nil
}

func (r *reader) events(rec *record, n int) []*formats.Event {
	ev := &formats.Event{}
	evs := []*formats.Event{ev}
	first := !r.open
	r.open = true
	switch rec.Type {
	case "text_delta":
		ev.Kind, ev.Text = formats.TextDelta, rec.Text
	case "thinking_delta":
		ev.Kind, ev.Text = formats.ThinkingDelta, rec.Text
	case "tool_start":
		ev.Kind = formats.ToolCall
		ev.Call = formats.Call{ID: rec.ToolID, Name: rec.ToolName, Args: rec.Args}
		if r.names == nil {
			r.names = map[string]string{}
		}
		r.names[rec.ToolID] = rec.ToolName
	case "tool_end":
		ev.Kind = formats.ToolResult
		ev.Call = formats.Call{ID: rec.ToolID, Name: r.names[rec.ToolID], Output: formats.TextOutput(stringOf(rec.Output)), Error: stringOf(rec.Error), Status: formats.Completed}
		if rec.Success == nil {
			r.opts.Report.Warn(n, "tool_end without success; kept as failed")
		}
		if rec.Success == nil || !*rec.Success {
			ev.Call.Status = formats.Failed
		}
	case "turn_end":
		ev.Kind, ev.Status = formats.TurnEnd, formats.Completed
	case "error":
		ev.Kind, ev.Text, ev.Severity = formats.Notice, rec.Message, formats.Error
		if rec.Severity != "" {
			ev.Severity = severityWords.Parse(rec.Severity)
		}
	case "done":
		return r.done(rec, n)
	case "raw":
		ev.Kind = formats.Raw
		if info, ok := runFacts(rec); ok {
			if info.SessionID != "" {
				r.session = info.SessionID
			}
			r.provider = info.Provider
			if first {
				// The provider's opening event: the run's facts.
				ev.Kind, ev.Run = formats.RunStart, info
			}
		}
	default:
		ev.Kind = formats.Raw
		if rec.Type == "" {
			r.opts.Report.Warn(n, "an event without a \"type\"; kept as an unknown event")
		}
	}
	return evs
}

// runFacts reads the run's facts from a provider's opening event.
func runFacts(rec *record) (formats.RunInfo, bool) {
	var p providerEvent
	if len(rec.Event) == 0 || rec.Event[0] != '{' || json.Unmarshal(rec.Event, &p) != nil {
		return formats.RunInfo{}, false
	}
	switch {
	case rec.Provider == "claude" && p.Type == "system" && p.Subtype == "init":
		return formats.RunInfo{SessionID: p.SessionID, Model: p.Model, Cwd: p.Cwd, Provider: "anthropic", AgentName: "claude"}, true
	case rec.Provider == "codex" && p.Type == "thread.started":
		return formats.RunInfo{SessionID: p.ThreadID, Provider: "openai", AgentName: "codex"}, true
	case rec.Provider == "gemini" && p.Type == "init":
		// Its timestamp stays in the payload: the other events of the
		// stream have none, and one time alone would only mislead.
		return formats.RunInfo{SessionID: p.SessionID, Model: p.Model, Provider: "gcp.gemini", AgentName: "gemini"}, true
	}
	return formats.RunInfo{}, false
}

// done ends the run: the answer when it succeeded, stderr as a notice, and
// RunEnd with the outcome, exit code, usage and duration.
func (r *reader) done(rec *record, n int) []*formats.Event {
	defer func() { r.open, r.session, r.provider, r.names = false, "", "", nil }()
	res := rec.Result
	if res == nil {
		r.opts.Report.Warn(n, "done without a result; kept as a failed run")
		res = &runResult{}
	}
	text, stderr := formats.Deref(res.Text), formats.Deref(res.Stderr)
	end := &formats.Event{Kind: formats.RunEnd, Status: formats.Completed,
		Run: formats.RunInfo{SessionID: r.session, ExitCode: formats.OptFrom(res.ExitCode)}}
	if res.SessionID != nil {
		end.Run.SessionID = *res.SessionID
	}
	var evs []*formats.Event
	switch {
	case res.Success:
		if text != "" {
			evs = append(evs, &formats.Event{Kind: formats.Answer, Text: text})
		}
	case text == cancelledText:
		end.Status, end.Text = formats.Cancelled, text
	default:
		end.Status, end.Text = formats.Failed, text
		if end.ErrorText() == "" {
			end.Text, stderr = stderr, ""
		}
	}
	if stderr != "" {
		evs = append(evs, &formats.Event{Kind: formats.Notice, Severity: formats.Info, Text: stderr})
	}
	if s := res.Stats; s != nil {
		end.Usage = formats.UsageInfo{InputTokens: formats.OptFrom(s.InputTokens), OutputTokens: formats.OptFrom(s.OutputTokens),
			TotalTokens: formats.OptFrom(s.TotalTokens), CacheReadTokens: formats.OptFrom(s.CachedTokens)}
		if r.provider == "anthropic" && end.Usage.InputTokens.OK {
			// The crate passes the provider's counts on: Claude's input
			// tokens leave out cached ones, which the model counts in.
			end.Usage.InputTokens.V += end.Usage.CacheReadTokens.V
		}
		if s.DurationMs != nil {
			end.Duration = time.Duration(*s.DurationMs) * time.Millisecond
		}
	}
	end.Usage.CostUSD = formats.OptFrom(res.CostUSD)
	return append(evs, end)
}

// stringOf reads a JSON string; another value gives its JSON text.
func stringOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.ToValidUTF8(string(raw), "\uFFFD")
}

// severityWords are the crate's severities besides the model's names.
var severityWords = formats.SeverityWords{"warn": formats.Warning, "Warning": formats.Warning, "Error": formats.Error,
	"fatal": formats.Error}
