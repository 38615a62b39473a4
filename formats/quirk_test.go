package formats

import (
	"bytes"
	"strings"
	"testing"
)

// A loss has one name: NewQuirk refuses a phrase that is already a
// quirk's or a feature's, and an empty one.
func TestNewQuirkRefusesASecondName(t *testing.T) {
	for _, phrase := range []string{MergedToolErrors.Name(), Thinking.Name(), ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewQuirk(%q) declared it again", phrase)
				}
			}()
			NewQuirk(phrase)
		}()
	}
	if q, ok := QuirkNamed(FailedRunAnswers.Name()); !ok || q != FailedRunAnswers {
		t.Errorf("QuirkNamed(%q) = %v, %v", FailedRunAnswers.Name(), q, ok)
	}
	if _, ok := QuirkNamed(Thinking.Name()); ok {
		t.Errorf("a feature's name is a quirk's")
	}
}

// A quirk and a feature are counted under their names, and Merge adds
// another report's counts.
func TestReportNamesQuirksAndFeatures(t *testing.T) {
	var out bytes.Buffer
	r := NewReport(&out)
	r.Quirk(ExtraMessages)
	r.QuirkN(ExtraMessages, 2)
	r.QuirkN(LateSessionIDs, 0)
	r.Feature(RawEvents, &Event{Kind: Raw, Source: Source{Dialect: "codex"}})
	r.Feature(Thinking, nil)
	other := NewReport(&out)
	other.Quirk(ExtraMessages)
	other.Feature(Thinking, nil)
	r.Merge(other)
	want := map[string]int{ExtraMessages.Name(): 4, "unknown codex events": 1, "thinking text": 2}
	got := r.LossTable()
	if len(got) != len(want) || r.Losses() != 7 {
		t.Fatalf("losses %v (%d), want %v", got, r.Losses(), want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d", k, got[k], n)
		}
	}
	r.Summary("x")
	if !strings.Contains(out.String(), "lost: 4 × assistant messages besides the answer (x cannot carry them)") {
		t.Errorf("summary:\n%s", out.String())
	}
}
