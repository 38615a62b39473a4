package atif

import (
	"bytes"
	"io"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// writer holds one run as a trajectory and writes it at the run's end.
type writer struct {
	w    io.Writer
	opts formats.WriteOptions
	root *agentTraj
	// agents are the trajectories of the run, by agent id ("" the main).
	agents map[string]*agentTraj
	// results are the observation results by call id, so that a subagent
	// the call spawned can be referenced from them.
	results map[string]*result
	// spawned are the subagents by the call that spawned them, for a
	// result that comes after them.
	spawned map[string][]string
	// buf holds a trajectory's indented JSON, kept from run to run.
	buf []byte
}

// agentTraj is the trajectory of one agent being built.
type agentTraj struct {
	t      *trajectory
	parent *agentTraj
	model  string // the model now in use
	// cur is the agent step being filled: it takes text, reasoning and
	// tool calls until it has results or metrics.
	cur      *step
	text     strings.Builder
	thinking strings.Builder
	// pending holds deltas not yet closed by a whole message.
	pending, pendingThinking strings.Builder
	calls                    map[string]*step
	// usage is a request's usage that waits for its response's step.
	usage    formats.UsageInfo
	hasUsage bool
}

func newWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &writer{w: w, opts: o}
}

// Observe: an atif record copied by the pipeline leaves nothing to hold.
func (w *writer) Observe(*formats.Event, *formats.RunView) {}

func (w *writer) Write(e *formats.Event, v *formats.RunView) error {
	if e.Kind == formats.RunStart {
		w.start(e)
		return nil
	}
	if w.root == nil {
		w.start(&formats.Event{Kind: formats.RunStart, Run: v.Info, Source: e.Source})
	}
	if e.Kind == formats.AgentStart {
		w.startAgent(e)
		return nil
	}
	a := w.agent(e.Agent)
	switch e.Kind {
	case formats.RunEnd:
		return w.end(e, v)
	case formats.AgentEnd:
		w.endAgent(e)
	case formats.UserMessage:
		a.close()
		a.t.Steps = append(a.t.Steps, &step{Source: "user", Timestamp: stamp(e), Message: jsonString(e.Prompt())})
	case formats.TextDelta:
		a.open(e)
		a.pending.WriteString(e.Piece())
	case formats.ThinkingDelta:
		a.open(e)
		a.pendingThinking.WriteString(e.Piece())
	case formats.Message:
		if a.cur != nil && ((e.Thinking != "" || e.MessageText() != "") && a.text.Len() > 0 || e.Thinking != "" && a.thinking.Len() > 0) {
			// Reasoning or a message after the step's text, or reasoning
			// after its reasoning, is the next response's: a step holds
			// one of each.
			a.close()
		}
		a.open(e)
		// A whole message repeats the deltas that streamed it.
		if e.Thinking != "" {
			a.pendingThinking.Reset()
		}
		if e.MessageText() != "" {
			a.pending.Reset()
		}
		a.flush()
		add(&a.thinking, e.Thinking)
		add(&a.text, e.MessageText())
		a.flush()
	case formats.ToolCall:
		st := a.open(e)
		a.flush()
		st.ToolCalls = append(st.ToolCalls, &toolCall{ID: e.Call.ID, Name: e.Call.Name, Args: arguments(e.Call.Args), Extra: argsExtra(e.Call.Args, e.Call.Summary)})
		a.calls[e.Call.ID] = st
	case formats.ToolResult:
		w.result(e, a)
	case formats.Usage:
		// A request's usage goes on the step of its response: the open
		// one, or the next (Claude gives usage before the response).
		if a.cur != nil && a.cur.Metrics == nil {
			a.cur.Metrics = stepMetrics(e.Usage)
		} else {
			a.usage.Add(e.Usage)
			a.hasUsage = true
		}
	case formats.Compaction:
		a.close()
		st := &step{Source: "system", Timestamp: stamp(e), Message: jsonString(""),
			Extra: map[string]any{extraContextMgmt: map[string]string{"type": "compaction", "boundary": "replace"}}}
		if e.Summary() != "" {
			st.Obs = &observation{Results: []*result{{Content: jsonString(e.Summary())}}}
		}
		a.t.Steps = append(a.t.Steps, st)
	case formats.Notice:
		a.close()
		a.t.Steps = append(a.t.Steps, &step{Source: "system", Timestamp: stamp(e), Message: jsonString(e.NoticeText()),
			Extra: map[string]any{extraNotice: e.Severity.String()}})
	case formats.ModelChange:
		a.close()
		a.model = e.Run.Model
	case formats.Answer:
		if e.Agent == "" {
			a.flush()
		}
		if e.AnswerText() != "" && e.AnswerText() != a.lastMessage() {
			setExtra(&a.t.Extra, extraAnswer, e.AnswerText())
		}
	}
	return nil
}

