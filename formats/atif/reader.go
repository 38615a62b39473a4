package atif

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// newReader reads a stream of trajectory documents, one run each. Any
// version from ATIF-v1.0 to v1.7 is read; what the model has no place for
// (image and audio content parts, tool definitions, token ids) is kept in
// the document, which the atif writer copies whole.
func newReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return formats.NewObjectReader(r, o, "trajectory", func(q *formats.EventQueue, b []byte, n int) error {
		var t readTrajectory
		if err := o.Report.UnmarshalObject(n, b, &t); err != nil {
			return err
		}
		if !strings.HasPrefix(t.SchemaVersion, "ATIF-v") {
			return formats.Errorf(n, "not an ATIF trajectory: schema_version is %q, not ATIF-v1.x", t.SchemaVersion)
		}
		d := &decoder{q: q, line: n, report: o.Report}
		d.run(&t)
		return nil
	})
}

// readTrajectory is a trajectory as read: extras stay raw until needed.
type readTrajectory struct {
	SchemaVersion string            `json:"schema_version"`
	SessionID     string            `json:"session_id"`
	TrajectoryID  string            `json:"trajectory_id"`
	Agent         readAgent         `json:"agent"`
	Steps         []readStep        `json:"steps"`
	FinalMetrics  *readFinal        `json:"final_metrics"`
	Extra         map[string]any    `json:"extra"`
	Subagents     []*readTrajectory `json:"subagent_trajectories"`
	Continued     string            `json:"continued_trajectory_ref"`
}

type readAgent struct {
	Name    string          `json:"name"`
	Version string          `json:"version"`
	Model   string          `json:"model_name"`
	Tools   json.RawMessage `json:"tool_definitions"`
	Extra   map[string]any  `json:"extra"`
}

type readStep struct {
	StepID    int             `json:"step_id"`
	Timestamp string          `json:"timestamp"`
	Source    string          `json:"source"`
	Model     string          `json:"model_name"`
	Message   json.RawMessage `json:"message"`
	Reasoning string          `json:"reasoning_content"`
	ToolCalls []toolCall      `json:"tool_calls"`
	Obs       *readObs        `json:"observation"`
	Metrics   *metrics        `json:"metrics"`
	Extra     map[string]any  `json:"extra"`
}

type readObs struct {
	Results []readResult `json:"results"`
}

type readResult struct {
	SourceCallID *string         `json:"source_call_id"`
	Content      json.RawMessage `json:"content"`
	Refs         []subagentRef   `json:"subagent_trajectory_ref"`
	Extra        map[string]any  `json:"extra"`
}

type readFinal struct {
	Prompt     *int64         `json:"total_prompt_tokens"`
	Completion *int64         `json:"total_completion_tokens"`
	Cached     *int64         `json:"total_cached_tokens"`
	Cost       *float64       `json:"total_cost_usd"`
	Extra      map[string]any `json:"extra"`
}

type decoder struct {
	q      *formats.EventQueue
	line   int
	report *formats.Report
	// read are the embedded trajectories already read: each is read once,
	// however often the document refers to it, so that references cannot
	// multiply a small document into millions of events.
	read map[*readTrajectory]bool
}

func (d *decoder) add(e *formats.Event) { d.q.Add(e) }

// raw adds a raw event for a part of the document that the model has no
// place for, so that a writer of another dialect reports it lost. It has
// no time of its own: it is a part of a step, not an event of the run.
func (d *decoder) raw(agent string, typ string) {
	d.add(&formats.Event{Kind: formats.Raw, Agent: agent, Source: formats.Source{Type: typ}})
}

