package convert

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sessionsJSON runs `sessions --json` (and more arguments) and decodes its
// lines.
func sessionsJSON(t *testing.T, getenv func(string) string, args ...string) []map[string]any {
	t.Helper()
	code, stdout, stderr := runSessions(getenv, time.Time{}, append([]string{"--json"}, args...)...)
	if code != 0 {
		t.Fatalf("sessions --json %v: exit %d: %s", args, code, stderr)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		out = append(out, m)
	}
	return out
}

// usageOverSpans converts a file to otlp-json and sums each gen_ai.usage.* count
// and the cost over its spans.
func usageOverSpans(t *testing.T, file string) map[string]float64 {
	t.Helper()
	var out, errb bytes.Buffer
	sys := Sys{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	if code := Run([]string{"agentconv", "--to", "otlp-json", file}, sys); code != 0 {
		t.Fatalf("%s --to otlp-json: exit %d: %s", file, code, errb.String())
	}
	sums := map[string]float64{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var doc struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						Attributes []struct {
							Key   string
							Value struct {
								IntValue    string
								DoubleValue *float64
							}
						}
					}
				}
			}
		}
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		for _, rs := range doc.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					for _, a := range s.Attributes {
						if !strings.HasPrefix(a.Key, "gen_ai.usage.") {
							continue
						}
						if a.Value.DoubleValue != nil {
							sums[a.Key] += *a.Value.DoubleValue
						} else if n, err := strconv.ParseInt(a.Value.IntValue, 10, 64); err == nil {
							sums[a.Key] += float64(n)
						}
					}
				}
			}
		}
	}
	return sums
}

// TestSessionsCountsEqualSpans: each count of `sessions --json` is the sum
// of the same count over the spans of the same file, in every family of
// session files and in streams.
func TestSessionsCountsEqualSpans(t *testing.T) {
	for _, f := range []string{
		"claude/sessions/agentcmd-claude-session-2.0.14.jsonl",
		"claude/sessions/claude-code-log-sidechain-integrated.jsonl",
		"claude/takopi-all-events.jsonl",
		"codex/localpush-0.104-rollout.jsonl",
		"codex/agentcmd-codex-rollout.jsonl",
		"gemini/chat-pomodoro-timer.json",
		"gemini/two-models-tools.json",
		"qwen/session-subagent.jsonl",
		"atif/rfc-0001-example.json",
	} {
		t.Run(f, func(t *testing.T) {
			file := filepath.Join("..", "testdata", filepath.FromSlash(f))
			list := sessionsJSON(t, func(string) string { return "" }, file)
			if len(list) != 1 {
				t.Fatalf("%d sessions", len(list))
			}
			s, spans := list[0], usageOverSpans(t, file)
			for field, key := range map[string]string{
				"input_tokens":       "gen_ai.usage.input_tokens",
				"output_tokens":      "gen_ai.usage.output_tokens",
				"cache_read_tokens":  "gen_ai.usage.cache_read.input_tokens",
				"cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
				"reasoning_tokens":   "gen_ai.usage.reasoning.output_tokens",
			} {
				got, _ := s[field].(float64)
				if got != spans[key] {
					t.Errorf("%s = %v, the spans' %s sum to %v", field, got, key, spans[key])
				}
			}
			if s["cost_from"] == "source" {
				if got := s["cost_usd"].(float64); math.Abs(got-spans["gen_ai.usage.cost"]) > 1e-6 {
					t.Errorf("cost_usd = %v from the source, the spans' sum to %v", got, spans["gen_ai.usage.cost"])
				}
			}
			if spans["gen_ai.usage.input_tokens"] == 0 {
				t.Errorf("no input tokens in the spans: a fixture with none proves nothing")
			}
		})
	}
}

