package adal

import (
	"github.com/agentconv/agentconv/formats"
)

// runSummary follows one run for the AdaL writers: what its answer, error,
// session and model are, and what AdaL has no place for, which it reports
// as losses.
type runSummary struct {
	answered  bool   // an Answer of the main agent was seen
	answer    string // its text
	lastText  string // the main agent's last assistant text, a fallback answer
	messages  int    // assistant messages of the main agent
	streaming map[string]bool
	errored   bool   // an error was written already
	lastError string // the last error notice
	denied    *formats.TrackedCall
	// stopped: the last call to end was refused, so a run that then ends
	// without success stopped there (exit 2); a run that went on after a
	// refusal and failed later failed for its own reason (exit 1).
	stopped   bool
	sessionID string
	modelName string
	usageSeen bool
}

func (r *runSummary) observe(e *formats.Event, calls *formats.CallTracker, text *formats.TextTracker, rep *formats.Report) {
	same := e.Source.Dialect == "" || isAdal(e.Source.Dialect)
	lose := func(what string) {
		if !same {
			rep.Lose(what)
		}
	}
	if !e.Time.IsZero() {
		lose("event timestamps")
	}
	switch e.Kind {
	case formats.RunStart:
		r.sessionID, r.modelName = e.Run.SessionID, e.Run.Model
		if e.Run.Cwd != "" {
			lose("working directories")
		}
	case formats.ToolCall:
		r.endText(e.Agent, text)
		calls.Start(e)
	case formats.ToolResult:
		r.endText(e.Agent, text)
		c, _ := calls.Finish(e)
		if e.Call.Status == formats.Denied {
			r.denied = c
		}
		r.stopped = e.Call.Status == formats.Denied
		if e.Duration > 0 {
			lose("tool call durations")
		}
		if e.Call.Error != "" && e.Call.Output != "" {
			lose("tool error texts (merged into the output)")
		}
	case formats.TextDelta:
		if e.Agent == "" {
			if r.streaming == nil {
				r.streaming = map[string]bool{}
			}
			if !r.streaming[e.Agent] {
				r.streaming[e.Agent] = true
				r.messages++
			}
			text.Delta(e.Agent, e.Text)
		} else {
			lose("subagent text")
		}
	case formats.Message:
		if e.Thinking != "" {
			lose("thinking text")
		}
		if e.Agent != "" {
			lose("subagent text")
			break
		}
		if !text.Whole(e.Agent) {
			r.messages++
		}
		delete(r.streaming, e.Agent)
		if e.Text != "" {
			r.lastText = e.Text
		}
	case formats.TurnEnd:
		r.endText(e.Agent, text)
		if e.Agent == "" && e.Text != "" {
			r.lastText = e.Text
		}
		lose("turn boundaries")
	case formats.Answer:
		if e.Agent == "" {
			r.answered, r.answer = true, e.Text
		} else {
			lose("subagent answers")
		}
	case formats.Notice:
		if e.Severity == formats.Error {
			r.errored, r.lastError = true, e.Text
		} else {
			lose("notices below error")
		}
	case formats.ThinkingDelta:
		lose("thinking text")
	case formats.UserMessage:
		lose("user prompts")
	case formats.Usage:
		r.usageSeen = true
	case formats.Todos:
		lose("todo lists")
	case formats.Compaction:
		lose("compactions")
	case formats.ModelChange:
		if e.Agent == "" {
			r.modelName = e.Run.Model
		}
		lose("model changes")
	case formats.PermissionRequest:
		lose("permission requests")
	case formats.PermissionAnswer:
		lose("permission answers")
	case formats.AgentStart:
		lose("subagents (their tool calls are flattened into the run)")
	case formats.AgentEnd:
		if e.Text != "" {
			lose("subagent reports")
		}
	case formats.TurnStart:
	case formats.Raw:
		if !same {
			rep.Lose("unknown " + e.Source.Dialect + " events")
		}
	case formats.RunEnd:
		r.endText("", text)
		if e.Run.SessionID != "" {
			r.sessionID = e.Run.SessionID
		}
		if e.Run.Model != "" {
			r.modelName = e.Run.Model
		}
		if r.usageSeen || !e.Usage.Empty() {
			lose("token usage and cost")
		}
		if e.Duration > 0 {
			lose("run durations")
		}
		n := r.messages
		if n > 0 && (!r.answered || r.answer == r.lastText) {
			n-- // the last message is the answer
		}
		if !same {
			rep.LoseN("assistant messages besides the answer", n)
		}
	}
}

// endText closes a streamed message of the main agent.
func (r *runSummary) endText(agent string, text *formats.TextTracker) {
	if agent != "" {
		return
	}
	if t := text.Flush(agent); t != "" {
		r.lastText = t
	}
	delete(r.streaming, agent)
}

func isAdal(d string) bool { return d == Stream.Name || d == JSON.Name || d == Text.Name }

// exitCode is the run's code as AdaL gives it: the source's own code, or one
// read from the outcome (0 success, 2 stopped on a refused call, 1 failure).
func (r *runSummary) exitCode(e *formats.Event) int {
	if e.Run.ExitCode.OK {
		return e.Run.ExitCode.V
	}
	switch e.Status {
	case formats.Completed:
		return 0
	case formats.Denied:
		return 2
	case formats.StatusUnknown:
		if r.stopped {
			return 2
		}
		if r.errored {
			return 1
		}
		return 0
	}
	if r.stopped {
		return 2
	}
	return 1
}

// failure is the run's error message, or "" for a success.
func (r *runSummary) failure(e *formats.Event) string {
	code := r.exitCode(e)
	switch {
	case code == 0:
		return ""
	case e.Text != "":
		return e.Text
	case code == 2 && r.denied != nil:
		return r.denied.Error
	case r.lastError != "":
		return r.lastError
	case e.Status == formats.Cancelled:
		return "the run was cancelled"
	}
	return "the run failed"
}

// answerText is the run's answer: the Answer event, else the main agent's
// last text.
func (r *runSummary) answerText() string {
	if r.answered {
		return r.answer
	}
	return r.lastText
}
