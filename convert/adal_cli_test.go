package convert_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/adal"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/goccy/go-json"
)

// These tests run the AdaL writers through the command line, so that they
// get the pipeline's run view, its losses and its copies of their own
// dialect.

// adalRun converts stdin with the command line and returns stdout and stderr;
// the conversion must exit 0.
func adalRun(t *testing.T, stdin string, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := convert.Run(append([]string{"agentconv", "--deterministic"}, args...), convert.Sys{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	return out.String(), errb.String()
}

func adalFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type object struct {
	Success   bool    `json:"success"`
	Answer    *string `json:"answer"`
	Error     *string `json:"error"`
	ExitCode  int     `json:"exit_code"`
	ToolCalls []struct {
		ID              string  `json:"id"`
		Status          string  `json:"status"`
		Output          *string `json:"output"`
		OutputTruncated bool    `json:"output_truncated"`
	} `json:"tool_calls"`
}

func objects(t *testing.T, out string) []object {
	t.Helper()
	var objs []object
	d := json.NewDecoder(strings.NewReader(out))
	for d.More() {
		var o object
		if err := d.Decode(&o); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		objs = append(objs, o)
	}
	return objs
}

// types lists the types of an adal-stream output's lines, with the call id
// of a tool line and the exit code of complete.
func types(t *testing.T, out string) string {
	t.Helper()
	var ts []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct {
			Type     string `json:"type"`
			ID       string `json:"id"`
			ExitCode *int   `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		switch {
		case v.ExitCode != nil:
			ts = append(ts, v.Type+"="+strconv.Itoa(*v.ExitCode))
		case v.ID != "":
			ts = append(ts, v.Type+":"+v.ID)
		default:
			ts = append(ts, v.Type)
		}
	}
	return strings.Join(ts, " ")
}

// adal-json has one error field: the run's failure goes there, and every
// other error is reported lost, from adal-stream (its own family) too.
func TestJSONErrorIsTheFailureAndOtherErrorsAreLost(t *testing.T) {
	in := `{"type":"error","message":"rate limited, retrying"}
{"type":"error","message":"model error: overloaded"}
{"type":"complete","exit_code":1}
{"type":"error","message":"a transient error"}
{"type":"answer","content":"done anyway"}
{"type":"complete","exit_code":0}
`
	out, stderr := adalRun(t, in, "--to", "adal-json")
	objs := objects(t, out)
	if len(objs) != 2 {
		t.Fatalf("%d objects:\n%s", len(objs), out)
	}
	if o := objs[0]; o.Success || o.ExitCode != 1 || o.Error == nil || *o.Error != "model error: overloaded" {
		t.Errorf("failed run written as %+v", o)
	}
	if o := objs[1]; !o.Success || o.Error != nil || o.Answer == nil || *o.Answer != "done anyway" {
		t.Errorf("succeeded run written as %+v", o)
	}
	if !strings.Contains(stderr, "lost: 2 × errors besides the run's failure (adal-json cannot carry them)") {
		t.Errorf("the other errors are not reported:\n%s", stderr)
	}
}

// adal-stream from another dialect: a refusal that the run went on after
// and then succeeded is a failed tool_result (permission_denied would say
// that the run stopped), and is reported.
func TestStreamRefusalInARunThatSucceeded(t *testing.T) {
	out, stderr := adalRun(t, adalFixture(t, "malac/two-runs.jsonl"), "--to", "adal-stream")
	want := "tool_call:r1c1 tool_result:r1c1 answer complete=1 " +
		"tool_call:r2c1 tool_result:r2c1 tool_call:r2c2 tool_result:r2c2 answer complete=0"
	if got := types(t, out); got != want {
		t.Errorf("lines\n%s\nwant\n%s\n%s", got, want, out)
	}
	if !strings.Contains(out, `{"type":"tool_result","id":"r2c1","name":"bash","status":"failed","output":"Permission denied by user"}`) {
		t.Errorf("the refused call is not a failed result:\n%s", out)
	}
	if !strings.Contains(stderr, "lost: 1 × refusals in runs that went on after them (written as failed tool calls)") {
		t.Errorf("the refusal is not reported:\n%s", stderr)
	}
	// And it reads back as the run it was: the second succeeded.
	back := objects(t, first(adalRun(t, out, "--from", "adal-stream", "--to", "adal-json")))
	if len(back) != 2 || back[0].Success || !back[1].Success || back[1].ExitCode != 0 {
		t.Errorf("read back as %+v", back)
	}
}

// A run that stopped on a refusal ends with permission_denied and
// complete with exit code 2, with no answer in between; a run that went
// on after a refusal, even to fail later, gets the call as a failed
// tool_result, written as soon as the next line shows that it went on.
func TestStreamStopsAtRefusal(t *testing.T) {
	in := `{"success":false,"answer":"I could not clean up.","error":"rm needs approval","exit_code":2,"tool_calls":[{"id":"c1","name":"ls","args":{},"status":"completed","output":"a"},{"id":"c2","name":"bash","args":{"command":"rm -rf a"},"status":"denied"}]}`
	out, stderr := adalRun(t, in, "--to", "adal-stream")
	// AdaL prints a refused call's tool_call before permission_denied.
	if got, want := types(t, out), "tool_call:c1 tool_result:c1 tool_call:c2 permission_denied:c2 complete=2"; got != want {
		t.Errorf("lines %q, want %q:\n%s", got, want, out)
	}
	if !strings.Contains(stderr, "lost: 1 × answers after the refusal a run stopped at") {
		t.Errorf("the dropped answer is not reported:\n%s", stderr)
	}

	out, _ = adalRun(t, adalFixture(t, "malac/denied.jsonl"), "--to", "adal-stream")
	if got := types(t, out); !strings.HasSuffix(got, "permission_denied:c2 complete=2") {
		t.Errorf("lines %q:\n%s", got, out)
	}

	out, stderr = adalRun(t, adalFixture(t, "malac/refused-then-failed.jsonl"), "--to", "adal-stream")
	if got, want := types(t, out), "tool_call:p1 tool_result:p1 tool_call:p2 tool_result:p2 answer complete=1"; got != want {
		t.Errorf("lines %q, want %q:\n%s", got, want, out)
	}
	if !strings.Contains(stderr, "lost: 1 × refusals in runs that went on after them") {
		t.Errorf("the refusal written as a failed call is not reported:\n%s", stderr)
	}
}

// An error of a run that succeeded is written by adal-stream and printed by
// adal-text.
func TestErrorOfASucceededRunIsKept(t *testing.T) {
	in := `{"agent":"s","seq":1,"type":"agent_started","label":"malac","parent":null}
{"agent":"s","seq":2,"type":"notice","level":"error","message":"index stale, rebuilt"}
{"agent":"s","seq":3,"type":"turn_finished","status":"completed","text":"All good."}
`
	out, _ := adalRun(t, in, "--from", "malac", "--to", "adal-stream")
	if got, want := types(t, out), "error answer complete=0"; got != want {
		t.Errorf("lines %q, want %q:\n%s", got, want, out)
	}
	out, stderr := adalRun(t, in, "--from", "malac", "--to", "adal-text")
	if out != "All good.\n" || !strings.HasPrefix(stderr, "index stale, rebuilt\n") {
		t.Errorf("stdout %q, stderr %q", out, stderr)
	}
}

// --adal-preview-chars sets the size past which adal-json and adal-stream
// keep AdaL's preview of a tool's output; 0 keeps every output whole.
func TestPreviewCharsFlag(t *testing.T) {
	big := strings.Repeat("x", 5000)
	in := `{"type":"tool_call","id":"c1","name":"bash","args":{}}` + "\n" +
		`{"type":"tool_result","id":"c1","name":"bash","status":"completed","output":"` + big + `"}` + "\n" +
		`{"type":"complete","exit_code":0,"session_id":null,"model":null}` + "\n"
	want := strings.Repeat("x", 2000) + "\n... (2000 characters omitted) ...\n" + strings.Repeat("x", 1000)
	for _, to := range []string{"adal-json", "adal-stream"} {
		in := in
		if to == "adal-stream" {
			// adal-stream copies AdaL's own lines: its outputs are AdaL's.
			in = first(adalRun(t, in, "--to", "adal-json", "--adal-preview-chars", "0"))
		}
		out, stderr := adalRun(t, in, "--to", to, "--adal-preview-chars", "4000")
		if !strings.Contains(out, strings.ReplaceAll(want, "\n", `\n`)) {
			t.Errorf("%s: no preview of 2,000 and 1,000 characters:\n%.300s", to, out)
		}
		if !strings.Contains(stderr, "lost: 1 × tool outputs past AdaL's preview size") {
			t.Errorf("%s: preview not reported:\n%s", to, stderr)
		}
		out, stderr = adalRun(t, in, "--to", to, "--adal-preview-chars", "0")
		if !strings.Contains(out, big) || strings.Contains(stderr, "lost:") {
			t.Errorf("%s: --adal-preview-chars 0 cut the output:\n%s", to, stderr)
		}
		// The default is AdaL's 30,000 characters.
		if out, _ := adalRun(t, in, "--to", to); !strings.Contains(out, big) {
			t.Errorf("%s cut an output of 5,000 characters", to)
		}
	}
	if adal.JSON.Params[0].Flag != "adal-preview-chars" || adal.Stream.Params[0].Flag != "adal-preview-chars" {
		t.Errorf("flags %q %q", adal.JSON.Params[0].Flag, adal.Stream.Params[0].Flag)
	}
}

// adal-json → adal-json gives each object back as it came, once, even
// pretty-printed, and loses nothing.
func TestJSONCopiesItsOwnObjects(t *testing.T) {
	in := "{\n  \"success\": true, \"answer\": \"done\", \"error\": null, \"exit_code\": 0,\n  \"tool_calls\": [{\"id\":\"c1\",\"name\":\"ls\",\"args\":{},\"status\":\"completed\",\"output\":\"a\"}]\n}\n" +
		`{"success":false,"answer":null,"error":"boom","exit_code":1,"extra":"kept","tool_calls":[]}` + "\n"
	out, stderr := adalRun(t, in, "--to", "adal-json")
	if out != in {
		t.Errorf("adal-json → adal-json changed the objects:\n%s\nwant\n%s", out, in)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
}

func first(a, _ string) string { return a }

// AdaL 1.8.6's file tools return an object as their output: adal-json and
// adal-stream read it and keep it as the object it is, from either to
// either; other targets get its JSON text and report it.
func TestObjectOutputs(t *testing.T) {
	stream := adalFixture(t, "agents/adal/1.8.6/edit/stream-json/stdout.ndjson")
	object := adalFixture(t, "agents/adal/1.8.6/edit/json/stdout.json")
	const value = `{"success":true,"llmContent":"Created: (+1).","resultDisplay":{"fileDiff":"--- Current\n+++ Proposed\n@@ -0,0 +1 @@\n+agentconv wrote this\n","fileName":"notes.txt","statusMessage":"Created: (+1)."},"error":null}`
	for name, in := range map[string]string{"stream": stream, "object": object} {
		for _, to := range []string{"adal-json", "adal-stream"} {
			out, stderr := adalRun(t, in, "--to", to)
			if !strings.Contains(formatstest.OneLine(out), `"output":`+value) {
				t.Errorf("%s → %s lost the object:\n%s", name, to, out)
			}
			if strings.Contains(stderr, "warning") || strings.Contains(stderr, "lost") {
				t.Errorf("%s → %s: %s", name, to, stderr)
			}
		}
		out, stderr := adalRun(t, in, "--to", "claude-stream")
		if !strings.Contains(out, `Created: (+1).`) || !strings.Contains(stderr, "lost: 1 × tool outputs that are JSON values (written as their JSON text)") {
			t.Errorf("%s → claude-stream: %s", name, stderr)
		}
	}
	evs := formatstest.Read(t, adal.JSON, object)
	for _, e := range evs {
		if e.Kind == formats.ToolResult && (string(e.Call.Output.Value()) != value || e.Call.Output.Text() != value) {
			t.Errorf("read as %q / %q", e.Call.Output.Value(), e.Call.Output.Text())
		}
	}
}

// A run stopped at a refused call, as AdaL prints it (the tool_call, then
// permission_denied): adal-text prints the refusal and does not report it
// lost; the call counts once among the lost tool calls.
func TestTextPrintsTheRefusalItStoppedAt(t *testing.T) {
	in := `{"type":"tool_call","id":"c1","name":"bash","args":{"command":"rm -rf a"}}` + "\n" +
		`{"type":"permission_denied","id":"c1","name":"bash","args":{"command":"rm -rf a"},"reason":"bash needs approval"}` + "\n" +
		`{"type":"complete","exit_code":2,"session_id":null,"model":null}` + "\n"
	_, stderr := adalRun(t, in, "--to", "adal-text")
	if !strings.Contains(stderr, "Stopped: bash needs approval\nRefused call: bash {\"command\":\"rm -rf a\"}\n") {
		t.Errorf("the refusal is not printed:\n%s", stderr)
	}
	if strings.Contains(stderr, "refusals") || !strings.Contains(stderr, "lost: 1 × tool calls") {
		t.Errorf("losses:\n%s", stderr)
	}
}
