package convert_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/gemini"
)

// geminiSurvivor is what a trip through another dialect must keep of a run.
type geminiSurvivor struct {
	Calls    []string // id:name:status of each result, in order
	Answer   string
	Status   formats.Status
	ExitCode int
	Session  string
	Model    string
}

func geminiSurvivors(t *testing.T, d formats.Dialect, data []byte) []geminiSurvivor {
	t.Helper()
	evs := formatstest.Read(t, d, data)
	var out []geminiSurvivor
	var cur geminiSurvivor
	for _, e := range evs {
		switch e.Kind {
		case formats.ToolResult:
			cur.Calls = append(cur.Calls, fmt.Sprintf("%s:%s:%s", e.Call.ID, e.Call.Name, e.Call.Status))
		case formats.Answer:
			cur.Answer = e.Text
		case formats.RunEnd:
			cur.Status, cur.ExitCode, cur.Session, cur.Model = e.Status, e.Run.ExitCode.V, e.Run.SessionID, e.Run.Model
			out = append(out, cur)
			cur = geminiSurvivor{}
		}
	}
	return out
}

// TestGeminiThroughAdaL: gemini-stream → adal-* → gemini-stream keeps every
// call (id, tool, status), the answer, the outcome and the exit code;
// adal-json keeps the session and model too, adal-text the answer alone.
func TestGeminiThroughAdaL(t *testing.T) {
	for _, name := range []string{"tools-stream.jsonl", "error-result-stream.jsonl"} {
		in := formatstest.Fixture(t, "gemini", name)
		want := geminiSurvivors(t, gemini.Stream, in)
		for _, via := range []string{"adal-stream", "adal-json", "adal-text"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				mid := converttest.Convert(t, in, "gemini-stream", via)
				back := converttest.Convert(t, mid, via, "gemini-stream")
				got := geminiSurvivors(t, gemini.Stream, back)
				viaDialect, _ := convert.Lookup(via)
				held := geminiSurvivors(t, viaDialect, mid)
				if len(held) != len(want) && via != "adal-text" {
					t.Fatalf("%d runs in %s, %d in gemini-stream:\n%s", len(held), via, len(want), mid)
				}
				exp := append([]geminiSurvivor(nil), want...)
				for i := range exp {
					if via == "adal-stream" {
						// AdaL names them at the end, after Gemini's init.
						exp[i].Session, exp[i].Model = "", ""
					}
					if exp[i].Status != formats.Completed && via != "adal-text" {
						// AdaL decides what a failed run's answer is
						// (adal-json has none): the trip back keeps what
						// AdaL holds.
						exp[i].Answer = held[i].Answer
					}
				}
				if via == "adal-text" {
					for i := range exp {
						exp[i] = geminiSurvivor{Answer: exp[i].Answer, Status: formats.Completed}
					}
					if exp[0].ExitCode = 0; want[0].Status != formats.Completed {
						exp = nil // a failed run prints its error on stderr alone
					}
				}
				if !reflect.DeepEqual(got, exp) {
					t.Errorf("gemini-stream → %s → gemini-stream:\n got %+v\nwant %+v\n%s", via, got, exp, back)
				}
			})
		}
	}
}

// TestJSONThroughAdaL: gemini-json → adal-json → gemini-json keeps the
// response, the error, its exit code and the session.
func TestJSONThroughAdaL(t *testing.T) {
	for _, name := range []string{"response.json", "input-error.json"} {
		in := formatstest.Fixture(t, "gemini", name)
		want := geminiSurvivors(t, gemini.JSON, in)
		back := converttest.Convert(t, converttest.Convert(t, in, "gemini-json", "adal-json"), "adal-json", "gemini-json")
		got := geminiSurvivors(t, gemini.JSON, back)
		for i := range want {
			want[i].Model = "" // adal-json has no token counts, so no stats
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: gemini-json → adal-json → gemini-json:\n got %+v\nwant %+v\n%s", name, got, want, back)
		}
	}
}

// TestGeminiFromAdaL: adal-stream → gemini-stream → adal-stream gives the AdaL
// stream's calls, refusals, answers and exit codes back (a refusal's code
// 2 comes back from the refused call), but not the session id and model,
// which AdaL gives only at the end.
func TestGeminiFromAdaL(t *testing.T) {
	for _, name := range []string{"seed-stream.ndjson", "refused-stream.ndjson", "error-stream.ndjson"} {
		in := formatstest.Fixture(t, "adal", name)
		var adal formats.Dialect
		for _, d := range convert.Dialects {
			if d.Name == "adal-stream" {
				adal = d
			}
		}
		want := geminiSurvivors(t, adal, in)
		got := geminiSurvivors(t, adal, converttest.Convert(t, converttest.Convert(t, in, "adal-stream", "gemini-stream"), "gemini-stream", "adal-stream"))
		for i := range want {
			want[i].Session, want[i].Model = "", ""
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: adal-stream → gemini-stream → adal-stream:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// TestJSONKeepsStats: gemini-json → gemini-json keeps every model's stats
// and the tool stats; gemini-json → gemini-stream counts the object's tool
// calls (which are not events) and sums every model's tokens, the
// thoughts in the output and in the total.
func TestJSONKeepsStats(t *testing.T) {
	in := formatstest.Fixture(t, "gemini", "two-models-tools.json")
	if out := converttest.Convert(t, in, "gemini-json", "gemini-json"); string(out) != string(in) {
		t.Errorf("gemini-json → gemini-json:\n%s", out)
	}
	stream := converttest.Convert(t, in, "gemini-json", "gemini-stream")
	evs := formatstest.Read(t, gemini.Stream, stream)
	end := formatstest.OfKind(evs, formats.RunEnd)
	if len(end) != 1 || end[0].Usage.InputTokens != formats.Some[int64](23) || end[0].Usage.OutputTokens != formats.Some[int64](8) || end[0].Usage.ReasoningTokens != formats.Some[int64](1) ||
		end[0].Usage.TotalTokens != formats.Some[int64](31) || end[0].Usage.CacheReadTokens != formats.Some[int64](10) {
		t.Errorf("run end: %+v", end)
	}
	var result struct {
		Stats struct {
			ToolCalls *int64 `json:"tool_calls"`
		} `json:"stats"`
	}
	lines := strings.Split(strings.TrimSpace(string(stream)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &result); err != nil || result.Stats.ToolCalls == nil || *result.Stats.ToolCalls != 3 {
		t.Errorf("result line %s: %v", lines[len(lines)-1], err)
	}
}
