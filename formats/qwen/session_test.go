package qwen_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/qwen"
)

// sessionFile is the main session file that Qwen Code 0.24.4 kept in a
// capture.
func sessionFile(t *testing.T, scenario, mode string) (path string, data []byte) {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "agents", "qwen-code", "0.24.4", scenario, mode)
	m, _ := filepath.Glob(filepath.Join(dir, "home", ".qwen", "projects", "*", "chats", "*.jsonl"))
	if len(m) != 1 {
		t.Fatalf("%s/%s: %d session files", scenario, mode, len(m))
	}
	data, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	return m[0], data
}

func readPath(t *testing.T, path string, data []byte) []*formats.Event {
	t.Helper()
	r := qwen.Session.NewReader(bytesReader(data), formats.ReadOptions{Dialect: qwen.Session.Name, Path: path})
	var evs []*formats.Event
	for {
		e, err := r.Next()
		if err != nil {
			break
		}
		evs = append(evs, e)
	}
	return evs
}

// TestSession reads the session files Qwen Code 0.24.4 kept (issue 24
// #16): detected as qwen-session, not claude-session; a run per prompt,
// Qwen Code's; each request's tokens as the server sent them (the cache in
// the input), the subagent's from its own file; the calls with their
// statuses (a refused one denied); a run that gave up on API errors failed.
func TestSession(t *testing.T) {
	for _, c := range []struct {
		scenario string
		runs     []formats.Status
		calls    map[string]formats.Status
		agents   int
	}{
		{"text-shell", []formats.Status{formats.Completed}, map[string]formats.Status{"run_shell_command": formats.Completed}, 0},
		{"thinking", []formats.Status{formats.Completed}, nil, 0},
		{"refused", []formats.Status{formats.Completed}, map[string]formats.Status{"run_shell_command": formats.Denied}, 0},
		{"subagent", []formats.Status{formats.Completed}, map[string]formats.Status{"agent": formats.Completed, "run_shell_command": formats.Completed}, 1},
		{"resume", []formats.Status{formats.Completed, formats.Completed}, map[string]formats.Status{"run_shell_command": formats.Completed}, 0},
		{"api-error", []formats.Status{formats.Failed}, nil, 0},
		{"rate-limit", []formats.Status{formats.Failed}, nil, 0},
	} {
		for _, mode := range []string{"stream-json", "json"} {
			name := c.scenario + "/" + mode
			path, data := sessionFile(t, c.scenario, mode)
			if q, s := qwen.Session.Detect(data), claude.Session.Detect(data); q < 90 || s != 0 {
				t.Errorf("%s: qwen-session scores %d, claude-session %d", name, q, s)
			}
			evs := readPath(t, path, data)
			ends := formatstest.OfKind(evs, formats.RunEnd)
			if len(ends) != len(c.runs) {
				t.Fatalf("%s: %d runs, want %d", name, len(ends), len(c.runs))
			}
			for i, e := range ends {
				if e.Status != c.runs[i] || e.Run.AgentName != "qwen-code" || e.Run.Cwd == "" {
					t.Errorf("%s run %d: %v %+v", name, i+1, e.Status, e.Run)
				}
			}
			if p := formatstest.OfKind(evs, formats.UserMessage); len(p) < len(c.runs) {
				t.Errorf("%s: %d prompts", name, len(p))
			}
			var perCall [][2]int64
			for _, u := range formatstest.OfKind(evs, formats.Usage) {
				perCall = append(perCall, [2]int64{u.Usage.InputTokens.V, u.Usage.OutputTokens.V})
			}
			want := serverCalls(t, filepath.Join("..", "..", "testdata", "agents", "qwen-code", "0.24.4", c.scenario, mode))
			if len(perCall) != len(want) {
				t.Errorf("%s: requests %v; the server sent %v", name, perCall, want)
			} else {
				for i := range want {
					if perCall[i] != want[i] {
						t.Errorf("%s: requests %v; the server sent %v", name, perCall, want)
						break
					}
				}
			}
			got := map[string]formats.Status{}
			for _, r := range formatstest.OfKind(evs, formats.ToolResult) {
				got[r.Call.Name] = r.Call.Status
			}
			if len(got) != len(c.calls) {
				t.Errorf("%s: calls %v, want %v", name, got, c.calls)
			}
			for n, st := range c.calls {
				if got[n] != st {
					t.Errorf("%s: %s is %v, want %v", name, n, got[n], st)
				}
			}
			if n := len(formatstest.OfKind(evs, formats.AgentStart)); n != c.agents {
				t.Errorf("%s: %d subagents, want %d", name, n, c.agents)
			}
		}
	}
}

