package formats

import (
	"math/bits"
	"strings"
)

// Feature is one thing of the event model that a dialect's writer may or
// may not be able to carry. Each Dialect declares the features its writer
// carries (Dialect.Carries); Needs says which features an event uses; the
// pipeline reports the difference as losses, in one vocabulary, and decides
// --strict from it before the event is written (pandoc's extensions).
type Feature uint64

const (
	// Timestamps: the source's time of an event (Event.Time).
	Timestamps Feature = 1 << iota
	// WorkingDirs: a run's or subagent's working directory.
	WorkingDirs
	// ModelNames: the model a run or subagent starts with.
	ModelNames
	// UserPrompts: UserMessage events.
	UserPrompts
	// AssistantText: the main agent's text (deltas and whole messages).
	AssistantText
	// Thinking: reasoning text (ThinkingDelta, Message.Thinking).
	Thinking
	// Turns: turn boundaries (TurnEnd).
	Turns
	// TurnStatuses: a turn that failed or was cancelled.
	TurnStatuses
	// ToolCalls: tool calls and their results.
	ToolCalls
	// ToolDurations: a tool call's duration as the source gives it.
	ToolDurations
	// CancelledCalls: a tool call ended as cancelled (not failed).
	CancelledCalls
	// Refusals: a tool call refused (Denied), as a refusal rather than a
	// failure.
	Refusals
	// Subagents: subagents as agents of their own (AgentStart/AgentEnd),
	// rather than flattened into the run.
	Subagents
	// SubagentCalls: the link from a subagent to the call that spawned it.
	SubagentCalls
	// SubagentText: a subagent's text.
	SubagentText
	// SubagentReports: the report a subagent ends with (AgentEnd.Text).
	SubagentReports
	// SubagentAnswers: an Answer of a subagent.
	SubagentAnswers
	// SubagentNotices: a Notice of a subagent.
	SubagentNotices
	// PermissionRequests and PermissionAnswers: approvals asked and given.
	PermissionRequests
	PermissionAnswers
	// TodoLists: task lists.
	TodoLists
	// Compactions: the conversation was compacted.
	Compactions
	// CompactionSummaries: the summary text of a compaction.
	CompactionSummaries
	// ModelChanges: the agent switched models mid-run.
	ModelChanges
	// InfoNotices and WarningNotices: notices below error.
	InfoNotices
	WarningNotices
	// TokenUsage: token counts, of requests or of the run.
	TokenUsage
	// PerRequestUsage: usage of each model request (Usage events), rather
	// than only the run's totals.
	PerRequestUsage
	// CacheWrites: tokens written to the prompt cache, counted apart.
	CacheWrites
	// ReasoningTokens: reasoning tokens, counted apart.
	ReasoningTokens
	// Costs: cost in USD.
	Costs
	// RunDurations: a run's duration as the source gives it.
	RunDurations
	// RunOutcomes: that a run failed, was cancelled or refused, and its
	// exit code.
	RunOutcomes
	// RawEvents: events the reader could not interpret (Kind Raw); only
	// their own dialect can print them.
	RawEvents
	// FollowUpPrompts: a run's prompts after its first, in the same run
	// (a session file starts a run at each prompt).
	FollowUpPrompts
	// SystemPrompts: the system instructions a run starts with
	// (RunInfo.SystemInstructions).
	SystemPrompts
	// SubagentToolCalls: a subagent's tool calls and their results (a
	// target of one conversation that a model resumes cannot hold calls
	// its model never made).
	SubagentToolCalls
	// ToolOutputValues: a tool output that is a JSON value, not text
	// (ValueOutput).
	ToolOutputValues
	// SubagentThinking: a subagent's reasoning text (besides Thinking).
	SubagentThinking
	// SubagentPrompts: a subagent's UserMessage events (besides
	// UserPrompts).
	SubagentPrompts
	// SubagentTodos: a subagent's task lists (besides TodoLists).
	SubagentTodos
	// SubagentTurns: a subagent's turn boundaries (besides Turns).
	SubagentTurns

	featureCount = iota
)

// AllFeatures is every feature: what a dialect that carries everything of
// the model declares.
const AllFeatures Feature = 1<<featureCount - 1

var featureNames = [featureCount]string{
	"event timestamps", "working directories", "model names", "user prompts",
	"assistant text", "thinking text", "turn boundaries", "turn statuses",
	"tool calls", "tool call durations", "cancelled tool call statuses",
	"refusals (written as failed tool calls)",
	"subagents (flattened into the run)", "links from subagents to the calls that started them",
	"subagent text", "subagent reports", "subagent answers", "subagent notices",
	"permission requests", "permission answers", "todo lists", "compactions",
	"compaction summaries", "model changes", "info notices", "warning notices",
	"token usage", "per-request token usage (only the run's totals are kept)",
	"cache write token counts", "reasoning token counts", "costs", "run durations",
	"outcomes of runs that did not succeed", "unknown events of other dialects",
	"runs of several prompts (each prompt starts a run of its own)", "system instructions",
	"subagent tool calls", "tool outputs that are JSON values (written as their JSON text)",
	"subagent thinking text", "subagent prompts", "subagent todo lists", "subagent turn boundaries",
}

