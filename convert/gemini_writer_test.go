package convert_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// geminiRun converts in with the command line and returns its exit status,
// output and the loss lines on stderr.
func geminiRun(t *testing.T, in []byte, from, to string) (int, string, []string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := convert.Run([]string{"agentconv", "--deterministic", "--from", from, "--to", to}, convert.Sys{
		Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	var lost []string
	for _, l := range strings.Split(errb.String(), "\n") {
		if what, ok := strings.CutPrefix(l, "agentconv: lost: "); ok {
			lost = append(lost, strings.TrimSuffix(what, " ("+to+" cannot carry them)"))
		}
	}
	return code, out.String(), lost
}

func sameLosses(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: losses\n got %q\nwant %q", what, got, want)
	}
}

// TestSameFamilyLosses: gemini-stream → gemini-json reports what
// gemini-json cannot carry, as any other pair does.
func TestSameFamilyLosses(t *testing.T) {
	in := formatstest.Fixture(t, "gemini", "tools-stream.jsonl")
	code, out, lost := geminiRun(t, in, "gemini-stream", "gemini-json")
	if code != 0 || !strings.Contains(out, `"response": "There are 2 Go files with 65 lines in all."`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// Three calls (of two events each: a call counts once), fifteen timed
	// lines, the prompt, the run's duration, and the first message, which
	// is not the answer.
	sameLosses(t, "gemini-stream → gemini-json", lost,
		"1 × assistant messages besides the answer",
		"15 × event timestamps",
		"1 × run durations",
		"3 × tool calls",
		"1 × user prompts")

	in = formatstest.Fixture(t, "gemini", "error-result-stream.jsonl")
	_, out, lost = geminiRun(t, in, "gemini-stream", "gemini-json")
	if !strings.Contains(out, `"code": 53`) || !strings.Contains(out, `"message": "Reached max session turns`) {
		t.Errorf("the failed run is not kept:\n%s", out)
	}
	// The API error notice is not the run's error, which is all that
	// gemini-json keeps of errors.
	sameLosses(t, "gemini-stream → gemini-json", lost,
		"1 × error notices besides the run's error",
		"7 × event timestamps",
		"1 × tool calls",
		"1 × user prompts")
}

// TestCopied: a gemini-stream or gemini-json input written to its own
// dialect is copied as it is, with no loss, and a cut stream gets no
// result line that Gemini never printed.
func TestCopied(t *testing.T) {
	for _, c := range []struct{ name, dialect string }{
		{"tools-stream.jsonl", "gemini-stream"}, {"error-result-stream.jsonl", "gemini-stream"},
		{"response.json", "gemini-json"}, {"input-error.json", "gemini-json"},
	} {
		in := formatstest.Fixture(t, "gemini", c.name)
		_, out, lost := geminiRun(t, in, c.dialect, c.dialect)
		if want := strings.TrimSpace(string(in)) + "\n"; out != want {
			t.Errorf("%s is not copied:\n%s", c.name, out)
		}
		sameLosses(t, c.name, lost)
	}
	in := formatstest.Fixture(t, "gemini", "tools-stream.jsonl")
	lines := strings.SplitAfter(string(in), "\n")
	cut := strings.Join(lines[:6], "") // the run stops after its first call
	code, out, lost := geminiRun(t, []byte(cut), "gemini-stream", "gemini-stream")
	if code != 0 || out != cut {
		t.Errorf("a cut stream: exit %d, output\n%s\nwant\n%s", code, out, cut)
	}
	sameLosses(t, "cut", lost)
}

// TestStreamOutcome: the result line gives the run view's outcome: a run
// that failed without a message says the view's failure, and an exit code
// that Gemini's error types cannot give back is reported, unless the
// refusal the run stopped on gives it back.
func TestStreamOutcome(t *testing.T) {
	refused := `{"type":"tool_call","id":"t1","name":"rm","args":{}}
{"type":"permission_denied","id":"t1","name":"rm","args":{},"reason":"no"}
{"type":"complete","exit_code":2}
`
	_, out, lost := geminiRun(t, []byte(refused), "adal-stream", "gemini-stream")
	if !strings.Contains(out, `"status":"error","error":{"type":"Error","message":"no"}`) {
		t.Errorf("refused run:\n%s", out)
	}
	sameLosses(t, "refused", lost)
	code, _, _ := runExit(t, out)
	if code != 2 {
		t.Errorf("the refused run reads back with exit code %d", code)
	}

	odd := `{"type":"error","message":"boom"}
{"type":"complete","exit_code":7}
`
	_, out, lost = geminiRun(t, []byte(odd), "adal-stream", "gemini-stream")
	if !strings.Contains(out, `"error":{"type":"Error","message":"boom"}`) {
		t.Errorf("failed run:\n%s", out)
	}
	sameLosses(t, "exit 7", lost, "1 × exit codes Gemini CLI does not use")
}

// runExit reads a gemini-stream output back with --exit-status.
func runExit(t *testing.T, stream string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := convert.Run([]string{"agentconv", "--exit-status", "--from", "gemini-stream", "--to", "adal-json"}, convert.Sys{
		Stdin: strings.NewReader(stream), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}
