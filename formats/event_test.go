package formats_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// textMeanings names, for each accessor of Event.Text, the kinds whose
// text it gives.
var textMeanings = map[string]struct {
	get   func(*formats.Event) string
	kinds []formats.Kind
}{
	"Prompt":      {(*formats.Event).Prompt, []formats.Kind{formats.UserMessage}},
	"Piece":       {(*formats.Event).Piece, []formats.Kind{formats.TextDelta, formats.ThinkingDelta}},
	"MessageText": {(*formats.Event).MessageText, []formats.Kind{formats.Message}},
	"AnswerText":  {(*formats.Event).AnswerText, []formats.Kind{formats.Answer}},
	"ErrorText":   {(*formats.Event).ErrorText, []formats.Kind{formats.RunEnd}},
	"Report":      {(*formats.Event).Report, []formats.Kind{formats.AgentEnd}},
	"FinalText":   {(*formats.Event).FinalText, []formats.Kind{formats.TurnEnd}},
	"Summary":     {(*formats.Event).Summary, []formats.Kind{formats.Compaction}},
	"NoticeText":  {(*formats.Event).NoticeText, []formats.Kind{formats.Notice}},
}

// Each accessor of Text gives it for its own kinds and "" for every
// other, and every kind that has a text has exactly one accessor.
func TestTextMeanings(t *testing.T) {
	owner := map[formats.Kind]string{}
	for name, m := range textMeanings {
		for _, k := range m.kinds {
			if o, ok := owner[k]; ok {
				t.Errorf("%v: both %s and %s", k, o, name)
			}
			owner[k] = name
		}
	}
	for k := formats.KindUnknown; k <= formats.Raw; k++ {
		e := &formats.Event{Kind: k, Text: "the text of a " + k.String()}
		for name, m := range textMeanings {
			want := ""
			if owner[k] == name {
				want = e.Text
			}
			if got := m.get(e); got != want {
				t.Errorf("%s of a %v = %q, want %q", name, k, got, want)
			}
		}
	}
	for _, k := range []formats.Kind{formats.UserMessage, formats.TextDelta, formats.ThinkingDelta, formats.Message,
		formats.Answer, formats.RunEnd, formats.AgentEnd, formats.TurnEnd, formats.Compaction, formats.Notice} {
		if owner[k] == "" {
			t.Errorf("%v has a text and no accessor", k)
		}
	}
	if len(owner) != 10 {
		t.Errorf("%d kinds have a text, want the 10 the Kind comments name", len(owner))
	}
}

// ArgsCompact holds while Args are the ones a reader checked, in any copy
// of the call, and no longer once anyone sets Args again.
func TestArgsCompact(t *testing.T) {
	var c formats.Call
	c.SetArgs([]byte(`{"a":1}`), true)
	if !c.ArgsCompact() {
		t.Fatal("checked args: ArgsCompact false")
	}
	if copied := c; !copied.ArgsCompact() {
		t.Error("a copy of the call: ArgsCompact false")
	}
	c.Args = []byte(`{"a": 1}`)
	if c.ArgsCompact() {
		t.Error("args set again: ArgsCompact still true")
	}
	c.SetArgs([]byte(`{"a":1}`), false)
	if c.ArgsCompact() {
		t.Error("unchecked args: ArgsCompact true")
	}
	c.SetArgs(nil, true)
	if c.ArgsCompact() {
		t.Error("no args: ArgsCompact true")
	}
}
