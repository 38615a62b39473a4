package convert

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// oracles is where the formats' own definitions are: ../shared/oracles
// beside the clone.
var oracles = filepath.Join("..", "..", "shared", "oracles")

// needOracle skips a test whose oracle cannot run here, except under CI,
// where a missing oracle is a failure.
func needOracle(t *testing.T, why string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v", why, err)
	}
	t.Skipf("%s (%v); CI runs it", why, err)
}

// atifValidate runs the ATIF validator in ../shared/oracles (written from
// the format's RFC) on files, in one Python process, and returns the files it
// rejects with their errors.
func atifValidate(t *testing.T, files []string) map[string]string {
	t.Helper()
	script := filepath.Join(oracles, "atif", "validate.py")
	if _, err := os.Stat(script); err != nil {
		needOracle(t, "the ATIF validator is not in ../shared/oracles", err)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		needOracle(t, "no python3 for the ATIF validator", err)
	}
	if out, err := exec.Command(py, "-c", "import jsonschema").CombinedOutput(); err != nil {
		needOracle(t, "no jsonschema for the ATIF validator", fmt.Errorf("%v: %s", err, out))
	}
	cmd := exec.Command(py, append([]string{script, "--json"}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var verdicts struct {
		Files []struct {
			File   string `json:"file"`
			Valid  bool   `json:"valid"`
			Errors []struct {
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"errors"`
		} `json:"files"`
	}
	if jerr := formats.Unmarshal(0, out, &verdicts); jerr != nil {
		t.Fatalf("the ATIF validator failed to run: %v (%v): %s", err, jerr, stderr.String())
	}
	if len(verdicts.Files) != len(files) {
		t.Fatalf("the ATIF validator gave %d verdicts for %d files: %s", len(verdicts.Files), len(files), stderr.String())
	}
	bad := map[string]string{}
	for _, f := range verdicts.Files {
		if f.Valid {
			continue
		}
		var errs []string
		for _, e := range f.Errors {
			errs = append(errs, e.Path+": "+e.Message)
		}
		bad[f.File] = strings.Join(errs, "; ")
	}
	return bad
}

// TestATIFValidates: every trajectory written from every fixture passes
// the ATIF validator.
func TestATIFValidates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var files []string
	from := map[string]string{}
	for _, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		out, _ := convertTo(t, readFixture(t, in), "", "atif")
		values := formats.NewValueReader(strings.NewReader(out))
		for i := 1; ; i++ {
			doc, _, err := values.Next()
			if err != nil {
				break
			}
			f := filepath.Join(dir, fmt.Sprintf("%s.%d.json", strings.ReplaceAll(rel, string(filepath.Separator), "_"), i))
			if err := os.WriteFile(f, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
			from[f] = fmt.Sprintf("%s, run %d", rel, i)
		}
	}
	if len(files) < len(fixtures(t)) {
		t.Fatalf("only %d trajectories from %d fixtures", len(files), len(fixtures(t)))
	}
	for f, errs := range atifValidate(t, files) {
		t.Errorf("%s: the ATIF validator rejects the trajectory: %s", from[f], errs)
	}
	t.Logf("%d trajectories from %d fixtures validated", len(files), len(fixtures(t)))
}

// TestATIFValidatorRejects: the oracle can fail: a trajectory without a
// schema version, or with a result for a call of another step, is rejected.
func TestATIFValidatorRejects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := map[string]string{
		"no-version.json":   `{"session_id":"s","agent":{"name":"a","version":""},"steps":[{"step_id":1,"source":"user","message":"hi"}]}`,
		"foreign-call.json": `{"schema_version":"ATIF-v1.7","agent":{"name":"a","version":""},"steps":[{"step_id":1,"source":"agent","message":"","observation":{"results":[{"source_call_id":"nope","content":"x"}]}}]}`,
	}
	var files []string
	for name, doc := range bad {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if got := atifValidate(t, files); len(got) != len(bad) {
		t.Errorf("the validator rejected %d of %d invalid trajectories: %v", len(got), len(bad), got)
	}
}

// TestATIFRewrittenValidates: the real trajectories in testdata/atif, taken
// through other dialects and written again as atif (by the writer, not
// copied), pass the ATIF validator and keep every tool call.
func TestATIFRewrittenValidates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var files []string
	from := map[string]string{}
	ins, _ := filepath.Glob(filepath.Join("..", "testdata", "atif", "*.json"))
	if len(ins) < 5 {
		t.Fatalf("only %d trajectories in testdata/atif", len(ins))
	}
	for _, in := range ins {
		data := readFixture(t, in)
		calls := strings.Count(data, `"tool_call_id"`)
		for _, via := range []string{"acp", "claude-stream", "codex", "malac"} {
			mid, _ := convertTo(t, data, "atif", via)
			back, _ := convertTo(t, mid, via, "atif")
			if got := strings.Count(back, `"tool_call_id"`); got != calls {
				t.Errorf("%s → %s → atif: %d tool calls, the file has %d", filepath.Base(in), via, got, calls)
			}
			f := filepath.Join(dir, filepath.Base(in)+"."+via+".json")
			if err := os.WriteFile(f, []byte(back), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
			from[f] = filepath.Base(in) + " through " + via
		}
	}
	for f, errs := range atifValidate(t, files) {
		t.Errorf("%s: the ATIF validator rejects the trajectory: %s", from[f], errs)
	}
}
