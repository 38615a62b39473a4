package formats

import (
	"bytes"
	"strings"
	"testing"
)

// A loss has one name: NewQuirk refuses a phrase that is already a
// quirk's or a feature's, and an empty one.
func TestNewQuirkRefusesASecondName(t *testing.T) {
	for _, phrase := range []string{MergedToolErrors.Name(), SubagentThinking.Name(), ""} {
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
	if _, ok := QuirkNamed(SubagentThinking.Name()); ok {
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

// A subagent's thinking, prompt, todo list or turn needs its own feature
// besides its kind's, which a target without the kind names instead.
func TestSubagentFeatures(t *testing.T) {
	for _, c := range []struct {
		e   Event
		sub Feature
	}{
		{Event{Kind: ThinkingDelta, Text: "t"}, SubagentThinking},
		{Event{Kind: Message, Thinking: "t"}, SubagentThinking},
		{Event{Kind: UserMessage, Text: "p"}, SubagentPrompts},
		{Event{Kind: Todos}, SubagentTodos},
		{Event{Kind: TurnEnd}, SubagentTurns},
	} {
		main := Needs(&c.e)
		if main&c.sub != 0 {
			t.Errorf("%v of the main agent needs %s", c.e.Kind, c.sub.Name())
		}
		c.e.Agent = "a"
		needs := Needs(&c.e)
		kind := main & (Thinking | UserPrompts | TodoLists | Turns)
		if needs&c.sub == 0 || needs&kind == 0 {
			t.Errorf("%v of a subagent needs %s, want %s and %s", c.e.Kind, needs, c.sub.Name(), kind)
		}
		if m := Missing(needs, AllFeatures&^c.sub); m != c.sub {
			t.Errorf("%v of a subagent into a target without %s: missing %s", c.e.Kind, c.sub.Name(), m)
		}
		if m := Missing(needs, AllFeatures&^(c.sub|kind)); m != kind {
			t.Errorf("%v of a subagent into a target without %s: missing %s", c.e.Kind, kind, m)
		}
		if Unnamed(AllFeatures&^kind)&c.sub == 0 {
			t.Errorf("a target without %s names %s", kind, c.sub.Name())
		}
	}
}
