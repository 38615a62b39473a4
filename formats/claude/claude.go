// Package claude reads and writes what Claude Code prints when it runs
// headless: claude-stream (`claude -p --output-format stream-json
// --verbose`) and claude-json (`--output-format json`: the result object,
// or with --verbose the JSON array of every message).
package claude

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Provider and AgentName are what runs read from Claude Code carry.
const (
	Provider  = "anthropic"
	AgentName = "claude-code"
)

// Stream is the claude-stream dialect.
var Stream = formats.Dialect{
	Name:        "claude-stream",
	Aliases:     []string{"claude", "claude-stream-json"},
	Description: "Claude Code `-p --output-format stream-json --verbose`: NDJSON system/init, assistant, user, result, stream_event",
	NewReader: func(r io.Reader, o formats.ReadOptions) formats.Reader {
		return newReader(&lineSource{lines: formats.NewLineReader(r)}, o, Copy{})
	},
	NewWriter: newStreamWriter,
	Detect:    detectStream,
	Carries:   streamCarries,
	Quirks:    streamQuirks,
}

// What claude-stream carries: no event times, turn boundaries, notices
// below error, permission prompts, tool durations or reasoning counts; a
// cancelled call is an error, and a subagent's notices and answers are
// the run's.
const streamCarries = formats.AllFeatures &^ (formats.ToolOutputValues | formats.SystemPrompts | formats.Timestamps | formats.Turns | formats.TurnStatuses |
	formats.ToolDurations | formats.CancelledCalls | formats.SubagentAnswers | formats.SubagentNotices |
	formats.PermissionRequests | formats.PermissionAnswers | formats.CompactionSummaries |
	formats.InfoNotices | formats.WarningNotices | formats.ReasoningTokens | formats.RawEvents)

var streamQuirks = []formats.Quirk{formats.ExitCodesBeyondRefusal, formats.FailedRunAnswers, formats.CancelledRunsAsErrors, lossReasons,
	formats.MergedToolErrors, lossTruncation, lossReports, lossLooseTodos, lossSilentAgents, lossCalllessAgents,
	lossAgentDirs, lossLateUsage, lossUnprintedUsage}

// Copy is another agent's copy of claude-stream and claude-json, which the
// same reader and writer serve with that agent's name and counts: Qwen
// Code's (package qwen) and Amp's (`amp -x --stream-json`). These agents
// use the models of several providers, which their output does not name.
type Copy struct {
	// Agent names the agent of the runs read; "" is Claude Code.
	Agent string
	// OpenAICounts: input_tokens include the cached tokens (the OpenAI
	// convention the agent gets them in), and the result's usage counts
	// every request of the run, its subagents' included; after a resume,
	// it is the session's running total (Qwen Code's).
	OpenAICounts bool
	// Refusals are texts of the agent's own tool errors that say a call
	// needed a permission it did not get, besides Claude Code's.
	Refusals []string
}

// refused reports whether a tool error is the agent's refusal of a call
// that needed a permission.
func (c Copy) refused(text string) bool {
	for _, s := range c.Refusals {
		if strings.Contains(text, s) {
			return true
		}
	}
	return isRefusal(text)
}

// StreamReader reads the copy's claude-stream.
func (c Copy) StreamReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return newReader(&lineSource{lines: formats.NewLineReader(r)}, o, c)
}

// JSONReader reads the copy's claude-json (the --verbose message array).
func (c Copy) JSONReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return newReader(&valueSource{values: formats.NewValueReader(r)}, o, c)
}

// StreamWriter writes claude-stream by the copy's counts.
func (c Copy) StreamWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return newStreamWriterAs(w, o, c)
}

// JSONWriter writes claude-json by the copy's counts.
func (c Copy) JSONWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return newJSONWriterAs(w, o, c)
}

// StreamCarries, StreamQuirks, JSONCarries and JSONQuirks are what the
// claude-stream and claude-json writers carry and report, a copy's too.
const (
	StreamCarries = streamCarries
	JSONCarries   = jsonCarries
)

var (
	StreamQuirks = streamQuirks
	JSONQuirks   = jsonQuirks
)

// Amp prints a copy of claude-stream (`amp -x --stream-json`) whose
// content cannot be told apart from Claude Code's: it is never detected,
// --from names it.
var ampCopy = Copy{Agent: "amp"}

var Amp = formats.Dialect{
	Name:        "amp",
	Description: "Amp `-x --stream-json`: a copy of claude-stream (never detected: use --from)",
	NewReader:   ampCopy.StreamReader,
	NewWriter:   ampCopy.StreamWriter,
	Carries:     streamCarries,
	Quirks:      streamQuirks,
}

// agent is the provider and agent name of the runs a copy reads.
func (c Copy) agent() (provider, agent string) {
	if c.Agent != "" {
		return "", c.Agent
	}
	return Provider, AgentName
}

// JSON is the claude-json dialect.
var JSON = formats.Dialect{
	Name:        "claude-json",
	Description: "Claude Code `-p --output-format json`: the result object per run (reads the --verbose message array too)",
	NewReader: func(r io.Reader, o formats.ReadOptions) formats.Reader {
		return newReader(&valueSource{values: formats.NewValueReader(r)}, o, Copy{})
	},
	NewWriter: newJSONWriter,
	Detect:    detectJSON,
	Carries:   jsonCarries,
	Quirks:    jsonQuirks,
}

// A result object holds the run's outcome, answer, errors, refusals,
// usage, cost and duration.
const jsonCarries = formats.AssistantText | formats.Refusals | formats.TokenUsage | formats.CacheWrites |
	formats.Costs | formats.RunDurations | formats.RunOutcomes

