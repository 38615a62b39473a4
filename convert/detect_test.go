package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// TestDetectionMatrix runs every detector on every fixture: the fixtures
// in testdata/<family>/ are detected as a dialect of that family, and every
// detector of another family scores at least 20 below the winner, so that
// a detector that claims its neighbours' input shows up here.
func TestDetectionMatrix(t *testing.T) {
	for _, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		family := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		b, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		head := b[:min(len(b), formats.DetectSize)]
		won, score := Detect(head)
		if score < 50 || !strings.HasPrefix(won.Name, family) {
			t.Errorf("%s is detected as %q (score %d); want a %s dialect", rel, won.Name, score, family)
			continue
		}
		for _, d := range Readable() {
			if d.Detect == nil || strings.HasPrefix(d.Name, family) {
				continue
			}
			if s := d.Detect(head); s > score-20 {
				t.Errorf("%s: %s scores %d, too close to %s's %d", rel, d.Name, s, won.Name, score)
			}
		}
	}
}
