package formats

import "time"

// RunView is the one derived view of the run being converted. The pipeline
// keeps it: it observes each event before the writer gets it, so that a
// writer reads the run's meaning (its outcome and exit code, answer,
// errors, refusals, usage, agents and calls) here instead of working it out
// again. A writer gets it with each event (Writer.Write) and must not
// change it; outside a pipeline, Standalone keeps one.
//
// When the writer gets a RunEnd, the view is final: Status is never
// StatusUnknown and ExitCode is set.
type RunView struct {
	// Info is what is known of the run: session id, model, cwd, provider
	// and agent name, from its RunStart and from later events.
	Info RunInfo
	// Open: a RunStart was seen and its RunEnd not yet.
	Open bool
	// Start is the source time of the run's first event, when known.
	Start time.Time
	// Last is the latest source time in the run.
	Last time.Time

	// Agents are the run's subagents, in the order they started.
	Agents []*AgentView
	agents map[string]*AgentView
	// Calls are the run's tool calls (outputs are not kept): in a
	// pipeline, every call for a writer whose row says HoldsRun, else
	// the open calls and the last ones that ended (CallTracker).
	Calls CallTracker
	// Turns counts the turns that ended.
	Turns int
	// Messages counts the main agent's assistant messages (a streamed
	// message counts once).
	Messages int
	// Prompts counts the main agent's prompts (UserMessage events that
	// no other agent sent).
	Prompts int

	answer   string
	answered bool
	// LastText is the main agent's last assistant text: a whole message,
	// or the deltas of one, or a turn's final text.
	LastText string
	text     TextTracker
	// Errors are the texts of every error of the run, in order: error
	// notices of any agent, and the source's error at the run's end.
	Errors []string
	// Refusals are the calls that were refused, in order.
	Refusals []Refusal
	// Stopped: the last call to end was refused, so a run that then ends
	// without success stopped there.
	Stopped bool

	// Usage is the run's totals: for each count, the source's run total
	// when it gives one, else the sum of its requests (Usage events), of
	// every agent.
	Usage UsageInfo
	// Requests counts the Usage events (model requests) of the run.
	Requests int
	// Aggregates counts those of them that count a whole turn's requests
	// (Event.Aggregate), which the source does not tell apart.
	Aggregates int
	// Models are the models used, in the order first seen.
	Models []string

	// Status, ExitCode and Failure are the run's outcome, final at RunEnd
	// (see Settle).
	Status   Status
	ExitCode int
	// Failure is the message of a run that did not succeed: the source's
	// error, else the refusal it stopped on, else its last error, else
	// words of the pipeline's own ("the run failed"); FailureSaid is false
	// in that last case, for a target whose message may stay empty.
	Failure     string
	FailureSaid bool
	// Cut: the run was closed by the pipeline, not by its source.
	Cut bool

	reqUsage UsageInfo // the sum of the Usage events
	endUsage UsageInfo // the source's run totals, from RunEnd
}

// AgentView is what the view keeps of a subagent.
type AgentView struct {
	ID string
	AgentInfo
	// Status is StatusUnknown while it runs.
	Status Status
	Report string
	Usage  UsageInfo
	Ended  bool
}

// Refusal is a refused call.
type Refusal struct {
	Agent  string
	CallID string
	Name   string
	Reason string
}

// Answer is the run's answer: its Answer event, else the main agent's last
// text.
func (v *RunView) Answer() string {
	if v.answered {
		return v.answer
	}
	return v.LastText
}

// RequestUsage is the sum of the run's requests (Usage events), every
// agent's: what the run's totals are when the source gives none.
func (v *RunView) RequestUsage() UsageInfo { return v.reqUsage }

// Answered reports whether the source gave an Answer event.
func (v *RunView) Answered() bool { return v.answered }

// Agent returns a subagent by id, or nil.
func (v *RunView) Agent(id string) *AgentView { return v.agents[id] }

// Success reports whether the run succeeded; meaningful at RunEnd.
func (v *RunView) Success() bool { return v.Status == Completed }

// Reset forgets the run, for the next one.
func (v *RunView) Reset() {
	calls := v.Calls
	calls.Reset()
	*v = RunView{Calls: calls, agents: v.agents, Agents: v.Agents[:0], Models: v.Models[:0],
		Errors: v.Errors[:0], Refusals: v.Refusals[:0]}
	clear(v.agents)
	v.text.Reset()
}

