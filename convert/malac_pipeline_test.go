package convert_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/malac"
)

// malacRun runs the command line in memory and returns its exit status,
// standard output and standard error.
func malacRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return converttest.Run(stdin, append([]string{"--deterministic"}, args...)...)
}

func malacFixture(t *testing.T, dir, name string) string {
	t.Helper()
	return string(formatstest.Fixture(t, dir, name))
}

// TestMalacSameDialectIsCopied: the pipeline copies malac back byte for byte,
// the update held before the run included, and the writer only observes.
func TestMalacSameDialectIsCopied(t *testing.T) {
	for _, name := range []string{"subagents.jsonl", "two-runs.jsonl", "denied.jsonl"} {
		in := malacFixture(t, "malac", name)
		if _, out, _ := malacRun(t, in, "--from", "malac", "--to", "malac"); out != in {
			t.Errorf("%s: malac → malac changed the input:\n%s", name, out)
		}
	}
}

// TestCopiedRunThenWrittenRun: lines the writer makes after a copied run
// go on after the copied lines' seq.
func TestCopiedRunThenWrittenRun(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "a.jsonl")
	second := filepath.Join(dir, "b.ndjson")
	in := malacFixture(t, "malac", "denied.jsonl")
	if err := os.WriteFile(first, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second, []byte(malacFixture(t, "adal", "seed-stream.ndjson")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, errs := malacRun(t, "", "--to", "malac", first, second)
	if !strings.HasPrefix(out, in) {
		t.Fatalf("the malac run was not copied first:\n%s\n%s", out, errs)
	}
	last := int64(0)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var env struct {
			Seq int64 `json:"seq"`
		}
		if err := json.Unmarshal([]byte(l), &env); err != nil || env.Seq <= last {
			t.Fatalf("seq %d after %d (%v) in\n%s", env.Seq, last, err, out)
		}
		last = env.Seq
	}
	evs := formatstest.Read(t, malac.Dialect, out)
	if n := len(formatstest.OfKind(evs, formats.RunEnd)); n != 2 {
		t.Errorf("%d runs read back, want 2", n)
	}
}

// outcomes are the success and exit code of each run of an adal-json
// output.
func outcomes(t *testing.T, adalJSON string) string {
	t.Helper()
	var s []string
	for _, l := range strings.Split(strings.TrimSpace(formatstest.OneLine(adalJSON)), "\n") {
		i := strings.Index(l, `"success":`)
		j := strings.Index(l, `"exit_code":`)
		if i < 0 || j < 0 {
			t.Fatalf("not an adal-json object: %s", l)
		}
		field := func(i int) string { return l[i : i+strings.IndexAny(l[i:], ",}")] }
		s = append(s, field(i)+" "+field(j))
	}
	return strings.Join(s, "; ")
}

// TestOutcomeSurvivesMalac: X → malac → adal-json gives each run the
// success and exit code of X → adal-json, exit codes malac's outcome does
// not imply (Gemini's 42 and 53, a failure after a refusal) included.
func TestOutcomeSurvivesMalac(t *testing.T) {
	for _, f := range [][2]string{
		{"gemini", "input-error.json"}, {"gemini", "error-result-stream.jsonl"},
		{"claude", "takopi-session.jsonl"}, {"adal", "refused-stream.ndjson"},
		{"adal", "cut-stream.ndjson"}, {"malac", "refused-then-failed.jsonl"},
	} {
		in := malacFixture(t, f[0], f[1])
		_, direct, _ := malacRun(t, in, "--to", "adal-json")
		_, viaMalac, _ := malacRun(t, in, "--to", "malac")
		_, back, _ := malacRun(t, viaMalac, "--from", "malac", "--to", "adal-json")
		if want, got := outcomes(t, direct), outcomes(t, back); want != got {
			t.Errorf("%s/%s: direct %s, through malac %s\n%s", f[0], f[1], want, got, viaMalac)
		}
	}
}

// A call's input is copied as it is when the reader checked that it is
// compact (adal-stream's scan), and compacted otherwise: the line is the
// encoder's either way.
func TestInputCompactedOnceChecked(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{`{"command":"ls \"a b\"","n":[1,2],"o":{"k":null}}`, `"input":{"command":"ls \"a b\"","n":[1,2],"o":{"k":null}}`},
		{`{ "command" : "ls \"a b\"" , "n": [1, 2] }`, `"input":{"command":"ls \"a b\"","n":[1,2]}`},
		{`{"s":"a  b\t"}`, `"input":{"s":"a  b\t"}`},
	} {
		in := `{"type":"tool_call","id":"c1","name":"bash","args":` + c.args + "}\n" +
			`{"type":"tool_result","id":"c1","name":"bash","status":"completed","output":"ok"}` + "\n" +
			`{"type":"complete","session_id":"s"}` + "\n"
		out := string(converttest.Convert(t, []byte(in), "adal-stream", "malac"))
		if !strings.Contains(out, c.want) {
			t.Errorf("args %s: want %s in\n%s", c.args, c.want, out)
		}
	}
}
