package copilot_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/copilot"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// captures is where the agents' tests keep what Copilot CLI 1.0.102 printed
// and stored.
var captures = filepath.Join("..", "..", "testdata", "agents", "copilot", "1.0.102")

// capture reads a scenario's stdout and its session's events.jsonl.
func capture(t *testing.T, scenario string) (stdout, events []byte) {
	t.Helper()
	dir := filepath.Join(captures, scenario, "json")
	stdout, err := os.ReadFile(filepath.Join(dir, "stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "home", ".copilot", "session-state", "*", "events.jsonl"))
	if len(files) != 1 {
		t.Fatalf("%s: %d events.jsonl files, want 1", scenario, len(files))
	}
	events, err = os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return stdout, events
}

// sent is what the server answered with in a capture: each answered
// request's input (cache reads included) and output tokens, by thread.
type sent struct {
	Thread string `json:"thread"`
	Status int    `json:"status"`
	Sent   *struct {
		Input     int64 `json:"input"`
		CacheRead int64 `json:"cache_read"`
		Output    int64 `json:"output"`
		Reasoning int64 `json:"reasoning"`
	} `json:"sent"`
}

func served(t *testing.T, scenario string) []sent {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(captures, scenario, "json", "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sf struct {
		Requests []sent `json:"requests"`
	}
	if err := json.Unmarshal(b, &sf); err != nil {
		t.Fatal(err)
	}
	var out []sent
	for _, r := range sf.Requests {
		if r.Status == 200 && r.Sent != nil {
			out = append(out, r)
		}
	}
	return out
}

// TestUsage: the events file gives each request's tokens as the server
// sent them (the cache counted in the input, once), the subagent's as its
// own; the stream gives none.
func TestUsage(t *testing.T) {
	for _, scenario := range []string{"text-shell", "subagent", "thinking", "resume", "parallel"} {
		stdout, events := capture(t, scenario)
		want := served(t, scenario)
		evs := formatstest.Read(t, copilot.Events, events)
		usage := formatstest.OfKind(evs, formats.Usage)
		if len(usage) != len(want) {
			t.Fatalf("%s: %d usage records, the server answered %d requests", scenario, len(usage), len(want))
		}
		agents := map[string]bool{}
		for _, a := range formatstest.OfKind(evs, formats.AgentStart) {
			agents[a.Agent] = true
		}
		// The requests in the order the server answered them: the
		// records are written in the same order.
		for i, u := range usage {
			w := want[i].Sent
			if u.Usage.InputTokens.V != w.Input+w.CacheRead || u.Usage.CacheReadTokens.V != w.CacheRead ||
				u.Usage.OutputTokens.V != w.Output || u.Usage.ReasoningTokens.V != w.Reasoning {
				t.Errorf("%s: request %d: %+v; the server sent %+v", scenario, i, u.Usage, *w)
			}
			if sub := want[i].Thread == "subagent"; sub != (u.Agent != "" && agents[u.Agent]) {
				t.Errorf("%s: request %d of thread %s is read as agent %q's", scenario, i, want[i].Thread, u.Agent)
			}
			if u.Response.ID == "" || u.Response.Model != "gpt-4.1" {
				t.Errorf("%s: request %d: response %+v, want its id and model", scenario, i, u.Response)
			}
		}
		if n := len(formatstest.OfKind(formatstest.Read(t, copilot.Stream, stdout), formats.Usage)); n != 0 {
			t.Errorf("%s: the stream gives %d usage events; it prints no counts", scenario, n)
		}
	}
}

// TestOutcome: a session.error fails the run with its message and exit
// code 1, in the stream and in the events file; a success is exit 0 with
// the last message as the answer; a resume is a second run of the same
// session in the same file.
func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		scenario string
		runs     int
		ok       bool
		text     string
	}{
		{"api-error", 1, false, "529 Overloaded"},
		{"rate-limit", 1, false, "429"},
		{"text-shell", 1, true, ""},
		{"resume", 2, true, ""},
	} {
		stdout, events := capture(t, c.scenario)
		for _, in := range []struct {
			d    formats.Dialect
			data []byte
			runs int
		}{{copilot.Stream, stdout, 1}, {copilot.Events, events, c.runs}} {
			evs := formatstest.Read(t, in.d, in.data)
			ends := formatstest.OfKind(evs, formats.RunEnd)
			if len(ends) != in.runs {
				t.Fatalf("%s %s: %d runs, want %d", c.scenario, in.d.Name, len(ends), in.runs)
			}
			for _, e := range ends {
				if e.Status.OK() != c.ok || !e.Run.ExitCode.OK || (e.Run.ExitCode.V == 0) != c.ok ||
					!strings.Contains(e.Text, c.text) || e.Run.SessionID == "" || e.Cut {
					t.Errorf("%s %s: run ends %s, exit %+v, %q (session %q); want success %v with %q",
						c.scenario, in.d.Name, e.Status, e.Run.ExitCode, e.Text, e.Run.SessionID, c.ok, c.text)
				}
				if e.Run.SessionID != ends[0].Run.SessionID || e.Run.Model != "gpt-4.1" {
					t.Errorf("%s %s: run of session %q, model %q", c.scenario, in.d.Name, e.Run.SessionID, e.Run.Model)
				}
			}
		}
	}
}

