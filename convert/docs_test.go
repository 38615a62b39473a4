package convert

import (
	"os"
	"path/filepath"
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

// TestLossesMatchTable: every `lost:` line in the golden files names a
// loss that its target's row of the generated table lists, for every
// target that declares what it carries.
func TestLossesMatchTable(t *testing.T) {
	for _, to := range Writable() {
		if to.Remote {
			continue
		}
		named := map[string]bool{}
		for _, w := range Cannot(to) {
			named[w] = true
		}
		goldens, _ := filepath.Glob(filepath.Join("..", "testdata", "golden", "*", "*", to.Name+".golden"))
		if len(goldens) == 0 {
			t.Fatalf("no golden files for %s", to.Name)
		}
		for _, g := range goldens {
			b, _ := os.ReadFile(g)
			for _, l := range strings.Split(string(b), "\n") {
				_, what, ok := strings.Cut(l, " × ")
				if !ok || !strings.HasPrefix(l, "agentconv: lost: ") {
					continue
				}
				what = strings.TrimSuffix(what, " ("+to.Name+" cannot carry them)")
				if strings.HasPrefix(what, "unknown ") && strings.HasSuffix(what, " events") {
					what = formats.RawEvents.Name()
				}
				if !named[what] {
					t.Errorf("%s reports %q (%s), which its row of the loss table does not name", to.Name, what, g)
				}
			}
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
