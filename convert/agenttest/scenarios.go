package agenttest

import (
	"fmt"
	"strings"
)

// Toolset makes the calls of one agent's own tools, so that the same
// scenario is written once for every agent.
type Toolset interface {
	// Shell runs a command.
	Shell(id, command string) Call
	// WriteFile creates a file; path is relative to the working folder,
	// and WorkMark+"/"+path is its absolute path.
	WriteFile(id, path, content string) Call
	// Subagent starts a subagent with prompt; ok is false for an agent
	// without subagents.
	Subagent(id, prompt string) (c Call, ok bool)
}

// SubagentWaiter is a Toolset whose subagents run on after the call that
// starts them returns (Codex's spawn_agent): in the subagent scenario the
// main thread then waits for the subagent with this call before its last
// answer.
type SubagentWaiter interface {
	WaitSubagent(id string) Call
}

// SubagentEnder is a Toolset whose subagents end by calling a tool with
// their result (Gemini CLI's complete_task) rather than with text alone:
// the subagent's last reply makes that call.
type SubagentEnder interface {
	SubagentEnd(id, result string) Call
}

// Extras is a Toolset whose agent also runs scenarios of its own, which
// other agents do not (ExtraScenarios): Extra says whether it runs name.
type Extras interface {
	Extra(name string) bool
}

// LoopLimit is the number of identical calls in a row that the loop
// scenario's model asks for at most (past them it answers with text): more
// than any agent lets through before it stops the run as a loop.
const LoopLimit = 8

// The marks the server tells threads apart by.
const (
	MainMark = "agentconv-task"
	SubMark  = "agentconv-subtask"
)

// ScenarioNames lists the scenarios in the order they run.
var ScenarioNames = []string{
	"text-shell", "parallel", "edit", "subagent", "api-error", "rate-limit",
	"refused", "large-output", "resume", "thinking",
	"resume-thinking", "loop",
}

// ExtraScenarios are the scenarios an agent runs only when its Toolset
// says so (Extras): resume-thinking, a resumed session whose answers
// think; loop, a model asking for the same call with the same arguments
// again and again, until the agent's loop detection stops the run.
var ExtraScenarios = map[string]bool{"resume-thinking": true, "loop": true}

// usage gives reply k of a scenario numbers no other reply of it has.
func usage(k int) Usage {
	return Usage{Input: 1000 + 111*k, CacheRead: 200 + 37*k, CacheWrite: 50 + 13*k, Output: 30 + 7*k, Reasoning: 0}
}

