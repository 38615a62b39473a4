package convert

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// countRE finds the token counts of every dialect's fixtures: a member
// whose name speaks of tokens, or is one of the names the agents give
// their counts, with a whole number.
var countRE = regexp.MustCompile(`("(?:[A-Za-z_]*[Tt]okens?(?:[A-Z_][A-Za-z_]*)?|input|output|cacheRead|cacheWrite|cached|thoughts|prompt|candidates)"\s*:\s*)[0-9]+([,}\]\s])`)

// TestOddTokenCounts: a token count that is not a whole number (1.5,
// 1e400, a whole number beyond int64) is a warning and read as not given,
// and one written with an exponent (1e18) is read as that number, in every
// reader: the record it is in is read as before, and
// the run ends as it did (it made runs "failed (cut short)", exit 1).
func TestOddTokenCounts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("long")
	}
	n := 0
	for _, in := range fixtures(t) {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		if !countRE.Match(data) {
			continue
		}
		n++
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		code0, out0, stderr0 := runCLI("", "--deterministic", "--to", "malac", in)
		for _, odd := range []string{"1.5", "1e18", "1e400", "99999999999999999999"} {
			t.Run(rel+"/"+odd, func(t *testing.T) {
				changed := countRE.ReplaceAll(data, []byte("${1}"+odd+"${2}"))
				p := filepath.Join(t.TempDir(), filepath.Base(in))
				if err := os.WriteFile(p, changed, 0o644); err != nil {
					t.Fatal(err)
				}
				code, out, stderr := runCLI("", "--deterministic", "--to", "malac", p)
				if code != code0 {
					t.Errorf("exit %d, was %d: %s", code, code0, stderr)
				}
				// 1e18 is a whole number, read as it is; the others
				// change the output (a count left out) only with a
				// warning (some dialects hold counts their reader does
				// not read).
				warned := strings.Contains(stderr, "read as not given")
				if odd == "1e18" && warned || odd != "1e18" && out != out0 && !warned {
					t.Errorf("warned %v: %s", warned, stderr)
				}
				for _, bad := range []string{"unexpected types", "not valid JSON", "unexpected shape", "of a shape not known"} {
					if strings.Count(stderr, bad) > strings.Count(stderr0, bad) {
						t.Errorf("%q: %s", bad, stderr)
					}
				}
			})
		}
	}
	if n < 20 {
		t.Errorf("only %d fixtures with token counts", n)
	}
}