// Observe follows one event. The pipeline calls it for every event, before
// the writer sees it; at a RunEnd it settles the outcome and normalises the
// event (see Settle).
func (v *RunView) Observe(e *Event) {
	if e.Kind == RunStart {
		v.Reset()
		v.Open = true
		v.Info = e.Run
		v.Calls.DropOutputs = true
		v.model(e.Run.Model)
	}
	if !e.Time.IsZero() {
		if v.Start.IsZero() {
			v.Start = e.Time
		}
		if e.Time.After(v.Last) {
			v.Last = e.Time
		}
	}
	main := e.Agent == ""
	switch e.Kind {
	case AgentStart:
		a := &AgentView{ID: e.Agent, AgentInfo: e.AgentInfo}
		if v.agents == nil {
			v.agents = map[string]*AgentView{}
		}
		v.agents[e.Agent] = a
		v.Agents = append(v.Agents, a)
		v.model(e.AgentInfo.Model)
	case AgentEnd:
		if a := v.agents[e.Agent]; a != nil {
			a.Status, a.Report, a.Ended = e.Status, e.Report(), true
		}
	case UserMessage:
		if main && e.AgentInfo.Label == "" {
			v.Prompts++
		}
	case TurnEnd:
		v.endText(e.Agent)
		if main && e.FinalText() != "" {
			v.LastText = e.FinalText()
		}
		if main {
			v.Turns++
		}
	case TextDelta:
		if main {
			if v.text.pending[""] == nil {
				v.Messages++
			}
			v.text.Delta("", e.Piece())
		}
	case Message:
		if main {
			if !v.text.Whole("") {
				v.Messages++
			}
			if e.MessageText() != "" {
				v.LastText = e.MessageText()
			}
		}
	case ToolCall:
		v.endText(e.Agent)
		v.Calls.Start(e)
	case ToolResult:
		v.endText(e.Agent)
		v.Calls.Finish(e)
		v.Stopped = e.Call.Status == Denied
		if e.Call.Status == Denied {
			v.Refusals = append(v.Refusals, Refusal{Agent: e.Agent, CallID: e.Call.ID, Name: e.Call.Name, Reason: e.Call.Error})
		}
	case Notice:
		if e.Severity == Error && e.NoticeText() != "" {
			v.Errors = append(v.Errors, e.NoticeText())
		}
	case Answer:
		if main {
			v.answered, v.answer = true, e.AnswerText()
		}
	case Usage:
		v.Requests++
		if e.Aggregate {
			v.Aggregates++
		}
		v.reqUsage.Add(e.Usage)
		if a := v.agents[e.Agent]; a != nil {
			a.Usage.Add(e.Usage)
		}
		v.Usage = RunTotals(v.endUsage, v.reqUsage)
		v.model(v.requestModel(e))
	case ModelChange:
		v.model(e.Run.Model)
		if main && e.Run.Model != "" {
			v.Info.Model = e.Run.Model
		}
		if a := v.agents[e.Agent]; a != nil && !main && e.Run.Model != "" {
			a.Model = e.Run.Model
		}
	case RunEnd:
		v.endText("")
		v.endUsage = e.Usage
		v.Usage = RunTotals(v.endUsage, v.reqUsage)
		v.Settle(e)
		v.Open = false
		return
	}
	if e.Run.SessionID != "" {
		v.Info.SessionID = e.Run.SessionID
	}
}

func (v *RunView) model(m string) {
	if m == "" {
		return
	}
	for _, have := range v.Models {
		if have == m {
			return
		}
	}
	v.Models = append(v.Models, m)
}

// requestModel is the model of a request (a Usage event): its agent's,
// else the one its response names.
func (v *RunView) requestModel(e *Event) string {
	if e.Agent == "" && v.Info.Model != "" {
		return v.Info.Model
	}
	if a := v.agents[e.Agent]; e.Agent != "" && a != nil && a.Model != "" {
		return a.Model
	}
	return e.Response.Model
}

// endText closes a streamed message of the main agent.
func (v *RunView) endText(agent string) {
	if agent != "" {
		return
	}
	if t := v.text.Flush(""); t != "" {
		v.LastText = t
	}
}

// RunTotals is the one rule for a run's usage totals: count by count, the
// source's run total (end) where it gives one, else the sum of the
// requests (req).
func RunTotals(end, req UsageInfo) UsageInfo {
	pick := func(a, b Opt[int64]) Opt[int64] {
		if a.OK {
			return a
		}
		return b
	}
	u := UsageInfo{
		InputTokens:        pick(end.InputTokens, req.InputTokens),
		OutputTokens:       pick(end.OutputTokens, req.OutputTokens),
		CacheReadTokens:    pick(end.CacheReadTokens, req.CacheReadTokens),
		CacheWriteTokens:   pick(end.CacheWriteTokens, req.CacheWriteTokens),
		CacheWrite1hTokens: pick(end.CacheWrite1hTokens, req.CacheWrite1hTokens),
		ReasoningTokens:    pick(end.ReasoningTokens, req.ReasoningTokens),
		TotalTokens:        pick(end.TotalTokens, req.TotalTokens),
		CostUSD:            end.CostUSD,
		ContextTokens:      end.ContextTokens,
	}
	if !u.CostUSD.OK {
		u.CostUSD = req.CostUSD
	}
	if !u.ContextTokens.OK {
		u.ContextTokens = req.ContextTokens
	}
	return u
}

