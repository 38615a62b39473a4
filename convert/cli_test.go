package convert

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
)

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCommandLine(t *testing.T) {
	seed := readFixture(t, "adal/seed-stream.ndjson")
	tests := []struct {
		name       string
		stdin      string
		args       []string
		code       int
		stdoutHas  []string
		stderrHas  []string
		stdoutNot  []string
		stdoutLine int // expected number of output lines, -1: any
	}{
		{name: "no --to", args: []string{"--from", "adal-stream", "x"}, code: ExitUsage, stderrHas: []string{"--to is required", "adal-json"}, stdoutLine: -1},
		{name: "unknown target", args: []string{"--to", "nope"}, code: ExitUsage, stderrHas: []string{`cannot write "nope"`, "adal-stream"}, stdoutLine: -1},
		{name: "unknown source", args: []string{"--from", "nope", "--to", "adal-json"}, code: ExitUsage, stderrHas: []string{`cannot read "nope"`}, stdoutLine: -1},
		{name: "bad flag", args: []string{"--bogus"}, code: ExitUsage, stderrHas: []string{"bogus"}, stdoutLine: -1},
		{name: "lenient and strict", args: []string{"--to", "adal-json", "--lenient", "--strict"}, code: ExitUsage, stderrHas: []string{"contradict"}, stdoutLine: -1},
		{name: "missing file", args: []string{"--to", "adal-json", "no-such-file.ndjson"}, code: ExitInput, stderrHas: []string{"no-such-file.ndjson"}, stdoutLine: -1},
		{name: "formats", args: []string{"formats"}, code: ExitOK, stdoutHas: []string{"DIALECT", "adal-stream", "adal-json", "adal-text"}, stdoutLine: -1},
		{name: "formats --losses", args: []string{"formats", "--losses"}, code: ExitOK, stdoutHas: []string{"adal-json:\n", "  thinking text\n", "  tool outputs past AdaL's preview size (kept as AdaL's preview: the first 2,000 and the last 1,000 characters)\n"}, stdoutLine: -1},
		{name: "stdin detected", stdin: seed, args: []string{"--to", "adal-json"}, code: ExitOK, stdoutHas: []string{`"success":true`, `"answer":"Fixed 3 lint errors`}, stdoutLine: 1},
		{name: "dash is stdin", stdin: seed, args: []string{"--to", "adal-json", "-"}, code: ExitOK, stdoutHas: []string{`"exit_code":0`}, stdoutLine: 1},
		{name: "undetectable", stdin: "{\"hello\":1}\n", args: []string{"--to", "adal-json"}, code: ExitInput, stderrHas: []string{"<stdin>:1:", "cannot tell which dialect", "--from", "adal-stream"}, stdoutLine: 0},
		{name: "empty input", stdin: "", args: []string{"--to", "adal-json"}, code: ExitOK, stdoutLine: 0},
		{
			name:  "malformed line stops with FILE:LINE, keeps what came before",
			stdin: seed + "{not json\n" + seed,
			args:  []string{"--from", "adal-stream", "--to", "adal-json"}, code: ExitInput,
			stdoutHas: []string{`"success":true`}, stderrHas: []string{"<stdin>:7:", "not valid JSON", "--lenient"}, stdoutLine: 1,
		},
		{
			name:  "malformed line inside a run closes it as cut",
			stdin: "{\"type\":\"tool_call\",\"id\":\"a\",\"name\":\"bash\",\"args\":{}}\n{oops\n",
			args:  []string{"--from", "adal-stream", "--to", "adal-json"}, code: ExitInput,
			stdoutHas: []string{`"success":false`, `"status":"cancelled"`}, stderrHas: []string{"<stdin>:2:"}, stdoutLine: 1,
		},
		{
			name:  "lenient skips and counts",
			stdin: seed + "{not json\n\x00\x01garbage\n" + seed,
			args:  []string{"--from", "adal-stream", "--to", "adal-json", "--lenient"}, code: ExitOK,
			stderrHas: []string{"skipped 2 malformed line(s): <stdin>:7, <stdin>:8"}, stdoutLine: 2,
		},
		{
			name:  "exit-status gives the run's code",
			stdin: readFixture(t, "adal/refused-stream.ndjson"),
			args:  []string{"--to", "adal-json", "--exit-status"}, code: 2, stdoutHas: []string{`"status":"denied"`}, stdoutLine: 1,
		},
		{
			name:  "strict fails on a loss",
			stdin: seed,
			args:  []string{"--to", "adal-text", "--strict"}, code: ExitLoss, stderrHas: []string{"--strict: adal-text cannot carry tool calls"}, stdoutLine: -1,
		},
		{
			name:  "losses are reported",
			stdin: seed,
			args:  []string{"--to", "adal-text"}, code: ExitOK, stdoutHas: []string{"Fixed 3 lint errors"}, stderrHas: []string{"lost: 2 × tool calls (adal-text cannot carry them)"}, stdoutLine: 1,
		},
		{
			name:  "from names the wrong dialect",
			stdin: seed,
			args:  []string{"--from", "adal-json", "--to", "adal-text"}, code: ExitInput, stderrHas: []string{"none of the first events is adal-json", "looks like adal-stream"}, stdoutLine: 0,
		},
		{
			name:  "several completes are several objects",
			stdin: readFixture(t, "adal/multi-run-stream.ndjson"),
			args:  []string{"--to", "adal-json"}, code: ExitOK, stdoutLine: 3,
		},
		{
			name:  "cut stream becomes a failed run with a warning",
			stdin: readFixture(t, "adal/cut-stream.ndjson"),
			args:  []string{"--to", "adal-json"}, code: ExitOK,
			stdoutHas: []string{`"status":"cancelled"`, `"error":"the stream was cut before the run completed"`, `"exit_code":1}`},
			stderrHas: []string{"ended before its run completed"}, stdoutLine: 1,
		},
		{
			// The same dialect gets the stream as it came: the agent never
			// printed an end, so none is made up; the warning says it.
			name:  "cut stream into its own dialect is not closed with lines the agent never printed",
			stdin: readFixture(t, "adal/cut-stream.ndjson"),
			args:  []string{"--to", "adal-stream"}, code: ExitOK,
			stdoutHas: []string{`{"type":"tool_call","id":"c2"`},
			stderrHas: []string{"ended before its run completed"}, stdoutLine: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.stdin, tc.args...)
			if slices.Contains(tc.args, "adal-json") {
				// AdaL pretty-prints its object: one line each here.
				stdout = formatstest.OneLine(stdout)
			}
			if code != tc.code {
				t.Errorf("exit status %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			for _, s := range tc.stdoutHas {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stdoutNot {
				if strings.Contains(stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stderrHas {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tc.stdoutLine >= 0 {
				if n := strings.Count(stdout, "\n"); n != tc.stdoutLine {
					t.Errorf("%d output lines, want %d:\n%s", n, tc.stdoutLine, stdout)
				}
			}
		})
	}
}

func TestOutputFileIsRenamedIntoPlace(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	code, _, stderr := runCLI("", "--to", "adal-json", "-o", out, filepath.Join("..", "testdata", "adal", "seed-stream.ndjson"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(formatstest.OneLine(string(b)), `"success":true`) {
		t.Fatalf("output %q, %v", b, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestUnwritableOutput(t *testing.T) {
	code, _, stderr := runCLI("", "--to", "adal-json", "-o", filepath.Join(t.TempDir(), "no", "such", "dir", "out.json"),
		filepath.Join("..", "testdata", "adal", "seed-stream.ndjson"))
	if code != ExitOutput || !strings.Contains(stderr, "cannot write") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestSameDialectRoundTrip: X → X gives every line back unchanged, for
// every fixture whose dialect can be written.
func TestSameDialectRoundTrip(t *testing.T) {
	for _, in := range fixtures(t) {
		b, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		s := sniff(b)
		d := s.d
		if s.score == 0 || d.NewWriter == nil || d.Remote {
			continue
		}
		t.Run(filepath.Base(in), func(t *testing.T) {
			code, stdout, stderr := runCLI(string(b), "--from", d.Name, "--to", d.Name)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if strings.Contains(stderr, "lost:") {
				t.Errorf("a same-dialect conversion reported losses:\n%s", stderr)
			}
			// Lines that are not JSON before the stream are not given back.
			if want := normalize(string(b[s.skip:])); normalize(stdout) != want {
				t.Errorf("%s → %s changed the input:\n%s", d.Name, d.Name, diff(want, normalize(stdout)))
			}
		})
	}
}

// normalize drops what a same-dialect conversion may legitimately change:
// blank lines, CRs and a BOM.
func normalize(s string) string {
	s = strings.TrimPrefix(s, "\ufeff")
	var keep []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestJSONStreamJSON: adal-json → adal-stream → adal-json gives the same
// objects.
func TestJSONStreamJSON(t *testing.T) {
	for _, f := range []string{"adal/multi-run-stream.ndjson", "adal/old-variant-stream.ndjson", "adal/cut-stream.ndjson"} {
		t.Run(f, func(t *testing.T) {
			_, objs, _ := runCLI(readFixture(t, f), "--to", "adal-json")
			code, stream, stderr := runCLI(objs, "--from", "adal-json", "--to", "adal-stream")
			if code != 0 {
				t.Fatalf("json → stream: exit %d: %s", code, stderr)
			}
			code, back, stderr := runCLI(stream, "--from", "adal-stream", "--to", "adal-json")
			if code != 0 {
				t.Fatalf("stream → json: exit %d: %s", code, stderr)
			}
			if back != objs {
				t.Errorf("json → stream → json changed the objects:\n%s", diff(objs, back))
			}
		})
	}
}

type fullDisk struct{}

func (fullDisk) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

func TestFullDisk(t *testing.T) {
	var errb strings.Builder
	code := Run([]string{"agentconv", "--to", "adal-stream", filepath.Join("..", "testdata", "adal", "seed-stream.ndjson")},
		Sys{Stdin: strings.NewReader(""), Stdout: fullDisk{}, Stderr: &errb})
	if code != ExitOutput || !strings.Contains(errb.String(), "no space left on device") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func TestFlagsAfterFiles(t *testing.T) {
	f := filepath.Join("..", "testdata", "adal", "seed-stream.ndjson")
	code, out, stderr := runCLI("", f, "--to", "adal-json", "--exit-status")
	if code != 0 || !strings.Contains(formatstest.OneLine(out), `"success":true`) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// "--" ends the flags: a file may start with a dash.
	code, _, stderr = runCLI("", "--to", "adal-json", "--", "-no-such-file")
	if code != ExitInput || !strings.Contains(stderr, "-no-such-file") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// TestHelpValueNames: every flag in every --help shows at most one value
// name after it. urfave/cli takes the first backquoted text of a flag's
// usage as its value's name, and a command line quoted in backquotes
// (`--null` once did) printed as a sentence in place of the value.
func TestHelpValueNames(t *testing.T) {
	flagLine := regexp.MustCompile(`^\s+(-{1,2}\S.*?)(\s{2,}|$)`)
	// A value name is one word; a flag that may repeat shows it again in [ ].
	part := regexp.MustCompile(`^(-{1,2}[A-Za-z0-9][\w-]*)( [A-Z][A-Z_=]*| value)?( \[ (-{1,2}[A-Za-z0-9][\w-]*)( [A-Z][A-Z_=]*| value)? \])?$`)
	for _, args := range [][]string{{"--help"}, {"sessions", "--help"}, {"formats", "--help"}, {"generate", "--help"}} {
		code, out, errOut := runCLI("", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		n := 0
		for _, line := range strings.Split(out, "\n") {
			m := flagLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			n++
			for _, p := range strings.Split(m[1], ", ") {
				if !part.MatchString(p) {
					t.Errorf("%v: flag %q shows more than a value name: %q", args, m[1], p)
				}
			}
		}
		if n == 0 {
			t.Errorf("%v: no flag lines in the help:\n%s", args, out)
		}
	}
}