func (d *decoder) run(t *readTrajectory) {
	start := &formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: t.SessionID,
		Model: t.Agent.Model, AgentName: t.Agent.Name, AgentVersion: t.Agent.Version, Cwd: str(t.Extra[extraCwd])}}
	if len(t.Steps) > 0 {
		start.Time = parseTime(t.Steps[0].Timestamp)
	}
	start.Run.SystemInstructions = systemPrompt(t.Steps)
	d.add(start)
	if len(t.Agent.Tools) > 0 && string(t.Agent.Tools) != "null" {
		d.raw("", "agent/tool_definitions")
	}
	d.steps(t, "")
	if t.Continued != "" {
		// Harbor's linear history: the run goes on in another document,
		// which a directory input reads as a run of its own.
		d.report.Warn(d.line, "the trajectory is continued in %s; read that file too (a directory of trajectories reads both)", t.Continued)
	}
	if a := str(t.Extra[extraAnswer]); a != "" {
		d.add(&formats.Event{Kind: formats.Answer, Text: a})
	}
	end := &formats.Event{Kind: formats.RunEnd}
	if len(t.Steps) > 0 {
		end.Time = parseTime(t.Steps[len(t.Steps)-1].Timestamp)
	}
	if o, ok := t.Extra[extraOutcome].(map[string]any); ok {
		end.Status = parseStatus(str(o[extraStatus]))
		if c, ok := o["exit_code"].(float64); ok {
			end.Run.ExitCode = formats.Some(int(c))
		}
		end.Text = str(o[extraError])
	}
	if ms, ok := t.Extra[extraDurationMs].(float64); ok && ms > 0 {
		end.Duration = time.Duration(ms) * time.Millisecond
	}
	if fm := t.FinalMetrics; fm != nil {
		end.Usage = formats.UsageInfo{InputTokens: formats.OptFrom(fm.Prompt), OutputTokens: formats.OptFrom(fm.Completion),
			CacheReadTokens: formats.OptFrom(fm.Cached), CostUSD: formats.OptFrom(fm.Cost),
			CacheWriteTokens: optInt(fm.Extra[extraCacheCreation]), ReasoningTokens: optInt(fm.Extra[extraReasoning])}
	}
	d.add(end)
}

// steps reads the steps of one agent's trajectory.
func (d *decoder) steps(t *readTrajectory, agent string) {
	subs := map[string]*readTrajectory{}
	for _, s := range t.Subagents {
		if s != nil {
			subs[s.TrajectoryID] = s
		}
	}
	model := t.Agent.Model
	for i := range t.Steps {
		st := &t.Steps[i]
		at := parseTime(st.Timestamp)
		text := d.message(st.Message, agent, at)
		switch st.Source {
		case "user":
			d.add(&formats.Event{Kind: formats.UserMessage, Agent: agent, Time: at, Text: text})
		case "system":
			d.system(st, agent, at, text, subs)
		default:
			if st.Model != "" && st.Model != model {
				model = st.Model
				d.add(&formats.Event{Kind: formats.ModelChange, Agent: agent, Time: at, Run: formats.RunInfo{Model: model}})
			} else if st.Model == "" && model != t.Agent.Model && t.Agent.Model != "" {
				model = t.Agent.Model
				d.add(&formats.Event{Kind: formats.ModelChange, Agent: agent, Time: at, Run: formats.RunInfo{Model: model}})
			}
			if st.Metrics != nil {
				m := st.Metrics
				// Token ids and log probabilities (for training) have no
				// place in the model: each is a raw event, kept in the
				// document.
				for i, v := range []json.RawMessage{m.PromptIDs, m.CompIDs, m.Logprobs} {
					if len(v) > 0 && string(v) != "null" {
						d.raw(agent, [...]string{"metrics/prompt_token_ids", "metrics/completion_token_ids", "metrics/logprobs"}[i])
					}
				}
				d.add(&formats.Event{Kind: formats.Usage, Agent: agent, Time: at, Usage: formats.UsageInfo{
					InputTokens: formats.OptFrom(m.Prompt), OutputTokens: formats.OptFrom(m.Completion),
					CacheReadTokens: formats.OptFrom(m.Cached), CostUSD: formats.OptFrom(m.Cost),
					CacheWriteTokens: optInt(m.Extra[extraCacheCreation]), ReasoningTokens: optInt(m.Extra[extraReasoning])}})
			}
			if text != "" || st.Reasoning != "" {
				d.add(&formats.Event{Kind: formats.Message, Agent: agent, Time: at, Text: text, Thinking: st.Reasoning})
			}
			for _, c := range st.ToolCalls {
				if c.Extra[extraRefusedOnly] == true {
					continue // refused, never made: its result says so
				}
				call := formats.Call{ID: c.ID, Name: c.Name, Args: c.Args, Summary: str(c.Extra["summary"])}
				if raw, ok := c.Extra[extraArguments]; ok {
					if b, err := formats.Marshal(raw); err == nil {
						call.Args = b
					}
				}
				d.add(&formats.Event{Kind: formats.ToolCall, Agent: agent, Time: at, Call: call})
			}
		}
		if st.Obs != nil && st.Source != "system" {
			d.results(st, agent, at, subs)
		}
	}
}