// Name is the feature's name as losses and the docs give it: a noun
// phrase ("thinking text").
func (f Feature) Name() string {
	if f == 0 || f&(f-1) != 0 || f > AllFeatures {
		return f.String()
	}
	return featureNames[bits.TrailingZeros64(uint64(f))]
}

// Each calls fn for each feature in the set, in declaration order.
func (f Feature) Each(fn func(Feature)) {
	for f != 0 {
		one := f & -f
		fn(one)
		f &^= one
	}
}

// String joins the names of the features in the set.
func (f Feature) String() string {
	var names []string
	for one := f & AllFeatures; one != 0; one &= one - 1 {
		names = append(names, featureNames[bits.TrailingZeros64(uint64(one))])
	}
	return strings.Join(names, ", ")
}

// Features lists every feature, in declaration order.
func Features() []Feature {
	out := make([]Feature, featureCount)
	for i := range out {
		out[i] = 1 << i
	}
	return out
}

// implied: a feature whose loss is already said by the loss of another is
// not reported again (a failed turn's status goes with its turn). always:
// an event never needs the feature without the other (a turn's status is
// always a turn's), so a target that lacks both never names it.
var implied = [...]struct {
	f, by  Feature
	always bool
}{
	{TurnStatuses, Turns, true},
	{CompactionSummaries, Compactions, true},
	{SubagentCalls, Subagents, true},
	{PerRequestUsage, TokenUsage, false}, // a request's cost alone
	{CacheWrites, TokenUsage, true},
	{ReasoningTokens, TokenUsage, true},
	{FollowUpPrompts, UserPrompts, true},
	{ToolOutputValues, ToolCalls, false}, // a subagent's call needs SubagentToolCalls
	// A subagent's thinking, prompt, todo list or turn is one of its
	// kind first: a target without the kind names that.
	{SubagentThinking, Thinking, true},
	{SubagentPrompts, UserPrompts, true},
	{SubagentTodos, TodoLists, true},
	{SubagentTurns, Turns, true},
}

// Unnamed is what of the features a target that carries `carries` lacks
// its reports can never name, because another's loss always says it.
func Unnamed(carries Feature) Feature {
	var u Feature
	for _, i := range implied {
		if i.always && carries&i.by == 0 {
			u |= i.f
		}
	}
	return u
}

// Needs says which features an event uses. It is the one place that maps
// the model onto features; the pipeline compares it with what the target
// carries.
func Needs(e *Event) Feature {
	var f Feature
	if !e.Time.IsZero() && !e.Synthetic {
		f |= Timestamps
	}
	sub := e.Agent != ""
	switch e.Kind {
	case RunStart:
		if e.Run.Cwd != "" {
			f |= WorkingDirs
		}
		if e.Run.Model != "" {
			f |= ModelNames
		}
		if e.Run.SystemInstructions != "" {
			f |= SystemPrompts
		}
	case RunEnd:
		if e.Duration > 0 && !e.Synthetic {
			f |= RunDurations
		}
		if e.Status != Completed {
			f |= RunOutcomes
		}
		f |= usageNeeds(&e.Usage)
	case AgentStart:
		f |= Subagents
		if e.AgentInfo.ParentCall != "" {
			f |= SubagentCalls
		}
		if e.AgentInfo.Cwd != "" {
			f |= WorkingDirs
		}
		if e.AgentInfo.Model != "" {
			f |= ModelNames
		}
	case AgentEnd:
		f |= Subagents
		if e.Report() != "" {
			f |= SubagentReports
		}
	case TurnEnd:
		f |= Turns | subNeed(sub, SubagentTurns)
		if e.Status == Failed || e.Status == Cancelled {
			f |= TurnStatuses
		}
	case UserMessage:
		f |= UserPrompts | subNeed(sub, SubagentPrompts)
	case TextDelta:
		f |= textNeed(sub)
	case ThinkingDelta:
		f |= Thinking | subNeed(sub, SubagentThinking)
	case Message:
		if e.MessageText() != "" {
			f |= textNeed(sub)
		}
		if e.Thinking != "" {
			f |= Thinking | subNeed(sub, SubagentThinking)
		}
	case ToolCall:
		f |= callNeed(sub)
	case ToolResult:
		f |= callNeed(sub)
		if len(e.Call.Output.Value()) > 0 {
			f |= ToolOutputValues
		}
		if e.Duration > 0 {
			f |= ToolDurations
		}
		switch e.Call.Status {
		case Cancelled:
			f |= CancelledCalls
		case Denied:
			f |= Refusals
		}
	case PermissionRequest:
		f |= PermissionRequests
	case PermissionAnswer:
		f |= PermissionAnswers
	case Usage:
		f |= PerRequestUsage | usageNeeds(&e.Usage)
	case Todos:
		f |= TodoLists | subNeed(sub, SubagentTodos)
	case Compaction:
		f |= Compactions
		if e.Summary() != "" {
			f |= CompactionSummaries
		}
	case Notice:
		switch {
		case sub:
			f |= SubagentNotices
		case e.Severity == Info:
			f |= InfoNotices
		case e.Severity == Warning:
			f |= WarningNotices
		}
	case ModelChange:
		f |= ModelChanges
	case Answer:
		if sub {
			f |= SubagentAnswers
		}
	case Raw:
		if !e.Source.Known {
			f |= RawEvents
		}
	}
	return f
}

