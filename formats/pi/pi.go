// Package pi reads what pi (the coding agent of @mariozechner/pi-coding-agent,
// the command pi) prints and keeps: pi, its `--mode json` stream; and
// pi-session, its session files, which it also writes so that pi resumes a
// session converted from another agent.
package pi

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// AgentName is the agent of the runs read from pi.
const AgentName = "pi"

// message is a pi AgentMessage, as its stream and its session files hold
// it: user, assistant, toolResult, and pi's own roles (bashExecution,
// custom, branchSummary, compactionSummary).
type message struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"` // a string, or blocks
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	Usage        *usage          `json:"usage"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Timestamp    int64           `json:"timestamp"` // Unix ms
	ResponseID   string          `json:"responseId"`
	ToolCallID   string          `json:"toolCallId"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	Summary      string          `json:"summary"`
}

// block is one content block: text, thinking (with the provider's
// signature), toolCall, or image.
type block struct {
	Type              string          `json:"type"`
	Text              string          `json:"text"`
	Thinking          string          `json:"thinking"`
	ThinkingSignature string          `json:"thinkingSignature"`
	ID                string          `json:"id"`
	Name              string          `json:"name"`
	Arguments         json.RawMessage `json:"arguments"`
}

// usage is an assistant message's counts, by pi's convention: input
// without the cache, cacheRead and cacheWrite apart, output with the
// reasoning; and the cost in dollars, by the model's price.
type usage struct {
	Input       *int64 `json:"input"`
	Output      *int64 `json:"output"`
	CacheRead   *int64 `json:"cacheRead"`
	CacheWrite  *int64 `json:"cacheWrite"`
	TotalTokens *int64 `json:"totalTokens"`
	Cost        *struct {
		Total *float64 `json:"total"`
	} `json:"cost"`
}

func (m *message) blocks() []block {
	if len(m.Content) == 0 || m.Content[0] != '[' {
		return nil
	}
	var bs []block
	json.Unmarshal(m.Content, &bs) //nolint:errcheck // no blocks
	return bs
}

