package convert

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentconv/agentconv/formats"
)

// Every profile gives the same stream for the same seed, and another for
// another seed.
func TestGenerateProfilesAreDeterministic(t *testing.T) {
	t.Parallel()
	d, _ := Lookup("adal-stream")
	for _, p := range ProfileNames() {
		var a, b, c bytes.Buffer
		for _, x := range []struct {
			buf  *bytes.Buffer
			seed uint64
		}{{&a, 1}, {&b, 1}, {&c, 2}} {
			if err := GenerateProfile(x.buf, d, 200<<10, x.seed, 0, p); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: seed 1 gave two different streams", p)
		}
		if bytes.Equal(a.Bytes(), c.Bytes()) {
			t.Errorf("%s: seeds 1 and 2 gave the same stream", p)
		}
	}
	var def, named bytes.Buffer
	Generate(&def, d, 100<<10, 1, 0)
	GenerateProfile(&named, d, 100<<10, 1, 0, "default")
	if !bytes.Equal(def.Bytes(), named.Bytes()) {
		t.Error(`the "default" profile is not the stream Generate makes`)
	}
	if err := GenerateProfile(io.Discard, d, 1, 1, 0, "sparse"); err == nil || !strings.Contains(err.Error(), "dense") {
		t.Errorf("an unknown profile gave %v, want an error listing the profiles", err)
	}
}

// The dense profiles have 8 to 40 calls a run, and escapes and non-ASCII
// text in every text, argument, output and error.
func TestGenerateDenseProfiles(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"dense", "big-outputs"} {
		g := NewGenerator(3)
		g.Profile = p
		var outputs []int
		for range 200 {
			calls := 0
			for _, e := range g.Run() {
				var texts []string
				switch e.Kind {
				case formats.ToolCall:
					calls++
					texts = append(texts, string(e.Call.Args))
				case formats.ToolResult:
					if e.Call.Status == formats.Denied {
						calls++
					}
					texts = append(texts, e.Call.Output.Text(), e.Call.Error)
					outputs = append(outputs, len(e.Call.Output.Text()))
				case formats.UserMessage, formats.TextDelta, formats.ThinkingDelta, formats.Answer:
					texts = append(texts, e.Text)
				}
				for _, s := range texts {
					if s == "" {
						continue
					}
					ascii := utf8.RuneCountInString(s) == len(s)
					if !strings.Contains(s, "\t") && !strings.Contains(s, `\t`) || !strings.Contains(s, `"`) || !strings.Contains(s, `\`) || ascii {
						t.Fatalf("%s: %v text %q lacks a tab, a quote, a backslash or non-ASCII text", p, e.Kind, s)
					}
				}
			}
			if calls < 8 || calls > 41 {
				t.Fatalf("%s: a run with %d calls, want 8 to 40 (and a refusal)", p, calls)
			}
		}
		slices.Sort(outputs)
		median, top := outputs[len(outputs)/2], outputs[len(outputs)-1]
		switch p {
		case "dense":
			if median < 30 || median > 150 || top > 4<<10 {
				t.Errorf("dense: outputs of median %d bytes and at most %d, want short ones", median, top)
			}
		case "big-outputs":
			if median < 400 || median > 1200 || top < 100_000 || top > 400_000+200 {
				t.Errorf("big-outputs: outputs of median %d bytes and at most %d, want about 700 and a few of 100 to 400 KB", median, top)
			}
		}
	}
}