// Settle is the one rule for a run's outcome. It decides the view's Status,
// ExitCode and Failure from the RunEnd event and what the run did, and
// normalises the event: its Status is never StatusUnknown, and its
// Run.ExitCode is set unless the run succeeded and the source gave none.
//
//   - A source's exit code and status are kept when they agree.
//   - Without a status: an exit code of 0 is a success, 2 after a refused
//     call is a refusal (Denied), any other a failure; without either, a
//     run that stopped on a refused call was denied, one with an error
//     failed, and any other succeeded.
//   - Without an exit code: success is 0, a refusal or a run that stopped
//     on one is 2, an interruption by a signal is 130, any other failure 1.
//   - A run that did not succeed never has exit code 0, and one with a
//     non-zero exit code never succeeded: the status wins.
func (v *RunView) Settle(e *Event) {
	st, code := e.Status, e.Run.ExitCode
	if st == Running {
		st = StatusUnknown
	}
	if st == StatusUnknown {
		switch {
		case code.OK && code.V == 0:
			st = Completed
		case code.OK && code.V == 2 && v.Stopped:
			st = Denied
		case code.OK:
			st = Failed
		case v.Stopped:
			st = Denied
		case len(v.Errors) > 0 || e.ErrorText() != "":
			st = Failed
		default:
			st = Completed
		}
	}
	if st == Completed && code.OK && code.V != 0 {
		st = Failed
	}
	if !code.OK || (st != Completed && code.V == 0) {
		switch {
		case st == Completed:
			code = Some(0)
		case st == Denied || v.Stopped:
			code = Some(2)
		default:
			code = Some(1)
		}
	}
	v.Status, v.ExitCode, v.Cut = st, code.V, e.Cut
	e.Status = st
	if e.Run.ExitCode.OK || st != Completed {
		// A run that did not succeed says its code, so that a target that
		// carries the code but not the refusal still gives the same outcome.
		e.Run.ExitCode = code
	}
	if e.ErrorText() != "" && st != Completed {
		v.Errors = append(v.Errors, e.ErrorText())
	}
	v.Failure, v.FailureSaid = "", false
	if st != Completed {
		v.Failure = v.failure(e)
		v.FailureSaid = e.ErrorText() != "" || len(v.Errors) > 0 ||
			st == Denied && len(v.Refusals) > 0 && v.Refusals[len(v.Refusals)-1].Reason != ""
	}
	if e.Run.SessionID != "" {
		v.Info.SessionID = e.Run.SessionID
	}
	if e.Run.Model != "" {
		v.Info.Model = e.Run.Model
		v.model(e.Run.Model)
	}
}

func (v *RunView) failure(e *Event) string {
	switch {
	case e.ErrorText() != "":
		return e.ErrorText()
	case v.Status == Denied && len(v.Refusals) > 0 && v.Refusals[len(v.Refusals)-1].Reason != "":
		return v.Refusals[len(v.Refusals)-1].Reason
	case len(v.Errors) > 0:
		return v.Errors[len(v.Errors)-1]
	case v.Status == Cancelled:
		return "the run was cancelled"
	case v.Status == Denied:
		return "a tool call was refused"
	}
	return "the run failed"
}

// StandaloneWriter is a writer used outside a pipeline (a test, a
// library's own loop over events): it keeps a run view of its own,
// follows each event in it, and gives it to the writer with the event,
// as the pipeline gives its own.
type StandaloneWriter struct {
	w    Writer
	view RunView
}

// Standalone wraps w for use outside a pipeline.
//
// Nobody opens a run there for a stream without RunStart events
// (adal-stream, one run after another): an event outside a run opens one
// in the view first, as the pipeline's synthetic RunStart does, so that a
// run never sees the last one's answer, errors or calls. Unlike the
// pipeline, it writes no event of its own (that RunStart, or the end of a
// run left open) and reports no losses.
func Standalone(w Writer) *StandaloneWriter { return &StandaloneWriter{w: w} }

// Write follows e in the view and gives both to the writer.
func (s *StandaloneWriter) Write(e *Event) error {
	if e.Kind != RunStart && !s.view.Open {
		s.view.Observe(&Event{Kind: RunStart, Time: e.Time, Arrived: e.Arrived, Synthetic: true})
	}
	s.view.Observe(e)
	return s.w.Write(e, &s.view)
}

// Close closes the writer.
func (s *StandaloneWriter) Close() error { return s.w.Close() }
