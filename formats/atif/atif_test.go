package atif

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-json"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestReadRFCExample(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "atif", "rfc-0001-example.json"))
	// The agent's tool definitions and the second step's token ids and
	// log probabilities are raw events.
	if got, want := formatstest.Kinds(evs), "run_start raw user_message usage message tool_call tool_call tool_result tool_result raw raw usage message run_end"; got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	start := evs[0]
	if start.Run.SessionID != "025B810F-B3A2-4C67-93C0-FE7A142A947A" || start.Run.AgentName != "harbor-agent" || start.Run.Model != "gemini-2.5-flash" {
		t.Errorf("run start: %+v", start.Run)
	}
	u := evs[3].Usage
	if u.InputTokens.V != 520 || u.CacheReadTokens.V != 200 || u.OutputTokens.V != 80 || u.CostUSD.V != 0.00045 {
		t.Errorf("first step's usage: %+v", u)
	}
	if evs[4].Thinking == "" || !strings.HasPrefix(evs[4].Text, "I will search") {
		t.Errorf("message: %+v", evs[4])
	}
	r := evs[7]
	if r.Call.ID != "call_price_1" || r.Call.Name != "financial_search" || r.Call.Status != formats.Completed || !strings.Contains(r.Call.Output.Text(), "185.35") {
		t.Errorf("result: %+v", r.Call)
	}
	if evs[0].Time.IsZero() || evs[4].Time.Format("15:04:05") != "10:30:02" {
		t.Errorf("times: %v %v", evs[0].Time, evs[4].Time)
	}
}

// TestReadVersions: the oldest version (session_id required, no
// trajectory ids) reads, and v1.8's audio content parts are kept raw.
func TestReadVersions(t *testing.T) {
	v10 := `{"schema_version":"ATIF-v1.0","session_id":"s1","agent":{"name":"a","version":"1"},"steps":[
{"step_id":1,"source":"user","message":"hi"},
{"step_id":2,"source":"agent","message":"hello","metrics":{"prompt_tokens":5,"completion_tokens":2}}]}`
	evs := formatstest.Read(t, Dialect, v10)
	if got := formatstest.Kinds(evs); got != "run_start user_message usage message run_end" {
		t.Errorf("v1.0: %s", got)
	}
	v18 := `{"schema_version":"ATIF-v1.8","agent":{"name":"a","version":"1"},"steps":[
{"step_id":1,"source":"user","message":[{"type":"text","text":"listen"},{"type":"audio","source":{"media_type":"audio/wav","path":"a.wav"}}]}]}`
	evs = formatstest.Read(t, Dialect, v18)
	if got := formatstest.Kinds(evs); got != "run_start raw user_message run_end" {
		t.Fatalf("v1.8: %s", got)
	}
	if evs[1].Source.Type != "content/audio" || evs[2].Text != "listen" {
		t.Errorf("v1.8 audio part: %+v, prompt %q", evs[1].Source, evs[2].Text)
	}
}

// TestReadSystemPrompt: the system steps a trajectory begins with are its
// system prompt, on the run's start, and still notices; a notice or a
// compaction that agentconv wrote as a system step is not, nor a system
// step after the first prompt.
func TestReadSystemPrompt(t *testing.T) {
	doc := `{"schema_version":"ATIF-v1.6","session_id":"s1","agent":{"name":"a","version":"1"},"steps":[
{"step_id":1,"source":"system","message":"You are a careful agent."},
{"step_id":2,"source":"system","message":"update available","extra":{"notice":"info"}},
{"step_id":3,"source":"system","message":[{"type":"text","text":"Answer briefly."}]},
{"step_id":4,"source":"user","message":"hi"},
{"step_id":5,"source":"system","message":"later"}]}`
	evs := formatstest.Read(t, Dialect, doc)
	if got, want := evs[0].Run.SystemInstructions, "You are a careful agent.\n\nAnswer briefly."; got != want {
		t.Errorf("system instructions %q, want %q", got, want)
	}
	if got := formatstest.Kinds(evs); got != "run_start notice notice notice user_message notice run_end" {
		t.Errorf("kinds: %s", got)
	}
	noPrompt := `{"schema_version":"ATIF-v1.6","session_id":"s1","agent":{"name":"a","version":"1"},"steps":[
{"step_id":1,"source":"system","message":"retrying","extra":{"notice":"warning"}},
{"step_id":2,"source":"user","message":"hi"}]}`
	if got := formatstest.Read(t, Dialect, noPrompt)[0].Run.SystemInstructions; got != "" {
		t.Errorf("a notice read as the system prompt: %q", got)
	}
}

