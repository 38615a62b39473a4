package pi

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// read reads all the events of a dialect's input.
func read(t *testing.T, d formats.Dialect, in string) ([]*formats.Event, *formats.Report, string) {
	t.Helper()
	var errb bytes.Buffer
	rep := formats.NewReport(&errb)
	r := d.NewReader(strings.NewReader(in), formats.ReadOptions{Dialect: d.Name, Report: rep})
	var out []*formats.Event
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out, rep, errb.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

func kinds(evs []*formats.Event, want ...formats.Kind) []*formats.Event {
	var out []*formats.Event
	for _, e := range evs {
		for _, k := range want {
			if e.Kind == k {
				out = append(out, e)
			}
		}
	}
	return out
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pi", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDetect: each dialect claims its own fixtures, and not the other's.
func TestDetect(t *testing.T) {
	for name, want := range map[string]formats.Dialect{
		"stream-text-shell.jsonl": Stream, "stream-api-error.jsonl": Stream,
		"session-refused.jsonl": Session, "session-resume-thinking.jsonl": Session,
	} {
		head := fixture(t, name)
		other := Session
		if want.Name == Session.Name {
			other = Stream
		}
		if s, o := want.Detect(head), other.Detect(head); s < 80 || o >= s {
			t.Errorf("%s: %s scores %d, %s %d", name, want.Name, s, other.Name, o)
		}
	}
	// Another agent's lines with a type session are not pi's header.
	if s := Stream.Detect([]byte(`{"type":"session","id":"x","parentId":null}` + "\n")); s != 0 {
		t.Errorf("a record with a parentId is taken for pi's header: %d", s)
	}
}

// TestStreamFailure: a run whose last answer stopped with an error failed,
// with the error's text and code, and the reader warns that pi exits 0.
func TestStreamFailure(t *testing.T) {
	evs, _, errs := read(t, Stream, string(fixture(t, "stream-api-error.jsonl")))
	ends := kinds(evs, formats.RunEnd)
	if len(ends) != 1 || ends[0].Status != formats.Failed || ends[0].Code != "overloaded_error" || !strings.Contains(ends[0].Text, "Overloaded") {
		t.Fatalf("run ends %+v", ends)
	}
	if !strings.Contains(errs, "pi exits 0 in json mode") {
		t.Errorf("no warning of the exit code: %q", errs)
	}
	// The failed attempts are not billed: no usage.
	if u := kinds(evs, formats.Usage); len(u) != 0 {
		t.Errorf("%d usage events of requests that failed", len(u))
	}
	if n := kinds(evs, formats.Notice); len(n) != 6 { // 3 errors, 2 retries, the end of the retries
		t.Errorf("%d notices, want 6", len(n))
	}
}

// TestStreamFinal: only the final messages count: the text once, the
// usage of each answer by the OpenTelemetry convention, with its cost.
func TestStreamFinal(t *testing.T) {
	evs, _, errs := read(t, Stream, string(fixture(t, "stream-text-shell.jsonl")))
	if errs != "" {
		t.Errorf("warnings: %s", errs)
	}
	msgs := kinds(evs, formats.Message)
	if len(msgs) != 2 || msgs[0].Text != "I will run a command." {
		t.Fatalf("messages %+v", msgs)
	}
	us := kinds(evs, formats.Usage)
	if len(us) != 2 {
		t.Fatalf("%d usage events", len(us))
	}
	u := us[0].Usage
	// input 1000 + cacheRead 200 + cacheWrite 50
	if u.InputTokens.V != 1250 || u.OutputTokens.V != 30 || u.CacheReadTokens.V != 200 || u.CacheWriteTokens.V != 50 || !u.CostUSD.OK || u.CostUSD.V <= 0 {
		t.Errorf("usage %+v", u)
	}
	calls, results := kinds(evs, formats.ToolCall), kinds(evs, formats.ToolResult)
	if len(calls) != 1 || len(results) != 1 || results[0].Call.Output.Text() != "agentconv-shell-output\n" {
		t.Errorf("calls %+v results %+v", calls, results)
	}
	if ends := kinds(evs, formats.RunEnd); len(ends) != 1 || ends[0].Status != formats.Completed {
		t.Errorf("run ends %+v", ends)
	}
}

// TestSessionBranch: the conversation is the branch that ends at the last
// entry, as pi resumes it; the other branch's entries are left out, and
// said so.
func TestSessionBranch(t *testing.T) {
	in := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"first","timestamp":1}}
{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"abandoned"}],"model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"total":0.5}},"stopReason":"stop","timestamp":2}}
{"type":"message","id":"c","parentId":"a","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"kept"}],"model":"m","usage":{"input":3,"output":4,"cacheRead":0,"cacheWrite":0,"totalTokens":7,"cost":{"total":0.25}},"stopReason":"stop","timestamp":3}}
`
	evs, _, errs := read(t, Session, in)
	var texts []string
	for _, m := range kinds(evs, formats.Message) {
		texts = append(texts, m.Text)
	}
	if strings.Join(texts, ",") != "kept" {
		t.Errorf("messages %v, want the branch's: kept", texts)
	}
	if us := kinds(evs, formats.Usage); len(us) != 1 || us[0].Usage.CostUSD.V != 0.25 {
		t.Errorf("usage %+v", us)
	}
	if !strings.Contains(errs, "1 entries are on branches") {
		t.Errorf("no warning of the left-out branch: %q", errs)
	}
}

// TestSessionRuns: each prompt of a session file begins a run (a resume
// appends its prompt to the same file).
func TestSessionRuns(t *testing.T) {
	evs, _, _ := read(t, Session, string(fixture(t, "session-resume-thinking.jsonl")))
	starts, ends := kinds(evs, formats.RunStart), kinds(evs, formats.RunEnd)
	if len(starts) != 2 || len(ends) != 2 {
		t.Fatalf("%d runs started, %d ended; want 2", len(starts), len(ends))
	}
	for _, m := range kinds(evs, formats.Message) {
		if m.Thinking == "" || len(m.Thoughts) != 1 || m.Thoughts[0].Signature == "" {
			t.Errorf("message %q: thinking %q, thoughts %+v: want the signed thinking block", m.Text, m.Thinking, m.Thoughts)
		}
	}
}

// TestPlaces: pi's session folder, as its environment moves it.
func TestPlaces(t *testing.T) {
	for env, want := range map[string]string{
		"HOME=/h":                             "/h/.pi/agent/sessions",
		"HOME=/h PI_CODING_AGENT_DIR=~/agent": "/h/agent/sessions",
		"HOME=/h PI_CODING_AGENT_DIR=/a PI_CODING_AGENT_SESSION_DIR=/s": "/s",
	} {
		vars := map[string]string{}
		for _, kv := range strings.Fields(env) {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		got := Session.Places(func(k string) string { return vars[k] })
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: %v, want %s", env, got, want)
		}
	}
}

// TestWriterChain: the writer's entries form one chain from the header's
// first entry, each call has its result (pi needs one), a usage given
// after the results finds its response, and a failed run ends with an
// error answer, as pi writes one.
func TestWriterChain(t *testing.T) {
	var out bytes.Buffer
	rep := formats.NewReport(io.Discard)
	w := formats.Standalone(Session.NewWriter(&out, formats.WriteOptions{Dialect: Session.Name, Report: rep}))
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "not-a-uuid", Cwd: "/w", Model: "m1", Provider: "anthropic"}},
		{Kind: formats.UserMessage, Text: "do it"},
		{Kind: formats.TextDelta, Text: "I will "},
		{Kind: formats.TextDelta, Text: "call."},
		{Kind: formats.Message, Text: "I will call."},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "bash", Args: []byte(`{"command":"ls"}`)}},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c2", Name: "bash", Args: []byte(`{"command":"pwd"}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Status: formats.Completed, Output: formats.TextOutput("a\n")}},
		{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some[int64](100), CacheReadTokens: formats.Some[int64](40), OutputTokens: formats.Some[int64](5), CostUSD: formats.Some(0.01)}},
		{Kind: formats.RunEnd, Status: formats.Failed, Text: "boom"},
	}
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if d := Session.Detect(out.Bytes()); d < 80 {
		t.Errorf("the output is detected as pi-session by %d", d)
	}
	type rec struct {
		Type     string  `json:"type"`
		ID       string  `json:"id"`
		ParentID *string `json:"parentId"`
		Message  *struct {
			Role         string         `json:"role"`
			Content      []block        `json:"content"`
			ToolCallID   string         `json:"toolCallId"`
			IsError      bool           `json:"isError"`
			StopReason   string         `json:"stopReason"`
			ErrorMessage string         `json:"errorMessage"`
			Provider     string         `json:"provider"`
			Usage        map[string]any `json:"usage"`
		} `json:"message"`
	}
	var recs []rec
	for _, l := range lines {
		var r rec
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		recs = append(recs, r)
	}
	if recs[0].Type != "session" || !formats.IsUUID(recs[0].ID) {
		t.Fatalf("header %+v", recs[0])
	}
	var roles []string
	prev := ""
	for i, r := range recs[1:] {
		p := ""
		if r.ParentID != nil {
			p = *r.ParentID
		}
		if p != prev {
			t.Errorf("entry %d's parent is %q, not the entry before (%q)", i+1, p, prev)
		}
		prev = r.ID
		roles = append(roles, r.Message.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,toolResult,toolResult,assistant" {
		t.Fatalf("roles %s", got)
	}
	a := recs[2].Message
	if len(a.Content) != 3 || a.Content[0].Text != "I will call." || a.StopReason != "toolUse" || a.Provider != "anthropic" {
		t.Errorf("the response %+v", a)
	}
	// pi's input is without the cache.
	if a.Usage["input"] != float64(60) || a.Usage["cacheRead"] != float64(40) {
		t.Errorf("usage %v", a.Usage)
	}
	if r := recs[4].Message; r.ToolCallID != "c2" || !r.IsError {
		t.Errorf("the unanswered call's result %+v", r)
	}
	if e := recs[5].Message; e.StopReason != "error" || e.ErrorMessage != "boom" {
		t.Errorf("the failed run's end %+v", e)
	}
	if rep.Losses() == 0 {
		t.Error("the unanswered call is not reported")
	}
}

// TestProviderRoundTrip: the provider pi names goes through the model's
// name for it and back.
func TestProviderRoundTrip(t *testing.T) {
	for otel, p := range piProviders {
		if got := otelProvider(p[0]); got != otel {
			t.Errorf("pi's %s reads as %q, want %s", p[0], got, otel)
		}
	}
	if got := otelProvider("agentconv"); got != "" {
		t.Errorf("a provider of the user's own reads as %q", got)
	}
}
