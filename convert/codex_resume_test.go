package convert_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/codex"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// What Codex needs of a rollout written from another dialect to resume
// it, as the real agent showed when it resumed them.

// The lines of a rollout written from a source without times get times
// that strictly increase, never the zero time (nor a file named by it).
func TestRolloutTimesIncrease(t *testing.T) {
	for _, name := range []string{"codex/turn-failed.jsonl", "codex/tools-and-todos.jsonl", "cli-agents/codex-run.jsonl",
		"claude/split-messages-stream.jsonl"} {
		for _, det := range []bool{false, true} {
			args := []string{"--to", "codex-rollout", filepath.Join("..", "testdata", name)}
			if det {
				args = append(args, "--deterministic")
			}
			code, out, stderr := converttest.Run("", args...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", name, code, stderr)
			}
			var ts []string
			for _, l := range jsonLines(t, []byte(out)) {
				ts = append(ts, l.(map[string]any)["timestamp"].(string))
			}
			for i, s := range ts {
				if strings.HasPrefix(s, "0001-") {
					t.Errorf("%s: line %d has the zero time %s", name, i+1, s)
				}
				if i > 0 && s <= ts[i-1] {
					t.Errorf("%s (deterministic %v): line %d at %s, after %s", name, det, i+1, s, ts[i-1])
				}
			}
		}
	}
	// Events without any time (a writer given no arrival times): the
	// session's file is not dated the year 1.
	dir := t.TempDir()
	w := formats.Standalone(codex.Rollout.NewWriter(nil, formats.WriteOptions{Dialect: codex.Rollout.Name, Report: formats.NewReport(io.Discard),
		Create: func(name string) (io.WriteCloser, error) {
			if strings.HasPrefix(name, "0001/") {
				t.Errorf("a rollout named by the zero time: %s", name)
			}
			return os.Create(filepath.Join(dir, filepath.Base(name)))
		}}))
	for _, e := range []*formats.Event{{Kind: formats.RunStart}, {Kind: formats.Message, Text: "hi"}, {Kind: formats.RunEnd, Status: formats.Completed}} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// sessionMetaProvider is the model_provider of a rollout's session_meta.
func sessionMetaProvider(t *testing.T, out []byte) string {
	t.Helper()
	for _, l := range jsonLines(t, out) {
		if m := l.(map[string]any); m["type"] == "session_meta" {
			return m["payload"].(map[string]any)["model_provider"].(string)
		}
	}
	t.Fatalf("no session_meta:\n%s", out)
	return ""
}

// Codex 0.171 resumes a session only under the provider its session_meta
// names: a rollout source's own, else --codex-model-provider, else openai.
func TestRolloutModelProvider(t *testing.T) {
	in := filepath.Join("..", "testdata", "codex", "turn-failed.jsonl")
	for want, args := range map[string][]string{
		"openai": {"--to", "codex-rollout", in},
		"ollama": {"--to", "codex-rollout", "--codex-model-provider", "ollama", in},
	} {
		code, out, stderr := converttest.Run("", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if got := sessionMetaProvider(t, []byte(out)); got != want {
			t.Errorf("%v: model_provider %q, want %q", args, got, want)
		}
	}
	// The events of a rollout, written again (not copied): its provider
	// stays, whatever the setting.
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s", Provider: "azure"}, Source: formats.Source{Dialect: codex.Rollout.Name}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	for _, set := range []string{"", "ollama"} {
		var out strings.Builder
		w := formats.Standalone(codex.Rollout.NewWriter(&out, formats.WriteOptions{Dialect: codex.Rollout.Name, Report: formats.NewReport(io.Discard),
			Params: map[string]string{codex.ParamModelProvider: set}}))
		for _, e := range evs {
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		if got := sessionMetaProvider(t, []byte(out.String())); got != "azure" {
			t.Errorf("a rollout's own provider, with the setting %q: %q", set, got)
		}
	}
}

// A call the source never gave a result is written as Codex writes a call
// its interrupted turn cut, with the output "aborted", before the task
// ends, and reported; without it, Codex 0.45 put an "aborted" output of
// its own first in the history it sent.
func TestRolloutAbortsCallsWithoutResult(t *testing.T) {
	lost := `tool calls without a result (written with Codex's "aborted" output)`
	if !slices.Contains(formats.QuirkNames(codex.Rollout.Quirks), lost) {
		t.Errorf("codex-rollout does not declare %q", lost)
	}
	for _, end := range []formats.Status{formats.Completed, formats.Cancelled} {
		evs := []*formats.Event{
			{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
			{Kind: formats.UserMessage, Text: "go"},
			{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "shell", Args: []byte(`{"command":"sleep 99"}`)}},
			{Kind: formats.ToolCall, Call: formats.Call{ID: "c2", Name: "shell", Args: []byte(`{"command":"ls"}`)}},
			{Kind: formats.ToolResult, Call: formats.Call{ID: "c2", Status: formats.Completed, Output: formats.TextOutput("a\n")}},
			{Kind: formats.Message, Text: "done"},
			{Kind: formats.RunEnd, Status: end},
		}
		out, losses := formatstest.WriteReport(t, codex.Rollout, evs)
		var outputs []string
		last := ""
		for _, l := range jsonLines(t, []byte(out)) {
			p := l.(map[string]any)["payload"].(map[string]any)
			if p["type"] == "function_call_output" {
				outputs = append(outputs, p["call_id"].(string)+"="+p["output"].(string))
			}
			last, _ = p["type"].(string)
		}
		if want := []string{"c2=a\n", "c1=aborted"}; !slices.Equal(outputs, want) {
			t.Errorf("%v: outputs %q, want %q\n%s", end, outputs, want, out)
		}
		if want := map[formats.Status]string{formats.Completed: "task_complete", formats.Cancelled: "turn_aborted"}[end]; last != want {
			t.Errorf("%v: the rollout ends with %s, want %s\n%s", end, last, want, out)
		}
		if !strings.Contains(losses, "lost: 1 × "+lost) {
			t.Errorf("%v: losses %s", end, losses)
		}
	}
}

// A subagent's calls are left out of the rollout, and reported: the main
// model never made them, and Codex resuming the session would send them
// as its own. The call that spawned the subagent, and its result, stay.
func TestRolloutLeavesOutSubagentCalls(t *testing.T) {
	if codex.Rollout.Carries&formats.SubagentToolCalls != 0 {
		t.Errorf("codex-rollout declares that it carries a subagent's tool calls")
	}
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "spawn", Name: "Task"}},
		{Kind: formats.AgentStart, Agent: "sub", AgentInfo: formats.AgentInfo{ParentCall: "spawn"}},
		{Kind: formats.ToolCall, Agent: "sub", Call: formats.Call{ID: "inner", Name: "Bash"}},
		{Kind: formats.ToolResult, Agent: "sub", Call: formats.Call{ID: "inner", Name: "Bash", Output: formats.TextOutput("x")}, Status: formats.Completed},
		{Kind: formats.AgentEnd, Agent: "sub", Status: formats.Completed},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "spawn", Name: "Task", Output: formats.TextOutput("found")}, Status: formats.Completed},
		{Kind: formats.Message, Text: "done"},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	out, _ := formatstest.WriteReport(t, codex.Rollout, evs)
	if strings.Contains(out, `"inner"`) {
		t.Errorf("the subagent's call is in the rollout:\n%s", out)
	}
	if !strings.Contains(out, `"call_id":"spawn"`) {
		t.Errorf("the spawning call is not in the rollout:\n%s", out)
	}
	// Through the pipeline, which reports what the target does not carry.
	in := filepath.Join("..", "testdata", "malac", "subagents.jsonl")
	code, out, stderr := converttest.Run("", "--deterministic", "--to", "codex-rollout", in)
	if code != 0 || strings.Contains(out, `"call_s1"`) || !strings.Contains(stderr, " × subagent tool calls (codex-rollout cannot carry them)") {
		t.Errorf("exit %d; a subagent's call in the rollout: %v; stderr:\n%s", code, strings.Contains(out, `"call_s1"`), stderr)
	}
}

// The answer of a run that printed no message (AdaL's stream gives its
// answer alone) is the model's last response in the rollout, which Codex
// resuming it sends; the task's end names it too.
func TestRolloutWritesAnswerAlone(t *testing.T) {
	in := filepath.Join("..", "testdata", "adal", "seed-stream.ndjson")
	code, out, stderr := converttest.Run("", "--deterministic", "--to", "codex-rollout", in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `{"content":[{"type":"output_text","text":"Fixed 3 lint errors in src/app.ts..."}],"role":"assistant","type":"message"}`) {
		t.Errorf("the answer is not the run's last response:\n%s", out)
	}
}
