package convert_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// Tests on what Claude Code itself wrote: the captures of the agents'
// tests (testdata/agents/claude-code/<version>/<scenario>/<mode>), and
// real sessions copied into testdata/sessions.

// claudeCaptureDir is a capture's directory.
func claudeCaptureDir(version, scenario, mode string) string {
	return filepath.Join("..", "testdata", "agents", "claude-code", version, scenario, mode)
}

// captureMeta is what the tests use of a capture's meta.json.
type captureMeta struct {
	Session string `json:"session"`
	Work    string `json:"work"`
	Runs    []struct {
		Exit   int    `json:"exit"`
		Stdout string `json:"stdout"`
	} `json:"runs"`
}

func readMeta(t *testing.T, dir string) captureMeta {
	t.Helper()
	var m captureMeta
	if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "meta.json")), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// captureSession is the main session file of a capture.
func captureSession(t *testing.T, dir string) string {
	t.Helper()
	m := readMeta(t, dir)
	files, _ := filepath.Glob(filepath.Join(dir, "home", ".claude", "projects", "*", m.Session+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("%s: %d session files of %s", dir, len(files), m.Session)
	}
	return files[0]
}

func runEnds(evs []*formats.Event) []*formats.Event { return formatstest.OfKind(evs, formats.RunEnd) }

// Parallel calls (issue 23 #1): Claude Code 2.x chains each result to its
// own tool_use record, so the results sit on sibling branches; the run is
// one, it ended, and both calls have their results, as when Claude Code
// resumes the file.
func TestAgentParallelResultsOnSiblingBranches(t *testing.T) {
	for _, v := range []string{"2.0.77", "2.1.332", "1.0.128"} {
		for _, mode := range []string{"json", "stream-json"} {
			evs, warn := readSession(t, captureSession(t, claudeCaptureDir(v, "parallel", mode)))
			if strings.Contains(warn, "abandoned") {
				t.Errorf("%s %s: %s", v, mode, warn)
			}
			ends := runEnds(evs)
			if len(ends) != 1 || ends[0].Status != formats.Completed {
				t.Errorf("%s %s: run ends %+v, want one, completed", v, mode, ends)
			}
			var done int
			for _, r := range formatstest.OfKind(evs, formats.ToolResult) {
				if r.Call.Status == formats.Completed {
					done++
				}
			}
			if n := claudeCount(evs, formats.ToolCall, ""); n != 2 || done != 2 {
				t.Errorf("%s %s: %d calls, %d completed results; want 2 and 2", v, mode, n, done)
			}
		}
	}
}

// A rewind still leaves its branch: the records a rewound prompt left are
// not the conversation (the parallel rule takes only a message's own
// records and the results of its calls).
func TestAgentRewindStillAbandons(t *testing.T) {
	_, warn := readSession(t, filepath.Join("..", "formats", "claude", "testdata", "sessions", "claude-code-log-dag-compact-after-rewind.jsonl"))
	if !strings.Contains(warn, "2 records are on abandoned branches") {
		t.Errorf("warning: %q", warn)
	}
}

// A compaction whose logical parent is not in the file (issue 23 #2, a
// real 2.1.39 session): the conversation goes on from the record before
// it, so every request before the compaction counts, as ccusage counts
// them: 152 responses (with the subagents'), 12,387,553 tokens read from
// the cache.
func TestAgentCompactionWithoutParent(t *testing.T) {
	evs, warn := readSession(t, filepath.Join("..", "formats", "claude", "testdata", "sessions", "marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"))
	if strings.Contains(warn, "abandoned") {
		t.Errorf("warning: %s", warn)
	}
	// The subagents' responses too, as ccusage counts them.
	var reads int64
	usage := formatstest.OfKind(evs, formats.Usage)
	for _, u := range usage {
		reads += u.Usage.CacheReadTokens.V
	}
	if len(usage) != 152 || claudeCount(evs, formats.Compaction, "") != 1 {
		t.Errorf("%d responses, %d compactions; want 152 and 1", len(usage), claudeCount(evs, formats.Compaction, ""))
	}
	if reads != 12387553 {
		t.Errorf("%d tokens read from the cache, want 12387553", reads)
	}
}

// The last run of a session ends (issue 23 #3): a real 2.1.14 session, its
// stop_reason null on every record, whose last record is the answer; and
// the captures, whose last run the agent ended with exit 0.
func TestAgentLastRunEnds(t *testing.T) {
	evs, _ := readSession(t, filepath.Join("..", "formats", "claude", "testdata", "sessions", "DRMacIver__claude-reliability__hello-world-script.jsonl"))
	if ends := runEnds(evs); len(ends) != 1 || ends[0].Status != formats.Completed {
		t.Errorf("run ends %+v: want one, completed", ends)
	}
	for _, v := range []string{"1.0.128", "2.0.77", "2.1.332"} {
		for _, sc := range []string{"text-shell", "edit", "thinking", "large-output", "parallel"} {
			for _, mode := range []string{"json", "stream-json"} {
				f := captureSession(t, claudeCaptureDir(v, sc, mode))
				code, out, stderr := converttest.Run("", "--from", "claude-session", "--to", "adal-json", "--exit-status", f)
				if code != 0 || !strings.Contains(formatstest.OneLine(out), `"success":true`) {
					t.Errorf("%s %s %s: exit %d: %s", v, sc, mode, code, stderr)
				}
			}
		}
	}
}

// A session file cut in the middle of its last line is being written: a
// warning, not an error, and its last run is cut.
func TestAgentSessionCutMidLine(t *testing.T) {
	b := mustRead(t, captureSession(t, claudeCaptureDir("2.1.332", "text-shell", "json")))
	lines := bytes.SplitAfter(bytes.TrimSpace(b), []byte("\n"))
	var last int
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"type":"assistant"`)) {
			last = i
		}
	}
	cut := append(bytes.Join(lines[:last], nil), lines[last][:len(lines[last])/2]...)
	code, out, stderr := converttest.Run(string(cut), "--from", "claude-session", "--to", "adal-json")
	if code != 0 || !strings.Contains(stderr, "cut in the middle") || !strings.Contains(formatstest.OneLine(out), `"success":false`) {
		t.Errorf("exit %d: %s\n%s", code, out, stderr)
	}
	// A bad line before the last is still an error.
	bad := append(append(bytes.Join(lines[:2], nil), "{not json\n"...), bytes.Join(lines[2:], nil)...)
	if code, _, _ := converttest.Run(string(bad), "--from", "claude-session", "--to", "adal-json"); code == 0 {
		t.Error("a bad line in the middle exits 0")
	}
}

// The first records (issue 23 #4): 2.0 and 2.1 begin with queue-operation
// records (2.1 with attachments, last-prompt and more): the run's project,
// model and version are each taken from the first record that has it.
func TestAgentFirstRecords(t *testing.T) {
	for _, v := range []string{"1.0.128", "2.0.77", "2.1.332"} {
		for _, mode := range []string{"json", "stream-json"} {
			dir := claudeCaptureDir(v, "text-shell", mode)
			evs, _ := readSession(t, captureSession(t, dir))
			starts := formatstest.OfKind(evs, formats.RunStart)
			if len(starts) != 1 {
				t.Fatalf("%s %s: %d runs", v, mode, len(starts))
			}
			info := starts[0].Run
			if info.Cwd != readMeta(t, dir).Work || info.AgentVersion != v || info.Model == "" || info.SessionID != readMeta(t, dir).Session {
				t.Errorf("%s %s: run %+v", v, mode, info)
			}
		}
	}
}

// usageOfRun is a RunEnd's token totals: input (cache included), output.
func usageOfRun(e *formats.Event) [2]int64 {
	return [2]int64{e.Usage.InputTokens.V, e.Usage.OutputTokens.V}
}

// A background subagent (issue 23 #5, 2.1.332's default in -p): the stream
// prints init, the main answer, the subagent's lines, its task
// notification, a second init, the second answer, and both results at the
// end. It is one run, as the process was one, ended by the last result;
// the notification ends the subagent with its report.
func TestAgentBackgroundSubagentStream(t *testing.T) {
	dir := claudeCaptureDir("2.1.332", "subagent", "stream-json")
	evs, warn := formatstest.ReadWarnings(t, claude.Stream, mustRead(t, filepath.Join(dir, "stdout.jsonl")))
	if n := claudeCount(evs, formats.RunStart, ""); n != 1 {
		t.Fatalf("%d runs, want 1: %s", n, warn)
	}
	ends := runEnds(evs)
	if len(ends) != 1 || ends[0].Status != formats.Completed || ends[0].Cut {
		t.Errorf("run ends %+v", ends)
	}
	answers := formatstest.OfKind(evs, formats.Answer)
	if len(answers) != 1 || answers[0].Text != "The subagent reported agentconv-from-subagent." {
		t.Errorf("answers %+v, want the last result's", answers)
	}
	var agentEnd *formats.Event
	for _, e := range evs {
		if e.Kind == formats.AgentEnd {
			agentEnd = e
		}
	}
	if agentEnd == nil || agentEnd.Agent != "call_sub_1" || agentEnd.Status != formats.Completed || agentEnd.Text != "The subagent found agentconv-from-subagent." {
		t.Errorf("the subagent's end: %+v", agentEnd)
	}
	// The totals are modelUsage's: every request, the subagent's too, as
	// the server sent them (6110 + 1370 + 380 in, 220 out).
	if got := usageOfRun(ends[0]); got != [2]int64{7860, 220} {
		t.Errorf("run totals %v, want [7860 220]", got)
	}
}

// The session file of the same runs: the <task-notification> record
// (origin.kind "task-notification") is no prompt and starts no run.
func TestAgentBackgroundSubagentSession(t *testing.T) {
	for _, mode := range []string{"json", "stream-json"} {
		evs, _ := readSession(t, captureSession(t, claudeCaptureDir("2.1.332", "subagent", mode)))
		if n, p := claudeCount(evs, formats.RunStart, ""), claudeCount(evs, formats.UserMessage, ""); n != 1 || p != 1 {
			t.Errorf("%s: %d runs, %d prompts; want 1 and 1", mode, n, p)
		}
		if ends := runEnds(evs); len(ends) != 1 || ends[0].Status != formats.Completed {
			t.Errorf("%s: run ends %+v", mode, ends)
		}
	}
}

// Subagents' tokens in the run's totals (issue 23 #6): result.usage counts
// the main agent alone; modelUsage, where subagents ran, counts them all.
func TestAgentSubagentTotals(t *testing.T) {
	evs := formatstest.Read(t, claude.JSON, mustRead(t, filepath.Join(claudeCaptureDir("2.1.332", "subagent", "json"), "stdout.json")))
	if ends := runEnds(evs); len(ends) != 1 || usageOfRun(ends[0]) != [2]int64{7860, 220} {
		t.Errorf("2.1.332 json: %+v", ends)
	}
	// 1.0.128's stream: the subagent's messages are printed, so modelUsage
	// is taken, over the models they named (not the haiku of a side
	// request that titles the session).
	evs = formatstest.Read(t, claude.Stream, mustRead(t, filepath.Join(claudeCaptureDir("1.0.128", "subagent", "stream-json"), "stdout.jsonl")))
	if ends := runEnds(evs); len(ends) != 1 || usageOfRun(ends[0]) != [2]int64{5966, 162} {
		t.Errorf("1.0.128 stream: %+v", ends)
	}
	// Without subagents, result.usage stands (modelUsage would add the
	// side requests).
	evs = formatstest.Read(t, claude.JSON, mustRead(t, filepath.Join(claudeCaptureDir("2.0.77", "text-shell", "json"), "stdout.json")))
	if ends := runEnds(evs); len(ends) != 1 || usageOfRun(ends[0]) != [2]int64{2661, 67} {
		t.Errorf("2.0.77 text-shell json: %+v", ends)
	}
}

// A model call that never happened (issue 23 #8): Claude Code's synthetic
// API-error message ("model": "<synthetic>", 0 tokens) is the run's
// error, no model call; error.type is the provider's, from 2.1's
// api_error_type (or api_error_status), else from the error's text.
func TestAgentSyntheticAPIError(t *testing.T) {
	for _, v := range []string{"1.0.128", "2.0.77", "2.1.332"} {
		for _, sc := range []struct{ name, code string }{{"api-error", "overloaded_error"}, {"rate-limit", "rate_limit_error"}} {
			dir := claudeCaptureDir(v, sc.name, "stream-json")
			evs := formatstest.Read(t, claude.Stream, mustRead(t, filepath.Join(dir, "stdout.jsonl")))
			if n := claudeCount(evs, formats.Usage, "*"); n != 0 {
				t.Errorf("%s %s: %d model calls, want none", v, sc.name, n)
			}
			if n := claudeCount(evs, formats.Message, "*"); n != 0 {
				t.Errorf("%s %s: the error is %d assistant messages", v, sc.name, n)
			}
			ends := runEnds(evs)
			if len(ends) != 1 || ends[0].Status != formats.Failed || ends[0].Code != sc.code {
				t.Errorf("%s %s stream: run end %+v, want failed with %s", v, sc.name, ends, sc.code)
			}
			evs = formatstest.Read(t, claude.JSON, mustRead(t, filepath.Join(claudeCaptureDir(v, sc.name, "json"), "stdout.json")))
			if ends := runEnds(evs); len(ends) != 1 || ends[0].Code != sc.code {
				t.Errorf("%s %s json: run end %+v, want %s", v, sc.name, ends, sc.code)
			}
			evs, _ = readSession(t, captureSession(t, dir))
			if n := claudeCount(evs, formats.Usage, "*"); n != 0 {
				t.Errorf("%s %s session: %d model calls, want none", v, sc.name, n)
			}
		}
	}
}

// Refusals (issue 23 #7): 2.1.332 marks a refused call with a
// system/permission_denied line and the user line's tool_result_meta
// (permission_decision reject), its session file with toolDenialKind and
// permissionDecision; the call is denied, as on 2.0.77 and 1.0.128, and
// no line is of unexpected types.
func TestAgentRefusals(t *testing.T) {
	for _, v := range []string{"1.0.128", "2.0.77", "2.1.332"} {
		dir := claudeCaptureDir(v, "refused", "stream-json")
		evs, warn := formatstest.ReadWarnings(t, claude.Stream, mustRead(t, filepath.Join(dir, "stdout.jsonl")))
		if strings.Contains(warn, "unexpected types") {
			t.Errorf("%s: %s", v, warn)
		}
		sess, _ := readSession(t, captureSession(t, dir))
		for what, evs := range map[string][]*formats.Event{"stream": evs, "session": sess} {
			var st []formats.Status
			for _, r := range formatstest.OfKind(evs, formats.ToolResult) {
				st = append(st, r.Call.Status)
			}
			if len(st) != 1 || st[0] != formats.Denied {
				t.Errorf("%s %s: results %v, want one, denied", v, what, st)
			}
		}
	}
}

// 2.1.332's stream prints each assistant message with message_start's
// usage (output_tokens 1): the chat spans must not claim 1 output token.
// The input counts are the request's; the output count is unknown per
// call, and the run's is the result's.
func TestAgentMessageStartUsage(t *testing.T) {
	dir := claudeCaptureDir("2.1.332", "text-shell", "stream-json")
	evs := formatstest.Read(t, claude.Stream, mustRead(t, filepath.Join(dir, "stdout.jsonl")))
	usage := formatstest.OfKind(evs, formats.Usage)
	if len(usage) != 2 {
		t.Fatalf("%d requests, want 2", len(usage))
	}
	for _, u := range usage {
		if u.Usage.OutputTokens.OK || !u.Usage.InputTokens.OK {
			t.Errorf("request usage %+v: want its input, and no output count", u.Usage)
		}
	}
	if ends := runEnds(evs); len(ends) != 1 || usageOfRun(ends[0]) != [2]int64{2661, 67} {
		t.Errorf("run end %+v, want the result's 2661 in, 67 out", ends)
	}
	// 2.0.77 prints the final counts on each line.
	evs = formatstest.Read(t, claude.Stream, mustRead(t, filepath.Join(claudeCaptureDir("2.0.77", "text-shell", "stream-json"), "stdout.jsonl")))
	for _, u := range formatstest.OfKind(evs, formats.Usage) {
		if !u.Usage.OutputTokens.OK || u.Usage.OutputTokens.V < 30 {
			t.Errorf("2.0.77 request usage %+v", u.Usage)
		}
	}
}

// Detection (issue 23 #9): a Claude stream whose init has an apiKeySource
// that Cursor also prints ("env") is Claude's, by what only Claude prints
// (init's tools and mcp_servers, messages with ids and usage, a result's
// total_cost_usd), and its tool calls are read.
func TestAgentDetectedAsClaude(t *testing.T) {
	b := mustRead(t, filepath.Join(claudeCaptureDir("2.0.77", "text-shell", "stream-json"), "stdout.jsonl"))
	b = bytes.Replace(b, []byte(`"apiKeySource":"ANTHROPIC_API_KEY"`), []byte(`"apiKeySource":"env"`), 1)
	if !bytes.Contains(b, []byte(`"apiKeySource":"env"`)) {
		t.Fatal("the capture's init has no apiKeySource")
	}
	if d, s := convert.Detect(b); d.Name != claude.Stream.Name {
		t.Errorf("detected as %s (%d)", d.Name, s)
	}
}

// Lines without a timestamp (issue 23 #10): 2.1.332 stamps its messages
// but not its system/task_* lines, nor the result; they take the time of
// the line before them, not the time they are read. So do a session
// file's records without one (last-prompt, cost-state).
func TestAgentUnstampedLines(t *testing.T) {
	dir := claudeCaptureDir("2.1.332", "subagent", "stream-json")
	evs := formatstest.Read(t, claude.Stream, mustRead(t, filepath.Join(dir, "stdout.jsonl")))
	var seen time.Time
	for _, e := range evs {
		if e.Time.IsZero() && !seen.IsZero() {
			t.Errorf("%v of line %d has no time, after %v", e.Kind, e.Source.LineNo, seen)
		}
		if !e.Time.IsZero() && e.Time.Before(seen) {
			t.Errorf("%v of line %d at %v, before %v", e.Kind, e.Source.LineNo, e.Time, seen)
		}
		if !e.Time.IsZero() {
			seen = e.Time
		}
	}
	if seen.IsZero() {
		t.Fatal("no event has a time")
	}
	evs, _ = readSession(t, captureSession(t, dir))
	for _, e := range evs {
		if e.Time.IsZero() {
			t.Errorf("session: %v of line %d (%s) has no time", e.Kind, e.Source.LineNo, e.Source.Type)
		}
	}
}

// The listing (issue 23 #11) reads a subagent's .meta.json with its
// session file (2.1's subagents/agent-<id>.meta.json): it is no file that
// no dialect reads, and its size counts in the session's.
func TestAgentSessionsListMeta(t *testing.T) {
	dir := filepath.Join(claudeCaptureDir("2.1.332", "subagent", "json"), "home", ".claude", "projects")
	metas, _ := filepath.Glob(filepath.Join(dir, "*", "*", "subagents", "*.meta.json"))
	if len(metas) == 0 {
		t.Fatal("the capture has no .meta.json")
	}
	code, out, stderr := converttest.Run("", "sessions", "--json", dir)
	if code != 0 || strings.Contains(stderr, "skipped") || strings.Count(out, "\n") != 1 {
		t.Errorf("exit %d: %s\n%s", code, out, stderr)
	}
}