// Close has nothing to write: a trajectory is written at its run's end,
// and the pipeline ends every run.
func (w *writer) Close() error { return nil }

func (w *writer) start(e *formats.Event) {
	name := e.Run.AgentName
	if name == "" {
		name = e.Source.Dialect
	}
	if name == "" {
		name = "agent"
	}
	t := &trajectory{SchemaVersion: SchemaVersion, SessionID: e.Run.SessionID,
		Agent: agentSchema{Name: name, Version: e.Run.AgentVersion, Model: e.Run.Model}}
	if e.Run.Cwd != "" {
		setExtra(&t.Extra, extraCwd, e.Run.Cwd)
	}
	w.root = &agentTraj{t: t, model: e.Run.Model, calls: map[string]*step{}}
	w.agents = map[string]*agentTraj{"": w.root}
	w.results = map[string]*result{}
	w.spawned = map[string][]string{}
}

// agent returns an agent's trajectory; an agent never started is made a
// subagent of the main one.
func (w *writer) agent(id string) *agentTraj {
	if a := w.agents[id]; a != nil {
		return a
	}
	w.startAgent(&formats.Event{Kind: formats.AgentStart, Agent: id})
	return w.agents[id]
}

func (w *writer) startAgent(e *formats.Event) {
	if w.agents[e.Agent] != nil && e.Agent != "" {
		return
	}
	parent := w.agents[e.AgentInfo.Parent]
	if parent == nil {
		parent = w.root
	}
	name := e.AgentInfo.Label
	if name == "" {
		name = e.Agent
	}
	t := &trajectory{SchemaVersion: SchemaVersion, TrajectoryID: e.Agent,
		Agent: agentSchema{Name: name, Model: e.AgentInfo.Model}}
	if e.AgentInfo.Cwd != "" {
		setExtra(&t.Extra, extraCwd, e.AgentInfo.Cwd)
	}
	a := &agentTraj{t: t, parent: parent, model: e.AgentInfo.Model, calls: map[string]*step{}}
	w.agents[e.Agent] = a
	parent.t.Subagents = append(parent.t.Subagents, t)
	if c := e.AgentInfo.ParentCall; c != "" {
		if r := w.results[c]; r != nil {
			r.Refs = append(r.Refs, subagentRef{TrajectoryID: e.Agent})
		} else {
			w.spawned[c] = append(w.spawned[c], e.Agent)
		}
	} else {
		// No call spawned it: the parent's current step refers to it.
		st := parent.open(e)
		parent.flush()
		if st.Obs == nil {
			st.Obs = &observation{}
		}
		st.Obs.Results = append(st.Obs.Results, &result{Refs: []subagentRef{{TrajectoryID: e.Agent}}})
	}
}

func (w *writer) endAgent(e *formats.Event) {
	a := w.agents[e.Agent]
	if a == nil || a == w.root {
		return
	}
	a.close()
	if e.Status != formats.StatusUnknown && e.Status != formats.Completed {
		setExtra(&a.t.Extra, extraStatus, e.Status.String())
	}
	if e.Report() != "" {
		setExtra(&a.t.Extra, extraReport, e.Report())
	}
}