func TestReadRejectsOtherJSON(t *testing.T) {
	_, bad, err := formatstest.ReadAll(Dialect, []byte(`{"schema_version":"2.0","steps":[]}`))
	if err == nil && len(bad) == 0 {
		t.Fatal("a document that is not ATIF was read")
	}
}

// TestWriteSubagentsAndRefusals: a subagent is embedded and referenced
// from the result of the call that spawned it; a refused call keeps its
// status in extra and its reason as the observation.
func TestWriteSubagentsAndRefusals(t *testing.T) {
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s", AgentName: "x"}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "t1", Name: "Task", Args: []byte(`{"prompt":"look"}`)}},
		{Kind: formats.AgentStart, Agent: "t1", AgentInfo: formats.AgentInfo{Label: "Explore", ParentCall: "t1"}},
		{Kind: formats.Message, Agent: "t1", Text: "found it"},
		{Kind: formats.AgentEnd, Agent: "t1", Status: formats.Completed, Text: "report"},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "t1", Name: "Task", Status: formats.Completed, Output: formats.TextOutput("found it")}},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "b1", Name: "Bash", Args: []byte(`{"command":"rm -rf /"}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "b1", Name: "Bash", Status: formats.Denied, Error: "not allowed"}},
		{Kind: formats.RunEnd, Status: formats.Denied},
	}
	out, _ := formatstest.WriteReport(t, Dialect, evs)
	for _, want := range []string{`"subagent_trajectories"`, `"trajectory_id": "t1"`, `"subagent_trajectory_ref"`,
		`"status": "denied"`, `"content": "not allowed"`, `"report": "report"`, `"exit_code": 2`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	back := formatstest.Read(t, Dialect, out)
	if got := formatstest.Kinds(back); got != "run_start user_message tool_call agent_start message agent_end tool_result tool_call tool_result run_end" {
		t.Errorf("read back: %s", got)
	}
	if back[8].Call.Status != formats.Denied || back[3].AgentInfo.ParentCall != "t1" || back[5].Text != "report" {
		t.Errorf("read back: refusal %v, parent call %q, report %q", back[8].Call.Status, back[3].AgentInfo.ParentCall, back[5].Text)
	}
}

func TestDetect(t *testing.T) {
	if detect(formatstest.Fixture(t, "atif", "rfc-0001-example.json")) != 100 {
		t.Error("the RFC's example is not detected")
	}
	for _, s := range []string{`{"type":"system"}`, `{"schema_version":"1.4"}`, `not json`} {
		if detect([]byte(s)) != 0 {
			t.Errorf("%s detected as ATIF", s)
		}
	}
}

var roundTripKinds = []formats.Kind{formats.UserMessage, formats.Message, formats.ToolCall, formats.ToolResult,
	formats.AgentStart, formats.AgentEnd, formats.Compaction}

func FuzzReader(f *testing.F) {
	f.Add(formatstest.Fixture(f, "atif", "rfc-0001-example.json"))
	for _, name := range realFiles {
		f.Add(formatstest.Fixture(f, "atif", name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, Dialect, data, roundTripKinds...)
	})
}

// realFiles are the trajectories copied from public repositories (see
// testdata/atif/SOURCES.md), one per version found: v1.2, v1.5, v1.6, v1.7.
var realFiles = []string{
	"nemo-hermes-native-trajectory.json",
	"harbor-openhands-hello-world.trajectory.json",
	"harbor-terminus-2-context-summarization.trajectory.json",
	"harbor-terminus-2-linear-history.trajectory.json",
	"harbor-terminus-2-timeout.trajectory.json",
	"nemo-exmp01-atif-v1.6.json",
	"nemo-exmp02-atif.json",
	"nemo-exmp06-atif.json",
}

// TestReadRealFiles: every prompt, call, result with a call, and step
// metrics of a real trajectory becomes its event, whatever the version.
func TestReadRealFiles(t *testing.T) {
	for _, name := range realFiles {
		t.Run(name, func(t *testing.T) {
			data := formatstest.Fixture(t, "atif", name)
			var doc struct {
				Version string `json:"schema_version"`
				Agent   struct {
					Name, Version string
				} `json:"agent"`
				Steps []struct {
					Source    string            `json:"source"`
					ToolCalls []json.RawMessage `json:"tool_calls"`
					Metrics   json.RawMessage   `json:"metrics"`
					Obs       *struct {
						Results []struct {
							Call *string `json:"source_call_id"`
						} `json:"results"`
					} `json:"observation"`
				} `json:"steps"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			var prompts, calls, results, metrics int
			for _, s := range doc.Steps {
				if s.Source == "user" {
					prompts++
				}
				calls += len(s.ToolCalls)
				if len(s.Metrics) > 0 && s.Source == "agent" {
					metrics++
				}
				if s.Obs != nil && s.Source != "system" {
					for _, r := range s.Obs.Results {
						if r.Call != nil {
							results++
						}
					}
				}
			}
			evs := formatstest.Read(t, Dialect, data)
			got := func(k formats.Kind) int { return len(formatstest.OfKind(evs, k)) }
			if got(formats.UserMessage) != prompts || got(formats.ToolCall) != calls || got(formats.ToolResult) != results || got(formats.Usage) != metrics {
				t.Errorf("%s: %d prompts, %d calls, %d results, %d usages read; the file has %d, %d, %d, %d",
					doc.Version, got(formats.UserMessage), got(formats.ToolCall), got(formats.ToolResult), got(formats.Usage), prompts, calls, results, metrics)
			}
			if r := evs[0].Run; r.AgentName != doc.Agent.Name || r.AgentVersion != doc.Agent.Version {
				t.Errorf("agent %q %q, want %q %q", r.AgentName, r.AgentVersion, doc.Agent.Name, doc.Agent.Version)
			}
		})
	}
}

