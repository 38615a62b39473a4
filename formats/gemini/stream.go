// Package gemini reads and writes what Gemini CLI prints headless:
// gemini-stream (`--output-format stream-json`) and gemini-json
// (`--output-format json`, one pretty-printed object).
package gemini

import (
	"io"
	"regexp"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Stream is the gemini-stream dialect.
var Stream = formats.Dialect{
	Name:        "gemini-stream",
	Aliases:     []string{"gemini", "gemini-stream-json"},
	Description: "Gemini CLI `--output-format stream-json`: NDJSON init, message, tool_use, tool_result, error, result, each with a timestamp",
	NewReader:   newStreamReader,
	NewWriter:   newStreamWriter,
	Detect:      detectStream,
	Carries: formats.AllFeatures &^ (formats.ToolOutputValues | formats.SystemPrompts | formats.WorkingDirs | formats.Thinking | formats.Turns | formats.TurnStatuses |
		formats.ToolDurations | formats.Subagents | formats.SubagentCalls | formats.SubagentText | formats.SubagentReports |
		formats.SubagentAnswers | formats.SubagentNotices | formats.PermissionRequests | formats.PermissionAnswers |
		formats.TodoLists | formats.Compactions | formats.CompactionSummaries | formats.ModelChanges | formats.InfoNotices |
		formats.PerRequestUsage | formats.CacheWrites | formats.Costs | formats.RawEvents | formats.SubagentPrompts),
	Quirks: []formats.Quirk{formats.LateSessionIDs, lossLateModels, lossExitCodes},
}

// The losses of the stream's own encoding.
var (
	lossLateModels = formats.NewQuirk("model names given only at the run's end")
	lossExitCodes  = formats.NewQuirk("exit codes Gemini CLI does not use")
)

// Provider and agent name of the runs Gemini CLI prints.
const (
	Provider  = "gcp.gemini"
	AgentName = "gemini-cli"
)

var streamTypes = map[string]bool{
	"init": true, "message": true, "tool_use": true, "tool_result": true, "error": true, "result": true,
}

// detectStream wants Gemini's types with a timestamp on every line, and
// none of the fields that other dialects' "result" and "error" carry.
func detectStream(head []byte) int {
	return formats.DetectByTypes(head, func(line []byte, typ string) bool {
		if !streamTypes[typ] {
			return false
		}
		var probe struct {
			Timestamp *string          `json:"timestamp"`
			Seq       *json.RawMessage `json:"seq"`
			Subtype   *json.RawMessage `json:"subtype"`
		}
		// A timestamp that is no string (OpenCode's, in milliseconds)
		// fails the decoding: not Gemini CLI's.
		if json.Unmarshal(line, &probe) != nil {
			return false
		}
		return probe.Timestamp != nil && probe.Seq == nil && probe.Subtype == nil
	})
}

// streamLine is every field any gemini-stream event has.
type streamLine struct {
	Type       string          `json:"type"`
	Timestamp  string          `json:"timestamp"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Delta      bool            `json:"delta"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     *string         `json:"output"`
	Error      *errorObject    `json:"error"`
	Severity   string          `json:"severity"`
	Message    string          `json:"message"`
	Stats      *streamStats    `json:"stats"`
}

type errorObject struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code,omitempty"`
}

type streamStats struct {
	TotalTokens  *int64 `json:"total_tokens,omitempty"`
	InputTokens  *int64 `json:"input_tokens,omitempty"`
	OutputTokens *int64 `json:"output_tokens,omitempty"`
	Cached       *int64 `json:"cached,omitempty"`
	Input        *int64 `json:"input,omitempty"`
	DurationMs   *int64 `json:"duration_ms,omitempty"`
	ToolCalls    *int64 `json:"tool_calls,omitempty"`
}

type streamReader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	queue formats.EventQueue
	run   readRun
}