// result puts a call's result in the observation of the step that made
// the call.
func (w *writer) result(e *formats.Event, a *agentTraj) {
	a.flush()
	st := a.calls[e.Call.ID]
	if st == nil {
		// A result without its call: the call goes in the current step.
		// Only a refused call has none, which no response of the model
		// made: it says so, so that it reads back without a call (and
		// the step's usage, if any, with the response that has one).
		st = a.open(e)
		tc := &toolCall{ID: e.Call.ID, Name: e.Call.Name, Args: arguments(e.Call.Args)}
		if e.Call.Status == formats.Denied {
			setExtra(&tc.Extra, extraRefusedOnly, true)
		}
		st.ToolCalls = append(st.ToolCalls, tc)
		a.calls[e.Call.ID] = st
	}
	if st.Obs == nil {
		st.Obs = &observation{}
	}
	id := e.Call.ID
	r := &result{SourceCallID: &id}
	// The content is the output, else the error; an error beside an
	// output, and the (empty) error of a call that did not succeed but has
	// an output, go in extra, so that a reader tells the two apart.
	content := e.Call.Output.Text()
	if content == "" {
		content = e.Call.Error
	} else if e.Call.Error != "" || e.Call.Status != formats.Completed && e.Call.Status != formats.StatusUnknown {
		setExtra(&r.Extra, extraError, e.Call.Error)
	}
	r.Content = jsonString(content)
	if e.Call.Status != formats.Completed && e.Call.Status != formats.StatusUnknown {
		setExtra(&r.Extra, extraStatus, e.Call.Status.String())
	}
	if e.Duration > 0 {
		setExtra(&r.Extra, extraDurationMs, e.Duration.Milliseconds())
	}
	for _, sub := range w.spawned[e.Call.ID] {
		r.Refs = append(r.Refs, subagentRef{TrajectoryID: sub})
	}
	delete(w.spawned, e.Call.ID)
	w.results[e.Call.ID] = r
	st.Obs.Results = append(st.Obs.Results, r)
	if st == a.cur {
		// The model responds again after results: a new step.
		a.close()
	}
}

// end writes the run's trajectory.
func (w *writer) end(e *formats.Event, v *formats.RunView) error {
	root := w.root
	for _, a := range w.agents {
		a.close()
		if a.hasUsage {
			// Usage no response followed: a step of its own.
			a.open(e)
			a.close()
		}
	}
	t := root.t
	if v.Info.SessionID != "" {
		t.SessionID = v.Info.SessionID
	}
	if t.Agent.Model == "" && len(v.Models) == 1 {
		t.Agent.Model = v.Models[0]
	}
	outcome := map[string]any{extraStatus: v.Status.String(), "exit_code": v.ExitCode}
	if v.Failure != "" {
		outcome[extraError] = v.Failure
	}
	if len(v.Errors) > 1 {
		outcome["errors"] = v.Errors
	}
	if v.Cut {
		outcome["cut"] = true
	}
	setExtra(&t.Extra, extraOutcome, outcome)
	if e.Duration > 0 {
		setExtra(&t.Extra, extraDurationMs, e.Duration.Milliseconds())
	}
	w.prune(t)
	if len(t.Steps) == 0 {
		// A trajectory needs a step: the run's end is one.
		t.Steps = append(t.Steps, &step{Source: "system", Timestamp: stamp(e), Message: jsonString(e.ErrorText())})
	}
	number(t)
	if fm := totals(v.Usage, len(t.Steps)); fm != nil {
		t.FinalMetrics = fm
	}
	// Marshalled compact, then indented in one pass: the encoder's own
	// indentation scans each raw value (a call's arguments) again.
	b, err := formats.Marshal(t)
	w.root, w.agents = nil, nil
	if err != nil {
		return err
	}
	w.buf = append(formats.AppendIndent(w.buf[:0], b, "  "), '\n')
	_, err = w.w.Write(w.buf)
	return err
}

// prune drops the subagents that have no step, and the references to
// them: ATIF has no empty trajectory.
func (w *writer) prune(t *trajectory) {
	kept := t.Subagents[:0]
	gone := map[string]bool{}
	for _, s := range t.Subagents {
		w.prune(s)
		if len(s.Steps) == 0 {
			gone[s.TrajectoryID] = true
			w.opts.Report.Quirk(lostEmptySubagents)
			continue
		}
		kept = append(kept, s)
	}
	t.Subagents = kept
	if len(gone) == 0 {
		return
	}
	for _, st := range t.Steps {
		if st.Obs == nil {
			continue
		}
		results := st.Obs.Results[:0]
		for _, r := range st.Obs.Results {
			refs := r.Refs[:0]
			for _, ref := range r.Refs {
				if !gone[ref.TrajectoryID] {
					refs = append(refs, ref)
				}
			}
			r.Refs = refs
			if r.SourceCallID == nil && len(r.Refs) == 0 && r.Content == nil {
				continue
			}
			results = append(results, r)
		}
		st.Obs.Results = results
		if len(results) == 0 {
			st.Obs = nil
		}
	}
}

