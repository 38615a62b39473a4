package convert_test

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/formatstest"
)

const showcase = "55550000-0000-4000-8000-000000000001"

// sessionFiles are the real session files: those in testdata/claude/sessions
// and those of this package (which keep their subagents' folder beside
// them, or a non-UUID session id).
func sessionFiles(t *testing.T) []string {
	t.Helper()
	a, _ := filepath.Glob(filepath.Join("..", "testdata", "claude", "sessions", "*.jsonl"))
	b, _ := filepath.Glob(filepath.Join("..", "formats", "claude", "testdata", "sessions", "*.jsonl"))
	if len(a) < 3 || len(b) < 2 {
		t.Fatalf("session fixtures missing: %v %v", a, b)
	}
	return append(a, b...)
}

// readSession reads a file with its path, as the command line does, and
// returns its events and warnings.
func readSession(t *testing.T, path string) ([]*formats.Event, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var warn bytes.Buffer
	r := claude.Session.NewReader(f, formats.ReadOptions{Dialect: claude.Session.Name, Report: formats.NewReport(&warn), Path: path})
	var evs []*formats.Event
	for n := 0; n < formatstest.MaxEvents; n++ {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, warn.String()
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		evs = append(evs, ev)
	}
	t.Fatal("the reader does not end")
	return nil, ""
}

func claudeCount(evs []*formats.Event, k formats.Kind, agent string) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k && (agent == "*" || e.Agent == agent) {
			n++
		}
	}
	return n
}