// TestSubagent: the subagent's events are nested under the task call that
// started it, its prompt is no prompt of the run, and its calls are its own.
func TestSubagent(t *testing.T) {
	stdout, events := capture(t, "subagent")
	for _, in := range []struct {
		d    formats.Dialect
		data []byte
	}{{copilot.Stream, stdout}, {copilot.Events, events}} {
		evs := formatstest.Read(t, in.d, in.data)
		starts := formatstest.OfKind(evs, formats.AgentStart)
		if len(starts) != 1 || starts[0].AgentInfo.ParentCall != "call_sub_1" || starts[0].AgentInfo.Label != "lister" {
			t.Fatalf("%s: agent starts %+v; want one, of call_sub_1, labelled lister", in.d.Name, starts)
		}
		id := starts[0].Agent
		for _, e := range formatstest.OfKind(evs, formats.ToolCall) {
			if sub := e.Call.ID == "call_sub_shell_1"; sub != (e.Agent == id) {
				t.Errorf("%s: call %s is agent %q's", in.d.Name, e.Call.ID, e.Agent)
			}
		}
		for _, e := range formatstest.OfKind(evs, formats.UserMessage) {
			if strings.Contains(e.Text, "agentconv-subtask") != (e.Agent == id) {
				t.Errorf("%s: prompt %q is agent %q's", in.d.Name, e.Text, e.Agent)
			}
		}
		if ends := formatstest.OfKind(evs, formats.AgentEnd); len(ends) != 1 || ends[0].Agent != id || ends[0].Status != formats.Completed {
			t.Errorf("%s: agent ends %+v", in.d.Name, ends)
		}
	}
}

// TestRefused: a call the CLI could not ask permission for is refused, and
// the events file says so in a permission request and its answer.
func TestRefused(t *testing.T) {
	stdout, events := capture(t, "refused")
	for _, in := range []struct {
		d    formats.Dialect
		data []byte
	}{{copilot.Stream, stdout}, {copilot.Events, events}} {
		evs := formatstest.Read(t, in.d, in.data)
		res := formatstest.OfKind(evs, formats.ToolResult)
		if len(res) != 1 || res[0].Call.Status != formats.Denied || res[0].Call.Name != "bash" || !strings.Contains(res[0].Call.Error, "Permission denied") {
			t.Errorf("%s: results %+v; want bash denied", in.d.Name, res)
		}
	}
	evs := formatstest.Read(t, copilot.Events, events)
	ans := formatstest.OfKind(evs, formats.PermissionAnswer)
	if req := formatstest.OfKind(evs, formats.PermissionRequest); len(req) != 1 || len(ans) != 1 || ans[0].Permission.Allowed ||
		req[0].Call.ID != "call_refused_1" || ans[0].Permission.RequestID != req[0].Permission.RequestID {
		t.Errorf("permission request %+v, answer %+v", req, ans)
	}
}

// TestThinking: the reasoning is the message's, and streamed in the
// stream.
func TestThinking(t *testing.T) {
	stdout, events := capture(t, "thinking")
	const thought = "The user wants a short answer; think first."
	for _, in := range []struct {
		d    formats.Dialect
		data []byte
	}{{copilot.Stream, stdout}, {copilot.Events, events}} {
		msgs := formatstest.OfKind(formatstest.Read(t, in.d, in.data), formats.Message)
		if len(msgs) != 1 || msgs[0].Thinking != thought || msgs[0].Text != "Thought, then answered." {
			t.Errorf("%s: messages %+v", in.d.Name, msgs)
		}
	}
	deltas := formatstest.OfKind(formatstest.Read(t, copilot.Stream, stdout), formats.ThinkingDelta)
	if len(deltas) != 1 || deltas[0].Text != thought {
		t.Errorf("stream: thinking deltas %+v", deltas)
	}
}

