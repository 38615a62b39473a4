package convert

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// factFeature is what a dialect must carry for a fact to survive it.
var factFeature = map[string]formats.Feature{
	"call order": formats.ToolCalls, "call names": formats.ToolCalls, "call statuses": formats.ToolCalls,
	"call outputs": formats.ToolCalls, "call errors": formats.ToolCalls, "call agents": formats.Subagents,
	"subagents": formats.Subagents, "run statuses": formats.RunOutcomes, "tokens": formats.TokenUsage,
	"costs": formats.Costs, "sessions": 0,
}

// TestThroughInterchange: a round trip from each dialect through atif and
// acp and back keeps every fact that both carry: the calls, their names,
// statuses and outputs, the subagents (atif), the run's outcome and its
// usage.
func TestThroughInterchange(t *testing.T) {
	t.Parallel()
	keeps := map[string][]string{
		// ATIF puts each result in the step of its call, so results that
		// interleave across steps come back in the order of their calls.
		"atif": {"call names", "call statuses", "call outputs", "call errors", "call agents",
			"subagents", "run statuses", "sessions", "tokens", "costs"},
		"acp": {"call order", "call names", "call statuses", "call outputs", "call errors", "run statuses", "tokens", "costs"},
	}
	for _, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		data := readFixture(t, in)
		src, score := Detect([]byte(data))
		if score == 0 || src.NewWriter == nil || src.Remote {
			continue
		}
		cut := false
		for _, r := range readFacts(t, src.Name, data) {
			cut = cut || r.cut
		}
		if cut {
			// The pipeline closes a cut run on the way, so the trip back
			// has an end the input lacks.
			continue
		}
		for via, fields := range keeps {
			if src.Name == via {
				continue
			}
			t.Run(rel+"→"+via, func(t *testing.T) {
				mid, _ := convertTo(t, data, src.Name, via)
				back, backErr := convertTo(t, mid, via, src.Name, "--otlp-content")
				want, got := facts(t, src, first(convertTo(t, data, src.Name, src.Name))), facts(t, src, back)
				for _, f := range fields {
					if need := factFeature[f]; src.Carries&need != need {
						continue // the trip back cannot carry it
					}
					if f == "sessions" && strings.Contains(backErr, "× session ids") {
						continue // the source's writer said it changes them
					}
					if want[f] != got[f] {
						t.Errorf("%s changed through %s:\nbefore %q\nafter  %q", f, via, want[f], got[f])
					}
				}
			})
		}
	}
}