// readRun is what the reader keeps of the open run.
type readRun struct {
	sessionID, model string
	names            map[string]string // tool id -> tool name
	answer           answerTracker
	// lastError and denied give a failed result without an error object
	// its message: the last error, else the last refusal's reason.
	lastError, denied string
}

// answerTracker follows the main agent's last assistant message: a run of
// delta chunks is one message, a message without delta is one, and a tool
// call ends the text that could be the answer. Writer and reader share it,
// so that what the writer prints reads back as the same answer.
type answerTracker struct {
	text      formats.Text
	streaming bool
}

func (a *answerTracker) delta(s string) {
	if !a.streaming {
		a.text.Reset()
	}
	a.text.Add(s)
	a.streaming = true
}

func (a *answerTracker) whole(s string) { a.text.Set(s); a.streaming = false }
func (a *answerTracker) other()         { a.streaming = false }
func (a *answerTracker) tool()          { a.text.Reset(); a.streaming = false }

func newStreamReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &streamReader{lines: formats.NewLineReader(r), opts: o}
}

func (r *streamReader) Next() (*formats.Event, error) {
	if r.queue.Len() > 0 {
		return r.queue.Pop(), nil
	}
	b, err := r.lines.Next()
	if err != nil {
		return nil, err
	}
	n := r.lines.Line()
	var l streamLine
	if err := r.opts.Report.Unmarshal(n, b, &l); err != nil {
		return nil, err
	}
	ev := &formats.Event{Time: parseTime(l.Timestamp),
		Source: formats.Source{Dialect: r.opts.Dialect, Type: l.Type, Line: append([]byte(nil), b...), LineNo: n}}
	run := &r.run
	switch l.Type {
	case "init":
		*run = readRun{sessionID: l.SessionID, model: l.Model}
		ev.Kind = formats.RunStart
		ev.Run = formats.RunInfo{SessionID: l.SessionID, Model: l.Model, Provider: Provider, AgentName: AgentName}
	case "message":
		ev.Text = l.Content
		switch {
		case l.Role == "user":
			ev.Kind = formats.UserMessage
			run.answer.other()
		case l.Delta:
			ev.Kind = formats.TextDelta
			run.answer.delta(l.Content)
		default:
			ev.Kind = formats.Message
			run.answer.whole(l.Content)
		}
	case "tool_use":
		run.answer.tool()
		if run.names == nil {
			run.names = map[string]string{}
		}
		run.names[l.ToolID] = l.ToolName
		ev.Kind = formats.ToolCall
		ev.Call = formats.Call{ID: l.ToolID, Name: l.ToolName, Args: l.Parameters}
	case "tool_result":
		run.answer.tool()
		ev.Kind = formats.ToolResult
		ev.Call = formats.Call{ID: l.ToolID, Name: run.names[l.ToolID], Status: statusWords.Parse(l.Status)}
		if l.Output != nil {
			ev.Call.Output = formats.TextOutput(*l.Output)
		}
		if l.Error != nil {
			ev.Call.Error = l.Error.Message
			if s := toolErrorStatus[l.Error.Type]; s != formats.StatusUnknown {
				ev.Call.Status = s
			}
		}
		if ev.Call.Status == formats.StatusUnknown || ev.Call.Status == formats.Running {
			r.opts.Report.Warn(n, "tool_result status %q is not success or error; kept as failed", l.Status)
			ev.Call.Status = formats.Failed
		}
		if ev.Call.Status == formats.Denied {
			run.denied = ev.Call.Error
		}
	case "error":
		run.answer.other()
		ev.Kind = formats.Notice
		ev.Severity = severityWords.Parse(l.Severity)
		ev.Text = l.Message
		if ev.Severity == formats.Error {
			run.lastError = l.Message
		}
	case "result":
		r.result(ev, &l)
	default:
		ev.Kind = formats.Raw
		if l.Type == "" {
			r.opts.Report.Warn(n, "an event without a \"type\"; kept as an unknown event")
		}
	}
	return ev, nil
}