// TestSessionThinking: a thought part is the message's thinking, and the
// request's thought tokens its reasoning.
func TestSessionThinking(t *testing.T) {
	path, data := sessionFile(t, "thinking", "stream-json")
	evs := readPath(t, path, data)
	msgs := formatstest.OfKind(evs, formats.Message)
	if len(msgs) != 1 || msgs[0].Thinking == "" || msgs[0].Text != "Thought, then answered." {
		t.Fatalf("messages %+v", msgs)
	}
	u := formatstest.OfKind(evs, formats.Usage)
	if len(u) != 1 || u[0].Usage.ReasoningTokens.V != 11 || u[0].Usage.OutputTokens.V != 41 {
		t.Errorf("usage %+v", u)
	}
}

// TestSessionSubagentWithoutItsFile: a session file read without its
// subagent's file (copied alone, or the file gone) still gives the
// subagent as an agent, from the session's telemetry and the result of
// the call that spawned it: started at its first request by that call,
// its requests' counts, its calls (without their output, which only its
// file holds), its last response (the call's result) and its outcome, as
// reading it with its file gives them; each request's usage with its
// output.
func TestSessionSubagentWithoutItsFile(t *testing.T) {
	path, data := sessionFile(t, "subagent", "stream-json")
	type agentFacts struct {
		start     formats.AgentInfo
		requests  []int64
		calls     []string
		report    string
		status    formats.Status
		lastMsg   string
		agentFrom string
	}
	facts := func(evs []*formats.Event) agentFacts {
		var f agentFacts
		for _, e := range evs {
			if e.Agent == "" {
				continue
			}
			f.agentFrom = e.Agent
			switch e.Kind {
			case formats.AgentStart:
				f.start = e.AgentInfo
			case formats.Usage:
				f.requests = append(f.requests, e.Usage.InputTokens.V, e.Usage.OutputTokens.V)
			case formats.ToolResult:
				f.calls = append(f.calls, e.Call.Name+" "+e.Call.Status.String())
			case formats.Message:
				f.lastMsg = e.Text
			case formats.AgentEnd:
				f.report, f.status = e.Text, e.Status
			}
		}
		f.start.Model = "" // the file's records name no model
		return f
	}
	alone := formatstest.Read(t, qwen.Session, data)
	got, want := facts(alone), facts(readPath(t, path, data))
	if got.start != want.start || got.report != want.report || got.status != want.status || got.lastMsg != want.lastMsg ||
		got.agentFrom != want.agentFrom || len(got.requests) != len(want.requests) || len(got.calls) != len(want.calls) {
		t.Fatalf("the subagent read without its file:\n %+v\nwith it:\n %+v", got, want)
	}
	for i := range want.requests {
		if got.requests[i] != want.requests[i] {
			t.Errorf("requests %v, with its file %v", got.requests, want.requests)
			break
		}
	}
	for i := range want.calls {
		if got.calls[i] != want.calls[i] {
			t.Errorf("calls %v, with its file %v", got.calls, want.calls)
			break
		}
	}
	for _, p := range formatstest.CheckReader(qwen.Session, alone) {
		t.Errorf("read alone: %s", p)
	}
}