// text joins the message's text, a string content or its text blocks.
func (m *message) text() string {
	if len(m.Content) > 0 && m.Content[0] == '"' {
		var s string
		json.Unmarshal(m.Content, &s) //nolint:errcheck // no text
		return s
	}
	var parts []string
	for _, b := range m.blocks() {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// info converts pi's counts to the OpenTelemetry GenAI convention: the
// input counts the cache reads and writes.
func (u *usage) info() formats.UsageInfo {
	if u == nil {
		return formats.UsageInfo{}
	}
	in := formats.OptFrom(u.Input).Plus(formats.OptFrom(u.CacheRead)).Plus(formats.OptFrom(u.CacheWrite))
	info := formats.UsageInfo{InputTokens: formats.Opt[int64]{V: in.V, OK: u.Input != nil}, OutputTokens: formats.OptFrom(u.Output),
		CacheReadTokens: formats.OptFrom(u.CacheRead), CacheWriteTokens: formats.OptFrom(u.CacheWrite), TotalTokens: formats.OptFrom(u.TotalTokens)}
	if u.Cost != nil {
		info.CostUSD = formats.OptFrom(u.Cost.Total)
	}
	return info
}

// zero: pi's counts of a request that failed before any answer.
func (u *usage) zero() bool {
	if u == nil {
		return true
	}
	for _, p := range []*int64{u.Input, u.Output, u.CacheRead, u.CacheWrite, u.TotalTokens} {
		if p != nil && *p != 0 {
			return false
		}
	}
	return u.Cost == nil || u.Cost.Total == nil || *u.Cost.Total == 0
}

// msTime is a message's Unix ms time.
func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// errorCode is the provider's error type in an errorMessage that holds
// the API's error body ("529 {"error":{…,"type":"overloaded_error"}}").
var errorCode = regexp.MustCompile(`"type"\s*:\s*"([a-z_]+_error)"`)

func codeOf(msg string) string {
	if m := errorCode.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// events are the events of one message of agent "" (pi has no
// subagents): a prompt, an answer (its text, thinking, usage, calls and
// error), or a tool's result. model is the model so far, which an answer
// of another model changes.
type events struct {
	emit  func(e *formats.Event)
	model string
	// last is the last answer, its text and how it stopped.
	lastText, stop, errMsg string
}

func (x *events) message(m *message, at time.Time) {
	if at.IsZero() {
		at = msTime(m.Timestamp)
	}
	switch m.Role {
	case "user":
		if t := m.text(); t != "" {
			x.emit(&formats.Event{Kind: formats.UserMessage, Time: at, Text: t})
			return
		}
	case "assistant":
		x.assistant(m, at)
		return
	case "toolResult":
		c := formats.Call{ID: m.ToolCallID, Name: m.ToolName, Status: formats.Completed, Output: formats.TextOutput(m.text())}
		if m.IsError {
			c.Status, c.Error = formats.Failed, c.Output.Text()
		}
		x.emit(&formats.Event{Kind: formats.ToolResult, Time: at, Call: c})
		return
	case "compactionSummary":
		x.emit(&formats.Event{Kind: formats.Compaction, Time: at, Text: m.Summary})
		return
	}
	x.emit(&formats.Event{Kind: formats.Raw, Time: at, Source: formats.Source{Type: "message:" + m.Role}})
}

func (x *events) assistant(m *message, at time.Time) {
	if m.Model != "" {
		if x.model != "" && x.model != m.Model {
			x.emit(&formats.Event{Kind: formats.ModelChange, Time: at, Run: formats.RunInfo{Model: m.Model}})
		}
		x.model = m.Model
	}
	var text, thinking []string
	var thoughts []formats.Thought
	var calls []formats.Call
	for _, b := range m.blocks() {
		switch b.Type {
		case "text":
			if b.Text != "" {
				text = append(text, b.Text)
			}
		case "thinking":
			if b.Thinking != "" {
				thinking = append(thinking, b.Thinking)
				thoughts = append(thoughts, formats.Thought{Text: b.Thinking, Signature: b.ThinkingSignature})
			}
		case "toolCall":
			args := b.Arguments
			if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
			calls = append(calls, formats.Call{ID: b.ID, Name: b.Name, Args: args})
		}
	}
	ev := &formats.Event{Kind: formats.Message, Time: at, Text: strings.Join(text, "\n"), Thinking: strings.Join(thinking, "\n")}
	if anySigned(thoughts) {
		ev.Thoughts = thoughts
	}
	if ev.MessageText() != "" || ev.Thinking != "" {
		x.emit(ev)
	}
	if !(m.StopReason == "error" && m.Usage.zero()) {
		// A request that failed before any answer was not billed: pi
		// counts it 0.
		x.emit(&formats.Event{Kind: formats.Usage, Time: at, Usage: m.Usage.info(),
			Response: formats.Response{ID: m.ResponseID, Model: m.Model, StopReason: m.StopReason}})
	}
	for _, c := range calls {
		x.emit(&formats.Event{Kind: formats.ToolCall, Time: at, Call: c})
	}
	if m.StopReason == "error" {
		msg := m.ErrorMessage
		if msg == "" {
			msg = "the model request failed"
		}
		x.emit(&formats.Event{Kind: formats.Notice, Time: at, Severity: formats.Error, Text: msg, Code: codeOf(msg)})
	}
	x.stop, x.errMsg = m.StopReason, m.ErrorMessage
	if ev.MessageText() != "" {
		x.lastText = ev.MessageText()
	}
}

func anySigned(ts []formats.Thought) bool {
	for _, t := range ts {
		if t.Signature != "" {
			return true
		}
	}
	return false
}

// end is the RunEnd of a run whose last answer stopped as x.stop: an
// error is a failure, aborted a cancellation; a run that ended otherwise
// gives its answer first.
func (x *events) end(at time.Time, run formats.RunInfo) {
	end := &formats.Event{Kind: formats.RunEnd, Time: at, Status: formats.Completed, Run: run}
	end.Run.Model = x.model
	switch x.stop {
	case "error":
		end.Status, end.Text, end.Code = formats.Failed, x.errMsg, codeOf(x.errMsg)
		if end.ErrorText() == "" {
			end.Text = "the model request failed"
		}
	case "aborted":
		end.Status, end.Text = formats.Cancelled, x.errMsg
	default:
		if x.lastText != "" {
			x.emit(&formats.Event{Kind: formats.Answer, Time: at, Text: x.lastText})
		}
	}
	x.emit(end)
}

// header is the session header, the first line of both dialects.
type header struct {
	Type      string `json:"type"`
	Version   *int   `json:"version"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Cwd       string `json:"cwd"`
	// ParentSession: the file a forked session came from.
	ParentSession string `json:"parentSession"`
}

// isHeader says whether a line is a session header: type session, an id,
// a version, and no parentId (every entry of the tree has one).
func isHeader(line []byte) bool {
	if formats.TypeOf(line) != "session" || bytes.Contains(line, []byte(`"parentId"`)) {
		return false
	}
	var h header
	return json.Unmarshal(line, &h) == nil && h.ID != "" && h.Version != nil
}

// detect scores a head whose first line is pi's session header by the
// share of its lines that known claims.
func detect(head []byte, known func(line []byte, typ string) bool) int {
	lines := formats.HeadLines(head, 8)
	if len(lines) == 0 || !isHeader(lines[0]) {
		return 0
	}
	return formats.DetectByTypes(head, func(line []byte, typ string) bool {
		return typ == "session" && isHeader(line) || known(line, typ)
	})
}

// sessionsDir is where pi keeps its session files: $PI_CODING_AGENT_SESSION_DIR,
// else $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions.
func sessionsDir(getenv func(string) string) []string {
	if d := getenv("PI_CODING_AGENT_SESSION_DIR"); d != "" {
		return []string{expandHome(d, getenv)}
	}
	if d := getenv("PI_CODING_AGENT_DIR"); d != "" {
		return []string{filepath.Join(expandHome(d, getenv), "sessions")}
	}
	if h := getenv("HOME"); h != "" {
		return []string{filepath.Join(h, ".pi", "agent", "sessions")}
	}
	return nil
}

func expandHome(p string, getenv func(string) string) string {
	if h := getenv("HOME"); h != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return h + p[1:]
	}
	return p
}
