package formats

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/goccy/go-json"
)

// Kind says what an Event is. The comment of each kind lists the Event fields
// it uses, besides Kind, Time, Agent and Source, which every kind may set.
type Kind uint8

const (
	// KindUnknown is the zero Kind; no reader emits it.
	KindUnknown Kind = iota
	// RunStart opens a run: Run (session id, model, cwd, provider) as far as
	// the source knows them at the start.
	RunStart
	// RunEnd closes a run: Status, Run.ExitCode, Run.SessionID, Run.Model,
	// Text (the error message, if any: ErrorText), Usage (run totals), Duration, Cut.
	RunEnd
	// AgentStart: a subagent starts. Agent is its id; AgentInfo holds its
	// label, parent agent and the call that spawned it. The main agent of a
	// run needs no AgentStart: it is the run itself.
	AgentStart
	// AgentEnd: a subagent ended, with Status and Text (its report: Report).
	AgentEnd
	// TurnStart: the agent begins a model turn.
	TurnStart
	// TurnEnd: a turn ended, with Status and Text (its final text, if the
	// source says it: FinalText).
	TurnEnd
	// UserMessage: a prompt or follow-up; Text (Prompt). AgentInfo.Label names the
	// agent that sent it when no person did: a message another agent of
	// the team gave the running agent (Codex's subagent reporting to its
	// parent), which is not a prompt.
	UserMessage
	// TextDelta: a piece of streamed assistant text; Text (Piece).
	TextDelta
	// ThinkingDelta: a piece of streamed reasoning; Text (Piece).
	ThinkingDelta
	// Message: a whole assistant message; Text (MessageText), and Thinking when the
	// message carried reasoning. Sources that stream deltas and then repeat
	// the whole message emit both; writers use formats.TextTracker so that
	// they do not print the text twice.
	Message
	// ToolCall: a tool call starts; Call.ID, Call.Name, Call.Args,
	// Call.Summary.
	ToolCall
	// ToolResult: a tool call ended; Call.ID, Call.Name, Call.Status,
	// Call.Output, Call.Error, Call.Duration. A denied call is a ToolResult
	// with Call.Status Denied and Call.Error the reason.
	ToolResult
	// PermissionRequest: a call waits for approval; Permission.RequestID,
	// Call.ID, Call.Name, Call.Args, Call.Summary.
	PermissionRequest
	// PermissionAnswer: the approval was answered; Permission.
	PermissionAnswer
	// Usage: tokens and cost of one model request; Usage, and Response as
	// far as the source says it.
	Usage
	// Todos: the task list changed; Todos.
	Todos
	// Compaction: the conversation was compacted; Text (the summary: Summary).
	Compaction
	// Notice: a message for the user, a warning or an error; Severity, Text
	// (NoticeText).
	Notice
	// ModelChange: the agent switched models; Run.Model.
	ModelChange
	// Answer: the run's final answer; Text (AnswerText).
	Answer
	// Raw: an event the reader could not interpret; only Source is set
	// (Source.Type names it), so that a writer of the same dialect can print
	// it unchanged and every other writer reports it as a loss.
	Raw
	kindCount
)

var kindNames = [kindCount]string{
	KindUnknown: "unknown", RunStart: "run_start", RunEnd: "run_end",
	AgentStart: "agent_start", AgentEnd: "agent_end", TurnStart: "turn_start",
	TurnEnd: "turn_end", UserMessage: "user_message", TextDelta: "text_delta",
	ThinkingDelta: "thinking_delta", Message: "message", ToolCall: "tool_call",
	ToolResult: "tool_result", PermissionRequest: "permission_request",
	PermissionAnswer: "permission_answer", Usage: "usage", Todos: "todos",
	Compaction: "compaction", Notice: "notice", ModelChange: "model_change",
	Answer: "answer", Raw: "raw",
}

func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Status is the outcome of a tool call, a turn, an agent or a run.
type Status uint8

const (
	StatusUnknown Status = iota
	Running
	Completed
	Failed
	Cancelled
	// Denied: the call needed an approval that was refused or that nobody
	// could give; it did not run.
	Denied
)