// TestPlaces: $COPILOT_HOME/session-state, else ~/.copilot/session-state.
func TestPlaces(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := copilot.Events.Places(env(map[string]string{"HOME": "/h", "COPILOT_HOME": "/c"})); len(got) != 1 || got[0] != filepath.Join("/c", "session-state") {
		t.Errorf("with COPILOT_HOME: %v", got)
	}
	if got := copilot.Events.Places(env(map[string]string{"HOME": "/h"})); len(got) != 1 || got[0] != filepath.Join("/h", ".copilot", "session-state") {
		t.Errorf("without COPILOT_HOME: %v", got)
	}
	if got := copilot.Events.Places(env(nil)); len(got) != 0 {
		t.Errorf("without HOME: %v", got)
	}
}

// TestWriteEvents: every capture's session, written by the events writer
// (encoded, not copied), reads back as the same prompts, messages, calls
// and results, usage and outcome, the subagent's too, between its start
// and end, of the same agent.
func TestWriteEvents(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(captures, "*"))
	for _, dir := range dirs {
		scenario := filepath.Base(dir)
		_, events := capture(t, scenario)
		formatstest.RoundTrip(t, copilot.Events, events, formats.AgentStart, formats.AgentEnd, formats.UserMessage, formats.Message,
			formats.ToolCall, formats.ToolResult, formats.Usage, formats.Notice, formats.TurnEnd, formats.RunEnd)
		evs := formatstest.Read(t, copilot.Events, events)
		var clean []*formats.Event
		for _, e := range evs {
			if e.Kind != formats.Raw {
				clean = append(clean, e)
			}
		}
		out, err := formatstest.WriteAll(copilot.Events, clean, true)
		if err != nil {
			t.Fatal(err)
		}
		back := formatstest.Read(t, copilot.Events, out)
		for _, k := range []formats.Kind{formats.Usage, formats.RunEnd} {
			a, b := formatstest.OfKind(evs, k), formatstest.OfKind(back, k)
			if len(a) != len(b) {
				t.Errorf("%s: %d %s events, %d written", scenario, len(a), k, len(b))
				continue
			}
			for i := range a {
				if a[i].Usage != b[i].Usage || a[i].Status != b[i].Status || a[i].Run.ExitCode != b[i].Run.ExitCode ||
					a[i].Run.SessionID != b[i].Run.SessionID || a[i].Run.Model != b[i].Run.Model || a[i].Run.Cwd != b[i].Run.Cwd {
					t.Errorf("%s: %s %d: %+v %+v %+v; written %+v %+v %+v", scenario, k, i, a[i].Usage, a[i].Status, a[i].Run, b[i].Usage, b[i].Status, b[i].Run)
				}
			}
		}
	}
}

// TestWriteMessages: two whole messages in a row are two messages, and a
// message after its deltas one; an answer no message said is the last.
func TestWriteMessages(t *testing.T) {
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s1"}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.TextDelta, Text: "One"},
		{Kind: formats.TextDelta, Text: "."},
		{Kind: formats.Message, Text: "One."},
		{Kind: formats.Message, Text: "Two."},
		{Kind: formats.Answer, Text: "Three."},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	out, err := formatstest.WriteAll(copilot.Events, evs, true)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range formatstest.OfKind(formatstest.Read(t, copilot.Events, out), formats.Message) {
		texts = append(texts, m.Text)
	}
	if strings.Join(texts, "|") != "One.|Two.|Three." {
		t.Errorf("messages %q:\n%s", texts, out)
	}
}

// TestWriteRefusal: a refused call that the source gives only in its
// permission request is written as the model's call before its result.
func TestWriteRefusal(t *testing.T) {
	evs := []*formats.Event{
		{Kind: formats.RunStart},
		{Kind: formats.PermissionRequest, Call: formats.Call{ID: "c2", Name: "bash", Args: json.RawMessage(`{"command":"rm -rf build/"}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c2", Name: "bash", Status: formats.Denied, Error: "no one could approve it"}},
		{Kind: formats.RunEnd, Status: formats.Failed},
	}
	out, err := formatstest.WriteAll(copilot.Events, evs, true)
	if err != nil {
		t.Fatal(err)
	}
	back := formatstest.Read(t, copilot.Events, out)
	calls, res := formatstest.OfKind(back, formats.ToolCall), formatstest.OfKind(back, formats.ToolResult)
	if len(calls) != 1 || calls[0].Call.ID != "c2" || string(calls[0].Call.Args) != `{"command":"rm -rf build/"}` ||
		len(res) != 1 || res[0].Call.Status != formats.Denied {
		t.Errorf("calls %+v, results %+v:\n%s", calls, res, out)
	}
}
