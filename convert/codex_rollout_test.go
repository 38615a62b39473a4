package convert_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/codex"
	"github.com/agentconv/agentconv/formats/formatstest"
)

var rolloutFixtures = []string{"agentcmd-codex-rollout.jsonl", "localpush-0.104-rollout.jsonl",
	"localpush-0.104-rollout-cut.jsonl", "letta-tool-calls-rollout.jsonl"}

// counts sums up what a reader gave.
type counts struct {
	runs, ends, prompts, messages, thinking, calls, results, usage, raw int
	in, out, cached, reasoning                                          int64
	sessions, models                                                    []string
	statuses                                                            []formats.Status
}

func codexCount(evs []*formats.Event) counts {
	var c counts
	for _, e := range evs {
		switch e.Kind {
		case formats.RunStart:
			c.runs++
			c.sessions = append(c.sessions, e.Run.SessionID)
			c.models = append(c.models, e.Run.Model)
		case formats.RunEnd:
			c.ends++
			c.statuses = append(c.statuses, e.Status)
		case formats.UserMessage:
			c.prompts++
		case formats.Message:
			c.messages++
		case formats.ThinkingDelta:
			c.thinking++
		case formats.ToolCall:
			c.calls++
		case formats.ToolResult:
			c.results++
		case formats.Usage:
			c.usage++
			c.in += e.Usage.InputTokens.V
			c.out += e.Usage.OutputTokens.V
			c.cached += e.Usage.CacheReadTokens.V
			c.reasoning += e.Usage.ReasoningTokens.V
		case formats.Raw:
			c.raw++
		}
	}
	return c
}

// TestRolloutReadCorpus: Codex 0.40's rollout of one prompt and 34 shell
// calls. The environment context is kept raw, the prompt and its
// user_message are one prompt, each request's usage counts once (its sum is
// the last total_token_usage), and the run completed with its last message.
func TestRolloutReadCorpus(t *testing.T) {
	evs := formatstest.Read(t, codex.Rollout, formatstest.Fixture(t, "codex", "agentcmd-codex-rollout.jsonl"))
	c := codexCount(evs)
	if c.runs != 1 || c.ends != 1 || c.statuses[0] != formats.Completed || c.prompts != 1 || c.messages != 1 ||
		c.calls != 34 || c.results != 34 || c.usage != 35 || c.raw != 1 {
		t.Errorf("counts %+v", c)
	}
	if c.in != 536834 || c.out != 6654 || c.cached != 472320 || c.reasoning != 4096 {
		t.Errorf("usage %d in, %d out, %d cached, %d reasoning; want the last total_token_usage", c.in, c.out, c.cached, c.reasoning)
	}
	if c.sessions[0] != "019982b8-3422-79e0-8b3b-05abaf4f3c3e" || c.models[0] != "gpt-5-codex" {
		t.Errorf("run %v %v", c.sessions, c.models)
	}
	start := evs[0]
	if start.Run.AgentVersion != "0.40.0" || start.Run.Cwd != "/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2" || start.Run.Provider != "openai" {
		t.Errorf("run start %+v", start.Run)
	}
	p := formatstest.OfKind(evs, formats.UserMessage)[0]
	if !strings.HasPrefix(p.Text, "# Context from my IDE setup:") || p.Source.LineNo != 3 {
		t.Errorf("prompt at line %d: %.60q", p.Source.LineNo, p.Text)
	}
	r := formatstest.OfKind(evs, formats.ToolResult)[0]
	if r.Call.Name != "shell" || r.Call.Status != formats.Completed || !r.Call.ExitCode.OK || !strings.HasPrefix(r.Call.Output.Text(), "CLAUDE.md\n") {
		t.Errorf("first result %+v", r.Call)
	}
	if tc := formatstest.OfKind(evs, formats.ToolCall)[0]; string(tc.Call.Args) != `{"command":["bash","-lc","ls"],"workdir":".","timeout_ms":120000}` {
		t.Errorf("first call's arguments %s", tc.Call.Args)
	}
	if raw := formatstest.OfKind(evs, formats.Raw)[0]; raw.Source.Type != "response_item/message (instructions or context Codex adds)" ||
		!bytes.Contains(raw.Source.Line, []byte("<environment_context>")) {
		t.Errorf("the environment context: %s %.80s", raw.Source.Type, raw.Source.Line)
	}
	// Every record is carried by one event; made-up events carry none.
	lines := 0
	for _, e := range evs {
		if e.Source.Line != nil {
			lines += bytes.Count(e.Source.Line, []byte{'\n'}) + 1
		} else if !e.Source.Continued {
			t.Errorf("%s at line %d carries no record and is not Continued", e.Kind, e.Source.LineNo)
		}
	}
	if lines != 209 {
		t.Errorf("%d records carried, want 209", lines)
	}
}