// TestReadHarborSummarization: Harbor's terminus-2 hands its context to
// subagents whose trajectories are other files, from a system step, and
// continues its own history in another file: each is said, not dropped.
func TestReadHarborSummarization(t *testing.T) {
	evs, warn := formatstest.ReadWarnings(t, Dialect, formatstest.Fixture(t, "atif", "harbor-terminus-2-linear-history.trajectory.json"))
	for _, want := range []string{"trajectory.summarization-1-summary.json is another file", "trajectory.summarization-1-answers.json is another file",
		"continued in trajectory.cont-1.json"} {
		if !strings.Contains(warn, want) {
			t.Errorf("no warning that %s:\n%s", want, warn)
		}
	}
	end := evs[len(evs)-1]
	if end.Kind != formats.RunEnd || end.Usage.CostUSD.V <= 0 || end.Usage.InputTokens.V <= 0 {
		t.Errorf("the run's end lacks its final metrics: %+v", end)
	}
	// The RFC's compaction by an embedded subagent, from a system step.
	compact := `{"schema_version":"ATIF-v1.7","agent":{"name":"a","version":"1"},"steps":[
{"step_id":1,"source":"user","message":"go"},
{"step_id":2,"source":"system","message":"","observation":{"results":[{"content":"Summary: X","subagent_trajectory_ref":[{"trajectory_id":"compact-001"}]}]},
 "extra":{"context_management":{"type":"compaction","boundary":"replace"}}}],
"subagent_trajectories":[{"schema_version":"ATIF-v1.7","trajectory_id":"compact-001","agent":{"name":"compactor","version":"1"},
 "steps":[{"step_id":1,"source":"agent","message":"Summary: X"}]}]}`
	evs = formatstest.Read(t, Dialect, compact)
	if got := formatstest.Kinds(evs); got != "run_start user_message agent_start message agent_end compaction run_end" {
		t.Fatalf("compaction by a subagent: %s", got)
	}
	if evs[2].AgentInfo.Label != "compactor" || evs[5].Text != "Summary: X" {
		t.Errorf("subagent %+v, summary %q", evs[2].AgentInfo, evs[5].Text)
	}
}