// claudeSession writes a Claude Code session of the given requests (model
// and usage) under home's projects, and returns the environment.
func claudeSession(t *testing.T, home, project, id string, start time.Time, reqs ...[2]string) {
	t.Helper()
	dir := filepath.Join(home, ".claude", "projects", strings.ReplaceAll(project, "/", "-"))
	os.MkdirAll(dir, 0o755)
	var b strings.Builder
	at := start
	line := func(m map[string]any) {
		m["sessionId"], m["cwd"], m["timestamp"] = id, project, at.UTC().Format(time.RFC3339Nano)
		j, _ := json.Marshal(m)
		b.Write(append(j, '\n'))
		at = at.Add(time.Minute)
	}
	parent := any(nil)
	user := id + "-u"
	line(map[string]any{"type": "user", "uuid": user, "parentUuid": parent, "message": map[string]any{"role": "user", "content": "go"}})
	parent = user
	for i, r := range reqs {
		var usage map[string]any
		json.Unmarshal([]byte(r[1]), &usage)
		u := id + "-a" + strconv.Itoa(i)
		line(map[string]any{"type": "assistant", "uuid": u, "parentUuid": parent, "requestId": u,
			"message": map[string]any{"id": "msg-" + u, "role": "assistant", "model": r[0], "type": "message",
				"content": []any{map[string]any{"type": "text", "text": "ok"}}, "stop_reason": "end_turn", "usage": usage}})
		parent = u
	}
	if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pricedHome is a home of three Claude Code sessions whose costs are
// known from the published prices (the figures ccusage 20.0.24 gives for
// the same requests): two on one day in one project, one a day later in
// another, with two models.
func pricedHome(t *testing.T) (string, func(string) string) {
	home := t.TempDir()
	day := time.Date(2026, 11, 2, 10, 0, 0, 0, time.Local) // a Monday
	// 100,000 cache writes kept an hour: $0.60; 100,000 input: $0.30.
	claudeSession(t, home, "/work/a", "s1", day,
		[2]string{"claude-sonnet-4-5-20250929", `{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":100000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":100000}}`},
		[2]string{"claude-sonnet-4-5-20250929", `{"input_tokens":100000,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`})
	// 100,000 cache reads ($0.03) and 10,000 output ($0.15).
	claudeSession(t, home, "/work/a", "s2", day.Add(2*time.Hour),
		[2]string{"claude-sonnet-4-5-20250929", `{"input_tokens":0,"output_tokens":10000,"cache_creation_input_tokens":0,"cache_read_input_tokens":100000}`})
	// Haiku: 100,000 input ($0.10), 100,000 five-minute writes ($0.125);
	// then a model without a price.
	claudeSession(t, home, "/work/b", "s3", day.AddDate(0, 0, 1),
		[2]string{"claude-haiku-4-5-20251001", `{"input_tokens":100000,"output_tokens":0,"cache_creation_input_tokens":100000,"cache_read_input_tokens":0}`},
		[2]string{"mystery-model-1", `{"input_tokens":7,"output_tokens":3}`})
	return home, homeEnv(home)
}

// TestSessionsCost: each count apart, and the cost estimated from the
// price table where the session gives none, marked as an estimate; a model
// without a price is named.
func TestSessionsCost(t *testing.T) {
	_, getenv := pricedHome(t)
	got := map[string]map[string]any{}
	for _, s := range sessionsJSON(t, getenv) {
		got[s["session_id"].(string)] = s
	}
	want := map[string]map[string]any{
		"s1": {"input_tokens": 200000.0, "cache_write_tokens": 100000.0, "cache_write_1h_tokens": 100000.0, "output_tokens": 0.0, "cost_usd": 0.9, "cost_from": "estimate"},
		"s2": {"input_tokens": 100000.0, "cache_read_tokens": 100000.0, "output_tokens": 10000.0, "cost_usd": 0.18, "cost_from": "estimate"},
		"s3": {"input_tokens": 200007.0, "cache_write_tokens": 100000.0, "output_tokens": 3.0, "cost_usd": 0.225, "cost_from": "estimate"},
	}
	for id, fields := range want {
		for k, v := range fields {
			if g := got[id][k]; g != v {
				if f, ok := g.(float64); !ok || math.Abs(f-v.(float64)) > 1e-9 {
					t.Errorf("%s %s = %v, want %v", id, k, g, v)
				}
			}
		}
	}
	if u, _ := json.Marshal(got["s3"]["unpriced_models"]); string(u) != `["mystery-model-1"]` {
		t.Errorf("s3 unpriced_models = %s", u)
	}
	if _, ok := got["s2"]["cache_write_1h_tokens"]; ok {
		t.Errorf("s2 gives no one-hour writes: %v", got["s2"])
	}

	// The table: every count in its column, the totals, and the note.
	code, stdout, stderr := runSessions(getenv, time.Time{})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	head := strings.Fields(strings.NewReplacer("TOOL CALLS", "TOOL_CALLS", "CACHE READ", "CACHE_READ", "CACHE WRITE", "CACHE_WRITE",
		"COST USD", "COST_USD", "COST FROM", "COST_FROM").Replace(lines[0]))
	if strings.Join(head[6:13], " ") != "INPUT CACHE_READ CACHE_WRITE OUTPUT REASONING COST_USD COST_FROM" {
		t.Fatalf("header: %s", lines[0])
	}
	// The counts, from INPUT to COST FROM, of each row.
	for i, want := range []string{
		"200000 0 100000 0 - 0.9000 estimate",
		"100000 100000 0 10000 - 0.1800 estimate",
		"200007 0 100000 3 - 0.2250 estimate",
		"500007 100000 200000 10003 - 1.3050 estimate", // TOTAL
	} {
		f := strings.Fields(lines[i+1])
		if got := strings.Join(f[len(f)-9:len(f)-2], " "); got != want {
			t.Errorf("row %d: %s, want %s\n%s", i+1, got, want, stdout)
		}
	}
	if !strings.HasPrefix(lines[4], "TOTAL        3 sessions") {
		t.Errorf("the totals: %s", lines[4])
	}
	if !strings.Contains(stdout, "COST FROM estimate:") || !strings.Contains(stdout, "ccusage 20.0.24") ||
		!strings.Contains(stdout, "No price for mystery-model-1") {
		t.Errorf("the note under the table:\n%s", stdout)
	}
}

// TestSessionsBy: --by sums the sessions by day, week, month, project and
// model, with the totals; --json gives the same numbers.
func TestSessionsBy(t *testing.T) {
	_, getenv := pricedHome(t)
	type row struct {
		sessions int
		input    float64
		cost     float64
	}
	for by, want := range map[string]map[string]row{
		"day":     {"2026-11-02": {2, 300000, 1.08}, "2026-11-03": {1, 200007, 0.225}},
		"week":    {"2026-11-02": {3, 500007, 1.305}},
		"month":   {"2026-11": {3, 500007, 1.305}},
		"project": {"/work/a": {2, 300000, 1.08}, "/work/b": {1, 200007, 0.225}},
		"model": {"claude-sonnet-4-5-20250929": {2, 300000, 1.08}, "claude-haiku-4-5-20251001": {1, 200000, 0.225},
			"mystery-model-1": {1, 7, 0}},
	} {
		t.Run(by, func(t *testing.T) {
			lines := sessionsJSON(t, getenv, "--by", by)
			last := lines[len(lines)-1]
			if last["total"] != true || last["sessions"] != 3.0 || last["input_tokens"] != 500007.0 || math.Abs(last["cost_usd"].(float64)-1.305) > 1e-9 {
				t.Errorf("totals: %v", last)
			}
			got := map[string]row{}
			for _, g := range lines[:len(lines)-1] {
				cost, _ := g["cost_usd"].(float64)
				got[g[by].(string)] = row{int(g["sessions"].(float64)), g["input_tokens"].(float64), math.Round(cost*1e6) / 1e6}
			}
			if len(got) != len(want) {
				t.Errorf("groups %v, want %v", got, want)
			}
			for k, w := range want {
				if got[k] != w {
					t.Errorf("%s: %+v, want %+v", k, got[k], w)
				}
			}
			// The table says the same.
			code, stdout, _ := runSessions(getenv, time.Time{}, "--by", by)
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			for k, w := range want {
				if !tableHas(stdout, k, strconv.Itoa(w.sessions), strconv.FormatFloat(w.input, 'f', -1, 64)) {
					t.Errorf("no row %s %+v in\n%s", k, w, stdout)
				}
			}
			if !tableHas(stdout, "TOTAL", "3", "500007") {
				t.Errorf("no totals in\n%s", stdout)
			}
		})
	}
	if code, _, stderr := runSessions(getenv, time.Time{}, "--by", "hour"); code != ExitUsage || !strings.Contains(stderr, "give day, week, month, model or project") {
		t.Errorf("--by hour: exit %d, %s", code, stderr)
	}
}

// tableHas: a line of the table begins with these cells.
func tableHas(table string, cells ...string) bool {
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) >= len(cells) && strings.Join(f[:len(cells)], " ") == strings.Join(cells, " ") {
			return true
		}
	}
	return false
}