// TestRolloutReadNewer: Codex 0.104's rollout, with task_started and
// task_complete, developer messages, and each token count printed twice.
func TestRolloutReadNewer(t *testing.T) {
	evs := formatstest.Read(t, codex.Rollout, formatstest.Fixture(t, "codex", "localpush-0.104-rollout.jsonl"))
	c := codexCount(evs)
	if c.runs != 1 || c.ends != 1 || c.statuses[0] != formats.Completed || c.prompts != 1 || c.calls != 5 || c.results != 5 ||
		c.usage != 6 || c.messages != 6 || c.thinking != 6 || c.raw != 7 || c.models[0] != "gpt-5.3-codex" {
		t.Errorf("counts %+v", c)
	}
	// The sum of the requests is the last total_token_usage of the file.
	if c.in != 298373 || c.out != 1123 {
		t.Errorf("usage %d in, %d out", c.in, c.out)
	}
	kinds := formatstest.Kinds(evs)
	if !strings.HasSuffix(kinds, "usage turn_end answer run_end") || !strings.Contains(kinds, "turn_start raw user_message") {
		t.Errorf("kinds %s", kinds)
	}
}

// TestRolloutCut: a session still being written ends in a cut run: a
// warning, not an error, and the same dialect gets the file back as it is.
func TestRolloutCut(t *testing.T) {
	in := formatstest.Fixture(t, "codex", "localpush-0.104-rollout-cut.jsonl")
	evs := formatstest.Read(t, codex.Rollout, in)
	if c := codexCount(evs); c.runs != 1 || c.ends != 0 || c.prompts != 1 || c.calls != 1 || c.results != 0 {
		t.Errorf("counts %+v", c)
	}
	code, out, stderr := converttest.Run(string(in), "--to", "codex-rollout")
	if code != 0 || out != string(in) || !strings.Contains(stderr, "ended before its run completed") {
		t.Errorf("exit %d, same output %v: %s", code, out == string(in), stderr)
	}
	code, out, stderr = converttest.Run(string(in), "--to", "adal-json")
	if code != 0 || !strings.Contains(formatstest.OneLine(out), `"success":false`) || !strings.Contains(stderr, "cut") {
		t.Errorf("adal-json: exit %d: %s %s", code, out, stderr)
	}
}

// TestRolloutSameDialect: codex-rollout → codex-rollout gives back every
// record, as JSON, record by record.
func TestRolloutSameDialect(t *testing.T) {
	for _, name := range rolloutFixtures {
		in := formatstest.Fixture(t, "codex", name)
		out := converttest.Convert(t, in, "codex-rollout", "codex-rollout")
		want, got := jsonLines(t, in), jsonLines(t, out)
		if len(want) != len(got) {
			t.Fatalf("%s: %d records back, want %d", name, len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(want[i], got[i]) {
				t.Errorf("%s: record %d changed", name, i+1)
			}
		}
	}
}

func jsonLines(t *testing.T, b []byte) []any {
	t.Helper()
	var out []any
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte{'\n'}) {
		var v any
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		out = append(out, v)
	}
	return out
}

// tripKinds are the events that both codex and codex-rollout carry, in
// order (codex writes no prompts, and its usage per turn: usage is
// compared by its sums).
var tripKinds = []formats.Kind{formats.Message, formats.ThinkingDelta, formats.ToolCall,
	formats.ToolResult, formats.TurnEnd, formats.Todos, formats.Notice, formats.Answer}

func usageSum(evs []*formats.Event) formats.UsageInfo {
	var u formats.UsageInfo
	for _, e := range formatstest.OfKind(evs, formats.Usage) {
		u.Add(e.Usage)
	}
	return u
}