// subNeed is f for a subagent's event, which needs its kind's feature
// and f besides.
func subNeed(sub bool, f Feature) Feature {
	if sub {
		return f
	}
	return 0
}

func callNeed(sub bool) Feature {
	if sub {
		return SubagentToolCalls
	}
	return ToolCalls
}

func textNeed(sub bool) Feature {
	if sub {
		return SubagentText
	}
	return AssistantText
}

func usageNeeds(u *UsageInfo) Feature {
	var f Feature
	if u.InputTokens.OK || u.OutputTokens.OK || u.CacheReadTokens.OK || u.TotalTokens.OK ||
		u.CacheWriteTokens.OK || u.ReasoningTokens.OK {
		f |= TokenUsage
	}
	if u.CacheWriteTokens.V > 0 {
		f |= CacheWrites
	}
	if u.ReasoningTokens.V > 0 {
		f |= ReasoningTokens
	}
	if u.CostUSD.OK {
		f |= Costs
	}
	return f
}

// Missing is what of the features an event needs a target that carries
// `carries` cannot carry, less what the loss of another already says.
func Missing(needs, carries Feature) Feature {
	m := needs &^ carries
	if m == 0 {
		return 0 // the common case, on every event
	}
	for _, i := range implied {
		if m&i.f != 0 && m&i.by != 0 {
			m &^= i.f
		}
	}
	return m
}

// LossName is how a loss of one feature of an event is named: the
// feature's name, and for raw events their dialect ("unknown codex
// events").
func LossName(f Feature, e *Event) string {
	if f == RawEvents && e != nil && e.Source.Dialect != "" {
		return "unknown " + e.Source.Dialect + " events"
	}
	return f.Name()
}

// usageFeatures are the features of token counts and costs, which a run's
// totals (RunEnd) repeat of its requests (Usage events).
const usageFeatures = TokenUsage | CacheWrites | ReasoningTokens | Costs

// LossCounter counts losses by the things they name, not by the events
// that carry them: a tool call is its start and its end, a streamed
// message many deltas and often the whole message again, a subagent its
// start and end, and a run's totals repeat its requests' counts. Count is
// called with every event, in order, whatever the target carries.
type LossCounter struct {
	calls     map[string]bool // the run's calls that started
	agents    map[string]bool // the run's subagents that started
	text      map[string]bool // agents whose streamed text is open
	thinking  map[string]bool // agents whose streamed thinking is open
	runNeeded Feature         // the usage features the run's events needed
}

// Count returns the features of needs (Needs of e, and what the pipeline
// adds) that e adds one more of: the rest are things an earlier event of
// the run already counted.
func (c *LossCounter) Count(e *Event, needs Feature) Feature {
	if c.calls == nil {
		c.calls, c.agents, c.text, c.thinking = map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	counted := needs
	switch e.Kind {
	case RunStart:
		clear(c.calls)
		clear(c.agents)
		c.runNeeded = 0
	case RunEnd:
		// The run's totals: lost with its requests, they count once.
		counted &^= c.runNeeded & usageFeatures
	case ToolCall:
		c.calls[e.Agent+"\x00"+e.Call.ID] = true
	case ToolResult:
		key := e.Agent + "\x00" + e.Call.ID
		if c.calls[key] {
			counted &^= ToolCalls // its call counted
		}
		delete(c.calls, key)
	case AgentStart:
		c.agents[e.Agent] = true
	case AgentEnd:
		if c.agents[e.Agent] {
			counted &^= Subagents
		}
	case TextDelta:
		if c.text[e.Agent] {
			counted &^= AssistantText | SubagentText // the message counted
		}
		c.text[e.Agent] = true
	case ThinkingDelta:
		if c.thinking[e.Agent] {
			counted &^= Thinking | SubagentThinking
		}
		c.thinking[e.Agent] = true
	case Message:
		// The whole message after its deltas is the same message.
		if c.text[e.Agent] {
			counted &^= AssistantText | SubagentText
		}
		if c.thinking[e.Agent] {
			counted &^= Thinking | SubagentThinking
		}
	}
	switch e.Kind {
	case TextDelta, ThinkingDelta, Usage, Notice:
	default:
		// Anything else of the agent ends what it was streaming.
		delete(c.text, e.Agent)
		delete(c.thinking, e.Agent)
	}
	if e.Kind == RunEnd {
		clear(c.text)
		clear(c.thinking)
	}
	c.runNeeded |= needs & usageFeatures
	return counted
}