// lastUsage is, from the raw records, the usage of the last record of each
// message id, in the order the ids first come: what a reader must count,
// once per response.
func lastUsage(t *testing.T, path string) (ids []string, out map[string][2]int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out = map[string][2]int64{}
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r struct {
			Type    string `json:"type"`
			Message struct {
				ID    string `json:"id"`
				Usage *struct {
					In    int64 `json:"input_tokens"`
					Out   int64 `json:"output_tokens"`
					Read  int64 `json:"cache_read_input_tokens"`
					Write int64 `json:"cache_creation_input_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(l, &r) != nil || r.Type != "assistant" || r.Message.ID == "" || r.Message.Usage == nil {
			continue
		}
		if _, ok := out[r.Message.ID]; !ok {
			ids = append(ids, r.Message.ID)
		}
		u := r.Message.Usage
		out[r.Message.ID] = [2]int64{u.In + u.Read + u.Write, u.Out}
	}
	return ids, out
}

// The corpus file (Claude Code 2.0.29): a /clear command, then a prompt,
// a Task call, and an ExitPlanMode call the file stops at; its assistant
// records share message ids three by two.
func TestSessionReadCorpus(t *testing.T) {
	path := filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl")
	evs, warn := readSession(t, path)
	if n := claudeCount(evs, formats.RunStart, ""); n != 2 {
		t.Errorf("%d runs, want 2 (each typed prompt starts one)", n)
	}
	var prompts []string
	for _, e := range formatstest.OfKind(evs, formats.UserMessage) {
		prompts = append(prompts, e.Text)
	}
	if len(prompts) != 2 || !strings.Contains(prompts[0], "/clear") || !strings.HasPrefix(prompts[1], "Let's explore scrolling") {
		t.Errorf("prompts %q: want the /clear command and the typed prompt, not the meta caveat nor the command's output", prompts)
	}
	if n := claudeCount(evs, formats.ToolCall, ""); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
	if n := claudeCount(evs, formats.ToolResult, ""); n != 2 {
		t.Errorf("%d results, want 2 (the last call is open)", n)
	}
	for _, e := range evs {
		if e.Kind == formats.RunEnd {
			if e.Run.SessionID != "06381696-0074-49f8-863e-6ad4fac507f9" || e.Status != formats.Completed {
				t.Errorf("the first run ends %v in session %q", e.Status, e.Run.SessionID)
			}
		}
	}
	if n := claudeCount(evs, formats.RunEnd, ""); n != 1 {
		t.Errorf("%d run ends: the second run, stopped inside a turn, is the pipeline's to close as cut", n)
	}
	ids, want := lastUsage(t, path)
	usage := formatstest.OfKind(evs, formats.Usage)
	if len(ids) != 3 || len(usage) != len(ids) {
		t.Fatalf("%d usage events for %d message ids", len(usage), len(ids))
	}
	for i, u := range usage {
		if u.Response.ID != ids[i] || u.Response.Model != "claude-sonnet-4-5-20250929" {
			t.Errorf("usage %d: response %+v, want id %s", i, u.Response, ids[i])
		}
		if got := [2]int64{u.Usage.InputTokens.V, u.Usage.OutputTokens.V}; got != want[ids[i]] {
			t.Errorf("usage of %s: %v, want the last record's %v", ids[i], got, want[ids[i]])
		}
	}
	if !strings.Contains(warn, "subagent(s) whose records are missing") {
		t.Errorf("no warning about the Task's missing subagent file: %s", warn)
	}
}

// A session with a subagents folder: each subagent's events come between
// its Task/Agent call and that call's result, nested under the call.
func TestSessionSubagentFiles(t *testing.T) {
	evs, warn := readSession(t, filepath.Join("..", "formats", "claude", "testdata", "sessions", showcase+".jsonl"))
	if warn != "" {
		t.Errorf("warnings: %s", warn)
	}
	pos := map[string]int{}
	for i, e := range evs {
		switch e.Kind {
		case formats.ToolCall:
			pos["call "+e.Call.ID] = i
		case formats.ToolResult:
			pos["result "+e.Call.ID] = i
		case formats.AgentStart:
			pos["start "+e.Agent] = i
			if want := "toolu_sc_" + e.Agent; e.AgentInfo.ParentCall != want || e.AgentInfo.Label != "general-purpose" {
				t.Errorf("agent %s: %+v, want spawned by %s", e.Agent, e.AgentInfo, want)
			}
		case formats.AgentEnd:
			pos["end "+e.Agent] = i
			if e.Status != formats.Completed || !strings.HasPrefix(e.Text, "The ") {
				t.Errorf("agent %s ends %v with %q", e.Agent, e.Status, e.Text)
			}
		}
	}
	for _, a := range []string{"showcol1", "showcol2"} {
		c, s, e, r := pos["call toolu_sc_"+a], pos["start "+a], pos["end "+a], pos["result toolu_sc_"+a]
		if !(c < s && s < e && e < r) || s == 0 {
			t.Errorf("%s: call %d, start %d, end %d, result %d: want them in that order", a, c, s, e, r)
		}
	}
	if n := claudeCount(evs, formats.Usage, "*"); n != 8 {
		t.Errorf("%d requests, want 5 of the session and 3 of its subagents", n)
	}
	if n := claudeCount(evs, formats.ToolCall, "showcol2"); n != 1 {
		t.Errorf("%d calls of showcol2, want its Grep", n)
	}
	if n := claudeCount(evs, formats.RunEnd, ""); n != 1 || evs[len(evs)-1].Status != formats.Completed {
		t.Errorf("the session's run did not end completed: %v", formatstest.Kinds(evs))
	}
}

// A subagent's file read on its own (its session file missing): one run,
// the subagent in it, and a warning.
func TestSessionSubagentAlone(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "gone", "subagents")
	os.MkdirAll(sub, 0o755)
	src, _ := os.ReadFile(filepath.Join("..", "formats", "claude", "testdata", "sessions", showcase, "subagents", "agent-showcol2.jsonl"))
	p := filepath.Join(sub, "agent-showcol2.jsonl")
	os.WriteFile(p, src, 0o644)
	if got := claude.Session.Owner(p); got != filepath.Join(dir, "gone.jsonl") {
		t.Errorf("Owner(%s) = %s", p, got)
	}
	evs, warn := readSession(t, p)
	if !strings.Contains(warn, "session file") || !strings.Contains(warn, "missing") {
		t.Errorf("no warning: %q", warn)
	}
	if claudeCount(evs, formats.RunStart, "") != 1 || claudeCount(evs, formats.AgentStart, "showcol2") != 1 || claudeCount(evs, formats.ToolCall, "showcol2") != 1 {
		t.Errorf("events: %s", formatstest.Kinds(evs))
	}
	if claude.Session.Owner(filepath.Join(dir, showcase+".jsonl")) != "" {
		t.Error("a session file has an owner")
	}
}

// Abandoned branches: the conversation is the chain that ends at the last
// record; the rewound records are warned about with their count; the
// compaction's summary is its text.
func TestSessionBranchesAndCompaction(t *testing.T) {
	evs, warn := readSession(t, filepath.Join("..", "formats", "claude", "testdata", "sessions", "claude-code-log-dag-compact-after-rewind.jsonl"))
	if !strings.Contains(warn, "2 records are on abandoned branches") {
		t.Errorf("warning: %q", warn)
	}
	var prompts []string
	for _, e := range formatstest.OfKind(evs, formats.UserMessage) {
		prompts = append(prompts, e.Text)
	}
	if want := []string{"Start", "Second attempt", "Keep going", "After compaction"}; !reflect.DeepEqual(prompts, want) {
		t.Errorf("prompts %q, want %q", prompts, want)
	}
	c := formatstest.OfKind(evs, formats.Compaction)
	if len(c) != 1 || !strings.Contains(c[0].Text, "Summary: the user asked for a plan.") {
		t.Errorf("compactions: %+v", c)
	}
	if n := claudeCount(evs, formats.RunEnd, ""); n != 4 {
		t.Errorf("%d runs ended, want 4", n)
	}
	for _, e := range evs {
		if e.Kind == formats.RunStart && e.Run.SessionID != "s1" {
			t.Errorf("a run of session %q", e.Run.SessionID)
		}
	}
}

// Inline sidechains (older versions) are subagents under the Task call.
func TestSessionInlineSidechain(t *testing.T) {
	evs, _ := readSession(t, filepath.Join("..", "testdata", "claude", "sessions", "claude-code-log-sidechain-integrated.jsonl"))
	starts := formatstest.OfKind(evs, formats.AgentStart)
	if len(starts) == 0 || starts[0].AgentInfo.ParentCall != "toolu_01JA2mLseQCAW3MdwPE4qWEk" || starts[0].Source.Type != "isSidechain" {
		t.Fatalf("subagents: %+v", starts)
	}
	if n := claudeCount(evs, formats.ToolCall, starts[0].Agent); n != 1 {
		t.Errorf("%d calls of the sidechain, want its Grep", n)
	}
}

// records decodes a JSONL text, record by record.
func records(t *testing.T, b []byte) []any {
	t.Helper()
	var out []any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		out = append(out, v)
	}
	return out
}

// claude-session → claude-session gives back every record, as JSON, in
// order, and says nothing is lost; subagents' files go inline to a stream.
func TestSessionSameDialect(t *testing.T) {
	t.Parallel()
	for _, f := range sessionFiles(t) {
		in, _ := os.ReadFile(f)
		code, out, stderr := converttest.Run("", "--to", "claude-session", f)
		if code != 0 || strings.Contains(stderr, "lost:") {
			t.Errorf("%s: exit %d: %s", f, code, stderr)
			continue
		}
		want := records(t, in)
		// A session with its subagents' folder beside it.
		subs, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(f, ".jsonl"), "subagents", "agent-*.jsonl"))
		own := len(subs) > 0
		if own {
			for _, a := range subs {
				b, _ := os.ReadFile(a)
				want = append(want, records(t, b)...)
			}
			sortRecords(want)
		}
		got := records(t, []byte(out))
		if own {
			sortRecords(got)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d records back of %d, or changed", f, len(got), len(want))
		}
	}
}

// sortRecords orders records by uuid, for a comparison where the subagents'
// files join the session's stream.
func sortRecords(rs []any) {
	key := func(r any) string {
		m, _ := r.(map[string]any)
		s, _ := m["uuid"].(string)
		return s
	}
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && key(rs[j]) < key(rs[j-1]); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// -o DIR: the session file and its subagents' files and meta, each with
// every record it had (meta as JSON).
func TestSessionFilesLayout(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "formats", "claude", "testdata", "sessions")
	code, _, stderr := converttest.Run("", "--to", "claude-session", "-o", dir+"/", filepath.Join(src, showcase+".jsonl"))
	if code != 0 || strings.Contains(stderr, "lost:") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, rel := range []string{showcase + ".jsonl", showcase + "/subagents/agent-showcol1.jsonl",
		showcase + "/subagents/agent-showcol1.meta.json", showcase + "/subagents/agent-showcol2.jsonl",
		showcase + "/subagents/agent-showcol2.meta.json"} {
		want, err1 := os.ReadFile(filepath.Join(src, rel))
		got, err2 := os.ReadFile(filepath.Join(dir, rel))
		if err1 != nil || err2 != nil {
			t.Errorf("%s: %v %v", rel, err1, err2)
			continue
		}
		if !reflect.DeepEqual(records(t, got), records(t, want)) {
			t.Errorf("%s differs:\n%s", rel, got)
		}
	}
}

// From another dialect with -o DIR: <session-id>.jsonl with a UUID session
// id, the subagent in <session-id>/subagents/agent-<id>.jsonl with its
// meta naming the spawning call; read back, the subagent is nested again.
func TestSessionFilesFromStream(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join("..", "testdata", "claude", "subagent-stream.jsonl")
	code, _, stderr := converttest.Run("", "--deterministic", "--to", "claude-session", "-o", dir+"/", in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mains, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(mains) != 1 {
		t.Fatalf("session files: %v", mains)
	}
	id := strings.TrimSuffix(filepath.Base(mains[0]), ".jsonl")
	if claude.SessionUUID(id) != id {
		t.Errorf("session file %s is not named by a UUID", id)
	}
	metas, _ := filepath.Glob(filepath.Join(dir, id, "subagents", "agent-*.meta.json"))
	if len(metas) != 1 {
		t.Fatalf("meta files: %v", metas)
	}
	var meta struct{ ToolUseID string }
	b, _ := os.ReadFile(metas[0])
	json.Unmarshal(b, &meta)
	if meta.ToolUseID != "toolu_task_1" {
		t.Errorf("meta %s", b)
	}
	evs, warn := readSession(t, mains[0])
	starts := formatstest.OfKind(evs, formats.AgentStart)
	if len(starts) != 1 || starts[0].AgentInfo.ParentCall != "toolu_task_1" || warn != "" {
		t.Errorf("read back: %+v; %s", starts, warn)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(mustRead(t, mains[0])), []byte("\n")) {
		var r struct{ SessionID string }
		json.Unmarshal(l, &r)
		if r.SessionID != id {
			t.Fatalf("a record of session %q in %s", r.SessionID, id)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The session id of a written file is a UUID: the source's, or one derived
// from it, the same each time.
func TestSessionUUID(t *testing.T) {
	u := "06381696-0074-49f8-863e-6ad4fac507f9"
	if claude.SessionUUID(u) != u {
		t.Error("a UUID changed")
	}
	a, b := claude.SessionUUID("thread-1"), claude.SessionUUID("thread-2")
	if a == b || a != claude.SessionUUID("thread-1") || claude.SessionUUID(a) != a {
		t.Errorf("derived %s %s", a, b)
	}
}

// claude-stream → claude-session → claude-stream keeps every event that
// both carry: prompts, messages, calls and results, subagents and usage.
func TestStreamThroughSession(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "claude", "*.jsonl"))
	kinds := []formats.Kind{formats.UserMessage, formats.ToolCall, formats.ToolResult, formats.AgentStart, formats.Compaction}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		mid, _ := convertWith(t, claude.Stream, claude.Session, data)
		back, _ := convertWith(t, claude.Session, claude.Stream, []byte(mid))
		src := formatstest.Read(t, claude.Stream, data)
		want := streamFacts(formatstest.Compare(src, kinds...))
		got := streamFacts(formatstest.Compare(formatstest.Read(t, claude.Stream, back), kinds...))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s changed through claude-session:\nwant %+v\ngot  %+v", f, want, got)
		}
		// Each request's usage and response id, in the session; its usage
		// back in the stream (whose writer makes ids of its own).
		if wu, gu := usageOf(src, true), usageOf(formatstest.Read(t, claude.Session, mid), true); !sameRequests(wu, gu) {
			t.Errorf("%s: per-request usage %v, in the session %v", f, wu, gu)
		}
		if wu, gu := usageOf(src, false), usageOf(formatstest.Read(t, claude.Stream, back), false); !sameRequests(wu, gu) {
			t.Errorf("%s: per-request usage %v, then %v", f, wu, gu)
		}
		wm, gm := texts(formatstest.Read(t, claude.Stream, data)), texts(formatstest.Read(t, claude.Stream, back))
		if !reflect.DeepEqual(wm, gm) {
			t.Errorf("%s: messages %q, then %q", f, wm, gm)
		}
	}
}

// streamFacts is what a session keeps of a stream's events: a refusal is
// a failed call there (a refusal that only permission_denials listed gets
// its tool_use, as Claude Code records one), and the user message
// claude-stream prints after a compaction is that compaction's summary.
func streamFacts(cs []formatstest.Comparable) []formatstest.Comparable {
	var out []formatstest.Comparable
	called := map[string]bool{}
	for i, c := range cs {
		if c.Kind == formats.UserMessage && i > 0 && cs[i-1].Kind == formats.Compaction {
			continue
		}
		if c.Kind == formats.ToolCall {
			called[c.CallID] = true
		}
		if c.Kind == formats.ToolResult && c.Status == formats.Denied && !called[c.CallID] {
			out = append(out, formatstest.Comparable{Kind: formats.ToolCall, Agent: c.Agent, CallID: c.CallID, Name: c.Name})
		}
		if c.Status == formats.Denied {
			c.Status = formats.Failed
		}
		out = append(out, c)
	}
	return out
}

// usageOf lists each request's usage, by run; a run whose source gave
// only its totals may come back with them as its last response's usage,
// and a request that counted nothing may have no response to go on.
func usageOf(evs []*formats.Event, ids bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Kind == formats.RunStart {
			out = append(out, "run")
		}
		if e.Kind == formats.Usage && e.Usage.Total().V > 0 {
			id := ""
			if ids {
				id = e.Response.ID
				if seen[id] {
					// A source that gives two requests one id: the
					// second is written with an id of its own.
					id = "*"
				}
				seen[id] = true
			}
			out = append(out, e.Agent+" "+id+" "+strings.TrimSpace(strings.Join([]string{
				itoa(e.Usage.InputTokens), itoa(e.Usage.OutputTokens), itoa(e.Usage.CacheReadTokens)}, "/")))
		}
	}
	return out
}

// sameRequests compares the requests of each run that had requests.
func sameRequests(want, got []string) bool {
	runs := func(l []string) [][]string {
		var out [][]string
		for _, s := range l {
			if s == "run" {
				out = append(out, nil)
			} else if len(out) > 0 {
				out[len(out)-1] = append(out[len(out)-1], s)
			}
		}
		return out
	}
	w, g := runs(want), runs(got)
	if len(w) != len(g) {
		return false
	}
	for i := range w {
		if len(w[i]) == 0 {
			continue
		}
		if len(w[i]) != len(g[i]) {
			return false
		}
		for j, ws := range w[i] {
			wf, gf := strings.SplitN(ws, " ", 3), strings.SplitN(g[i][j], " ", 3)
			if len(wf) == 3 && len(gf) == 3 && wf[1] == "*" {
				wf[1] = gf[1]
			}
			if !reflect.DeepEqual(wf, gf) {
				return false
			}
		}
	}
	return true
}

func itoa(o formats.Opt[int64]) string {
	b, _ := json.Marshal(o.V)
	return string(b)
}

// texts is the messages' text and signed thinking (a session file keeps
// no other), by agent, in order (a streamed message counts once, whole).
func texts(evs []*formats.Event) []string {
	var out []string
	for _, e := range evs {
		var signed []string
		for _, th := range e.Thoughts {
			if th.Signature != "" {
				signed = append(signed, th.Text)
			}
		}
		thinking := strings.Join(signed, "\n\n")
		if e.Kind == formats.Message && (e.Text != "" || thinking != "") {
			out = append(out, e.Agent+": "+thinking+"|"+e.Text)
		}
	}
	return out
}

// A file cut while the agent writes it: a cut run and a warning, exit 0,
// and nothing made up in the same-dialect output.
func TestSessionCut(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join("..", "formats", "claude", "testdata", "sessions", showcase+".jsonl"))
	lines := bytes.SplitAfter(b, []byte("\n"))
	cut := bytes.Join(lines[:8], nil) // ends with a call without its result
	code, out, stderr := converttest.Run(string(cut), "--from", "claude-session", "--to", "claude-session")
	if code != 0 || !strings.Contains(stderr, "cut") || out != string(cut) {
		t.Errorf("exit %d: %s\n%s", code, stderr, out)
	}
	code, out, stderr = converttest.Run(string(cut), "--from", "claude-session", "--to", "adal-json")
	if code != 0 || !strings.Contains(formatstest.OneLine(out), `"success":false`) || !strings.Contains(stderr, "cut") {
		t.Errorf("adal-json: exit %d: %s %s", code, out, stderr)
	}
}

// Unknown record types are kept raw: back into claude-session as they
// were, warned about once, and reported lost by other writers; a type of
// Claude Code's bookkeeping (queue-operation) is kept the same way, without
// a warning or a loss.
func TestSessionUnknownTypes(t *testing.T) {
	in := `{"type":"queue-operation","operation":"enqueue","timestamp":"2026-01-01T00:00:00Z","sessionId":"06381696-0074-49f8-863e-6ad4fac507f9","content":"x"}
{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"06381696-0074-49f8-863e-6ad4fac507f9","version":"2.1.1","type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-01-01T00:00:01Z"}
{"type":"brand-new","sessionId":"06381696-0074-49f8-863e-6ad4fac507f9","uuid":"n1","parentUuid":"u1","timestamp":"2026-01-01T00:00:02Z"}
{"type":"brand-new","sessionId":"06381696-0074-49f8-863e-6ad4fac507f9","uuid":"n2","parentUuid":"n1","timestamp":"2026-01-01T00:00:03Z"}
{"parentUuid":"n2","isSidechain":false,"userType":"external","cwd":"/w","sessionId":"06381696-0074-49f8-863e-6ad4fac507f9","version":"2.1.1","type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}},"uuid":"a1","timestamp":"2026-01-01T00:00:04Z"}
`
	code, out, stderr := converttest.Run(in, "--to", "claude-session")
	if code != 0 || out != in || strings.Count(stderr, `"brand-new"`) != 1 || strings.Contains(stderr, "queue-operation") {
		t.Errorf("exit %d: %s\n%s", code, stderr, out)
	}
	code, _, stderr = converttest.Run(in, "--to", "claude-stream")
	if code != 0 || !strings.Contains(stderr, "2 × unknown claude-session events") {
		t.Errorf("claude-stream: exit %d: %s", code, stderr)
	}
}

// Bad lines: an error naming the line, or with --lenient skipped and
// counted, the rest converted.
func TestSessionBadLines(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join("..", "formats", "claude", "testdata", "sessions", showcase+".jsonl"))
	lines := bytes.SplitAfter(b, []byte("\n"))
	bad := string(bytes.Join(lines[:2], nil)) + "{not json\n" + string(bytes.Join(lines[2:], nil))
	code, _, stderr := converttest.Run(bad, "--from", "claude-session", "--to", "adal-json")
	if code == 0 || !strings.Contains(stderr, ":3:") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	code, out, stderr := converttest.Run(bad, "--lenient", "--from", "claude-session", "--to", "adal-json")
	if code != 0 || !strings.Contains(formatstest.OneLine(out), `"success":true`) || !strings.Contains(stderr, "1 malformed") {
		t.Errorf("--lenient: exit %d: %s %s", code, out, stderr)
	}
}

// Detection tells a session file from claude-stream: the session files
// are claude-session, the stream fixtures stay what they are.
func TestSessionDetection(t *testing.T) {
	for _, f := range sessionFiles(t) {
		b, _ := os.ReadFile(f)
		if d, s := convert.Detect(b[:min(len(b), formats.DetectSize)]); d.Name != claude.Session.Name || s < 100 {
			t.Errorf("%s detected as %s (%d)", f, d.Name, s)
		}
		if s := claude.Stream.Detect(b); s != 0 {
			t.Errorf("%s: claude-stream scores %d", f, s)
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "claude", "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if s := claude.Session.Detect(b[:min(len(b), formats.DetectSize)]); s != 0 {
			t.Errorf("%s: claude-session scores %d", f, s)
		}
	}
}

func TestSessionPlaces(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	get := func(k string) string { return env[k] }
	if p := claude.Session.Places(get); !reflect.DeepEqual(p, []string{filepath.Join("/home/u", ".claude", "projects")}) {
		t.Errorf("places %v", p)
	}
	env["CLAUDE_CONFIG_DIR"] = "/cfg"
	if p := claude.Session.Places(get); !reflect.DeepEqual(p, []string{filepath.Join("/cfg", "projects")}) {
		t.Errorf("places %v", p)
	}
	if claude.Session.DirFiles != "*.jsonl" || !claude.Session.Files {
		t.Error("a session dialect lists *.jsonl files and writes files of its own")
	}
}

// The otel writer makes one chat span per response: the session's
// requests carry their response ids.
func TestSessionChatSpans(t *testing.T) {
	code, out, stderr := converttest.Run("", "--deterministic", "--to", "otlp-json", filepath.Join("..", "formats", "claude", "testdata", "sessions", showcase+".jsonl"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, id := range []string{"msg_sc-a1", "msg_sc-a5", "msg_showcol1-a1", "msg_showcol2-a2"} {
		if !strings.Contains(out, id) {
			t.Errorf("no span of response %s", id)
		}
	}
	if n := strings.Count(out, `"traceId"`); n == 0 {
		t.Error("no spans")
	}
}

func FuzzSessionReader(f *testing.F) {
	for _, dir := range []string{filepath.Join("..", "testdata", "claude", "sessions"), filepath.Join("..", "formats", "claude", "testdata", "sessions")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, p := range files {
			b, _ := os.ReadFile(p)
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, claude.Session, data, formats.ToolCall, formats.ToolResult)
	})
}

// Claude Code 2.0 wrote a subagent's file beside the session file, in the
// project directory: it is read with the session that names it, and
// belongs to it.
func TestSessionFlatAgentFile(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, showcase+".jsonl")
	os.WriteFile(main, mustRead(t, filepath.Join("..", "formats", "claude", "testdata", "sessions", showcase+".jsonl")), 0o644)
	flat := filepath.Join(dir, "agent-showcol1.jsonl")
	os.WriteFile(flat, mustRead(t, filepath.Join("..", "formats", "claude", "testdata", "sessions", showcase, "subagents", "agent-showcol1.jsonl")), 0o644)
	if got := claude.Session.Owner(flat); got != main {
		t.Errorf("Owner(%s) = %q, want %s", flat, got, main)
	}
	evs, warn := readSession(t, main)
	var parents []string
	for _, e := range formatstest.OfKind(evs, formats.AgentStart) {
		parents = append(parents, e.Agent+"←"+e.AgentInfo.ParentCall)
	}
	if !reflect.DeepEqual(parents, []string{"showcol1←toolu_sc_showcol1"}) {
		t.Errorf("subagents %v", parents)
	}
	if !strings.Contains(warn, "1 subagent(s) whose records are missing") {
		t.Errorf("showcol2 has no file; warnings: %q", warn)
	}
}

// Images have no place in the model: they are counted in a warning, and
// claude-session keeps them. A Qwen Code record (Gemini parts in Claude's
// envelope) is not a Claude Code session's.
func TestSessionImagesAndLookAlikes(t *testing.T) {
	in := `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"06381696-0074-49f8-863e-6ad4fac507f9","version":"2.1.1","type":"user","message":{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},"uuid":"u1","timestamp":"2026-01-01T00:00:01Z"}
`
	code, out, stderr := converttest.Run(in, "--to", "claude-session")
	if code != 0 || out != in || !strings.Contains(stderr, "1 image blocks") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	qwen := `{"uuid":"q1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00Z","type":"user","cwd":"/w","version":"0.1","message":{"role":"user","parts":[{"text":"hi"}]}}` + "\n"
	if s := claude.Session.Detect([]byte(qwen)); s != 0 {
		t.Errorf("a Qwen Code record scores %d", s)
	}
}

// TestSessionSubagentFileNames: a subagent whose id cannot be a file name
// gets a name derived from it; when another subagent's own id is that
// name, the second gets another file, with a warning, and neither's
// records or meta.json are lost (issue: they were merged, exit 0).
func TestSessionSubagentFileNames(t *testing.T) {
	unsafe := "../../evil"
	h := sha1.Sum([]byte(unsafe))
	derived := hex.EncodeToString(h[:8])
	sub := func(id, text string) map[string]any {
		return map[string]any{"schema_version": "ATIF-v1.7", "trajectory_id": id, "agent": map[string]any{"name": "helper", "version": "1"},
			"steps": []any{map[string]any{"step_id": 1, "source": "user", "message": "task " + id},
				map[string]any{"step_id": 2, "source": "agent", "message": text}}}
	}
	step := func(n int, call, id string) map[string]any {
		return map[string]any{"step_id": n, "source": "agent", "message": "",
			"tool_calls":  []any{map[string]any{"tool_call_id": call, "function_name": "Task", "arguments": map[string]any{"prompt": "go"}}},
			"observation": map[string]any{"results": []any{map[string]any{"source_call_id": call, "content": "done", "subagent_trajectory_ref": []any{map[string]any{"trajectory_id": id}}}}}}
	}
	doc := map[string]any{"schema_version": "ATIF-v1.7", "session_id": "0a1b2c3d-0000-4000-8000-000000000001",
		"agent": map[string]any{"name": "claude-code", "version": "2.1.0"},
		"steps": []any{map[string]any{"step_id": 1, "source": "user", "message": "hi"}, step(2, "c1", unsafe), step(3, "c2", derived),
			map[string]any{"step_id": 4, "source": "agent", "message": "bye"}},
		"subagent_trajectories": []any{sub(unsafe, "from the unsafe one"), sub(derived, "from the other")}}
	b, _ := json.Marshal(doc)
	dir := t.TempDir()
	code, _, stderr := converttest.Run(string(b), "--from", "atif", "--to", "claude-session", "-o", dir+"/")
	if code != 0 || !strings.Contains(stderr, "another subagent's file") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "subagents", "agent-*"))
	var texts []string
	for _, f := range files {
		data, _ := os.ReadFile(f)
		texts = append(texts, filepath.Base(f)+": "+string(data))
	}
	all := strings.Join(texts, "\n")
	if len(files) != 4 || !strings.Contains(all, "from the unsafe one") || !strings.Contains(all, "from the other") {
		t.Errorf("%d files:\n%s", len(files), all)
	}
}

// A usage that names its response and comes after the response's text and
// call goes on the response's records, with the source's id and stop
// reason, as the pi and OpenAI-style sources give it.
func TestSessionLateUsageWithResponseID(t *testing.T) {
	u := formats.UsageInfo{InputTokens: formats.Some[int64](100), OutputTokens: formats.Some[int64](20)}
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "0d7c6c2e-5a3b-4f6e-9d3c-1b2a3c4d5e6f", Model: "m"}},
		{Kind: formats.UserMessage, Text: "ls"},
		{Kind: formats.Message, Text: "Listing."},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "call_1", Name: "Bash", Args: []byte(`{"command":"ls"}`)}},
		{Kind: formats.Usage, Usage: u, Response: formats.Response{ID: "resp_1", StopReason: "tool_use"}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "call_1", Name: "Bash", Status: formats.Completed, Output: formats.TextOutput("a")}},
		{Kind: formats.Message, Text: "Done."},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	out, losses := formatstest.WriteReport(t, claude.Session, evs)
	if strings.Contains(losses, "usage") {
		t.Errorf("usage reported lost: %s", losses)
	}
	back, bad, err := formatstest.ReadAll(claude.Session, []byte(out))
	if err != nil || len(bad) > 0 {
		t.Fatalf("read back: %v %v", err, bad)
	}
	var usages []*formats.Event
	for _, e := range back {
		if e.Kind == formats.Usage {
			usages = append(usages, e)
		}
	}
	if len(usages) != 1 || usages[0].Usage.InputTokens != u.InputTokens || usages[0].Response.ID != "resp_1" || usages[0].Response.StopReason != "tool_use" {
		t.Fatalf("usage read back %+v, want one of resp_1 (tool_use) with 100 input tokens\n%s", usages, out)
	}
	if n := strings.Count(out, `"id":"resp_1"`); n != 2 {
		t.Errorf("%d records of response resp_1, want its text's and its call's\n%s", n, out)
	}
}
