package convert

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// TestReadmeTables: the README's dialect and loss tables are the ones the
// registry makes. Run with -update to rewrite them.
func TestReadmeTables(t *testing.T) {
	path := filepath.Join("..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, sec := range []struct{ name, table string }{
		{"dialects", DialectTable()},
		{"losses", LossTable()},
	} {
		begin, end := "<!-- "+sec.name+":begin -->\n", "<!-- "+sec.name+":end -->"
		i, j := strings.Index(readme, begin), strings.Index(readme, end)
		if i < 0 || j < i {
			t.Fatalf("README.md has no %s…%s section", strings.TrimSpace(begin), end)
		}
		have := readme[i+len(begin) : j]
		if have == sec.table {
			continue
		}
		if *update {
			readme = readme[:i+len(begin)] + sec.table + readme[j:]
			continue
		}
		t.Errorf("the README's %s table has drifted from the registry (go test ./convert -run TestReadmeTables -update):\n%s",
			sec.name, diff(have, sec.table))
	}
	if *update {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// undeclared returns the losses on stderr, a conversion's into to, that
// to's row does not declare: each must be a feature it does not carry
// (less those another's loss names) or one of its own quirks; a quirk of
// another row is not one of its.
func undeclared(to formats.Dialect, stderr string) []string {
	quiet := to.Carries | formats.Unnamed(to.Carries) // never named as lost
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		l, ok := strings.CutPrefix(l, "agentconv: lost: ")
		if !ok {
			continue
		}
		_, what, _ := strings.Cut(l, " × ")
		what = strings.TrimSuffix(what, " ("+to.Name+" cannot carry them)")
		if q, ok := formats.QuirkNamed(what); ok {
			if !slices.Contains(to.Quirks, q) {
				out = append(out, what)
			}
			continue
		}
		if strings.HasPrefix(what, "unknown ") && strings.HasSuffix(what, " events") {
			what = formats.RawEvents.Name()
		}
		named := false
		for _, f := range formats.Features() {
			named = named || f.Name() == what && quiet&f == 0
		}
		if !named {
			out = append(out, what)
		}
	}
	return out
}

// TestLossesMatchTable: every `lost:` line in the golden files names a
// loss that its target's row declares (and so its row of the generated
// table lists), for every target that declares what it carries.
func TestLossesMatchTable(t *testing.T) {
	for _, to := range Writable() {
		if to.Remote {
			continue
		}
		goldens, _ := filepath.Glob(filepath.Join("..", "testdata", "golden", "*", "*", to.Name+".golden"))
		if len(goldens) == 0 {
			t.Fatalf("no golden files for %s", to.Name)
		}
		for _, g := range goldens {
			b, _ := os.ReadFile(g)
			for _, what := range undeclared(to, string(b)) {
				t.Errorf("%s reports %q (%s), which its row does not declare", to.Name, what, g)
			}
		}
	}
}

// TestQuirksDeclared: every quirk declared is one that a row of the
// registry lists (a quirk no writer may report is stale), and no row lists
// one twice. (NewQuirk refuses a phrase declared twice.)
func TestQuirksDeclared(t *testing.T) {
	listed := map[formats.Quirk]bool{}
	for _, d := range Writable() {
		seen := map[formats.Quirk]bool{}
		for _, q := range d.Quirks {
			if seen[q] {
				t.Errorf("%s lists %q twice", d.Name, q)
			}
			seen[q], listed[q] = true, true
		}
	}
	all := formats.Quirks()
	if len(all) < len(listed) {
		t.Fatalf("%d quirks declared, %d listed", len(all), len(listed))
	}
	for _, q := range all {
		if !listed[q] {
			t.Errorf("quirk %q is declared, but no row lists it", q)
		}
	}
}

// TestEveryWriterDeclares: every dialect that can be written declares what
// it carries, so that the pipeline reports its losses.
func TestEveryWriterDeclares(t *testing.T) {
	for _, d := range Writable() {
		if d.Carries == 0 {
			t.Errorf("%s declares no Carries", d.Name)
		}
	}
}