var jsonQuirks = []formats.Quirk{formats.ExtraMessages, formats.ExitCodesBeyondRefusal, formats.FailedRunAnswers, formats.CancelledRunsAsErrors, lossReasons}

// probe is what detection looks at in a message.
type probe struct {
	Type            string           `json:"type"`
	Subtype         *json.RawMessage `json:"subtype"`
	SessionID       *string          `json:"session_id"`
	ParentToolUseID *json.RawMessage `json:"parent_tool_use_id"`
	Message         *json.RawMessage `json:"message"`
	Event           *json.RawMessage `json:"event"`
	IsError         *json.RawMessage `json:"is_error"`
	UUID            *json.RawMessage `json:"uuid"`
	// Other dialects' envelopes: malac's seq, and the camelCase session id
	// of Claude Code's own transcript files. A timestamp is Gemini's, but
	// newer Claude Code stamps its messages too.
	Timestamp *json.RawMessage `json:"timestamp"`
	Seq       *json.RawMessage `json:"seq"`
	SessionId *json.RawMessage `json:"sessionId"`
}

// claudeMessage reports whether a JSON object is a Claude Code message.
func claudeMessage(b []byte) (typ string, ok bool) {
	var p probe
	if json.Unmarshal(b, &p) != nil || p.Seq != nil || p.SessionId != nil {
		return "", false
	}
	marked := p.SessionID != nil || p.ParentToolUseID != nil
	switch p.Type {
	case "system":
		return p.Type, marked && p.Subtype != nil
	case "assistant", "user":
		return p.Type, marked && p.Message != nil
	case "result":
		return p.Type, p.SessionID != nil && (p.Subtype != nil || p.IsError != nil)
	case "stream_event":
		return p.Type, marked && p.Event != nil
	}
	// Newer types (rate_limit_event, …) share the envelope.
	return p.Type, p.Type != "" && p.SessionID != nil && p.UUID != nil && p.Timestamp == nil
}

func streamShape(head []byte) int {
	results := 0
	score := formats.DetectByTypes(head, func(line []byte, _ string) bool {
		typ, ok := claudeMessage(line)
		if ok && typ == "result" {
			results++
		}
		return ok
	})
	if score > 0 && results == len(formats.HeadLines(head, 8)) {
		// Result objects alone are what --output-format json prints.
		return 60
	}
	return score
}

// StreamShape and JSONShape score how much the head looks like
// claude-stream and claude-json, whoever printed it: a copy's detection
// (package qwen) builds on them. Claude's own detection gives half where
// the init message is Qwen Code's (QwenInit), which its copy claims.
func StreamShape(head []byte) int { return streamShape(head) }

// JSONShape: see StreamShape.
func JSONShape(head []byte) int { return detectJSONOf(head) }

func detectStream(head []byte) int { return notQwen(streamShape(head), head) }

func detectJSON(head []byte) int { return notQwen(detectJSONOf(head), head) }

func notQwen(score int, head []byte) int {
	if score > 1 && QwenInit(head) {
		return score / 2
	}
	return score
}

// qwenInit is the field of Qwen Code's system init message that Claude
// Code's has not.
var qwenInit = regexp.MustCompile(`"subtype"\s*:\s*"init"[^\n]*"qwen_code_version"\s*:`)

// QwenInit says whether the head's init message is Qwen Code's, whose
// copies of claude-stream and claude-json then score above Claude's.
func QwenInit(head []byte) bool {
	return bytes.Contains(head, []byte(`"qwen_code_version"`)) && qwenInit.Match(head)
}

var (
	arrayStart  = regexp.MustCompile(`^\[\s*\{\s*"type"\s*:\s*"(system|assistant|user|result)"`)
	resultStart = regexp.MustCompile(`^\{\s*"type"\s*:\s*"result"`)
)

func detectJSONOf(head []byte) int {
	t := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(t) == 0 || (t[0] != '[' && t[0] != '{') {
		return 0
	}
	v := formats.NewValueReader(bytes.NewReader(t))
	v.Elements = true
	first, _, err := v.Next()
	if err != nil {
		// The head cut the first value: look at how it starts.
		switch {
		case arrayStart.Match(t):
			return 80
		case resultStart.Match(t):
			return 70
		}
		return 0
	}
	if _, ok := claudeMessage(first); !ok {
		return 0
	}
	switch {
	case t[0] == '[':
		return 95
	case isOnlyResults(t):
		return 85
	}
	// Messages one object after another: claude-stream's, unless they are
	// pretty-printed, which only this reader can read.
	return 40
}

// isOnlyResults reports whether every value in the head is a result object.
func isOnlyResults(t []byte) bool {
	v := formats.NewValueReader(bytes.NewReader(t))
	for i := 0; i < 8; i++ {
		b, _, err := v.Next()
		if err != nil {
			return i > 0
		}
		if typ, _ := claudeMessage(b); typ != "result" {
			return false
		}
	}
	return true
}

// isRefusal reports whether a tool error is Claude Code's refusal of a
// call that needed a permission: the tool_result it prints for a call that
// the result's permission_denials then lists.
func isRefusal(text string) bool {
	for _, s := range refusalTexts {
		if strings.Contains(text, s) {
			return true
		}
	}
	return strings.HasPrefix(text, "Permission to use ") && strings.Contains(text, " has been denied")
}

var refusalTexts = []string{
	"but you haven't granted it yet",
	"This command requires approval",
	"The user doesn't want to proceed with this tool use",
}

func itoa(n int) string { return strconv.Itoa(n) }

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