func (d *decoder) system(st *readStep, agent string, at time.Time, text string, subs map[string]*readTrajectory) {
	if st.Obs != nil {
		// A system step's results may refer to subagents (Harbor's
		// context summarization, the RFC's compaction by a subagent).
		for _, r := range st.Obs.Results {
			for _, ref := range r.Refs {
				d.subagent(ref, subs[ref.TrajectoryID], agent, "", at)
			}
		}
	}
	if cm, ok := st.Extra[extraContextMgmt].(map[string]any); ok && str(cm["type"]) == "compaction" {
		summary := text
		if st.Obs != nil && len(st.Obs.Results) > 0 {
			summary = d.message(st.Obs.Results[0].Content, agent, at)
		}
		d.add(&formats.Event{Kind: formats.Compaction, Agent: agent, Time: at, Text: summary})
		return
	}
	sev := formats.Info
	switch str(st.Extra[extraNotice]) {
	case "warning":
		sev = formats.Warning
	case "error":
		sev = formats.Error
	}
	if text != "" {
		d.add(&formats.Event{Kind: formats.Notice, Agent: agent, Time: at, Severity: sev, Text: text})
	}
}

// results reads a step's observation: each result ends its call, after
// the subagents it refers to.
func (d *decoder) results(st *readStep, agent string, at time.Time, subs map[string]*readTrajectory) {
	names := map[string]string{}
	for _, c := range st.ToolCalls {
		names[c.ID] = c.Name
	}
	for _, r := range st.Obs.Results {
		call := ""
		if r.SourceCallID != nil {
			call = *r.SourceCallID
		}
		for _, ref := range r.Refs {
			d.subagent(ref, subs[ref.TrajectoryID], agent, call, at)
		}
		if call == "" {
			if len(r.Refs) == 0 {
				if text := d.message(r.Content, agent, at); text != "" {
					d.add(&formats.Event{Kind: formats.Notice, Agent: agent, Time: at, Text: text})
				}
			}
			continue
		}
		if _, ok := names[call]; !ok {
			// A result for a call its step does not list (ATIF wants it
			// there): the call is the result's, as the writer gives it.
			names[call] = ""
			d.add(&formats.Event{Kind: formats.ToolCall, Agent: agent, Time: at, Call: formats.Call{ID: call}})
		}
		e := &formats.Event{Kind: formats.ToolResult, Agent: agent, Time: at,
			Call: formats.Call{ID: call, Name: names[call], Status: formats.Completed}}
		content := d.message(r.Content, agent, at)
		if s := parseStatus(str(r.Extra[extraStatus])); s != formats.StatusUnknown {
			e.Call.Status = s
		} else if b, ok := r.Extra["tool_result_is_error"].(bool); ok && b {
			e.Call.Status = formats.Failed // as Harbor's converters mark it
		}
		if errText, ok := r.Extra[extraError]; ok {
			e.Call.Output, e.Call.Error = formats.TextOutput(content), str(errText)
		} else if e.Call.Status == formats.Completed {
			e.Call.Output = formats.TextOutput(content)
		} else {
			e.Call.Error = content
		}
		if ms, ok := r.Extra[extraDurationMs].(float64); ok && ms > 0 {
			e.Duration = time.Duration(ms) * time.Millisecond
		}
		d.add(e)
	}
}

