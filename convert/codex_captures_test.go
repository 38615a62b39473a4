package convert_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert/converttest"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/codex"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// codexCaptureDir is a capture of the real Codex (convert/agenttest): its
// stdout files and its rollouts under home/.codex/sessions.
func codexCaptureDir(version, scenario string) string {
	return filepath.Join("..", "testdata", "agents", "codex", version, scenario, "json")
}

// captureFile reads a file of a capture.
func captureFile(t *testing.T, version, scenario, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(codexCaptureDir(version, scenario), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// captureRollouts reads a capture's rollouts, in the order of their names.
func captureRollouts(t *testing.T, version, scenario string) [][]byte {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(codexCaptureDir(version, scenario), "home", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl"))
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatalf("no rollout in the capture %s/%s", version, scenario)
	}
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestCaptureFailedTask: Codex 0.171 records a failed turn only in its
// task_complete, whose error has the message and codex_error_info: the run
// failed with that message, exit 1, as Codex did (it printed turn.failed
// and exited 1); the info's key is the error's code.
func TestCaptureFailedTask(t *testing.T) {
	cases := []struct{ scenario, msg, code string }{
		{"api-error", "unexpected status 529 <unknown status code>: Overloaded, url: http://127.0.0.1:41443/v1/responses", "http_connection_failed"},
		{"rate-limit", "exceeded retry limit, last status: 429 Too Many Requests", "response_too_many_failed_attempts"},
	}
	for _, c := range cases {
		evs := formatstest.Read(t, codex.Rollout, captureRollouts(t, "0.171.0", c.scenario)[0])
		ends := formatstest.OfKind(evs, formats.RunEnd)
		if len(ends) != 1 {
			t.Fatalf("%s: %d runs", c.scenario, len(ends))
		}
		var v formats.RunView
		for _, e := range evs {
			v.Observe(e)
		}
		if e := ends[0]; e.Status != formats.Failed || e.Text != c.msg || e.Code != c.code || v.ExitCode != 1 {
			t.Errorf("%s: run end %v %q code %q, exit %d", c.scenario, e.Status, e.Text, e.Code, v.ExitCode)
		}
		turns := formatstest.OfKind(evs, formats.TurnEnd)
		if len(turns) != 1 || turns[0].Status != formats.Failed {
			t.Errorf("%s: turns %d", c.scenario, len(turns))
		}
	}
}

// otlpSpan is a span of otlp-json output, with its attributes as strings.
type otlpSpan struct {
	Name, ID, Parent string
	Attrs            map[string]string
}

// spansOf converts a file to otlp-json and reads its spans back.
func spansOf(t *testing.T, in []byte, from string) []otlpSpan {
	t.Helper()
	code, out, stderr := converttest.Run(string(in), "--deterministic", "--from", from, "--to", "otlp-json")
	if code != 0 {
		t.Fatalf("otlp-json exits %d: %s", code, stderr)
	}
	var spans []otlpSpan
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						Name         string `json:"name"`
						SpanID       string `json:"spanId"`
						ParentSpanID string `json:"parentSpanId"`
						Attributes   []struct {
							Key   string                     `json:"key"`
							Value map[string]json.RawMessage `json:"value"`
						} `json:"attributes"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Fatal(err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := otlpSpan{Name: s.Name, ID: s.SpanID, Parent: s.ParentSpanID, Attrs: map[string]string{}}
					for _, a := range s.Attributes {
						for _, v := range a.Value {
							var str string
							if json.Unmarshal(v, &str) != nil {
								str = string(v)
							}
							sp.Attrs[a.Key] = str
						}
					}
					spans = append(spans, sp)
				}
			}
		}
	}
	return spans
}

// roots are the spans without a parent: the runs.
func roots(spans []otlpSpan) []otlpSpan {
	var out []otlpSpan
	for _, s := range spans {
		if s.Parent == "" {
			out = append(out, s)
		}
	}
	return out
}

// TestCaptureExitCode: codex exec exits 0 when its run completed, as the
// captures' meta.json say, and 1 when it failed: the root span of every
// run of its stdout says so (issue 24 #6).
func TestCaptureExitCode(t *testing.T) {
	cases := []struct{ version, scenario, want string }{
		{"0.171.0", "text-shell", "0"}, {"0.45.0", "text-shell", "0"},
		{"0.171.0", "api-error", "1"}, {"0.45.0", "api-error", "1"},
	}
	for _, c := range cases {
		rs := roots(spansOf(t, captureFile(t, c.version, c.scenario, "stdout.jsonl"), "codex"))
		if len(rs) != 1 || rs[0].Attrs["process.exit.code"] != c.want {
			t.Errorf("%s %s: roots %+v, want process.exit.code %s", c.version, c.scenario, rs, c.want)
		}
	}
}

// TestCaptureNamespacedCalls: Codex 0.171 writes a namespace's tool apart
// from its name. The subagent capture's spawn_agent and wait_agent are
// collaboration's; an MCP server's tool (as 0.171 writes it: namespace
// mcp__fakemcp, name echo) is mcp__fakemcp__echo, as exec --json names it,
// with the MCP attributes on its span (issue 24 #3).
func TestCaptureNamespacedCalls(t *testing.T) {
	evs := formatstest.Read(t, codex.Rollout, captureRollouts(t, "0.171.0", "subagent")[0])
	var names []string
	for _, e := range formatstest.OfKind(evs, formats.ToolCall) {
		names = append(names, e.Call.Name)
	}
	if strings.Join(names, " ") != "collaboration.spawn_agent collaboration.wait_agent" {
		t.Errorf("calls %q", names)
	}

	mcp := `{"timestamp":"2026-12-02T01:30:00Z","type":"session_meta","payload":{"id":"01a2345f-0000-7000-8000-000000000001","cwd":"/w","cli_version":"0.171.0"}}
{"timestamp":"2026-12-02T01:30:01Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}
{"timestamp":"2026-12-02T01:30:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"echo it"}]}}
{"timestamp":"2026-12-02T01:30:01Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5.5"}}
{"timestamp":"2026-12-02T01:30:02Z","type":"response_item","payload":{"type":"function_call","status":"completed","name":"echo","namespace":"mcp__fakemcp","arguments":"{\"text\":\"hi\"}","call_id":"call_1"}}
{"timestamp":"2026-12-02T01:30:03Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"hi"}}
{"timestamp":"2026-12-02T01:30:04Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}
{"timestamp":"2026-12-02T01:30:04Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"done"}}
`
	calls := formatstest.OfKind(formatstest.Read(t, codex.Rollout, mcp), formats.ToolCall)
	if len(calls) != 1 || calls[0].Call.Name != "mcp__fakemcp__echo" || string(calls[0].Call.Args) != `{"text":"hi"}` {
		t.Fatalf("mcp calls %+v", calls)
	}
	found := false
	for _, s := range spansOf(t, []byte(mcp), "codex-rollout") {
		if s.Name == "execute_tool mcp__fakemcp__echo" {
			found = true
			if s.Attrs["mcp.method.name"] != "tools/call" || s.Attrs["agentconv.mcp.server.name"] != "fakemcp" {
				t.Errorf("mcp span %+v", s.Attrs)
			}
		}
	}
	if !found {
		t.Error("no span of mcp__fakemcp__echo")
	}
	// claude-stream gets the full name, with nothing lost.
	code, out, stderr := converttest.Run(mcp, "--from", "codex-rollout", "--to", "claude-stream")
	if code != 0 || !strings.Contains(out, `"name":"mcp__fakemcp__echo"`) {
		t.Errorf("claude-stream (exit %d): %s %s", code, out, stderr)
	}
}

// TestCaptureLossCounts: a loss counts the things it names: the one
// command of 0.171's text-shell is one tool call lost (not its start and
// end), and its one request one count of token usage (not the request and
// the run's total again) (issue 24 #7).
func TestCaptureLossCounts(t *testing.T) {
	in := string(captureFile(t, "0.171.0", "text-shell", "stdout.jsonl"))
	for _, c := range []struct{ to, want string }{
		{"gemini-json", "lost: 1 × tool calls (gemini-json cannot carry them)"},
		{"gemini-stream", "lost: 1 × per-request token usage"},
		{"adal-text", "lost: 1 × tool calls (adal-text cannot carry them)"},
		{"adal-text", "lost: 1 × token usage (adal-text cannot carry them)"},
	} {
		if code, _, stderr := converttest.Run(in, "--from", "codex", "--to", c.to); code != 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("--to %s (exit %d): no %q in\n%s", c.to, code, c.want, stderr)
		}
	}
}

// TestCaptureResumedConverted: a session agentconv wrote from a stream
// without prompts (0.171's first exec of the resume capture), resumed by
// Codex, which appends the task of its new prompt as 0.171's rollout has
// it: the new prompt after the first task's task_complete starts a run of
// its own, with its own call and usage (issue 24 #4).
func TestCaptureResumedConverted(t *testing.T) {
	written := converttest.Convert(t, captureFile(t, "0.171.0", "resume", "stdout.jsonl"), "codex", "codex-rollout")
	rollout := captureRollouts(t, "0.171.0", "resume")[0]
	lines := strings.SplitAfter(string(rollout), "\n")
	cut := -1
	for i, l := range lines {
		if strings.Contains(l, `"type":"task_complete"`) {
			cut = i + 1 // after the first task
			break
		}
	}
	if cut < 0 {
		t.Fatal("no task_complete in the capture")
	}
	evs := formatstest.Read(t, codex.Rollout, string(written)+strings.Join(lines[cut:], ""))
	starts := formatstest.OfKind(evs, formats.RunStart)
	ends := formatstest.OfKind(evs, formats.RunEnd)
	prompts := formatstest.OfKind(evs, formats.UserMessage)
	if len(starts) != 2 || len(ends) != 2 || len(prompts) != 1 || prompts[0].Text != "agentconv-task: resume the work" {
		t.Fatalf("runs %d/%d, prompts %d: %s", len(starts), len(ends), len(prompts), formatstest.Kinds(evs))
	}
	// The second run has the prompt, the call and the resumed requests.
	var second []*formats.Event
	for i, e := range evs {
		if e == starts[1] {
			second = evs[i:]
		}
	}
	c := codexCount(second)
	if c.prompts != 1 || c.calls != 1 || c.in != 2844 || c.out != 81 {
		t.Errorf("the resumed run: %+v", c)
	}
}

// TestCaptureTurnUsage: exec --json gives one usage per turn for all the
// turn's model requests (0.171's edit capture: 3 requests), and marks
// none: no chat span claims them for one request. The turn's usage is on
// one chat span under the turn, marked as aggregated (it stands for the
// requests the stream does not list one by one), and the root carries the
// run's totals only as agentconv.usage.*, so that the gen_ai.usage.* of
// the trace add up to them once (issue 24 #5, issue 26).
func TestCaptureTurnUsage(t *testing.T) {
	for _, version := range []string{"0.171.0", "0.45.0"} {
		spans := spansOf(t, captureFile(t, version, "edit", "stdout.jsonl"), "codex")
		turn := ""
		var chats []otlpSpan
		var rootIn string
		for _, s := range spans {
			switch {
			case strings.HasPrefix(s.Name, "chat"):
				chats = append(chats, s)
			case s.Name == "turn 1":
				turn = s.ID
				if _, ok := s.Attrs["gen_ai.usage.input_tokens"]; ok {
					t.Errorf("%s: the turn's span carries usage", version)
				}
			case s.Parent == "":
				rootIn = s.Attrs["agentconv.usage.input_tokens"]
				if _, ok := s.Attrs["gen_ai.usage.input_tokens"]; ok {
					t.Errorf("%s: the root repeats the turn's usage", version)
				}
			}
		}
		if len(chats) != 1 || chats[0].Parent != turn || chats[0].Attrs["agentconv.chat.aggregate"] != "true" {
			t.Fatalf("%s: chat spans %+v, want one aggregated under turn 1 (%s)", version, chats, turn)
		}
		if in := chats[0].Attrs["gen_ai.usage.input_tokens"]; in == "" || in != rootIn {
			t.Errorf("%s: the turn's input tokens %q, the run's %q", version, in, rootIn)
		}
	}
}

// TestCaptureResumedTotals: Codex 0.171's turn.completed after `codex exec
// resume` is the thread's running total (its first run's 1,200 in and 30
// out, then 4,044 and 111). Its two stdouts read one after the other give
// each run its own requests' tokens, as the server sent them (the resume's
// two requests: 1,348 + 1,496 in, 37 + 44 out); 0.45, which printed each
// run's own, is read as it printed.
func TestCaptureResumedTotals(t *testing.T) {
	for _, c := range []struct {
		version string
		want    [][2]int64
	}{
		{"0.171.0", [][2]int64{{1200, 30}, {2844, 81}}},
		{"0.45.0", [][2]int64{{1200, 30}, {2844, 81}}},
	} {
		data := append(captureFile(t, c.version, "resume", "stdout.jsonl"), captureFile(t, c.version, "resume", "stdout-2.jsonl")...)
		ends := formatstest.OfKind(formatstest.Read(t, codex.Dialect, data), formats.RunEnd)
		if len(ends) != len(c.want) {
			t.Fatalf("%s: %d runs, want %d", c.version, len(ends), len(c.want))
		}
		for i, e := range ends {
			if got := [2]int64{e.Usage.InputTokens.V, e.Usage.OutputTokens.V}; got != c.want[i] {
				t.Errorf("%s run %d: tokens %v, want %v", c.version, i+1, got, c.want[i])
			}
		}
	}
}

// TestCaptureInterAgentMessages: Codex 0.171 gives a subagent its task and
// its parent the subagent's FINAL_ANSWER as agent_message items, which the
// model reads as user messages. The subagent's rollout has its task as its
// prompt; the parent's has the answer as a message from the subagent,
// after the wait call and before the last text, not as a second prompt.
func TestCaptureInterAgentMessages(t *testing.T) {
	rollouts := captureRollouts(t, "0.171.0", "subagent")
	if len(rollouts) != 2 {
		t.Fatalf("%d rollouts, want the parent's and the subagent's", len(rollouts))
	}
	for _, data := range rollouts {
		evs := formatstest.Read(t, codex.Rollout, data)
		users := formatstest.OfKind(evs, formats.UserMessage)
		switch {
		case strings.Contains(string(data), `"parent_thread_id"`):
			if len(users) != 1 || users[0].AgentInfo.Label != "" || !strings.Contains(users[0].Text, "NEW_TASK") {
				t.Errorf("the subagent's rollout: user messages %v, want its task as its prompt", users)
			}
		default:
			if len(users) != 2 || users[0].Text != "agentconv-task: subagent" || users[1].AgentInfo.Label != "/root/agentconv_subtask" ||
				!strings.Contains(users[1].Text, "FINAL_ANSWER") {
				t.Errorf("the parent's rollout: user messages %+v, want the prompt, then the subagent's answer from it", users)
			}
			var kinds []string
			for _, e := range evs {
				switch {
				case e.Kind == formats.UserMessage && e.AgentInfo.Label != "":
					kinds = append(kinds, "from-agent")
				case e.Kind == formats.Message:
					kinds = append(kinds, e.Text)
				}
			}
			if want := "A subagent will look.|Waiting for the subagent.|from-agent|The subagent is done."; strings.Join(kinds, "|") != want {
				t.Errorf("order %q, want %q", strings.Join(kinds, "|"), want)
			}
		}
	}
}

// TestCaptureSubagent: Codex 0.171 runs a subagent (spawn_agent) in a
// thread of its own, with a rollout of its own beside its parent's. The
// parent's rollout is read with its subagent under the spawning call, its
// usage the subagent's two requests (output 37 and 44) apart from the
// parent's three (30, 51, 58); a directory is one session; a copy to
// codex-rollout -o DIR writes both rollouts as they were, and a copy to a
// stream says that it leaves the subagent's out.
func TestCaptureSubagent(t *testing.T) {
	dir := filepath.Join(codexCaptureDir("0.171.0", "subagent"), "home", ".codex", "sessions")
	names, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*", "rollout-*.jsonl"))
	parent := ""
	for _, n := range names {
		if codex.Rollout.Owner(n) == "" {
			if parent != "" {
				t.Fatalf("two rollouts own themselves: %s and %s", parent, n)
			}
			parent = n
		} else if o := codex.Rollout.Owner(n); o != parent && !strings.HasSuffix(n, "b13c.jsonl") {
			t.Errorf("%s is owned by %s", n, o)
		}
	}
	if len(names) != 2 || parent == "" {
		t.Fatalf("rollouts %v, parent %q", names, parent)
	}
	data, err := os.ReadFile(parent)
	if err != nil {
		t.Fatal(err)
	}
	evs, warn := formatstest.ReadFileWarnings(t, codex.Rollout, data, parent)
	var sub string
	var mainOut, subOut []int64
	for _, e := range evs {
		switch {
		case e.Kind == formats.AgentStart:
			if e.AgentInfo.ParentCall != "call_sub_1" || sub != "" {
				t.Errorf("subagent %s under call %q", e.Agent, e.AgentInfo.ParentCall)
			}
			sub = e.Agent
		case e.Kind == formats.Usage && e.Agent == "":
			mainOut = append(mainOut, e.Usage.OutputTokens.V)
		case e.Kind == formats.Usage:
			subOut = append(subOut, e.Usage.OutputTokens.V)
		}
	}
	if sub != "01a2345f-b035-7b82-b46a-4ea63918b13c" || warn != "" {
		t.Errorf("subagent %q, warnings %q", sub, warn)
	}
	if got := fmtInts(mainOut) + " / " + fmtInts(subOut); got != "30 51 58 / 37 44" {
		t.Errorf("output tokens (parent / subagent): %s", got)
	}

	out := t.TempDir()
	if code, _, stderr := converttest.Run("", "--to", "codex-rollout", "-o", out+"/", parent); code != 0 || stderr != "" {
		t.Fatalf("-o DIR: exit %d: %s", code, stderr)
	}
	for _, n := range names {
		want, _ := os.ReadFile(n)
		id := strings.TrimSuffix(filepath.Base(n), ".jsonl")
		id = id[len(id)-36:]
		got, _ := filepath.Glob(filepath.Join(out, "*", "*", "*", "rollout-*-"+id+".jsonl"))
		if len(got) != 1 {
			t.Errorf("-o DIR wrote no rollout of thread %s", id)
			continue
		}
		if b, _ := os.ReadFile(got[0]); string(b) != string(want) {
			t.Errorf("-o DIR: %s differs from the rollout read", got[0])
		}
	}
	code, stdout, stderr := converttest.Run("", "--to", "codex-rollout", parent)
	if code != 0 || stdout != string(data) || !strings.Contains(stderr, "subagents' rollouts, copied to a stream") {
		t.Errorf("to a stream: exit %d, same as the parent's rollout: %v, stderr %q", code, stdout == string(data), stderr)
	}
}

func fmtInts(v []int64) string {
	var s []string
	for _, n := range v {
		s = append(s, strconv.FormatInt(n, 10))
	}
	return strings.Join(s, " ")
}