// TestCodexThroughRollout: codex → codex-rollout → codex keeps every event
// both carry, over the codex stream fixtures: prompts, text, reasoning,
// calls and results (a refused call comes back failed, as the loss report
// says), turns, usage, todo lists, notices and the answer; and the runs'
// sessions and outcomes.
func TestCodexThroughRollout(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "codex", "*.jsonl"))
	n := 0
	for _, f := range files {
		in, _ := os.ReadFile(f)
		if d := codex.Dialect.Detect(in[:min(len(in), formats.DetectSize)]); d == 0 {
			continue
		}
		n++
		name := filepath.Base(f)
		direct := converttest.Convert(t, in, "codex", "codex")
		back := converttest.Convert(t, converttest.Convert(t, in, "codex", "codex-rollout"), "codex-rollout", "codex")
		dev, bev := formatstest.Read(t, codex.Dialect, direct), formatstest.Read(t, codex.Dialect, back)
		refused := map[string]bool{}
		for _, e := range formatstest.OfKind(dev, formats.ToolResult) {
			if e.Call.Status == formats.Denied {
				refused[e.Call.ID] = true
			}
		}
		want := tripNormalize(formatstest.Compare(dev, tripKinds...), refused)
		got := tripNormalize(formatstest.Compare(bev, tripKinds...), refused)
		if len(formatstest.OfKind(dev, formats.TurnEnd)) == 0 {
			// codex writes a run without turns in one turn.
			got = dropKind(got, formats.TurnEnd)
		}
		if du, bu := usageSum(dev), usageSum(bev); du.InputTokens.V != bu.InputTokens.V || du.OutputTokens.V != bu.OutputTokens.V ||
			du.CacheReadTokens.V != bu.CacheReadTokens.V {
			t.Errorf("%s: usage %+v through codex-rollout, %+v directly", name, bu, du)
		}
		w, g := codexSurvivors(t, direct), codexSurvivors(t, back)
		for i := range w {
			for j, c := range w[i].Calls {
				if n, ok := strings.CutSuffix(c, ":denied"); ok {
					w[i].Calls[j] = n + ":failed"
				}
			}
		}
		if len(formatstest.OfKind(dev, formats.RunStart)) > len(w) {
			// A cut run: the codex stream gives it back as it is, another
			// dialect gets it closed as failed. What came before agrees.
			if len(got) > len(want) {
				got = got[:len(want)]
			}
			if len(g) > len(w) {
				g = g[:len(w)]
			}
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: events changed through codex-rollout:\nwant %+v\n got %+v", name, want, got)
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s: runs changed through codex-rollout:\nwant %+v\n got %+v", name, w, g)
		}
	}
	if n < 8 {
		t.Fatalf("%d codex stream fixtures, want every one", n)
	}
}

func dropKind(cs []formatstest.Comparable, k formats.Kind) []formatstest.Comparable {
	var out []formatstest.Comparable
	for _, c := range cs {
		if c.Kind != k {
			out = append(out, c)
		}
	}
	return out
}

// tripNormalize: a refused call (which the codex stream starts only with
// its refusal) comes back as a call that failed, with the reason as its
// error; codex-rollout cannot carry refusals, and the pipeline says so.
func tripNormalize(cs []formatstest.Comparable, refused map[string]bool) []formatstest.Comparable {
	var out []formatstest.Comparable
	for _, c := range cs {
		if refused[c.CallID] {
			if c.Kind == formats.ToolCall {
				continue
			}
			c.Status, c.Output = formats.Failed, ""
		}
		out = append(out, c)
	}
	return out
}

// normalize: a refusal comes back as a failed call (codex-rollout cannot
// carry refusals; the pipeline reports them), and a result without its
// call gets a call without a name (Codex wants each output after its call).
//
// Reasoning pieces one after another are one stream of thinking, which
// the writer gathers into one agent_reasoning.
func normalize(cs []formatstest.Comparable) []formatstest.Comparable {
	var out []formatstest.Comparable
	for _, c := range cs {
		if c.Status == formats.Denied {
			c.Status = formats.Failed
		}
		if c.Kind == formats.ToolCall && c.Name == "" {
			continue
		}
		if n := len(out); n > 0 && c.Kind == formats.ThinkingDelta && out[n-1].Kind == formats.ThinkingDelta {
			out[n-1].Text += c.Text
			continue
		}
		out = append(out, c)
	}
	return out
}