var statusNames = [...]string{"", "running", "completed", "failed", "cancelled", "denied"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// ParseStatus maps the model's own status names (as String gives them)
// onto Status, and anything else to StatusUnknown. A dialect's own words
// are its own StatusWords.
func ParseStatus(s string) Status {
	for i, n := range statusNames {
		if n != "" && n == s {
			return Status(i)
		}
	}
	return StatusUnknown
}

// StatusWords is one dialect's words for statuses; a dialect declares its
// own, so that the model holds no dialect's spelling.
type StatusWords map[string]Status

// Parse maps a word onto Status: the dialect's word, else the model's own
// name, else StatusUnknown.
func (w StatusWords) Parse(s string) Status {
	if st, ok := w[s]; ok {
		return st
	}
	return ParseStatus(s)
}

// OK reports whether the status counts as success.
func (s Status) OK() bool { return s == Completed }

// Severity grades a Notice.
type Severity uint8

const (
	Info Severity = iota
	Warning
	Error
)

var severityNames = [...]string{"info", "warning", "error"}

func (s Severity) String() string {
	if int(s) < len(severityNames) {
		return severityNames[s]
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// ParseSeverity maps the model's own severity names onto Severity; any
// other word is Info. A dialect's own words are its own SeverityWords.
func ParseSeverity(s string) Severity {
	for i, n := range severityNames {
		if n == s {
			return Severity(i)
		}
	}
	return Info
}

// SeverityWords is one dialect's words for severities.
type SeverityWords map[string]Severity

// Parse maps a word onto Severity: the dialect's word, else the model's
// own name, else Info.
func (w SeverityWords) Parse(s string) Severity {
	if sv, ok := w[s]; ok {
		return sv
	}
	return ParseSeverity(s)
}

// Event is one thing that happened in a run. Which fields are set depends on
// Kind (see the Kind constants). Events are passed by pointer through the
// pipeline and must not be kept by a writer after Write returns unless it
// copies them.
type Event struct {
	Kind Kind
	// Time is when the source says the event happened; zero when the source
	// has no timestamps. Readers never invent times.
	Time time.Time
	// Arrived is when the pipeline received the event (or the fixed clock's
	// reading with --deterministic). Writers that need a time the source
	// lacks use TimeOf, so that a live pipe gives real durations.
	Arrived time.Time
	// Agent is the id of the agent the event belongs to; empty for the main
	// agent of the run.
	Agent string
	// Source is the verbatim input that produced the event.
	Source Source

	// Text is the event's text; what it means depends on Kind, and each
	// meaning has an accessor that names it and gives "" for any other
	// kind: Prompt (UserMessage), Piece (TextDelta, ThinkingDelta),
	// MessageText (Message), AnswerText (Answer), ErrorText (RunEnd),
	// Report (AgentEnd), FinalText (TurnEnd), Summary (Compaction) and
	// NoticeText (Notice). No other kind has a text. Readers set the field
	// beside the Kind that gives it its meaning; everyone else reads it
	// through the accessor of the meaning they want.
	Text string
	// Thinking is a Message's reasoning, its blocks' texts joined (see
	// Thoughts); empty when it had none.
	Thinking string
	// Thoughts are a Message's thinking blocks one by one, as Anthropic's
	// API gives them (Claude Code's sources): each block's text and the
	// signature the API gave it, which the API wants back unchanged when
	// the conversation goes on. Thinking joins their texts. Empty when the
	// source gives no blocks (a signature is not a Gemini thought
	// signature, nor anything of another provider).
	Thoughts []Thought
	// Code is a low-cardinality code of an error (an error Notice, the
	// RunEnd of a run that failed): the provider's where the source gives
	// it (overloaded_error), else empty.
	Code string
	// Status is the outcome of a TurnEnd, AgentEnd or RunEnd (the run
	// view settles a RunEnd's); a tool call's is Call.Status.
	Status Status
	// Severity grades a Notice.
	Severity Severity
	// Duration of a tool call (ToolResult) or of the run (RunEnd); zero when
	// unknown.
	Duration time.Duration
	// Cut marks a RunEnd that the source never gave: the stream stopped
	// before the run ended.
	Cut bool
	// Aggregate marks a Usage event that counts a whole turn, whose model
	// requests the source does not tell apart (Codex's exec --json): its
	// counts are several requests', and no writer takes it for one.
	Aggregate bool
	// Unrecorded marks a Usage event whose request's output the source did
	// not record: a trace written without its messages' content (OpenTelemetry's
	// default) holds a chat span's counts and not what it answered. The
	// request answered; its answer is not here.
	Unrecorded bool
	// Synthetic says one thing: no reader made this event; the pipeline
	// (or Standalone's follower, in its place) did: the RunStart of a
	// stream without one, and the events that close a cut or interrupted
	// run. It says nothing of a record: a synthetic event has none. A
	// writer copying its own dialect verbatim only observes them. An event
	// a reader made without a record of its own is not Synthetic (see
	// Source).
	Synthetic bool

	// Run describes the run at RunStart and RunEnd; a ModelChange sets
	// only Run.Model, the model switched to.
	Run RunInfo
	// AgentInfo describes a subagent at AgentStart; a UserMessage sets
	// only Label (see UserMessage).
	AgentInfo AgentInfo
	// Call is the tool call of a ToolCall, ToolResult or
	// PermissionRequest.
	Call Call
	// Permission is the request of a PermissionRequest and the answer of
	// a PermissionAnswer.
	Permission Permission
	// Usage is the counts of one request (Usage) or the run's totals
	// (RunEnd).
	Usage UsageInfo
	// Response is what the source says of the model's answer (Usage).
	Response Response
	// Todos is the task list after the change (Todos).
	Todos []Todo
}

// textOf is Text when the event is of kind k, else "".
func (e *Event) textOf(k Kind) string {
	if e.Kind == k {
		return e.Text
	}
	return ""
}

// Prompt is a UserMessage's text: what the user (or, when
// AgentInfo.Label names one, another agent of the team) said to the agent.
func (e *Event) Prompt() string { return e.textOf(UserMessage) }

// Piece is the piece of streamed text a TextDelta or ThinkingDelta
// carries: assistant text or reasoning, as Kind says; the whole text is
// the pieces joined.
func (e *Event) Piece() string {
	if e.Kind == TextDelta || e.Kind == ThinkingDelta {
		return e.Text
	}
	return ""
}

// MessageText is the text of a whole assistant Message (its reasoning is
// Thinking).
func (e *Event) MessageText() string { return e.textOf(Message) }

// AnswerText is the run's final answer, as an Answer event gives it.
func (e *Event) AnswerText() string { return e.textOf(Answer) }

// ErrorText is the error message a RunEnd gives, empty when the run
// ended without one.
func (e *Event) ErrorText() string { return e.textOf(RunEnd) }

// Report is what a subagent reported to its parent when it ended
// (AgentEnd).
func (e *Event) Report() string { return e.textOf(AgentEnd) }

// FinalText is the text a turn ended with (TurnEnd), when the source says
// it apart from the turn's messages.
func (e *Event) FinalText() string { return e.textOf(TurnEnd) }

// Summary is the summary a Compaction left in place of the conversation.
func (e *Event) Summary() string { return e.textOf(Compaction) }

// NoticeText is a Notice's message; Severity grades it.
func (e *Event) NoticeText() string { return e.textOf(Notice) }

// TimeOf is the source's time when it has one, else the arrival time.
func (e *Event) TimeOf() time.Time {
	if !e.Time.IsZero() {
		return e.Time
	}
	return e.Arrived
}

// Stamps gives the records a writer makes their times, for a target
// whose reader orders its records by time (Claude Code resumes a session
// from its latest record, and mixes up records that share a time): the
// source's time where the event has one, as it is. An event without one
// gets the last record's time plus a millisecond; in a source without
// any times, the arrival time (to the millisecond) when that is later.
// So the times of a source without any strictly increase (a file read at
// once arrives within a millisecond), the events a timed source leaves
// without a time follow its times rather than jump to the day the file
// was read, and no record has the zero time: with no time to follow, the
// first is FixedEpoch's next millisecond.
type Stamps struct {
	last time.Time
	// timed: the source gave a time.
	timed bool
}

// Next is the time of the next record, made from event e.
func (s *Stamps) Next(e *Event) time.Time {
	if !e.Time.IsZero() {
		s.last, s.timed = e.Time, true
		return e.Time
	}
	if s.last.IsZero() {
		s.last = FixedEpoch
	}
	t := e.Arrived.Truncate(time.Millisecond)
	if s.timed || !t.After(s.last) {
		t = s.last.Truncate(time.Millisecond).Add(time.Millisecond)
	}
	s.last = t
	return t
}

// Thought is one thinking block of an Anthropic message.
type Thought struct {
	Text string
	// Signature is the API's signature of the block; empty when the
	// source did not keep it (a stream cut before the whole message).
	Signature string
}

// Source keeps the input that an Event came from, so that a writer of the
// same dialect can reproduce it byte for byte (pandoc's raw node).
type Source struct {
	// Dialect names the registry entry whose reader produced the event.
	Dialect string
	// Type is the source's own name for the event, e.g. "tool_started".
	Type string
	// Line is the input record (one JSON line, or one JSON value) that
	// produced this event, without its line ending. When one record yields
	// several events, only the first carries Line and the others set
	// Continued, so that a same-dialect writer prints the record once.
	Line []byte
	// Continued says one thing: an earlier event already carried this
	// event's record in its Line, so a same-dialect writer that prints
	// records must not print it again (and Line is nil).
	Continued bool
	// Made says one thing: the reader made this event, and no record of
	// the input is its own (Line is nil, and Continued is false): the end
	// of a run that its dialect never prints, a RunStart before a
	// stream's first record, a whole message gathered from its deltas at
	// a cut. A writer of the same dialect has nothing to copy for it. It
	// is not Event.Synthetic, which marks what the pipeline made.
	Made bool
	// Known says one thing, of a Raw event only: the record holds
	// nothing of a run (a protocol's handshake, a setting of the
	// client's), so it is kept for its own dialect, and neither warned
	// about nor reported lost where another dialect leaves it out. The
	// reader sets it for the records it knows, the pipeline for the
	// record types that the dialect declares as its agent's bookkeeping
	// (Dialect.Bookkeeping). It says nothing of where the event came from.
	Known bool
	// LineNo is the 1-based line of the record in its input.
	LineNo int
}

// NothingToCopy reports whether a writer of the event's own dialect,
// copying its records as they are, has nothing left to print for the
// event: an earlier event carried its record (Continued), or it has none
// (Made).
func (s *Source) NothingToCopy() bool { return s.Continued || s.Made }

// From reports whether the event was read from the given dialect.
func (s *Source) From(dialect string) bool { return s.Dialect == dialect }

// RunInfo describes a run.
type RunInfo struct {
	// SessionID is the agent's id of the session (the conversation) the
	// run belongs to; runs that resume a session share it.
	SessionID string
	// Model is the model the run uses, as the source names it.
	Model string
	// Cwd is the agent's working directory.
	Cwd string
	// Provider is the model provider as OpenTelemetry names it (anthropic,
	// openai, gcp.gemini), when the dialect implies one.
	Provider string
	// AgentName names the agent program (the CLI that printed the stream).
	AgentName string
	// AgentVersion is that program's version, when the source says it.
	AgentVersion string
	// SystemInstructions is the system prompt the agent gave its model, as
	// the source says it at RunStart; empty when it does not. Only the
	// OpenTelemetry writers read it (gen_ai.system_instructions).
	SystemInstructions string
	// ExitCode is the agent program's exit status at RunEnd, as the source
	// gives it, or as the run view settles it (RunView.Settle).
	ExitCode Opt[int]
}

// AgentInfo describes a subagent at AgentStart.
type AgentInfo struct {
	// Label is a short name for the subagent (its type or task, as the
	// source gives it).
	Label string
	// Parent is the id of the agent that started this one; empty for the
	// run's main agent.
	Parent string
	// ParentCall is the id of the tool call that spawned the agent, when the
	// source says it.
	ParentCall string
	// Model and Cwd are the subagent's own, when the source says them.
	Model string
	Cwd   string
}

// Call is a tool call, as much of it as the event carries.
type Call struct {
	// ID is the source's id of the call, which ties its ToolCall,
	// PermissionRequest and ToolResult together.
	ID string
	// Name is the tool's name, as the agent calls it.
	Name string
	// Args is the JSON object of the call's arguments, verbatim.
	Args json.RawMessage
	// compactArgs is Args as a reader checked them compact (SetArgs); it
	// is part of Args's encoding, not a fact of the call (ArgsCompact).
	compactArgs json.RawMessage
	// Summary is a short human description of the call, when the source
	// gives one.
	Summary string
	// Status is the call's outcome (ToolResult).
	Status Status
	// Output is the call's output (ToolResult), in whichever encoding
	// the reader had it; see Output.
	Output Output
	// Error is the error text of a call that failed, or the reason a
	// Denied call was refused.
	Error string
	// ExitCode is a shell command's exit status (ToolResult), when the
	// source gives it.
	ExitCode Opt[int]
	// Truncated: the source says Output is a preview of a longer result
	// that it did not keep. It is general, not one dialect's: AdaL
	// (is_preview, output_truncated) and OpenCode (metadata.truncated)
	// readers set it, the writers whose target can say it (AdaL, OpenCode,
	// the transcript) write it, so that nobody takes the preview for the
	// whole output, and Claude Code's stream writer reports its loss.
	Truncated bool
}

// SetArgs sets Args; compact says the reader checked that they are valid
// JSON without white space between their tokens, so that a writer that
// compacts them may copy them as they are (ArgsCompact). It is a speed
// device any reader may use.
func (c *Call) SetArgs(args json.RawMessage, compact bool) {
	c.Args, c.compactArgs = args, nil
	if compact {
		c.compactArgs = args
	}
}

// ArgsCompact reports whether Args are not empty and still the ones a
// reader checked compact (SetArgs): whoever sets Args again makes it
// false, without having to know of it. False only means "not checked".
func (c *Call) ArgsCompact() bool {
	return len(c.Args) > 0 && len(c.Args) == len(c.compactArgs) && &c.Args[0] == &c.compactArgs[0]
}

// Output is a tool call's output. A reader gives it in the encoding it
// has it in, and everyone else reads it through the methods, which hide
// which one that was:
//
//   - TextOutput: text;
//   - JSONOutput: the source's JSON string literal, quotes included, not
//     yet decoded. This is a speed device: decoding and re-encoding
//     megabytes of tool output is most of a conversion's work, so a reader
//     may leave it to the writer. A JSON writer that declares
//     RawOutputWriter copies the literal as it is (AppendJSON), and for
//     every other writer the pipeline calls Decode first;
//   - ValueOutput: a JSON value that is not a string (AdaL's file tools
//     return an object), verbatim, with its JSON text as the text, for the
//     writers that carry only text (they lose ToolOutputValues).
//
// The zero Output is empty.
type Output struct {
	text  string
	lit   []byte
	value json.RawMessage
	// checked: lit was scanned and is valid UTF-8 (CheckedJSONOutput);
	// escaped: it has an escape.
	checked, escaped bool
}

// TextOutput is an output given as text.
func TextOutput(s string) Output { return Output{text: s} }

// JSONOutput is an output given as the source's JSON string literal,
// quotes included, not decoded; lit may be the reader's own buffer (see
// Reader), so whoever keeps the Output past the event's Write decodes it
// first.
func JSONOutput(lit []byte) Output { return Output{lit: lit} }

// CheckedJSONOutput is JSONOutput for a literal that its reader scanned
// whole (JSONScanner.String, nothing after it) and found valid UTF-8;
// escaped is what the scan said. Decode unquotes it without scanning it
// again.
func CheckedJSONOutput(lit []byte, escaped bool) Output {
	return Output{lit: lit, checked: true, escaped: escaped}
}

// ValueOutput is an output that is a JSON value other than a string, with
// text its JSON text; a nil value makes a TextOutput.
func ValueOutput(value json.RawMessage, text string) Output {
	return Output{text: text, value: value}
}

// Text is the output as text: "" while it is an undecoded literal, which
// only a RawOutputWriter sees (Decode makes it text).
func (o Output) Text() string { return o.text }

// Value is the output's JSON value when it is not a string (ValueOutput),
// else nil.
func (o Output) Value() json.RawMessage { return o.value }

// Undecoded reports whether the output is still the source's JSON
// literal.
func (o Output) Undecoded() bool { return len(o.lit) > 0 }

// SizeBound is the length in bytes of the output's text, or, while it is
// undecoded, of its literal, which is never shorter.
func (o Output) SizeBound() int {
	if len(o.lit) > 0 {
		return len(o.lit)
	}
	return len(o.text)
}

// IsEmpty reports whether the output is empty, decoded or not.
func (o Output) IsEmpty() bool {
	return o.text == "" && len(o.lit) <= len(`""`)
}

// Decode makes an undecoded literal text; it does nothing to an output
// that is text already.
func (o *Output) Decode() {
	if len(o.lit) == 0 {
		return
	}
	if o.text == "" && o.checked {
		if out, ok := Unquote(o.lit[1:len(o.lit)-1], o.escaped, false); ok {
			o.text, o.lit = out, nil
			return
		}
	}
	if o.text == "" {
		// A string the scanner settles is unquoted without the decoder.
		sc := JSONScanner{B: o.lit}
		if content, esc, high, ok := sc.String(); ok && sc.End() {
			if out, ok := Unquote(content, esc, high); ok {
				o.text, o.lit = out, nil
				return
			}
		}
		var s string
		if json.Unmarshal(o.lit, &s) == nil {
			o.text = s
		} else {
			o.text = string(o.lit)
		}
	}
	o.lit = nil
}

// Decoded is the output as text, decoded if it is not yet; o is left as
// it is.
func (o Output) Decoded() string {
	o.Decode()
	return o.text
}

// AppendJSON appends the output as a JSON string literal: the source's
// literal when it is undecoded, else the text encoded.
func (o Output) AppendJSON(dst []byte) []byte {
	if len(o.lit) > 0 {
		return append(dst, o.lit...)
	}
	b, err := Marshal(o.text)
	if err != nil {
		return append(dst, `""`...)
	}
	return append(dst, b...)
}

// RawOutputWriter is implemented by writers that take an undecoded
// Call.Output (JSONOutput) as it is, so that the pipeline need not decode
// it for them.
type RawOutputWriter interface {
	TakesRawOutput()
}

// Permission is a request for approval and its answer.
type Permission struct {
	// RequestID is the source's id of the request, which ties the
	// answer to it.
	RequestID string
	// Allowed is the answer (PermissionAnswer).
	Allowed bool
	// Reason is why, when the source says it.
	Reason string
}

// Response is what the source says of the model's answer to one request
// (a Usage event); each field is empty when it does not say.
type Response struct {
	// ID is the provider's id of the response (Anthropic's message id).
	ID string
	// Model is the model that answered, as the response names it.
	Model string
	// StopReason is why the model stopped, in the source's word
	// (end_turn, tool_use, max_tokens).
	StopReason string
}

// UsageInfo counts tokens and cost, with the meanings of the OpenTelemetry
// GenAI conventions whatever the source's: each reader converts from its
// source's convention, and each writer to its target's. Each field is
// optional: the dialects differ in what they report, and 0 is not the same
// as unknown. No count is negative.
type UsageInfo struct {
	// InputTokens counts every input token, cache reads and cache writes
	// included (gen_ai.usage.input_tokens).
	InputTokens Opt[int64]
	// OutputTokens counts the output tokens, reasoning included.
	OutputTokens Opt[int64]
	// CacheReadTokens is the part of InputTokens read from the cache.
	CacheReadTokens Opt[int64]
	// CacheWriteTokens is the part of InputTokens written to the cache.
	CacheWriteTokens Opt[int64]
	// CacheWrite1hTokens is the part of CacheWriteTokens kept in the cache
	// for an hour instead of five minutes (Anthropic's ephemeral_1h), which
	// is priced higher; unknown when the source does not tell them apart.
	CacheWrite1hTokens Opt[int64]
	// ReasoningTokens is the part of OutputTokens spent on reasoning.
	ReasoningTokens Opt[int64]
	// TotalTokens is what the source gives as the total, when it does.
	TotalTokens Opt[int64]
	// CostUSD is the cost of this request or run alone, never a running
	// total of a session.
	CostUSD Opt[float64]
	// ContextTokens is the size of the model's context as the source
	// reports it with a request (ACP's usage_update, malac's
	// context_tokens), when known. It is general, not one dialect's: ACP,
	// malac, the pretty and transcript writers all carry it. It is a level,
	// not a count of the request, so Add keeps the latest value instead of
	// summing, and a run's total is its last request's.
	ContextTokens Opt[int64]
}

// Empty reports whether no count is known.
func (u UsageInfo) Empty() bool {
	return !u.InputTokens.OK && !u.OutputTokens.OK && !u.CacheReadTokens.OK &&
		!u.CacheWriteTokens.OK && !u.CacheWrite1hTokens.OK && !u.ReasoningTokens.OK && !u.TotalTokens.OK && !u.CostUSD.OK &&
		!u.ContextTokens.OK
}

// Add sums another usage into u; a field becomes known if either side knows it.
func (u *UsageInfo) Add(o UsageInfo) {
	u.InputTokens = u.InputTokens.Plus(o.InputTokens)
	u.OutputTokens = u.OutputTokens.Plus(o.OutputTokens)
	u.CacheReadTokens = u.CacheReadTokens.Plus(o.CacheReadTokens)
	u.CacheWriteTokens = u.CacheWriteTokens.Plus(o.CacheWriteTokens)
	u.CacheWrite1hTokens = u.CacheWrite1hTokens.Plus(o.CacheWrite1hTokens)
	u.ReasoningTokens = u.ReasoningTokens.Plus(o.ReasoningTokens)
	u.TotalTokens = u.TotalTokens.Plus(o.TotalTokens)
	u.CostUSD = u.CostUSD.Plus(o.CostUSD)
	if o.ContextTokens.OK {
		u.ContextTokens = o.ContextTokens
	}
}

// Total is TotalTokens when known, else input plus output when either is.
func (u UsageInfo) Total() Opt[int64] {
	if u.TotalTokens.OK {
		return u.TotalTokens
	}
	if u.InputTokens.OK || u.OutputTokens.OK {
		return u.InputTokens.Plus(u.OutputTokens)
	}
	return Opt[int64]{}
}

// Todo is one item of a task list.
type Todo struct {
	Content string
	// Status is the source's word for it (pending, in_progress, completed).
	Status string
}

// Opt is an optional value: OK is false when the source did not say.
type Opt[T int | int64 | float64] struct {
	V  T
	OK bool
}

// Some makes a known Opt.
func Some[T int | int64 | float64](v T) Opt[T] { return Opt[T]{V: v, OK: true} }

// Plus adds two optionals; the sum is known if either is. An integer sum
// saturates at the type's largest value, never wraps.
func (o Opt[T]) Plus(p Opt[T]) Opt[T] {
	sum := o.V + p.V
	if (o.V > 0 && p.V > 0 && sum < o.V) || (o.V < 0 && p.V < 0 && sum > o.V) {
		switch any(sum).(type) {
		case int64:
			sum = any(int64(math.MaxInt64)).(T)
		case int:
			sum = any(int(math.MaxInt)).(T)
		}
		if o.V < 0 {
			sum = -sum
		}
	}
	return Opt[T]{V: sum, OK: o.OK || p.OK}
}

// Negative clears each count of u below zero, which no source means (a
// count is never negative), and names the fields it cleared.
func (u *UsageInfo) Negative() []string {
	if u.InputTokens.V >= 0 && u.OutputTokens.V >= 0 && u.CacheReadTokens.V >= 0 && u.CacheWriteTokens.V >= 0 &&
		u.CacheWrite1hTokens.V >= 0 && u.ReasoningTokens.V >= 0 && u.TotalTokens.V >= 0 && u.ContextTokens.V >= 0 && (!u.CostUSD.OK || u.CostUSD.V >= 0 && !math.IsInf(u.CostUSD.V, 0)) {
		return nil // every event passes here: no work for the usual case
	}
	var out []string
	for _, f := range []struct {
		name string
		o    *Opt[int64]
	}{{"input", &u.InputTokens}, {"output", &u.OutputTokens}, {"cache read", &u.CacheReadTokens},
		{"cache write", &u.CacheWriteTokens}, {"cache write 1h", &u.CacheWrite1hTokens}, {"reasoning", &u.ReasoningTokens}, {"total", &u.TotalTokens},
		{"context", &u.ContextTokens}} {
		if f.o.OK && f.o.V < 0 {
			out = append(out, fmt.Sprintf("%s %d", f.name, f.o.V))
			*f.o = Opt[int64]{}
		}
	}
	if u.CostUSD.OK && (u.CostUSD.V < 0 || math.IsNaN(u.CostUSD.V) || math.IsInf(u.CostUSD.V, 0)) {
		out = append(out, fmt.Sprintf("cost %v", u.CostUSD.V))
		u.CostUSD = Opt[float64]{}
	}
	return out
}

// Ptr returns nil when unknown, so that JSON writers print null.
func (o Opt[T]) Ptr() *T {
	if !o.OK {
		return nil
	}
	v := o.V
	return &v
}

// OptFrom makes an Opt from a pointer, as JSON decoding leaves it.
func OptFrom[T int | int64 | float64](p *T) Opt[T] {
	if p == nil {
		return Opt[T]{}
	}
	return Some(*p)
}