// TestSessionsProgress: a long listing shows progress on a terminal's
// stderr (uncoloured with NO_COLOR), and none with -q or off a terminal;
// the list is the same.
func TestSessionsProgress(t *testing.T) {
	home := t.TempDir()
	for i := range 30 {
		claudeSession(t, home, "/work/p", "s"+strconv.Itoa(i), time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC),
			[2]string{"claude-haiku-4-5", `{"input_tokens":10,"output_tokens":1}`})
	}
	oldTerm, oldTick, oldFiles := stderrIsTerminal, progressTick, progressFiles
	t.Cleanup(func() { stderrIsTerminal, progressTick, progressFiles = oldTerm, oldTick, oldFiles })
	progressTick, progressFiles = time.Millisecond, 1
	env := map[string]string{"HOME": home}
	getenv := func(k string) string { return env[k] }

	_, plain, plainErr := runSessions(getenv, time.Time{})
	if strings.Contains(plainErr, "files,") {
		t.Errorf("progress shown when stderr is not a terminal:\n%q", plainErr)
	}
	stderrIsTerminal = func(io.Writer) bool { return true }
	slow(t)
	// The files read (the cache would give them at once).
	code, out, stderr := runSessions(getenv, time.Time{}, "--no-cache")
	if code != 0 || out != plain {
		t.Fatalf("exit %d; the list changed with progress: %s", code, stderr)
	}
	for _, want := range []string{"/30 files, ", " runs", "\x1b[32m", "\r"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the bar lacks %q:\n%q", want, stderr)
		}
	}
	env["NO_COLOR"] = "1"
	if _, _, stderr := runSessions(getenv, time.Time{}, "--no-cache"); !strings.Contains(stderr, "/30 files, ") || strings.Contains(stderr, "\x1b[") {
		t.Errorf("NO_COLOR: the bar is missing or coloured:\n%q", stderr)
	}
	for _, q := range []string{"-q", "--quiet"} {
		if _, _, stderr := runSessions(getenv, time.Time{}, q); strings.Contains(stderr, "files,") {
			t.Errorf("%s shows progress:\n%q", q, stderr)
		}
	}
}
