package codex_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/codex"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// survivor is what a trip through another dialect must keep of a run.
type survivor struct {
	Calls   []string // name:status of each result, in order
	Answer  string
	Status  formats.Status
	Session string
}

func survivors(t *testing.T, data []byte) []survivor {
	t.Helper()
	evs := formatstest.Read(t, codex.Dialect, data)
	var out []survivor
	var cur survivor
	for _, e := range evs {
		switch e.Kind {
		case formats.RunStart:
			cur.Session = e.Run.SessionID
		case formats.ToolResult:
			cur.Calls = append(cur.Calls, fmt.Sprintf("%s:%s", e.Call.Name, e.Call.Status))
		case formats.Answer:
			cur.Answer = e.Text
		case formats.RunEnd:
			cur.Status = e.Status
			out = append(out, cur)
			cur = survivor{}
		}
	}
	return out
}

// TestThroughAdaL: codex → adal-* → codex keeps every call's tool and
// status, the answer and the outcome of each run; adal-json keeps the
// session too (adal-stream names it only at the run's end, too late for
// thread.started), and adal-text keeps the answer alone.
func TestThroughAdaL(t *testing.T) {
	for _, name := range []string{"agentcmd-stream-output-5.jsonl", "tools-and-todos.jsonl", "turn-failed.jsonl", "fatal-error.jsonl"} {
		in := formatstest.Fixture(t, "codex", name)
		want := survivors(t, in)
		for _, via := range []string{"adal-stream", "adal-json", "adal-text"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				back := converttest.Convert(t, converttest.Convert(t, in, "codex", via), via, "codex")
				got := survivors(t, back)
				exp := append([]survivor(nil), want...)
				for i := range exp {
					switch via {
					case "adal-stream":
						exp[i].Session = ""
					case "adal-text":
						exp[i] = survivor{Answer: exp[i].Answer, Status: formats.Completed}
					}
				}
				if via == "adal-text" && exp[0].Answer == "" {
					// adal-text prints nothing for a failed run without an
					// answer: nothing comes back.
					exp = nil
				}
				if !reflect.DeepEqual(got, exp) {
					t.Errorf("codex → %s → codex:\n got %+v\nwant %+v\n%s", via, got, exp, back)
				}
			})
		}
	}
}

// TestFromAdaL: adal-stream → codex → adal-stream gives the calls,
// refusals and answers back unchanged, and a failed run stays failed. The
// session id and model (which AdaL gives at the end, too late for codex)
// and the exit code 2 of a refusal (codex has no exit codes) are lost.
func TestFromAdaL(t *testing.T) {
	for _, name := range []string{"seed-stream.ndjson", "refused-stream.ndjson", "error-stream.ndjson"} {
		in := formatstest.Fixture(t, "adal", name)
		back := converttest.Convert(t, converttest.Convert(t, in, "adal-stream", "codex"), "codex", "adal-stream")
		want, wantFailed := callLines(in)
		got, gotFailed := callLines(back)
		if !reflect.DeepEqual(got, want) || gotFailed != wantFailed {
			t.Errorf("%s: adal-stream → codex → adal-stream:\n%s", name, back)
		}
	}
}

// callLines returns the call and answer lines of an AdaL stream, and
// whether its runs failed.
func callLines(b []byte) (lines []string, failed bool) {
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch {
		case strings.Contains(l, `"type":"complete"`):
			failed = failed || !strings.Contains(l, `"exit_code":0`)
		case !strings.Contains(l, `"type":"error"`):
			lines = append(lines, l)
		}
	}
	return lines, failed
}
