package codex_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/codex"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// What Codex needs of a rollout written from another dialect to resume
// it, as the real agent showed when it resumed them.

// A rollout written from a source that never gave its prompt (codex exec
// --json does not print it) says so: the agent resuming it never sees its
// task.
func TestRolloutSaysPromptMissing(t *testing.T) {
	lost := "user prompts the source never gave (a resumed agent does not see its task)"
	if !slices.Contains(codex.Rollout.Quirks, lost) {
		t.Errorf("codex-rollout does not declare %q", lost)
	}
	in := filepath.Join("..", "..", "testdata", "codex", "turn-failed.jsonl")
	code, _, stderr := converttest.Run("", "--deterministic", "--to", "codex-rollout", in)
	if code != 0 || !strings.Contains(stderr, "lost: 1 × "+lost+" (codex-rollout cannot carry them)") {
		t.Errorf("exit %d, stderr does not say the prompt is missing:\n%s", code, stderr)
	}
	prompted := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.Message, Text: "done"},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	if _, losses := formatstest.WriteReport(t, codex.Rollout, prompted); strings.Contains(losses, lost) {
		t.Errorf("a run with its prompt: %s", losses)
	}
}
