package convert_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/cliagents"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func cliagentsRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return converttest.Run(stdin, append([]string{"--deterministic"}, args...)...)
}

func cliagentsFixture(t *testing.T, dir, name string) string {
	t.Helper()
	return string(formatstest.Fixture(t, dir, name))
}

// TestCLIAgentsSameDialectIsCopied: the pipeline copies cli-agents back byte for
// byte, and the writer only observes.
func TestCLIAgentsSameDialectIsCopied(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "cli-agents", "*"))
	for _, f := range files {
		in := cliagentsFixture(t, "cli-agents", filepath.Base(f))
		if _, out, errs := cliagentsRun(t, in, "--from", "cli-agents", "--to", "cli-agents"); out != in {
			t.Errorf("%s: cli-agents → cli-agents changed the input:\n%s\n%s", f, out, errs)
		}
	}
}

// TestClaudeStatsLeaveOutCache: a Claude provider's inputTokens leave out
// cached tokens, which the model's input counts; other providers' include
// them.
func TestClaudeStatsLeaveOutCache(t *testing.T) {
	done := `{"type":"done","result":{"success":true,"text":"ok","exitCode":0,"stats":{"inputTokens":100,"outputTokens":5,"totalTokens":105,"cachedTokens":900,"durationMs":null,"toolCalls":0},"sessionId":"s","stderr":null,"costUsd":null}}` + "\n"
	for provider, want := range map[string]int64{
		`{"type":"raw","provider":"claude","event":{"type":"system","subtype":"init","session_id":"s"}}`: 1000,
		`{"type":"raw","provider":"codex","event":{"type":"thread.started","thread_id":"s"}}`:            100,
		``: 100,
	} {
		in := done
		if provider != "" {
			in = provider + "\n" + done
		}
		end := formatstest.OfKind(formatstest.Read(t, cliagents.Dialect, in), formats.RunEnd)[0]
		if end.Usage.InputTokens.V != want || end.Usage.CacheReadTokens.V != 900 {
			t.Errorf("%s: usage %+v, want input %d", provider, end.Usage, want)
		}
	}
}

// TestDoneFromTheView: the result says the view's outcome, exit code,
// answer, totals and calls, each call once.
func TestDoneFromTheView(t *testing.T) {
	_, out, _ := cliagentsRun(t, cliagentsFixture(t, "gemini", "error-result-stream.jsonl"), "--to", "cli-agents")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, `"success":false`) || !strings.Contains(last, `"exitCode":53`) {
		t.Errorf("done %s", last)
	}
	_, out, _ = cliagentsRun(t, cliagentsFixture(t, "adal", "refused-stream.ndjson"), "--to", "cli-agents")
	if n, m := strings.Count(out, `"type":"tool_start"`), strings.Count(out, `"type":"tool_end"`); n != m || !strings.Contains(out, `"toolCalls":`+strconv.Itoa(n)+`}`) {
		t.Errorf("%d starts, %d ends:\n%s", n, m, out)
	}
	if !strings.Contains(out, `"exitCode":2`) {
		t.Errorf("a refusal's exit code:\n%s", out)
	}
}