// number gives the steps of a trajectory and its subagents their ids.
func number(t *trajectory) {
	for i, st := range t.Steps {
		st.StepID = i + 1
	}
	for _, s := range t.Subagents {
		number(s)
	}
}

// open returns the agent step being filled, or starts one.
func (a *agentTraj) open(e *formats.Event) *step {
	if a.cur == nil {
		a.cur = &step{Source: "agent", Timestamp: stamp(e), Message: jsonString("")}
		if a.model != "" && a.model != a.t.Agent.Model {
			a.cur.Model = a.model
		}
		if a.hasUsage {
			a.cur.Metrics = stepMetrics(a.usage)
			a.usage, a.hasUsage = formats.UsageInfo{}, false
		}
		a.t.Steps = append(a.t.Steps, a.cur)
	}
	return a.cur
}

// flush moves streamed text into the step being filled.
func (a *agentTraj) flush() {
	if a.pending.Len() > 0 {
		add(&a.text, a.pending.String())
		a.pending.Reset()
	}
	if a.pendingThinking.Len() > 0 {
		add(&a.thinking, a.pendingThinking.String())
		a.pendingThinking.Reset()
	}
	if a.cur == nil {
		return
	}
	a.cur.Message = jsonString(a.text.String())
	if a.thinking.Len() > 0 {
		s := a.thinking.String()
		a.cur.Reasoning = &s
	}
}

// close ends the step being filled.
func (a *agentTraj) close() {
	if a.cur == nil {
		return
	}
	a.flush()
	a.cur = nil
	a.text.Reset()
	a.thinking.Reset()
}

// lastMessage is the text of the agent's last agent step.
func (a *agentTraj) lastMessage() string {
	for i := len(a.t.Steps) - 1; i >= 0; i-- {
		if st := a.t.Steps[i]; st.Source == "agent" {
			if st == a.cur {
				return a.text.String()
			}
			var s string
			if json.Unmarshal(st.Message, &s) == nil {
				return s
			}
			return ""
		}
	}
	return ""
}

func add(b *strings.Builder, s string) {
	if s == "" {
		return
	}
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString(s)
}

func stamp(e *formats.Event) string {
	if e.Time.IsZero() || e.Synthetic {
		return ""
	}
	return e.Time.UTC().Format(time.RFC3339Nano)
}

func jsonString(s string) json.RawMessage {
	b, err := formats.Marshal(s)
	if err != nil {
		return json.RawMessage(`""`)
	}
	return b
}

// arguments is a call's arguments as ATIF wants them: a JSON object.
func arguments(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) > 0 && a[0] == '{' {
		return a
	}
	return json.RawMessage(`{}`)
}

// argsExtra keeps arguments that are not an object, and the source's
// summary of the call.
func argsExtra(args json.RawMessage, summary string) map[string]any {
	var m map[string]any
	a := bytes.TrimSpace(args)
	if len(a) > 0 && a[0] != '{' && string(a) != "null" {
		setExtra(&m, extraArguments, json.RawMessage(a))
	}
	if summary != "" {
		setExtra(&m, "summary", summary)
	}
	return m
}

func setExtra(m *map[string]any, k string, v any) {
	if *m == nil {
		*m = map[string]any{}
	}
	(*m)[k] = v
}

func stepMetrics(u formats.UsageInfo) *metrics {
	m := &metrics{Prompt: u.InputTokens.Ptr(), Completion: u.OutputTokens.Ptr(), Cached: u.CacheReadTokens.Ptr(), Cost: u.CostUSD.Ptr()}
	if u.CacheWriteTokens.OK {
		setExtra(&m.Extra, extraCacheCreation, u.CacheWriteTokens.V)
	}
	if u.ReasoningTokens.OK {
		setExtra(&m.Extra, extraReasoning, u.ReasoningTokens.V)
	}
	return m
}

func totals(u formats.UsageInfo, steps int) *finalMetrics {
	fm := &finalMetrics{Prompt: u.InputTokens.Ptr(), Completion: u.OutputTokens.Ptr(), Cached: u.CacheReadTokens.Ptr(),
		Cost: u.CostUSD.Ptr(), Steps: &steps}
	if u.CacheWriteTokens.OK {
		setExtra(&fm.Extra, extraCacheCreation, u.CacheWriteTokens.V)
	}
	if u.ReasoningTokens.OK {
		setExtra(&fm.Extra, extraReasoning, u.ReasoningTokens.V)
	}
	return fm
}
