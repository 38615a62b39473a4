package convert_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/codex"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// codexSurvivor is what a trip through another dialect must keep of a run.
type codexSurvivor struct {
	Calls   []string // name:status of each result, in order
	Answer  string
	Status  formats.Status
	Session string
}

func codexSurvivors(t *testing.T, data []byte) []codexSurvivor {
	t.Helper()
	evs := formatstest.Read(t, codex.Dialect, data)
	var out []codexSurvivor
	var cur codexSurvivor
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
			cur = codexSurvivor{}
		}
	}
	return out
}

// TestCodexThroughAdaL: codex → adal-* → codex keeps every call's tool and
// status, the answer and the outcome of each run; adal-json keeps the
// session too (adal-stream names it only at the run's end, too late for
// thread.started, and writes a refusal in a run that succeeded as a
// failed call), and adal-text keeps the answer alone.
func TestCodexThroughAdaL(t *testing.T) {
	for _, name := range []string{"agentcmd-stream-output-5.jsonl", "tools-and-todos.jsonl", "turn-failed.jsonl", "fatal-error.jsonl"} {
		in := formatstest.Fixture(t, "codex", name)
		want := codexSurvivors(t, in)
		for _, via := range []string{"adal-stream", "adal-json", "adal-text"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				back := converttest.Convert(t, converttest.Convert(t, in, "codex", via), via, "codex")
				got := codexSurvivors(t, back)
				exp := append([]codexSurvivor(nil), want...)
				for i := range exp {
					switch via {
					case "adal-stream":
						exp[i].Session = ""
						if exp[i].Status == formats.Completed {
							// AdaL has no refusal in a run that went on and
							// succeeded: the call is written as failed.
							exp[i].Calls = append([]string(nil), exp[i].Calls...)
							for j, c := range exp[i].Calls {
								if name, ok := strings.CutSuffix(c, ":denied"); ok {
									exp[i].Calls[j] = name + ":failed"
								}
							}
						}
					case "adal-text":
						exp[i] = codexSurvivor{Answer: exp[i].Answer, Status: formats.Completed}
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

// TestCodexFromAdaL: adal-stream → codex → adal-stream gives the calls and
// answers back unchanged, and a failed run stays failed. The session id
// and model (which AdaL gives at the end, too late for codex) and the exit
// code 2 of a refusal (codex exec exits 0 or 1) are lost.
func TestCodexFromAdaL(t *testing.T) {
	for _, name := range []string{"seed-stream.ndjson", "refused-stream.ndjson", "error-stream.ndjson"} {
		in := formatstest.Fixture(t, "adal", name)
		back := converttest.Convert(t, converttest.Convert(t, in, "adal-stream", "codex"), "codex", "adal-stream")
		want, wantFailed := callLines(in)
		var exp []string
		for _, l := range want {
			// Codex has no exit code 2: the run that stopped at a refusal
			// comes back failed (exit 1), so AdaL writes the refused call
			// as a call that failed (both losses are reported).
			var d struct {
				Type, ID, Name, Reason string
				Args                   json.RawMessage
			}
			if json.Unmarshal([]byte(l), &d) != nil || d.Type != "permission_denied" {
				exp = append(exp, l)
				continue
			}
			call, _ := json.Marshal(struct {
				Type string          `json:"type"`
				ID   string          `json:"id"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			}{"tool_call", d.ID, d.Name, d.Args})
			res, _ := json.Marshal(struct {
				Type   string `json:"type"`
				ID     string `json:"id"`
				Name   string `json:"name"`
				Status string `json:"status"`
				Output string `json:"output"`
			}{"tool_result", d.ID, d.Name, "failed", d.Reason})
			exp = append(exp, string(call), string(res))
		}
		got, gotFailed := callLines(back)
		if !reflect.DeepEqual(got, exp) || gotFailed != wantFailed {
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

// codexRun runs the command line on in and returns its exit status, output and
// standard error.
func codexRun(in []byte, args ...string) (int, string, string) {
	return converttest.Run(string(in), append([]string{"--deterministic"}, args...)...)
}

// TestCutCopied: codex → codex gives a cut stream back line for line: the
// pipeline closes the run (and says so on stderr), but the writer invents
// no item.completed or turn.failed that the agent never printed, also when
// the stream has no thread.started of its own.
func TestCutCopied(t *testing.T) {
	for name, in := range map[string]string{
		"two-threads": string(formatstest.Fixture(t, "codex", "two-threads.jsonl")),
		"no thread": `{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"make","aggregated_output":"","exit_code":null,"status":"in_progress"}}
`,
		"whole": string(formatstest.Fixture(t, "codex", "tools-and-todos.jsonl")),
	} {
		code, out, stderr := codexRun([]byte(in), "--from", "codex", "--to", "codex")
		if code != 0 || out != in {
			t.Errorf("%s: exit %d, output\n%s\nwant the input\n%s", name, code, out, in)
		}
		if cut := strings.Contains(stderr, "closing it as a failed, cut run"); cut != (name != "whole") || strings.Contains(stderr, "lost:") {
			t.Errorf("%s: stderr %q", name, stderr)
		}
	}
}

// TestExitStatus: a failed codex run exits 1 with --exit-status whatever
// the target, as adal-json's exit_code says; a run written to codex from
// another dialect keeps its failure.
func TestExitStatus(t *testing.T) {
	for _, name := range []string{"turn-failed.jsonl", "fatal-error.jsonl"} {
		in := formatstest.Fixture(t, "codex", name)
		_, obj, _ := codexRun(in, "--to", "adal-json")
		obj = formatstest.OneLine(obj)
		if !strings.Contains(obj, `"exit_code":1`) || !strings.Contains(obj, `"success":false`) {
			t.Errorf("%s → adal-json: %s", name, obj)
		}
		for _, to := range []string{"codex", "adal-json", "claude-stream"} {
			if code, _, stderr := codexRun(in, "--exit-status", "--to", to); code != 1 {
				t.Errorf("%s --exit-status --to %s: exit %d: %s", name, to, code, stderr)
			}
		}
	}
	in := formatstest.Fixture(t, "adal", "error-stream.ndjson")
	mid := converttest.Convert(t, in, "adal-stream", "codex")
	if code, _, _ := codexRun(mid, "--exit-status", "--from", "codex", "--to", "adal-json"); code != 1 {
		t.Errorf("adal-stream → codex → --exit-status: exit %d from\n%s", code, mid)
	}
}
