package adal_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats/adal"
	"github.com/goccy/go-json"
)

// These tests run the AdaL writers through the command line, so that they
// get the pipeline's run view, its losses and its copies of their own
// dialect.

// run converts stdin with the command line and returns stdout and stderr;
// the conversion must exit 0.
func run(t *testing.T, stdin string, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := convert.Run(append([]string{"agentconv", "--deterministic"}, args...), convert.Sys{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	return out.String(), errb.String()
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
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
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var o object
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("%v: %s", err, l)
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
	out, stderr := run(t, in, "--to", "adal-json")
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
	out, stderr := run(t, fixture(t, "malac/two-runs.jsonl"), "--to", "adal-stream")
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
	back := objects(t, first(run(t, out, "--from", "adal-stream", "--to", "adal-json")))
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
	out, stderr := run(t, in, "--to", "adal-stream")
	if got, want := types(t, out), "tool_call:c1 tool_result:c1 permission_denied:c2 complete=2"; got != want {
		t.Errorf("lines %q, want %q:\n%s", got, want, out)
	}
	if !strings.Contains(stderr, "lost: 1 × answers after the refusal a run stopped at") {
		t.Errorf("the dropped answer is not reported:\n%s", stderr)
	}

	out, _ = run(t, fixture(t, "malac/denied.jsonl"), "--to", "adal-stream")
	if got := types(t, out); !strings.HasSuffix(got, "permission_denied:c2 complete=2") {
		t.Errorf("lines %q:\n%s", got, out)
	}

	out, stderr = run(t, fixture(t, "malac/refused-then-failed.jsonl"), "--to", "adal-stream")
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
	out, _ := run(t, in, "--from", "malac", "--to", "adal-stream")
	if got, want := types(t, out), "error answer complete=0"; got != want {
		t.Errorf("lines %q, want %q:\n%s", got, want, out)
	}
	out, stderr := run(t, in, "--from", "malac", "--to", "adal-text")
	if out != "All good.\n" || !strings.HasPrefix(stderr, "index stale, rebuilt\n") {
		t.Errorf("stdout %q, stderr %q", out, stderr)
	}
}

// --adal-preview-bytes sets the size past which adal-json keeps a preview
// of a tool's output; 0 keeps every output whole.
func TestPreviewBytesFlag(t *testing.T) {
	seed := fixture(t, "adal/seed-stream.ndjson")
	out, stderr := run(t, seed, "--to", "adal-json", "--adal-preview-bytes", "10")
	calls := objects(t, out)[0].ToolCalls
	if len(calls) != 2 || !calls[0].OutputTruncated || calls[0].Output == nil || *calls[0].Output != "src/app.ts" {
		t.Errorf("preview of 10 bytes: %+v", calls)
	}
	if !strings.Contains(stderr, "lost: 2 × tool outputs past the adal-json preview size (kept as a preview)") {
		t.Errorf("previews not reported:\n%s", stderr)
	}
	out, stderr = run(t, seed, "--to", "adal-json", "--adal-preview-bytes", "0")
	for _, c := range objects(t, out)[0].ToolCalls {
		if c.OutputTruncated {
			t.Errorf("--adal-preview-bytes 0 truncated %s", c.ID)
		}
	}
	if strings.Contains(stderr, "lost:") {
		t.Errorf("losses without previews:\n%s", stderr)
	}
	if adal.JSON.Params[0].Flag != "adal-preview-bytes" {
		t.Errorf("flag %q", adal.JSON.Params[0].Flag)
	}
}

// adal-json → adal-json gives each object back as it came, once, even
// pretty-printed, and loses nothing.
func TestJSONCopiesItsOwnObjects(t *testing.T) {
	in := "{\n  \"success\": true, \"answer\": \"done\", \"error\": null, \"exit_code\": 0,\n  \"tool_calls\": [{\"id\":\"c1\",\"name\":\"ls\",\"args\":{},\"status\":\"completed\",\"output\":\"a\"}]\n}\n" +
		`{"success":false,"answer":null,"error":"boom","exit_code":1,"extra":"kept","tool_calls":[]}` + "\n"
	out, stderr := run(t, in, "--to", "adal-json")
	if out != in {
		t.Errorf("adal-json → adal-json changed the objects:\n%s\nwant\n%s", out, in)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
}

func first(a, _ string) string { return a }
