package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// realCaptures are the output of real agent CLIs kept unchanged in
// testdata, with their dialects.
var realCaptures = map[string]string{
	"claude/agent-stream-fmt-stream.jsonl":        "claude-stream",
	"claude/gleam-basic-query.ndjson":             "claude-stream",
	"claude/gleam-result-success.json":            "claude-json",
	"claude/orchestrator-task-tool-output.jsonl":  "claude-stream",
	"claude/takopi-all-events.jsonl":              "claude-stream",
	"claude/takopi-session.jsonl":                 "claude-stream",
	"claude/untether-autocompact-2.1.285.jsonl":   "claude-stream",
	"codex/agentcmd-stream-output-5.jsonl":        "codex",
	"codex/rust-claude-codes-multi-command.jsonl": "codex",
	"codex/takopi-all-formats.jsonl":              "codex",
	"codex/untether-0157-web-search.jsonl":        "codex",
	"codex/untether-turn-failed.jsonl":            "codex",
	"gemini/gemini-cli-snapshot-tools.jsonl":      "gemini-stream",
	"gemini/oneshot-websearch-with-banner.txt":    "gemini-stream",
}

// negativeCount finds a count below zero in an output.
var negativeCount = regexp.MustCompile(`"[A-Za-z_]*(?:[Tt]okens|[Cc]ount|[Cc]alls|cached|input|total|prompt|candidates)"\s*:\s*-\d`)

// TestRealCaptures: every real capture in testdata is detected as its
// dialect, gives back every line (as JSON) into its own dialect, and
// converts into every dialect without a fake run, a run more or less, a
// tool call more or less where the target carries calls, or a count below
// zero.
func TestRealCaptures(t *testing.T) {
	t.Parallel()
	for rel, dialect := range realCaptures {
		b, err := os.ReadFile(filepath.Join("..", "testdata", rel))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(rel, func(t *testing.T) {
			s := sniff(b)
			if s.d.Name != dialect || s.score < 50 {
				t.Fatalf("detected as %s (%d), want %s", s.d.Name, s.score, dialect)
			}
			src, _ := Lookup(dialect)
			evs, bad, err := formatstest.ReadAll(src, blankLines(b, s.skip))
			if err != nil || len(bad) > 0 {
				t.Fatalf("reading: %v %v", err, bad)
			}
			calls := len(formatstest.OfKind(evs, formats.ToolResult))
			subCalls := 0
			for _, e := range formatstest.OfKind(evs, formats.ToolResult) {
				if e.Agent != "" {
					subCalls++
				}
			}

			// The same dialect: every line back, as JSON, and no loss.
			code, out, stderr := runCLI(string(b), "--to", dialect)
			if code != 0 || strings.Contains(stderr, "lost:") {
				t.Fatalf("→ %s: exit %d: %s", dialect, code, stderr)
			}
			if err := jsonValues(out); err != nil {
				t.Errorf("→ %s: %v", dialect, err)
			}
			want, got := normalize(string(b[s.skip:])), normalize(out)
			if got != want {
				t.Errorf("→ %s changed the input:\n%s", dialect, diff(want, got))
			}

			_, objects, _ := runCLI(string(b), "--deterministic", "--to", "adal-json")
			runs := len(adalObjects(t, objects))
			if runs == 0 {
				t.Fatalf("no run")
			}
			for _, to := range Writable() {
				if to.Remote {
					continue
				}
				code, out, stderr := runCLI(string(b), "--deterministic", "--to", to.Name)
				where := dialect + "→" + to.Name
				if code != 0 {
					t.Errorf("%s: exit %d: %s", where, code, stderr)
					continue
				}
				if strings.Contains(out+stderr, "a new run began before this one completed") {
					t.Errorf("%s: a fake run:\n%s", where, stderr)
				}
				if neg := negativeCount.FindAllString(out, -1); len(neg) > 0 {
					t.Errorf("%s: counts below zero: %v", where, neg)
				}
				if to.NewReader == nil || to.Name == "adal-text" {
					continue
				}
				back, bad, err := formatstest.ReadAll(to, []byte(out))
				if err != nil || len(bad) > 0 {
					t.Errorf("%s: reading the output back: %v %v", where, err, bad)
					continue
				}
				// Runs as the pipeline reads them: a cut one is closed.
				if n := len(readFacts(t, to.Name, out)); n != runs {
					t.Errorf("%s: %d runs, want %d", where, n, runs)
				}
				if to.Carries&formats.ToolCalls != 0 {
					want := calls
					if to.Carries&formats.SubagentToolCalls == 0 {
						want -= subCalls // left out, and reported
					}
					if n := len(formatstest.OfKind(back, formats.ToolResult)); n != want {
						t.Errorf("%s: %d tool calls, want %d", where, n, want)
					}
				}
			}
		})
	}
}

// blankLines gives the skipped lines before a stream as blank lines, as
// the pipeline hands them to the reader.
func blankLines(b []byte, skip int) []byte {
	return append(bytes.Repeat([]byte{'\n'}, bytes.Count(b[:skip], []byte{'\n'})), b[skip:]...)
}

// jsonValues checks that an output is a series of JSON values.
func jsonValues(s string) error {
	dec := json.NewDecoder(strings.NewReader(s))
	for n := 1; ; n++ {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("value %d is not JSON: %v", n, err)
		}
	}
}