// TestWriteAgentVersion: the agent's version is written, as ATIF requires
// the field, and read back.
func TestWriteAgentVersion(t *testing.T) {
	out, _ := formatstest.WriteReport(t, Dialect, []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{AgentName: "claude-code", AgentVersion: "2.1.3"}},
		{Kind: formats.UserMessage, Text: "hi"},
		{Kind: formats.RunEnd, Status: formats.Completed},
	})
	if !strings.Contains(out, `"version": "2.1.3"`) {
		t.Errorf("no version:\n%s", out)
	}
	if back := formatstest.Read(t, Dialect, out); back[0].Run.AgentVersion != "2.1.3" {
		t.Errorf("read back %q", back[0].Run.AgentVersion)
	}
}

// TestWriteStepsAndMetrics: one step per model response, with its text,
// reasoning, calls, their results and the request's metrics (prompt
// tokens with the cached ones, cache writes and reasoning in extra); a
// compaction is a system step with the RFC's context_management; the
// final metrics hold the run's totals, the subagent's cost included.
func TestWriteStepsAndMetrics(t *testing.T) {
	u := func(in, cached, write, out, reasoning int64, cost float64) formats.UsageInfo {
		return formats.UsageInfo{InputTokens: formats.Some(in), CacheReadTokens: formats.Some(cached), CacheWriteTokens: formats.Some(write),
			OutputTokens: formats.Some(out), ReasoningTokens: formats.Some(reasoning), CostUSD: formats.Some(cost)}
	}
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s", AgentName: "x", AgentVersion: "1"}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.Usage, Usage: u(100, 60, 10, 20, 5, 0.25)},
		{Kind: formats.Message, Text: "looking", Thinking: "hmm"},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "Task", Args: []byte(`{"prompt":"p"}`)}},
		{Kind: formats.AgentStart, Agent: "a1", AgentInfo: formats.AgentInfo{Label: "helper", ParentCall: "c1"}},
		{Kind: formats.Usage, Agent: "a1", Usage: u(40, 0, 0, 4, 0, 0.5)},
		{Kind: formats.Message, Agent: "a1", Text: "done"},
		{Kind: formats.AgentEnd, Agent: "a1", Status: formats.Completed},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Name: "Task", Status: formats.Completed, Output: formats.TextOutput("done")}},
		{Kind: formats.Usage, Usage: u(200, 150, 0, 10, 0, 0.125)},
		{Kind: formats.Message, Text: "finished"},
		{Kind: formats.Compaction, Text: "the summary"},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	out, _ := formatstest.WriteReport(t, Dialect, evs)
	var doc struct {
		Steps []struct {
			Source    string         `json:"source"`
			Message   string         `json:"message"`
			Reasoning string         `json:"reasoning_content"`
			ToolCalls []toolCall     `json:"tool_calls"`
			Obs       *readObs       `json:"observation"`
			Metrics   *metrics       `json:"metrics"`
			Extra     map[string]any `json:"extra"`
		} `json:"steps"`
		Final struct {
			Cost float64 `json:"total_cost_usd"`
		} `json:"final_metrics"`
		Subagents []struct {
			ID    string `json:"trajectory_id"`
			Steps []struct {
				Metrics *metrics `json:"metrics"`
			} `json:"steps"`
		} `json:"subagent_trajectories"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, s := range doc.Steps {
		sources = append(sources, s.Source)
	}
	if got := strings.Join(sources, " "); got != "user agent agent system" {
		t.Fatalf("steps %s:\n%s", got, out)
	}
	first := doc.Steps[1]
	if first.Message != "looking" || first.Reasoning != "hmm" || len(first.ToolCalls) != 1 || first.Obs == nil ||
		len(first.Obs.Results) != 1 || *first.Obs.Results[0].SourceCallID != "c1" || first.Obs.Results[0].Refs[0].TrajectoryID != "a1" {
		t.Errorf("the first response's step: %+v", first)
	}
	m := first.Metrics
	if m == nil || *m.Prompt != 100 || *m.Cached != 60 || *m.Completion != 20 || *m.Cost != 0.25 ||
		m.Extra[extraCacheCreation] != 10.0 || m.Extra[extraReasoning] != 5.0 {
		t.Errorf("the first step's metrics: %+v", m)
	}
	if doc.Steps[2].Message != "finished" || doc.Steps[2].Metrics == nil || *doc.Steps[2].Metrics.Prompt != 200 {
		t.Errorf("the second response's step: %+v", doc.Steps[2])
	}
	if c := doc.Steps[3]; fmt.Sprint(c.Extra[extraContextMgmt]) != "map[boundary:replace type:compaction]" ||
		c.Obs == nil || string(c.Obs.Results[0].Content) != `"the summary"` {
		t.Errorf("the compaction's step: %+v", c)
	}
	if len(doc.Subagents) != 1 || doc.Subagents[0].ID != "a1" || doc.Subagents[0].Steps[0].Metrics == nil {
		t.Errorf("subagents: %+v", doc.Subagents)
	}
	if f := doc.Final; f.Cost != 0.875 {
		t.Errorf("final cost %v, want 0.875 (the subagent's included):\n%s", f.Cost, out)
	}
}

// TestReadTrainingFields: token ids, log probabilities and tool
// definitions have no place in the model; each is a raw event, so that
// another dialect's writer reports it lost, and atif copies it.
func TestReadTrainingFields(t *testing.T) {
	evs := formatstest.Read(t, Dialect, formatstest.Fixture(t, "atif", "harbor-terminus-2-context-summarization.trajectory.json"))
	types := map[string]int{}
	for _, e := range formatstest.OfKind(evs, formats.Raw) {
		types[e.Source.Type]++
	}
	if types["metrics/prompt_token_ids"] == 0 || types["metrics/completion_token_ids"] == 0 || types["metrics/logprobs"] == 0 {
		t.Errorf("raw events: %v", types)
	}
	evs = formatstest.Read(t, Dialect, formatstest.Fixture(t, "atif", "harbor-openhands-hello-world.trajectory.json"))
	if raw := formatstest.OfKind(evs, formats.Raw); len(raw) != 1 || raw[0].Source.Type != "agent/tool_definitions" {
		t.Errorf("raw events: %v", formatstest.Kinds(raw))
	}
}

// TestWriteRefusalWithoutCall: a refused call that the source gives only
// as refused (no ToolCall: a permission asked and refused) needs a step
// for its result, which no response of the model made: its call says so
// (refused_only), so that it reads back without a call, and each
// request's metrics stay with the step that holds its response.
func TestWriteRefusalWithoutCall(t *testing.T) {
	u := func(in int64) formats.UsageInfo {
		return formats.UsageInfo{InputTokens: formats.Some(in), OutputTokens: formats.Some[int64](5)}
	}
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.UserMessage, Text: "clean up"},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "Bash", Args: []byte(`{"command":"ls"}`)}},
		{Kind: formats.Usage, Usage: u(100)},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Name: "Bash", Status: formats.Completed, Output: formats.TextOutput("b.txt")}},
		{Kind: formats.PermissionRequest, Permission: formats.Permission{RequestID: "p1"}, Call: formats.Call{ID: "c2", Name: "Bash"}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c2", Name: "Bash", Status: formats.Denied, Error: "not allowed"}},
		{Kind: formats.Message, Text: "b.txt stays."},
		{Kind: formats.Usage, Usage: u(200)},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	out, _ := formatstest.WriteReport(t, Dialect, evs)
	if !strings.Contains(out, `"refused_only": true`) {
		t.Errorf("the refused call's step does not say it was only refused:\n%s", out)
	}
	back := formatstest.Read(t, Dialect, out)
	if got, want := formatstest.Kinds(back), "run_start user_message usage tool_call tool_result tool_result usage message run_end"; got != want {
		t.Errorf("read back:\n got %s\nwant %s", got, want)
	}
	for _, p := range formatstest.CheckReader(Dialect, back) {
		t.Errorf("read back: %s", p)
	}
}