// TestRolloutFilesLayout: with -o DIR each session goes to
// YYYY/MM/DD/rollout-<start>-<uuid>.jsonl, its first line a session_meta
// whose id is that UUID: a source's UUID, else the name-based UUID of its
// id; a copy of a rollout lands where Codex put it (by its UTC start).
func TestRolloutFilesLayout(t *testing.T) {
	dir := t.TempDir()
	in := formatstest.Fixture(t, "codex", "letta-tool-calls-rollout.jsonl")
	code, _, stderr := converttest.Run(string(in), "--from", "codex-rollout", "--to", "claude-stream", "-o", filepath.Join(dir, "c.jsonl"))
	if code != 0 {
		t.Fatal(stderr)
	}
	claude, _ := os.ReadFile(filepath.Join(dir, "c.jsonl"))
	out := filepath.Join(dir, "sessions") + "/"
	code, stdout, stderr := converttest.Run(string(claude), "--deterministic", "--from", "claude-stream", "--to", "codex-rollout", "-o", out)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	id := "6cf96eb0-d436-58d8-a8d8-e9142c5d348f" // UUID v5 of "s1" in the URL namespace
	files, _ := filepath.Glob(filepath.Join(dir, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(files) != 1 || !strings.HasSuffix(files[0], "-"+id+".jsonl") {
		t.Fatalf("files %v", files)
	}
	rel, _ := filepath.Rel(filepath.Join(dir, "sessions"), files[0])
	if rel != filepath.FromSlash("2000/01/01/rollout-2000-01-01T00-00-00-"+id+".jsonl") {
		t.Errorf("path %s", rel)
	}
	b, _ := os.ReadFile(files[0])
	checkResumable(t, b, id)
	evs := formatstest.Read(t, codex.Rollout, b)
	if c := codexCount(evs); c.sessions[0] != "s1" || c.prompts != 1 || c.calls != 3 || c.ends != 1 || c.statuses[0] != formats.Completed {
		t.Errorf("read back %+v", c)
	}

	// A rollout copied into a directory goes where Codex keeps it.
	src := formatstest.Fixture(t, "codex", "agentcmd-codex-rollout.jsonl")
	out2 := filepath.Join(dir, "copy") + "/"
	if code, _, stderr := converttest.Run(string(src), "--to", "codex-rollout", "-o", out2); code != 0 {
		t.Fatal(stderr)
	}
	got, err := os.ReadFile(filepath.Join(dir, "copy", "2025", "09", "25", "rollout-2025-09-25T21-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"))
	if err != nil || !bytes.Equal(got, src) {
		t.Errorf("copy: %v, same %v", err, bytes.Equal(got, src))
	}
}

// checkResumable checks what codex resume needs of a rollout: every line a
// RolloutLine, session_meta first with the thread's UUID, a user_message
// event among the first records, and turn_context lines with every field
// a TurnContextItem requires.
func checkResumable(t *testing.T, b []byte, id string) {
	t.Helper()
	var sawUser bool
	for i, l := range bytes.Split(bytes.TrimSpace(b), []byte{'\n'}) {
		var rl struct {
			Timestamp string         `json:"timestamp"`
			Type      string         `json:"type"`
			Payload   map[string]any `json:"payload"`
		}
		if err := json.Unmarshal(l, &rl); err != nil || rl.Timestamp == "" || rl.Type == "" || rl.Payload == nil {
			t.Fatalf("line %d is not a rollout line: %v %s", i+1, err, l)
		}
		if i == 0 && (rl.Type != "session_meta" || rl.Payload["id"] != id || rl.Payload["cwd"] == nil) {
			t.Errorf("first line %s", l)
		}
		if rl.Type == "event_msg" && rl.Payload["type"] == "user_message" && i < 5 {
			sawUser = true
		}
		if rl.Type == "turn_context" {
			for _, k := range []string{"cwd", "approval_policy", "sandbox_policy", "model", "summary"} {
				if _, ok := rl.Payload[k]; !ok {
					t.Errorf("turn_context without %s: %s", k, l)
				}
			}
		}
	}
	if !sawUser {
		t.Errorf("no user_message among the first records")
	}
}

// TestRolloutDetect: rollouts are codex-rollout, never the codex stream,
// and the stream fixtures are never rollouts; a head cut inside a long
// session_meta is still a rollout.
func TestRolloutDetect(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "codex", "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		head := b[:min(len(b), formats.DetectSize)]
		isRollout := strings.Contains(f, "rollout")
		r, s := codex.Rollout.Detect(head), codex.Dialect.Detect(head)
		if isRollout && (r < 100 || s != 0) || !isRollout && r != 0 {
			t.Errorf("%s: codex-rollout %d, codex %d", filepath.Base(f), r, s)
		}
	}
	long := `{"timestamp":"2026-02-23T11:40:29.275Z","type":"session_meta","payload":{"id":"x","base_instructions":{"text":"` + strings.Repeat("a", 100)
	if s := codex.Rollout.Detect([]byte(long)); s != 100 {
		t.Errorf("cut session_meta scores %d", s)
	}
}

// TestRolloutUnknownAndBad: an unknown record type is kept raw and warned
// about once; a malformed line is an error naming it, and --lenient skips
// it.
func TestRolloutUnknownAndBad(t *testing.T) {
	in := `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"019c8a70-dda7-7f33-98ea-f30553347322","cwd":"/w"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"future_state","payload":{"a":1}}
{"timestamp":"2026-01-01T00:00:01Z","type":"future_state","payload":{"a":2}}
{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}
{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}}
`
	evs, warn := formatstest.ReadWarnings(t, codex.Rollout, in)
	if k := formatstest.Kinds(evs); k != "run_start raw raw user_message message run_end" {
		t.Errorf("kinds %s", k)
	}
	code, out, stderr := converttest.Run(in, "--to", "codex-rollout")
	if code != 0 || out != in || strings.Count(stderr, `"future_state"`) != 1 {
		t.Errorf("exit %d: %s\n%s", code, out, stderr)
	}
	_ = warn
	if code, _, stderr := converttest.Run(in, "--to", "claude-stream"); code != 0 || !strings.Contains(stderr, "2 × unknown codex-rollout events") {
		t.Errorf("claude-stream: exit %d: %s", code, stderr)
	}
	bad := strings.Replace(in, `{"a":2}}`, `{"a":2`, 1)
	if code, _, stderr := converttest.Run(bad, "--from", "codex-rollout", "--to", "adal-json"); code == 0 || !strings.Contains(stderr, ":3:") {
		t.Errorf("bad line: exit %d: %s", code, stderr)
	}
	if code, out, stderr := converttest.Run(bad, "--lenient", "--from", "codex-rollout", "--to", "adal-json"); code != 0 || !strings.Contains(formatstest.OneLine(out), `"answer":"hello"`) {
		t.Errorf("--lenient: exit %d: %s %s", code, out, stderr)
	}
}

// TestRolloutDuplicates: what Codex writes twice makes one event; a call
// id used twice makes two calls; a second result of a call is kept raw.
func TestRolloutDuplicates(t *testing.T) {
	in := `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"019c8a70-dda7-7f33-98ea-f30553347322","cwd":"/w"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x</environment_context>"}]}}
{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}
{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"fix it"}}
{"timestamp":"2026-01-01T00:00:02Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5","approval_policy":"never","sandbox_policy":{"type":"read-only"},"summary":"auto"}}
{"timestamp":"2026-01-01T00:00:03Z","type":"event_msg","payload":{"type":"agent_reasoning","text":"think"}}
{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"x"}}
{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}
{"timestamp":"2026-01-01T00:00:04Z","type":"event_msg","payload":{"type":"exec_command_begin","call_id":"c1","command":["ls"]}}
{"timestamp":"2026-01-01T00:00:05Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c1","exit_code":2,"aggregated_output":"no such file","duration":{"secs":1,"nanos":500000000}}}
{"timestamp":"2026-01-01T00:00:05Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"no such file"}}
{"timestamp":"2026-01-01T00:00:05Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"again"}}
{"timestamp":"2026-01-01T00:00:06Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":15},"last_token_usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":15}}}}
{"timestamp":"2026-01-01T00:00:06Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":15},"last_token_usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":15}}}}
{"timestamp":"2026-01-01T00:00:07Z","type":"event_msg","payload":{"type":"agent_message","message":"done"}}
{"timestamp":"2026-01-01T00:00:07Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}
{"timestamp":"2026-01-01T00:00:08Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"done"}}
{"timestamp":"2026-01-01T00:00:09Z","type":"event_msg","payload":{"type":"user_message","message":"and now?"}}
{"timestamp":"2026-01-01T00:00:09Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"and now?"}]}}
{"timestamp":"2026-01-01T00:00:10Z","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}
`
	evs, warn := formatstest.ReadWarnings(t, codex.Rollout, in)
	want := "run_start turn_start raw user_message thinking_delta tool_call tool_result raw usage message turn_end answer run_end " +
		"run_start user_message turn_end run_end"
	if k := formatstest.Kinds(evs); k != want {
		t.Fatalf("kinds\n got %s\nwant %s", k, want)
	}
	r := formatstest.OfKind(evs, formats.ToolResult)[0]
	if r.Call.Status != formats.Failed || r.Call.Error != "exit code 2" || r.Call.Output.Text() != "no such file" || r.Duration.Seconds() != 1.5 || r.Call.Name != "shell" {
		t.Errorf("result %+v %v", r.Call, r.Duration)
	}
	c := codexCount(evs)
	if c.sessions[0] != c.sessions[1] || c.models[0] != "gpt-5" || c.statuses[0] != formats.Completed || c.statuses[1] != formats.Cancelled {
		t.Errorf("runs %+v", c)
	}
	if !strings.Contains(warn, `another result for tool call "c1"`) {
		t.Errorf("warnings %s", warn)
	}
	if code, out, _ := converttest.Run(in, "--to", "codex-rollout"); code != 0 || out != in {
		t.Errorf("same dialect: exit %d\n%s", code, out)
	}
}

// TestRolloutPlaces: $CODEX_HOME/sessions, else ~/.codex/sessions.
func TestRolloutPlaces(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if p := codex.Rollout.Places(env(map[string]string{"CODEX_HOME": "/c", "HOME": "/h"})); !reflect.DeepEqual(p, []string{"/c/sessions"}) {
		t.Errorf("with CODEX_HOME: %v", p)
	}
	if p := codex.Rollout.Places(env(map[string]string{"HOME": "/h"})); !reflect.DeepEqual(p, []string{"/h/.codex/sessions"}) {
		t.Errorf("with HOME: %v", p)
	}
	if codex.Rollout.DirFiles != "rollout-*.jsonl" || !codex.Rollout.Files {
		t.Errorf("DirFiles %q, Files %v", codex.Rollout.DirFiles, codex.Rollout.Files)
	}
}

// FuzzRolloutReader: reading never fails fatally or runs away, and what it
// reads writes and reads back to the same events.
func FuzzRolloutReader(f *testing.F) {
	for _, n := range rolloutFixtures {
		f.Add(formatstest.Fixture(f, "codex", n))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTripNormalized(t, codex.Rollout, data, normalize, formats.UserMessage, formats.Message,
			formats.ThinkingDelta, formats.ToolCall, formats.ToolResult, formats.Usage)
	})
}