// subagent reads an embedded subagent, or says that a referenced one is
// not embedded.
func (d *decoder) subagent(ref subagentRef, t *readTrajectory, parent, call string, at time.Time) {
	id := ref.TrajectoryID
	if t == nil {
		switch {
		case ref.TrajectoryPath != "":
			d.report.Warn(d.line, "subagent trajectory %s is another file, not read with this one; give it as an input too (a directory of trajectories reads them all)", ref.TrajectoryPath)
		case ref.TrajectoryID != "":
			d.report.Warn(d.line, "subagent trajectory %q is referred to but not embedded in subagent_trajectories; it is left out", ref.TrajectoryID)
		case ref.SessionID != "":
			d.report.Warn(d.line, "subagent session %s is referred to by its session id only (ATIF before v1.7) and not embedded; it is left out", ref.SessionID)
		}
		return
	}
	if d.read[t] {
		d.report.Warn(d.line, "subagent trajectory %q is referred to again; it is read once, at its first reference", id)
		return
	}
	if d.read == nil {
		d.read = map[*readTrajectory]bool{}
	}
	d.read[t] = true
	start := &formats.Event{Kind: formats.AgentStart, Agent: id, Time: at, AgentInfo: formats.AgentInfo{
		Label: t.Agent.Name, Parent: parent, ParentCall: call, Model: t.Agent.Model, Cwd: str(t.Extra[extraCwd])}}
	d.add(start)
	d.steps(t, id)
	end := &formats.Event{Kind: formats.AgentEnd, Agent: id, Time: at, Status: formats.Completed, Text: str(t.Extra[extraReport])}
	if s := parseStatus(str(t.Extra[extraStatus])); s != formats.StatusUnknown {
		end.Status = s
	}
	if n := len(t.Steps); n > 0 {
		if tm := parseTime(t.Steps[n-1].Timestamp); !tm.IsZero() {
			end.Time = tm
		}
	}
	d.add(end)
}

// message is a message or content as text: a string, or the text of its
// parts. Image and audio parts have no place in the model: each is a raw
// event, kept in the document.
// systemPrompt is the text of the system steps a trajectory begins with,
// its system prompt: those that are neither a notice nor a compaction
// (agentconv writes those as system steps too). They are still read as
// notices too, for the dialects that have no place for a system prompt.
func systemPrompt(steps []readStep) string {
	var texts []string
	for i := range steps {
		st := &steps[i]
		if st.Source != "system" {
			break
		}
		if _, ok := st.Extra[extraNotice]; ok {
			continue
		}
		if _, ok := st.Extra[extraContextMgmt]; ok {
			continue
		}
		if text := plainText(st.Message); text != "" {
			texts = append(texts, text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// plainText is the text of a step's message: the string, or the text
// parts of a list of content parts.
func plainText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

func (d *decoder) message(raw json.RawMessage, agent string, at time.Time) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw)
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
			continue
		}
		d.raw(agent, "content/"+p.Type)
	}
	return strings.Join(texts, "\n\n")
}

func parseStatus(s string) formats.Status {
	switch s {
	case "completed":
		return formats.Completed
	case "failed":
		return formats.Failed
	case "cancelled":
		return formats.Cancelled
	case "denied":
		return formats.Denied
	}
	return formats.StatusUnknown
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

func str(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func optInt(v any) formats.Opt[int64] {
	if f, ok := v.(float64); ok {
		return formats.Some(int64(f))
	}
	return formats.Opt[int64]{}
}
