package convert_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// What Claude Code needs of a session file written from another dialect to
// resume it, as the real agent showed when it resumed them.

// thinkingBlocks are the thinking blocks of a session file's or a
// stream's assistant records: text → signature.
func thinkingBlocks(t *testing.T, out []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, r := range records(t, out) {
		m, _ := r.(map[string]any)["message"].(map[string]any)
		content, _ := m["content"].([]any)
		for _, b := range content {
			b, _ := b.(map[string]any)
			if b["type"] == "thinking" {
				sig, ok := b["signature"].(string)
				if !ok {
					t.Errorf("a thinking block without a signature field: %v", b)
				}
				got[b["thinking"].(string)] = sig
			}
		}
	}
	return got
}

// A thinking block keeps its signature, read from a stream or a session
// file and written to either: Claude Code sends it back to the API, which
// refuses a block whose signature is not the one it gave (400 "Invalid
// signature in thinking block").
func TestThinkingKeepsSignature(t *testing.T) {
	for name, want := range map[string]map[string]string{
		"split-messages-stream.jsonl":   {"I should read the config first.": "c2ln"},
		"partial-messages-stream.jsonl": {"Two plus two.": "c2lnCg=="},
	} {
		data := formatstest.Fixture(t, "claude", name)
		evs := formatstest.Read(t, claude.Stream, data)
		// The same messages as the JSON array of --output-format json
		// --verbose, which claude-json reads.
		array := "[" + strings.Join(strings.Split(strings.TrimSpace(string(data)), "\n"), ",") + "]"
		for dialect, evs := range map[string][]*formats.Event{"claude-stream": evs, "claude-json": formatstest.Read(t, claude.JSON, array)} {
			var thoughts []formats.Thought
			for _, e := range formatstest.OfKind(evs, formats.Message) {
				thoughts = append(thoughts, e.Thoughts...)
			}
			if len(thoughts) != len(want) {
				t.Errorf("%s as %s: read thoughts %+v, want %v", name, dialect, thoughts, want)
			}
			for _, th := range thoughts {
				if want[th.Text] != th.Signature {
					t.Errorf("%s as %s: read %+v, want the signature %q", name, dialect, th, want[th.Text])
				}
			}
		}
		// Encoded, not copied: the events without their records.
		stream, err := formatstest.WriteAll(claude.Stream, evs, true)
		if err != nil {
			t.Fatal(err)
		}
		session := converttest.Convert(t, data, "claude-stream", "claude-session")
		back := converttest.Convert(t, session, "claude-session", "claude-stream")
		for what, out := range map[string][]byte{"claude-stream": stream, "claude-session": session,
			"claude-session → claude-stream": back} {
			if got := thinkingBlocks(t, out); !maps.Equal(got, want) {
				t.Errorf("%s → %s: thinking blocks %v, want %v\n%s", name, what, got, want, out)
			}
		}
		if evs := formatstest.Read(t, claude.Session, session); len(formatstest.OfKind(evs, formats.Message)) == 0 ||
			len(formatstest.OfKind(evs, formats.Message)[0].Thoughts) != 1 {
			t.Errorf("%s: the session file read back has no signed thinking", name)
		}
	}
}

// Reasoning without a signature (another model's: Codex, Gemini) is left
// out of a session file, which Claude Code would send to the API as an
// unsigned thinking block, and reported as a declared loss. A stream,
// which nobody sends back, keeps it.
func TestUnsignedThinkingLeftOut(t *testing.T) {
	in := filepath.Join("..", "testdata", "codex", "agentcmd-codex-rollout.jsonl")
	code, out, stderr := converttest.Run("", "--deterministic", "--to", "claude-session", in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := thinkingBlocks(t, []byte(out)); len(got) != 0 {
		t.Errorf("unsigned thinking written: %v", got)
	}
	lost := "thinking text without an Anthropic signature (left out: the API refuses it)"
	if !strings.Contains(stderr, " × "+lost+" (claude-session cannot carry them)") {
		t.Errorf("stderr does not report the unsigned thinking:\n%s", stderr)
	}
	if !slices.Contains(formats.QuirkNames(claude.Session.Quirks), lost) {
		t.Errorf("claude-session does not declare %q", lost)
	}

	// A message of signed and unsigned blocks keeps the signed one, and a
	// message of unsigned thinking alone writes no record.
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.Message, Thinking: "mine\n\nlost", Text: "said",
			Thoughts: []formats.Thought{{Text: "mine", Signature: "c2ln"}, {Text: "lost"}}},
		{Kind: formats.Message, Thinking: "alone"},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	got, losses := formatstest.WriteReport(t, claude.Session, evs)
	if blocks := thinkingBlocks(t, []byte(got)); !maps.Equal(blocks, map[string]string{"mine": "c2ln"}) {
		t.Errorf("thinking blocks %v\n%s", blocks, got)
	}
	if !strings.Contains(losses, "lost: 2 × "+lost) {
		t.Errorf("losses: %s", losses)
	}
	stream, _ := formatstest.WriteReport(t, claude.Stream, evs)
	if blocks := thinkingBlocks(t, []byte(stream)); !maps.Equal(blocks, map[string]string{"mine": "c2ln", "lost": "", "alone": ""}) {
		t.Errorf("stream thinking blocks %v\n%s", blocks, stream)
	}
}

