package convert

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// facts is what a round trip may keep or lose of a stream, field by field,
// as read back by the stream's own dialect.
func facts(t *testing.T, d formats.Dialect, data string) map[string]string {
	t.Helper()
	evs, bad, err := formatstest.ReadAll(d, []byte(data))
	if err != nil || len(bad) > 0 {
		t.Fatalf("reading %s: %v %v", d.Name, err, bad)
	}
	var order, names, statuses, outputs, errs, owners, agents, answers, runs, sessions, tokens, costs []string
	var view formats.RunView // a run's status as the one rule settles it
	for _, e := range evs {
		if !view.Open && e.Kind != formats.RunStart {
			view.Observe(&formats.Event{Kind: formats.RunStart})
		}
		view.Observe(e)
		switch e.Kind {
		case formats.ToolResult:
			id := e.Call.ID + ": "
			order = append(order, e.Call.ID)
			names = append(names, id+e.Call.Name)
			statuses = append(statuses, id+e.Call.Status.String())
			outputs = append(outputs, id+strings.Trim(e.Call.Output.Decoded()+"\n"+e.Call.Error, "\n"))
			errs = append(errs, id+e.Call.Error)
			owners = append(owners, id+e.Agent)
		case formats.AgentStart:
			agents = append(agents, e.Agent+" < "+e.AgentInfo.Parent)
		case formats.Answer:
			answers = append(answers, e.Text)
		case formats.RunEnd:
			runs = append(runs, e.Status.String())
			sessions = append(sessions, e.Run.SessionID)
			u := view.Usage // the run's totals, as the one rule makes them
			tokens = append(tokens, fmt.Sprint(u.InputTokens.V, "/", u.OutputTokens.V, "/", u.CacheReadTokens.V))
			costs = append(costs, fmt.Sprintf("%.9f", u.CostUSD.V))
		}
	}
	// Calls are compared by id: the order of results is a field of its own.
	j := func(s []string) string { return strings.Join(s, "\n") }
	sorted := func(s []string) string { sort.Strings(s); return j(s) }
	return map[string]string{
		"call order": j(order), "call names": sorted(names), "call statuses": sorted(statuses),
		"call outputs": sorted(outputs), "call errors": sorted(errs), "call agents": sorted(owners),
		"subagents": j(agents), "answers": j(answers), "run statuses": j(runs),
		"sessions": j(sessions), "tokens": j(tokens), "costs": j(costs),
	}
}

// TestRoundTripThroughEachDialect converts the malac and cli-agents
// fixtures into each other seed dialect and back, and checks exactly which
// fields survive: every field is either kept or listed as lost.
func TestRoundTripThroughEachDialect(t *testing.T) {
	tests := []struct {
		fixture, via string
		lost         []string
	}{
		{"malac/subagents.jsonl", "malac", nil},
		// cli-agents names the session only in done, after malac needs it.
		{"malac/subagents.jsonl", "cli-agents", []string{"call agents", "subagents", "sessions"}},
		{"malac/subagents.jsonl", "adal-stream", []string{"call agents", "subagents", "sessions", "tokens", "costs"}},
		{"malac/subagents.jsonl", "adal-json", []string{"call agents", "subagents", "call order", "tokens", "costs"}},
		// A refusal the run stopped at: AdaL keeps it (exit 2); cli-agents
		// has no refusals, so the call and the run come back failed.
		{"malac/denied.jsonl", "adal-stream", []string{"sessions", "tokens"}},
		{"malac/denied.jsonl", "adal-json", []string{"tokens"}},
		{"malac/denied.jsonl", "cli-agents", []string{"call statuses", "call errors", "run statuses", "sessions"}},
		// A refusal the run went on after: adal-json has one error per
		// run, null when it succeeded, so the refusal's reason is lost; a
		// cancelled run is exit 1 in AdaL, a failure.
		{"malac/two-runs.jsonl", "cli-agents", []string{"call statuses", "call errors", "sessions"}},
		{"malac/two-runs.jsonl", "adal-json", []string{"run statuses"}},
		// A refusal the run went on after, then failed for another reason:
		// a failure (exit 1), not a stop at the refusal (exit 2);
		// adal-stream's permission_denied says that a run stopped, so the
		// refused call comes back as a failed one.
		{"malac/refused-then-failed.jsonl", "adal-stream", []string{"sessions", "call statuses", "call errors"}},
		{"malac/refused-then-failed.jsonl", "adal-json", nil},
		{"malac/failed-turn.jsonl", "cli-agents", []string{"sessions"}},
		{"malac/failed-turn.jsonl", "adal-stream", []string{"sessions"}},
		// cli-agents keeps a tool's error apart from its output; malac and
		// AdaL have one output, so the two come back merged.
		{"cli-agents/claude-run.jsonl", "malac", []string{"call errors"}},
		{"cli-agents/claude-run.jsonl", "adal-stream", []string{"call errors", "tokens", "costs"}},
		{"cli-agents/claude-run.jsonl", "adal-json", []string{"call errors", "tokens", "costs"}},
		{"cli-agents/gemini-failed.jsonl", "malac", []string{"call errors"}},
		{"cli-agents/gemini-failed.jsonl", "adal-json", []string{"call errors", "tokens"}},
		// A run without a session id gets malac agent id agent-N, which
		// comes back as its session id.
		{"cli-agents/cancelled.jsonl", "malac", []string{"call errors", "sessions"}},
		{"cli-agents/cancelled.jsonl", "adal-stream", []string{"call errors", "tokens", "costs"}},
		{"cli-agents/codex-run.jsonl", "malac", nil},
	}
	for _, tc := range tests {
		t.Run(tc.fixture+"→"+tc.via, func(t *testing.T) {
			in := readFixture(t, tc.fixture)
			src, _ := Detect([]byte(in))
			code, mid, stderr := runCLI(in, "--deterministic", "--from", src.Name, "--to", tc.via)
			if code != 0 {
				t.Fatalf("→ %s: exit %d: %s", tc.via, code, stderr)
			}
			code, back, stderr := runCLI(mid, "--deterministic", "--from", tc.via, "--to", src.Name)
			if code != 0 {
				t.Fatalf("%s →: exit %d: %s", tc.via, code, stderr)
			}
			want, got := facts(t, src, in), facts(t, src, back)
			lost := map[string]bool{}
			for _, f := range tc.lost {
				lost[f] = true
				if want[f] == got[f] {
					t.Errorf("%s survives the round trip, but the test says it is lost", f)
				}
			}
			for f, w := range want {
				if !lost[f] && got[f] != w {
					t.Errorf("%s changed:\nbefore %q\nafter  %q", f, w, got[f])
				}
			}
		})
	}
}
