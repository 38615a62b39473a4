package convert_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/adal"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// The round trips between claude-stream and AdaL: here, not in either
// dialect's package, whose tests need no other dialect.

// claude-stream → AdaL → claude-stream: what AdaL carries survives (calls,
// results, refusals, the answer, the outcome); the rest is reported lost.
func TestRoundTripThroughAdaL(t *testing.T) {
	for _, via := range []formats.Dialect{adal.Stream, adal.JSON} {
		for _, f := range []string{"takopi-session.jsonl", "failures-stream.jsonl", "subagent-stream.jsonl"} {
			t.Run(via.Name+"/"+f, func(t *testing.T) {
				evs := formatstest.Read(t, claude.Stream, formatstest.Fixture(t, "claude", f))
				mid, err := formatstest.WriteAll(via, evs, true)
				if err != nil {
					t.Fatal(err)
				}
				out, err := formatstest.WriteAll(claude.Stream, formatstest.Read(t, via, mid), true)
				if err != nil {
					t.Fatal(err)
				}
				back := formatstest.Read(t, claude.Stream, out)
				want, got := survivors(evs), survivors(back)
				if via.Name == adal.Stream.Name {
					// adal-stream writes a refusal as a failed result (and
					// exit code 2 for the one a run stopped at).
					for _, m := range []map[string]string{want.Calls, got.Calls} {
						for id, c := range m {
							m[id] = strings.Replace(c, " denied", " failed", 1)
						}
					}
				}
				if !reflect.DeepEqual(want, got) {
					t.Errorf("calls and answers changed:\nwant %+v\ngot  %+v\nvia:\n%s\nback:\n%s", want, got, mid, out)
				}
				we, ge := formatstest.OfKind(evs, formats.RunEnd), formatstest.OfKind(back, formats.RunEnd)
				if len(we) != len(ge) {
					t.Fatalf("runs: %d → %d", len(we), len(ge))
				}
				for i := range we {
					if we[i].Status != ge[i].Status || we[i].Run.SessionID != ge[i].Run.SessionID {
						t.Errorf("run %d: %v %q → %v %q", i, we[i].Status, we[i].Run.SessionID, ge[i].Status, ge[i].Run.SessionID)
					}
				}
			})
		}
	}
}

// AdaL → claude-stream reads back with the same calls, refusals, answers
// and outcomes.
func TestFromAdaLReadsBack(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "adal", "*.ndjson"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, _ := os.ReadFile(f)
			evs := formatstest.Read(t, adal.Stream, data)
			out, err := formatstest.WriteAll(claude.Stream, evs, true)
			if err != nil {
				t.Fatal(err)
			}
			back := formatstest.Read(t, claude.Stream, out)
			if w, g := survivors(evs), survivors(back); !reflect.DeepEqual(w, g) {
				t.Errorf("changed:\nwant %+v\ngot  %+v\n%s", w, g, out)
			}
			we, ge := formatstest.OfKind(evs, formats.RunEnd), formatstest.OfKind(back, formats.RunEnd)
			if len(we) != len(ge) {
				t.Fatalf("runs %d → %d\n%s", len(we), len(ge), out)
			}
			for i := range we {
				if we[i].Status.OK() != ge[i].Status.OK() {
					t.Errorf("run %d: %v → %v", i, we[i].Status, ge[i].Status)
				}
			}
		})
	}
}

// survivors is what AdaL carries: each call's name and final status, and
// the answers. AdaL has no subagents, and adal-json no order of calls.
func survivors(evs []*formats.Event) (out struct {
	Calls   map[string]string
	Answers []string
}) {
	out.Calls = map[string]string{}
	for _, e := range evs {
		switch e.Kind {
		case formats.ToolCall:
			out.Calls[e.Call.ID] = e.Call.Name
		case formats.ToolResult:
			out.Calls[e.Call.ID] = e.Call.Name + " " + e.Call.Status.String()
		case formats.Answer:
			out.Answers = append(out.Answers, e.Text)
		}
	}
	return out
}