// result ends the run: its answer (the last assistant message), then
// RunEnd with the outcome, usage and duration.
func (r *streamReader) result(ev *formats.Event, l *streamLine) {
	end := &formats.Event{Kind: formats.RunEnd, Time: ev.Time, Source: ev.Source}
	end.Run = formats.RunInfo{SessionID: r.run.sessionID, Model: r.run.model, Provider: Provider, AgentName: AgentName}
	end.Status = formats.Completed
	if l.Status != "success" {
		end.Status = formats.Failed
	}
	switch {
	case l.Error != nil && l.Error.Message != "":
		end.Text = l.Error.Message
	case end.Status == formats.Failed && r.run.lastError != "":
		end.Text = r.run.lastError
	case end.Status == formats.Failed:
		end.Text = r.run.denied
	}
	end.Run.ExitCode = exitCode(end.Status, l.Error)
	if s := l.Stats; s != nil {
		end.Usage = usageOfCounts(s.InputTokens, s.OutputTokens, s.TotalTokens, s.Cached,
			thoughtsOfTotal(s.InputTokens, s.OutputTokens, s.TotalTokens))
		if s.DurationMs != nil {
			end.Duration = time.Duration(*s.DurationMs) * time.Millisecond
		}
	}
	if a := r.run.answer.text.String(); a != "" {
		*ev = formats.Event{Kind: formats.Answer, Text: a, Time: ev.Time, Source: ev.Source}
		end.Source.Line, end.Source.Continued = nil, true
		r.queue.Push(end)
	} else {
		*ev = *end
	}
	r.run = readRun{}
}

// Gemini CLI's exit codes, by the error type its result names.
var exitCodes = map[string]int{
	"FatalAuthenticationError": 41,
	"FatalInputError":          42,
	"FatalConfigError":         52,
	"FatalTurnLimitedError":    53,
	"FatalToolExecutionError":  54,
	"FatalCancellationError":   130,
}

// exitCode is the code Gemini CLI exits with, where the result says it: 0
// for success, a fatal error's own code, or the code the error carries.
func exitCode(s formats.Status, e *errorObject) formats.Opt[int] {
	if s == formats.Completed {
		return formats.Some(0)
	}
	if e == nil {
		return formats.Opt[int]{}
	}
	var code int
	if json.Unmarshal(e.Code, &code) == nil && code != 0 {
		return formats.Some(code)
	}
	if c, ok := exitCodes[e.Type]; ok {
		return formats.Some(c)
	}
	if status := apiStatus(e.Message); status > 0 {
		return formats.Some(status % 256)
	}
	return formats.Opt[int]{}
}

var apiErrorRe = regexp.MustCompile(`^\[API Error: (\{.*\})\]`)

// apiStatus is the HTTP status of the API error a message quotes
// ("[API Error: {"error":{"code":529,…}}]"), which Gemini CLI exits with,
// modulo 256 (529 gives 17, 429 173); 0 when it quotes none.
func apiStatus(msg string) int {
	m := apiErrorRe.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	var v struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(m[1]), &v) != nil || v.Error.Code < 400 || v.Error.Code > 599 {
		return 0
	}
	return v.Error.Code
}

// errorType names the error of a run that exits with code, for the result.
func errorType(code formats.Opt[int]) string {
	if code.OK {
		for t, c := range exitCodes {
			if c == code.V {
				return t
			}
		}
	}
	return "Error"
}

// Tool error types this package writes for the statuses besides failed.
const (
	errDenied    = "permission_denied"
	errCancelled = "cancelled"
)

var toolErrorStatus = map[string]formats.Status{errDenied: formats.Denied, errCancelled: formats.Cancelled}

// parseTime reads an ISO 8601 timestamp; a bad one is no time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// formatTime prints a time as JavaScript's toISOString does.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// statusWords and severityWords are Gemini CLI's words.
var (
	statusWords   = formats.StatusWords{"success": formats.Completed, "error": formats.Failed}
	severityWords = formats.SeverityWords{"warn": formats.Warning, "Warning": formats.Warning, "Error": formats.Error}
)