// TestRolloutWrittenFromEveryFixture: what every fixture of every dialect
// becomes is a rollout Codex reads: each line a RolloutLine, each session
// opening with its session_meta and a UUID thread id, each function call
// output after its call (the Responses API refuses an output without
// one), turn_context lines complete; and it reads back without an error.
func TestRolloutWrittenFromEveryFixture(t *testing.T) {
	t.Parallel()
	var files []string
	filepath.WalkDir(filepath.Join("..", "testdata"), func(p string, d os.DirEntry, err error) error {
		if d.IsDir() && (d.Name() == "golden" || d.Name() == "fuzz" || d.Name() == "bench") {
			return filepath.SkipDir
		}
		if !d.IsDir() && !strings.HasSuffix(p, ".md") && !strings.HasPrefix(d.Name(), ".") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 30 {
		t.Fatalf("%d fixtures", len(files))
	}
	seen := map[string]bool{}
	for _, f := range files {
		in, _ := os.ReadFile(f)
		if codex.Rollout.Detect(in[:min(len(in), formats.DetectSize)]) > 0 {
			continue // a rollout is copied as it is
		}
		if seen[string(in)] {
			continue // the same bytes as a file already checked: the same rollout
		}
		seen[string(in)] = true
		code, out, stderr := converttest.Run(string(in), "--deterministic", "--lenient", "--to", "codex-rollout")
		if code != 0 && code != 1 {
			t.Errorf("%s: exit %d: %s", f, code, stderr)
			continue
		}
		calls := map[string]bool{}
		var meta string
		for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			var rl struct {
				Type    string         `json:"type"`
				Payload map[string]any `json:"payload"`
			}
			if err := json.Unmarshal([]byte(l), &rl); err != nil || rl.Payload == nil {
				t.Errorf("%s: line %d: %v %s", f, i+1, err, l)
				break
			}
			if i == 0 && rl.Type != "session_meta" {
				t.Errorf("%s: first line %s", f, l)
			}
			switch {
			case rl.Type == "session_meta":
				id, _ := rl.Payload["id"].(string)
				if len(id) != 36 || strings.Count(id, "-") != 4 {
					t.Errorf("%s: thread id %q", f, id)
				}
				if meta != id {
					meta, calls = id, map[string]bool{}
				}
			case rl.Payload["type"] == "function_call":
				calls[rl.Payload["call_id"].(string)] = true
			case rl.Payload["type"] == "function_call_output":
				if !calls[rl.Payload["call_id"].(string)] {
					t.Errorf("%s: line %d: an output before its call: %s", f, i+1, l)
				}
			case rl.Type == "turn_context":
				if _, ok := rl.Payload["sandbox_policy"]; !ok {
					t.Errorf("%s: line %d: %s", f, i+1, l)
				}
			}
		}
		if _, bad, err := formatstest.ReadAll(codex.Rollout, []byte(out)); err != nil || len(bad) > 0 {
			t.Errorf("%s: reading back: %v %v", f, err, bad)
		}
	}
}

// TestRolloutEvents: the extended events (patch and MCP calls, compaction,
// plan updates, notices) and a local shell call; a model change between
// turns.
func TestRolloutEvents(t *testing.T) {
	in := `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"019c8a70-dda7-7f33-98ea-f30553347322","cwd":"/w","cli_version":"0.130.0"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"go"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5"}}
{"timestamp":"2026-01-01T00:00:02Z","type":"event_msg","payload":{"type":"patch_apply_begin","call_id":"p1","auto_approved":true,"changes":{"a.go":{"type":"add","content":"x"}}}}
{"timestamp":"2026-01-01T00:00:02Z","type":"event_msg","payload":{"type":"patch_apply_end","call_id":"p1","stdout":"","stderr":"conflict","success":false}}
{"timestamp":"2026-01-01T00:00:03Z","type":"event_msg","payload":{"type":"mcp_tool_call_begin","call_id":"m1","invocation":{"server":"docs","tool":"search","arguments":{"q":"x"}}}}
{"timestamp":"2026-01-01T00:00:04Z","type":"event_msg","payload":{"type":"mcp_tool_call_end","call_id":"m1","invocation":{"server":"docs","tool":"search","arguments":{"q":"x"}},"duration":{"secs":2,"nanos":0},"result":{"Err":"timed out"}}}
{"timestamp":"2026-01-01T00:00:05Z","type":"response_item","payload":{"type":"local_shell_call","call_id":"s1","status":"completed","action":{"type":"exec","command":["ls"]}}}
{"timestamp":"2026-01-01T00:00:05Z","type":"response_item","payload":{"type":"function_call_output","call_id":"s1","output":[{"type":"input_text","text":"a.go"}]}}
{"timestamp":"2026-01-01T00:00:06Z","type":"event_msg","payload":{"type":"plan_update","plan":[{"step":"one","status":"completed"},{"step":"two","status":"in_progress"}]}}
{"timestamp":"2026-01-01T00:00:06Z","type":"event_msg","payload":{"type":"warning","message":"slow"}}
{"timestamp":"2026-01-01T00:00:07Z","type":"compacted","payload":{"message":"summary of the work"}}
{"timestamp":"2026-01-01T00:00:07Z","type":"event_msg","payload":{"type":"context_compacted"}}
{"timestamp":"2026-01-01T00:00:08Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5.1"}}
{"timestamp":"2026-01-01T00:00:09Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}
`
	evs := formatstest.Read(t, codex.Rollout, in)
	want := "run_start user_message tool_call tool_result tool_call tool_result tool_call tool_result todos notice compaction model_change message run_end"
	if k := formatstest.Kinds(evs); k != want {
		t.Fatalf("kinds\n got %s\nwant %s", k, want)
	}
	res := formatstest.OfKind(evs, formats.ToolResult)
	if c := res[0].Call; c.Name != "apply_patch" || c.Status != formats.Failed || c.Error != "conflict" {
		t.Errorf("patch %+v", c)
	}
	if c := res[1].Call; c.Name != "mcp__docs__search" || c.Status != formats.Failed || c.Error != "timed out" || res[1].Duration.Seconds() != 2 {
		t.Errorf("mcp %+v", c)
	}
	if c := res[2].Call; c.Name != "local_shell" || c.Output.Text() != "a.go" || c.Status != formats.Completed {
		t.Errorf("local shell %+v", c)
	}
	if e := formatstest.OfKind(evs, formats.Compaction)[0]; e.Text != "summary of the work" {
		t.Errorf("compaction %q", e.Text)
	}
	if e := formatstest.OfKind(evs, formats.Todos)[0]; len(e.Todos) != 2 || e.Todos[1].Status != "in_progress" {
		t.Errorf("todos %+v", e.Todos)
	}
	if evs[0].Run.Model != "gpt-5" || evs[0].Run.AgentVersion != "0.130.0" || formatstest.OfKind(evs, formats.ModelChange)[0].Run.Model != "gpt-5.1" {
		t.Errorf("models %+v", evs[0].Run)
	}
}

// TestRolloutSystemInstructions: the session_meta's base_instructions are
// each run's system instructions, and a rollout written from another
// dialect keeps them there.
func TestRolloutSystemInstructions(t *testing.T) {
	in := formatstest.Fixture(t, "codex", "localpush-0.104-rollout.jsonl")
	starts := formatstest.OfKind(formatstest.Read(t, codex.Rollout, in), formats.RunStart)
	if len(starts) == 0 || starts[0].Run.SystemInstructions != "[REDACTED_TEXT len=13131 sha=036b7e47]" {
		t.Fatalf("system instructions of the first run: %.60q", starts[0].Run.SystemInstructions)
	}
	// Through the otlp-json trace (which carries them with content) and
	// back into a rollout.
	_, spans, _ := converttest.Run(string(in), "--deterministic", "--from", "codex-rollout", "--to", "otlp-json", "--otlp-content")
	back := formatstest.OfKind(formatstest.Read(t, codex.Rollout, converttest.Convert(t, []byte(spans), "otlp-json", "codex-rollout")), formats.RunStart)
	if len(back) == 0 || back[0].Run.SystemInstructions != starts[0].Run.SystemInstructions {
		t.Errorf("after otlp-json and back: %.60q", back[0].Run.SystemInstructions)
	}
	// A stream without a place for them says they are lost.
	_, _, stderr := converttest.Run(string(in), "--from", "codex-rollout", "--to", "codex")
	if !strings.Contains(stderr, "× system instructions (codex cannot carry them)") {
		t.Errorf("codex does not report the system instructions lost: %s", stderr)
	}
}

// TestRolloutCLIVersion: session_meta's cli_version is the version of the
// Codex that wrote the source, never another agent's.
func TestRolloutCLIVersion(t *testing.T) {
	cases := []struct {
		name, version, want string
	}{
		{codex.AgentName, "0.130.0", `"cli_version":"0.130.0"`},
		{"claude-code", "2.0.1", `"cli_version":""`},
	}
	for _, c := range cases {
		out, _ := formatstest.WriteReport(t, codex.Rollout, []*formats.Event{
			{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "019c8a70-dda7-7f33-98ea-f30553347322", AgentName: c.name, AgentVersion: c.version}},
			{Kind: formats.UserMessage, Text: "go"},
			{Kind: formats.RunEnd, Status: formats.Completed},
		})
		if !strings.Contains(out, c.want) {
			t.Errorf("from %s %s: want %s in\n%s", c.name, c.version, c.want, out)
		}
	}
}