// A session file or rollout written from a source that never gave its
// prompt (a stream such as claude -p or codex exec --json does not print
// it) says so, for every writer that declares the loss: the agent resuming
// it never sees its task. A run with its prompt says nothing, and each run
// without one counts.
func TestResumableSaysPromptMissing(t *testing.T) {
	lost := formats.PromptsNeverGiven.String()
	var writers []formats.Dialect
	for _, d := range convert.Writable() {
		if slices.Contains(d.Quirks, formats.PromptsNeverGiven) {
			writers = append(writers, d)
		}
	}
	for _, want := range []string{"claude-session", "codex-rollout", "adal-session", "opencode-export"} {
		if !slices.ContainsFunc(writers, func(d formats.Dialect) bool { return d.Name == want }) {
			t.Errorf("%s does not declare %q", want, lost)
		}
	}
	run := func(prompt string, reply string) []*formats.Event {
		evs := []*formats.Event{{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}}}
		if prompt != "" {
			evs = append(evs, &formats.Event{Kind: formats.UserMessage, Text: prompt})
		}
		return append(evs, &formats.Event{Kind: formats.Message, Text: reply}, &formats.Event{Kind: formats.RunEnd, Status: formats.Completed})
	}
	for _, d := range writers {
		t.Run(d.Name, func(t *testing.T) {
			for _, in := range []string{"claude/split-messages-stream.jsonl", "codex/turn-failed.jsonl"} {
				code, _, stderr := converttest.Run("", "--deterministic", "--to", d.Name, filepath.Join("..", "testdata", in))
				if code != 0 || !strings.Contains(stderr, "lost: 1 × "+lost+" ("+d.Name+" cannot carry them)") {
					t.Errorf("%s: exit %d, stderr does not say the prompt is missing:\n%s", in, code, stderr)
				}
			}
			if _, losses := formatstest.WriteReport(t, d, run("go", "done")); strings.Contains(losses, lost) {
				t.Errorf("a run with its prompt: %s", losses)
			}
			if _, losses := formatstest.WriteReport(t, d, append(run("go", "done"), run("", "and more")...)); !strings.Contains(losses, "lost: 1 × "+lost) {
				t.Errorf("one run of two has no prompt: %s", losses)
			}
		})
	}
}

// recordTimes are the timestamps of a session file's or rollout's records.
func recordTimes(t *testing.T, out []byte) []string {
	t.Helper()
	var ts []string
	for _, r := range records(t, out) {
		if s, ok := r.(map[string]any)["timestamp"].(string); ok {
			ts = append(ts, s)
		}
	}
	return ts
}

// The records of a source without times get times that strictly increase,
// never the zero time: Claude Code resumes from the leaf record with the
// latest time, and with many records in one millisecond (a file read at
// once) it resumed from the wrong one, sending 2 of 12 messages.
func TestSessionTimesIncrease(t *testing.T) {
	for _, name := range []string{"claude/split-messages-stream.jsonl", "claude/subagent-stream.jsonl",
		"cli-agents/claude-run.jsonl", "cli-agents/cancelled.jsonl", "codex/turn-failed.jsonl"} {
		for _, det := range []bool{false, true} {
			args := []string{"--to", "claude-session", filepath.Join("..", "testdata", name)}
			if det {
				args = append(args, "--deterministic")
			}
			code, out, stderr := converttest.Run("", args...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", name, code, stderr)
			}
			ts := recordTimes(t, []byte(out))
			if len(ts) < 2 {
				t.Fatalf("%s: %d records", name, len(ts))
			}
			for i, s := range ts {
				if strings.HasPrefix(s, "0001-") {
					t.Errorf("%s: record %d has the zero time %s", name, i+1, s)
				}
				if i > 0 && s <= ts[i-1] {
					t.Errorf("%s (deterministic %v): record %d at %s, after %s", name, det, i+1, s, ts[i-1])
				}
			}
		}
	}
}
