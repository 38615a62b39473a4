package convert_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// perRun are the values that differ between two runs of AdaL against the
// same scripted model, each with what it becomes in the comparison: ids of
// calls and sessions, the temporary directories of the runs, the saved
// file of a large output (its path and so its preview's last characters
// and count), and the interjection AdaL picks at random for a provider's
// error ("Sorry!", "Ah!", "Oh dear!").
var perRun = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`/tmp/TestAgents[^/]*/`), "<tmp>/"},
	{regexp.MustCompile(`bash_output_[0-9a-f_]+\.txt`), "<saved>"},
	{regexp.MustCompile(`\(\d+ characters omitted\) \.\.\.(\\n|\n)(?s:.*?)(\\n|\n)Full output saved to: `), "(<n> characters omitted) ...<tail>Full output saved to: "},
	{regexp.MustCompile(`Provider details: [^!\n]*! `), "Provider details: <interjection>! "},
}

var uuid = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalise replaces the per-run values of an output, and its ids by
// their order of appearance.
func normalise(s string) string {
	for _, p := range perRun {
		s = p.re.ReplaceAllString(s, p.with)
	}
	ids := map[string]string{}
	return uuid.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := ids[id]; !ok {
			ids[id] = "<id" + string(rune('A'+len(ids))) + ">"
		}
		return ids[id]
	})
}

// ownLines drops agentconv's own lines (warnings, losses) from stderr.
func ownLines(stderr string) string {
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !strings.HasPrefix(l, "agentconv: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// TestAdaLIsTheOracle: for every scenario AdaL was run in, in all three of
// its output formats, agentconv's conversion of its -o stream-json into
// adal-json and adal-text is what AdaL itself printed with -o json and -o
// text, byte for byte once the values that differ between runs are
// normalised (perRun).
func TestAdaLIsTheOracle(t *testing.T) {
	streams, _ := filepath.Glob(filepath.Join("..", "testdata", "agents", "adal", "*", "*", "stream-json", "stdout*.ndjson"))
	if len(streams) == 0 {
		t.Fatal("no AdaL captures")
	}
	for _, stream := range streams {
		scenario := filepath.Dir(filepath.Dir(stream))
		base := strings.TrimSuffix(filepath.Base(stream), ".ndjson")
		rel, _ := filepath.Rel(filepath.Join("..", "testdata", "agents"), scenario)
		t.Run(rel+"/"+base, func(t *testing.T) {
			in, err := os.ReadFile(stream)
			if err != nil {
				t.Fatal(err)
			}
			read := func(mode, name string) string {
				b, err := os.ReadFile(filepath.Join(scenario, mode, name))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			got, _ := adalRun(t, string(in), "--from", "adal-stream", "--to", "adal-json")
			if want := read("json", base+".json"); normalise(got) != normalise(want) {
				t.Errorf("adal-json differs from AdaL's -o json:\n%s\nwant\n%s", normalise(got), normalise(want))
			}
			got, stderr := adalRun(t, string(in), "--from", "adal-stream", "--to", "adal-text")
			if want := read("text", base+".txt"); normalise(got) != normalise(want) {
				t.Errorf("adal-text differs from AdaL's -o text:\n%q\nwant\n%q", got, want)
			}
			if want := read("text", base+".stderr"); normalise(ownLines(stderr)) != normalise(want) {
				t.Errorf("adal-text's stderr differs from AdaL's:\n%q\nwant\n%q", ownLines(stderr), want)
			}
		})
	}
}
