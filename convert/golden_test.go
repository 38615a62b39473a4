package convert

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the current output")

// fixtures lists every input fixture: the files under testdata/ outside
// golden/, the fuzz corpora, the benchmarks and agents/ (the agents'
// captures, which convert/agenttest checks).
func fixtures(t testing.TB) []string {
	t.Helper()
	var out []string
	root := filepath.Join("..", "testdata")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "golden" || d.Name() == "fuzz" || d.Name() == "bench" || d.Name() == "agents") {
			return filepath.SkipDir
		}
		if !d.IsDir() && !strings.HasPrefix(d.Name(), ".") && !strings.HasSuffix(d.Name(), ".md") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runCLI runs the command line in memory and returns its exit status,
// standard output and standard error.
func runCLI(stdin string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(append([]string{"agentconv"}, args...), Sys{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" },
	})
	return code, out.String(), errb.String()
}

// TestGolden converts every fixture into every local dialect, with the
// input's dialect detected, and compares exit status, output and stderr
// with testdata/golden/<fixture>/<dialect>.golden. Run with -update to
// rewrite them, then review the diff.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		for _, to := range Writable() {
			if to.Remote {
				continue
			}
			t.Run(rel+"→"+to.Name, func(t *testing.T) {
				code, stdout, stderr := runCLI("", "--deterministic", "--to", to.Name, in)
				got := fmt.Sprintf("exit: %d\n--- stdout\n%s--- stderr\n%s", code, stdout, stderr)
				for _, what := range undeclared(to, stderr) {
					t.Errorf("%s reports %q, which its row does not declare", to.Name, what)
				}
				golden := filepath.Join("..", "testdata", "golden", rel, to.Name+".golden")
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("no golden file (run go test ./convert -run TestGolden -update): %v", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from the golden file %s:\n%s", rel, golden, diff(string(want), got))
				}
			})
		}
	}
}

// diff shows the first lines where two texts differ.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
			if shown++; shown == 5 {
				break
			}
		}
	}
	return b.String()
}
