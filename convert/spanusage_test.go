package convert

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// otlpLine is what the span-usage tests read of an otlp-json record.
type otlpLine struct {
	ResourceSpans []struct {
		ScopeSpans []struct {
			Spans []otlpSpan `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type otlpSpan struct {
	Name       string `json:"name"`
	Attributes []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue *string  `json:"stringValue"`
			IntValue    *string  `json:"intValue"`
			DoubleValue *float64 `json:"doubleValue"`
			BoolValue   *bool    `json:"boolValue"`
		} `json:"value"`
	} `json:"attributes"`
}

func (s otlpSpan) bool(key string) bool {
	for _, a := range s.Attributes {
		if a.Key == key && a.Value.BoolValue != nil {
			return *a.Value.BoolValue
		}
	}
	return false
}

func (s otlpSpan) str(key string) (string, bool) {
	for _, a := range s.Attributes {
		if a.Key == key && a.Value.StringValue != nil {
			return *a.Value.StringValue, true
		}
	}
	return "", false
}

// otlpRuns reads otlp-json output: the spans of each record (one run each).
func otlpRuns(t *testing.T, out string) [][]otlpSpan {
	t.Helper()
	var runs [][]otlpSpan
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var req otlpLine
		if err := json.Unmarshal([]byte(l), &req); err != nil {
			t.Fatal(err)
		}
		var spans []otlpSpan
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		runs = append(runs, spans)
	}
	return runs
}

// spanSums adds up each gen_ai.usage.* attribute over the spans of a run,
// and over its chat spans alone.
func spanSums(spans []otlpSpan) (map[string]int64, map[string]int64, float64, bool) {
	sums, chats := map[string]int64{}, map[string]int64{}
	cost, costSeen := 0.0, false
	for _, s := range spans {
		for _, a := range s.Attributes {
			if !strings.HasPrefix(a.Key, "gen_ai.usage.") {
				continue
			}
			switch {
			case a.Value.IntValue != nil:
				n, _ := strconv.ParseInt(*a.Value.IntValue, 10, 64)
				sums[a.Key] += n
				if op, _ := s.str("gen_ai.operation.name"); op == "chat" {
					chats[a.Key] += n
				}
			case a.Value.DoubleValue != nil:
				cost += *a.Value.DoubleValue
				costSeen = true
			}
		}
	}
	return sums, chats, cost, costSeen
}

// TestSpanUsageSums: each model request of a run (a Usage event) is a chat
// span; an otlp-json copy keeps the spans as they are; and over the spans of each run's trace, each
// gen_ai.usage.* attribute adds up to the run's totals (the run view's
// Usage), so that a backend that sums counts each token and cent once;
// where the source's run total is below the sum of its requests
// (claude/takopi-session), the sum is the requests'.
func TestSpanUsageSums(t *testing.T) {
	t.Parallel()
	for _, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		if strings.HasPrefix(rel, "otlp-json") {
			continue // copied as it is, spans of an older agentconv included
		}
		t.Run(rel, func(t *testing.T) {
			data := fixtureData(t, in)
			facts := readFacts(t, "", data)
			out := first(convertTo(t, data, "", "otlp-json"))
			if again := first(convertTo(t, out, "otlp-json", "otlp-json")); again != out {
				t.Errorf("otlp-json → otlp-json changed the spans")
			}
			// With content, the same spans and usage, and the messages
			// come through otlp-json → otlp-json as they are.
			content := first(convertTo(t, data, "", "otlp-json", "--otlp-content"))
			if again := first(convertTo(t, content, "otlp-json", "otlp-json")); again != content {
				t.Errorf("otlp-json → otlp-json changed the spans with --otlp-content")
			}
			if cr, r := otlpRuns(t, content), otlpRuns(t, out); len(cr) != len(r) {
				t.Errorf("--otlp-content: %d runs, %d without", len(cr), len(r))
			} else {
				for i := range r {
					a, _, ac, _ := spanSums(cr[i])
					b, _, bc, _ := spanSums(r[i])
					if fmt.Sprint(a) != fmt.Sprint(b) || math.Abs(ac-bc) > 1e-9 || len(cr[i]) != len(r[i]) {
						t.Errorf("run %d: --otlp-content gives %d spans, usage %v %v; without %d, %v %v", i+1, len(cr[i]), a, ac, len(r[i]), b, bc)
					}
				}
			}
			runs := otlpRuns(t, out)
			if len(runs) != len(facts) {
				t.Skipf("%d otlp-json records for %d runs", len(runs), len(facts))
			}
			for i, spans := range runs {
				u := facts[i].usage
				chatSpans := 0
				aggregates := 0
				for _, s := range spans {
					if s.bool("agentconv.chat.aggregate") {
						aggregates++
						continue // it stands for requests the source did not list
					}
					if op, _ := s.str("gen_ai.operation.name"); op == "chat" {
						chatSpans++
						if !strings.HasPrefix(s.Name, "chat") {
							t.Errorf("run %d: a chat span named %q", i+1, s.Name)
						}
					}
				}
				if chatSpans == 0 && (u.InputTokens.V > 0 || u.OutputTokens.V > 0) && aggregates == 0 {
					t.Errorf("run %d: only the run's totals, and no chat span marked agentconv.chat.aggregate carries them", i+1)
				}
				if chatSpans != facts[i].requests {
					t.Errorf("run %d: %d chat spans for %d model requests", i+1, chatSpans, facts[i].requests)
				}
				sums, chats, cost, costSeen := spanSums(spans)
				for _, c := range []struct {
					key string
					v   formats.Opt[int64]
				}{
					{"gen_ai.usage.input_tokens", u.InputTokens},
					{"gen_ai.usage.output_tokens", u.OutputTokens},
					{"gen_ai.usage.cache_read.input_tokens", u.CacheReadTokens},
					{"gen_ai.usage.cache_creation.input_tokens", u.CacheWriteTokens},
					{"gen_ai.usage.reasoning.output_tokens", u.ReasoningTokens},
				} {
					if got := sums[c.key]; got != c.v.V && !(chats[c.key] > c.v.V && got == chats[c.key]) {
						// A source whose run total is below the sum of its
						// requests contradicts itself: the requests count
						// as they are, and nothing more.
						t.Errorf("run %d: %s adds up to %d over the spans, the run's total is %d", i+1, c.key, got, c.v.V)
					}
				}
				// A cost of 0 with nothing to put it on (a run that made no
				// request) needs no chat span.
				if costSeen != u.CostUSD.OK && !(u.CostUSD.V == 0 && !costSeen) || math.Abs(cost-u.CostUSD.V) > 1e-9 {
					t.Errorf("run %d: gen_ai.usage.cost adds up to %v (seen %v), the run's cost is %+v", i+1, cost, costSeen, u.CostUSD)
				}
			}
		})
	}
}
