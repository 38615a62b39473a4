package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

var geminiVersions = []string{"0.61.0", "0.20.2"}

func readCapture(t *testing.T, d formats.Dialect, file string) ([]*formats.Event, string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return formatstest.ReadWarnings(t, d, data)
}

// A resumed session whose answers think (issue 24 #10, "thinking appears
// twice after a resume"): Gemini CLI 0.61's resume restates the first
// answer in a checkpoint with its thought as a content part (beside the
// record's own thoughts); 0.20 rewrites its JSON document. Each thought
// is read once, in its own run, and each run's tokens are what the server
// sent: 1,200 in and 30 + 11 out of which 11 reasoning, then 1,348 in and
// 37 + 12 out of which 12 reasoning.
func TestChatResumeThinking(t *testing.T) {
	agents := filepath.Join("..", "..", "testdata", "agents", "gemini-cli")
	for _, v := range geminiVersions {
		for _, mode := range []string{"stream-json", "json"} {
			dir := filepath.Join(agents, v, "resume-thinking", mode)
			evs, warn := readCapture(t, Chat, chatFile(t, dir))
			var thoughts []string
			var usage [][3]int64
			runs := 0
			for _, e := range evs {
				switch e.Kind {
				case formats.ThinkingDelta:
					thoughts = append(thoughts, e.Text)
				case formats.Usage:
					usage = append(usage, [3]int64{e.Usage.InputTokens.V, e.Usage.OutputTokens.V, e.Usage.ReasoningTokens.V})
				case formats.RunEnd:
					runs++
					if e.Status != formats.Completed {
						t.Errorf("%s %s: run %d ends %v", v, mode, runs, e.Status)
					}
				}
			}
			want := []string{"First thought: the user wants a short answer.", "Second thought: the session was resumed."}
			if strings.Join(thoughts, "|") != strings.Join(want, "|") {
				t.Errorf("%s %s: thoughts %q, want each once: %q", v, mode, thoughts, want)
			}
			if wantU := [][3]int64{{1200, 41, 11}, {1348, 49, 12}}; len(usage) != 2 || usage[0] != wantU[0] || usage[1] != wantU[1] {
				t.Errorf("%s %s: usage %v, want %v", v, mode, usage, wantU)
			}
			if runs != 2 || warn != "" {
				t.Errorf("%s %s: %d runs, warnings %q", v, mode, runs, warn)
			}
		}
	}
}