// NewScenario builds the scenario name for an agent's tools; ok is false
// when the agent cannot act it (a subagent of an agent without them).
func NewScenario(name string, ts Toolset) (sc Scenario, ok bool) {
	if ExtraScenarios[name] {
		if e, ok := ts.(Extras); !ok || !e.Extra(name) {
			return sc, false
		}
	}
	k := 0
	reply := func(r Reply) Reply {
		r.Usage = usage(k)
		if r.Thinking != "" {
			r.Usage.Reasoning = 11 + k
			r.Usage.Output += r.Usage.Reasoning
		}
		k++
		return r
	}
	prompt := fmt.Sprintf("%s: %s", MainMark, name)
	main := func(rs ...Reply) []Thread { return []Thread{{Name: "main", Match: MainMark, Replies: rs}} }
	sc = Scenario{Name: name, Prompt: prompt, Side: Reply{Text: "agentconv side answer", Usage: Usage{Input: 7, Output: 3}}}
	switch name {
	case "text-shell":
		sc.Threads = main(
			reply(Reply{Text: "I will run a command.", Calls: []Call{ts.Shell("call_shell_1", "echo agentconv-shell-output")}}),
			reply(Reply{Text: "The command printed agentconv-shell-output."}))
	case "parallel":
		sc.Threads = main(
			reply(Reply{Text: "Two commands at once.", Calls: []Call{
				ts.Shell("call_par_1", "echo agentconv-first"),
				ts.Shell("call_par_2", "echo agentconv-second")}}),
			reply(Reply{Text: "Both commands ran."}))
	case "edit":
		sc.Threads = main(
			reply(Reply{Text: "I will write the file.", Calls: []Call{ts.WriteFile("call_edit_1", "notes.txt", "agentconv wrote this\n")}}),
			reply(Reply{Text: "The file notes.txt is written."}))
	case "subagent":
		call, has := ts.Subagent("call_sub_1", SubMark+": list the folder")
		if !has {
			return sc, false
		}
		sub := Thread{Name: "subagent", Match: SubMark}
		sc.Threads = main(reply(Reply{Text: "A subagent will look.", Calls: []Call{call}}))
		end := Reply{Text: "The subagent found agentconv-from-subagent."}
		if e, ok := ts.(SubagentEnder); ok {
			end.Calls = []Call{e.SubagentEnd("call_sub_end_1", end.Text)}
		}
		sub.Replies = []Reply{
			reply(Reply{Text: "Listing.", Calls: []Call{ts.Shell("call_sub_shell_1", "echo agentconv-from-subagent")}}),
			reply(end),
		}
		if w, ok := ts.(SubagentWaiter); ok {
			sc.Threads[0].Replies = append(sc.Threads[0].Replies, reply(Reply{Text: "Waiting for the subagent.", Calls: []Call{w.WaitSubagent("call_sub_wait_1")}}))
		}
		sc.Threads[0].Replies = append(sc.Threads[0].Replies, reply(Reply{Text: "The subagent is done."}))
		// An agent whose subagent runs in the background (Claude Code
		// 2.1) ends its turn at once, and tells the model of the
		// subagent's end in a turn of its own.
		sc.Threads[0].Replies = append(sc.Threads[0].Replies, reply(Reply{Text: "The subagent reported agentconv-from-subagent."}))
		sc.Threads = append([]Thread{sub}, sc.Threads...) // the subagent's mark is the more specific
	case "api-error":
		sc.Threads = main(Reply{Fail: []Failure{{Status: 500, Type: "api_error"}, {Status: 529, Type: "overloaded_error", Message: "Overloaded"}}, FailAlways: true})
	case "rate-limit":
		sc.Threads = main(Reply{Fail: []Failure{{Status: 429, Type: "rate_limit_error", Message: "Rate limited"}}, FailAlways: true})
	case "refused":
		// The agent runs without permission for the shell: it refuses.
		sc.Threads = main(
			reply(Reply{Text: "I will try a command.", Calls: []Call{ts.Shell("call_refused_1", "touch agentconv-refused")}}),
			reply(Reply{Text: "The command was refused."}))
	case "large-output":
		sc.Threads = main(
			reply(Reply{Text: "A long listing.", Calls: []Call{ts.Shell("call_large_1", "seq 1 40000")}}),
			reply(Reply{Text: "It printed 40000 lines."}))
	case "resume":
		sc.Resume = MainMark + ": resume the work"
		sc.Threads = main(
			reply(Reply{Text: "First answer."}),
			reply(Reply{Text: "Resumed; a command.", Calls: []Call{ts.Shell("call_resume_1", "echo agentconv-resumed")}}),
			reply(Reply{Text: "Second answer."}))
	case "thinking":
		sc.Threads = main(
			reply(Reply{Thinking: "The user wants a short answer; think first.", Signature: "c2lnbmF0dXJlLW9mLWFnZW50Y29udg==", Text: "Thought, then answered."}))
	case "resume-thinking":
		sc.Resume = MainMark + ": resume and think again"
		sc.Threads = main(
			reply(Reply{Thinking: "First thought: the user wants a short answer.", Signature: "Zmlyc3Qtc2lnbmF0dXJl", Text: "First answer, after a thought."}),
			reply(Reply{Thinking: "Second thought: the session was resumed.", Signature: "c2Vjb25kLXNpZ25hdHVyZQ==", Text: "Second answer, after another thought."}))
	case "loop":
		// The same call, the same arguments, LoopLimit times (each reply
		// its own call id), then text: an agent that detects the loop
		// stops before the text.
		var rs []Reply
		for i := 1; i <= LoopLimit; i++ {
			rs = append(rs, reply(Reply{Text: "Again.", Calls: []Call{ts.Shell(fmt.Sprintf("call_loop_%d", i), "echo agentconv-loop")}}))
		}
		sc.Threads = main(append(rs, reply(Reply{Text: "The loop ended."}))...)
	default:
		return sc, false
	}
	return sc, true
}

// WorkMark stands in a call's arguments for the working folder the agent
// runs in, which some tools want as an absolute path.
const WorkMark = "{work}"

// In returns the scenario with WorkMark replaced by work in every call's
// arguments.
func (sc Scenario) In(work string) Scenario {
	threads := make([]Thread, len(sc.Threads))
	for i, th := range sc.Threads {
		th.Replies = append([]Reply(nil), th.Replies...)
		for j, r := range th.Replies {
			calls := make([]Call, len(r.Calls))
			for k, c := range r.Calls {
				c.Args = replaceWork(c.Args, work).(map[string]any)
				calls[k] = c
			}
			th.Replies[j].Calls = calls
		}
		threads[i] = th
	}
	sc.Threads = threads
	return sc
}

func replaceWork(v any, work string) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, WorkMark, work)
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = replaceWork(x, work)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = replaceWork(x, work)
		}
		return s
	}
	return v
}

// Refuses says whether the agent runs the scenario without permission
// for its tools.
func (sc Scenario) Refuses() bool { return sc.Name == "refused" }
