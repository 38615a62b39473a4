package prices

import (
	"math"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

func TestDefault(t *testing.T) {
	tab := Default()
	if tab.Date == "" || !strings.Contains(tab.Source, "ccusage 20.0.24") {
		t.Errorf("date %q, source %q: the table must say its date and its source", tab.Date, tab.Source)
	}
	// The models the agents use, by the names their files give.
	for _, m := range []string{"claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001",
		"claude-opus-4-20250514", "gpt-5-codex", "gpt-5.1-codex-max", "gpt-5", "gemini-2.5-pro", "gemini-2.5-flash",
		"qwen3-coder-plus", "anthropic/claude-sonnet-4-5", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"} {
		if _, ok := tab.Lookup(m); !ok {
			t.Errorf("no price for %s", m)
		}
	}
	for _, p := range tab.models {
		if strings.HasPrefix(p.Model, "claude-") && (p.CacheWrite5m < 0 || p.CacheWrite1h < 0) {
			t.Errorf("%s: a Claude model needs both cache-write prices (5 minutes, 1 hour)", p.Model)
		}
	}
}

func TestLookup(t *testing.T) {
	tab := Default()
	for model, want := range map[string]string{
		"claude-sonnet-4-5-20250929":          "claude-sonnet-4-5",
		"claude-opus-4-20250514":              "claude-opus-4",
		"CLAUDE-OPUS-4-5":                     "claude-opus-4-5",
		"gpt-5.1-codex-mini":                  "gpt-5.1-codex-mini",
		"gpt-5.1-codex":                       "gpt-5.1-codex",
		"models/gemini-2.5-flash":             "gemini-2.5-flash",
		"gemini-2.5-flash-preview-09-2025":    "gemini-2.5-flash",
		"claude-sonnet-4-5@eu":                "claude-sonnet-4-5",
		"anthropic.claude-haiku-4-5-20251001": "claude-haiku-4-5",
	} {
		p, ok := tab.Lookup(model)
		if !ok || p.Model != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", model, p, ok, want)
		}
	}
	for _, model := range []string{"", "synthetic", "gpt-5.9", "<synthetic>"} {
		if p, ok := tab.Lookup(model); ok {
			t.Errorf("Lookup(%q) = %s; want none", model, p.Model)
		}
	}
}

func TestCost(t *testing.T) {
	tab := Default()
	n := formats.Some[int64]
	for _, c := range []struct {
		model string
		u     formats.UsageInfo
		want  float64
	}{
		// The figures that ccusage 20.0.24 --offline gives for the same
		// requests, each one alone in a session.
		{"claude-sonnet-4-5-20250929", formats.UsageInfo{InputTokens: n(100000), CacheWriteTokens: n(100000), CacheWrite1hTokens: n(100000)}, 0.6},
		{"claude-sonnet-4-5-20250929", formats.UsageInfo{InputTokens: n(100000), CacheWriteTokens: n(100000), CacheWrite1hTokens: n(0)}, 0.375},
		{"claude-sonnet-4-5-20250929", formats.UsageInfo{InputTokens: n(100000), CacheWriteTokens: n(100000)}, 0.375},
		{"claude-opus-4-5-20251101", formats.UsageInfo{InputTokens: n(100000), CacheWriteTokens: n(100000), CacheWrite1hTokens: n(100000)}, 1},
		{"claude-haiku-4-5-20251001", formats.UsageInfo{InputTokens: n(200000), CacheWriteTokens: n(100000), CacheWrite1hTokens: n(100000)}, 0.3},
		{"gemini-2.5-pro", formats.UsageInfo{InputTokens: n(100000), OutputTokens: n(0)}, 0.125},
		{"gpt-5.1-codex", formats.UsageInfo{InputTokens: n(100000)}, 0.125},
		{"qwen3-coder-plus", formats.UsageInfo{InputTokens: n(100000)}, 0.1},
		// Output (reasoning included) and cache reads at their own rates.
		{"gpt-5-codex", formats.UsageInfo{InputTokens: n(1000000), CacheReadTokens: n(800000), OutputTokens: n(100000), ReasoningTokens: n(50000)}, 0.25 + 0.1 + 1},
		// Over the threshold, the whole request at the long-context prices
		// as Anthropic bills it (ccusage prices only the tokens over it
		// so: 1.2 here).
		{"claude-sonnet-4-5-20250929", formats.UsageInfo{InputTokens: n(300000)}, 1.8},
		{"claude-sonnet-4-5-20250929", formats.UsageInfo{InputTokens: n(250000), CacheReadTokens: n(150000)}, 0.6 + 0.09},
	} {
		p, ok := tab.Lookup(c.model)
		if !ok {
			t.Fatalf("no price for %s", c.model)
		}
		if got := p.Cost(c.u); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s %+v: cost %v, want %v", c.model, c.u, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	head := "# date: 2026-12-01\n# source: a test\n" + strings.Join(columns, "\t") + "\n"
	row := func(cells ...string) string {
		for len(cells) < len(columns) {
			cells = append(cells, "")
		}
		return strings.Join(cells, "\t") + "\n"
	}
	for _, c := range []struct{ text, want string }{
		{head + row("m", "1", "x"), "t.tsv:4: column output of m: \"x\" is not a price"},
		{head + row("m", "1"), "t.tsv:4: m has no input or output price"},
		{head + "m\t1\t2\n", "t.tsv:4: 3 cells, want 12"},
		{head + row("m", "1", "2") + row("M", "1", "2"), "t.tsv:5: model \"m\" comes twice"},
		{head + row("m", "1", "2", "", "", "", "1000"), "t.tsv:4: m gives a threshold (above) without input_above"},
		{"# date: 2026-12-01\nmodel\tinput\n", "t.tsv:2: the header must name the columns"},
		{strings.Join(columns, "\t") + "\n" + row("m", "1", "2"), "t.tsv: say the table's date and source"},
	} {
		_, err := Parse(strings.NewReader(c.text), "t.tsv")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q): %v; want %q", c.text, err, c.want)
		}
	}
	tab, err := Parse(strings.NewReader(head+row("m", "1", "2", "0.1")), "t.tsv")
	if err != nil || tab.Source != "a test" || tab.Date != "2026-12-01" {
		t.Fatalf("Parse: %v, %+v", err, tab)
	}
	if p, _ := tab.Lookup("m"); p.CacheWrite5m != -1 || p.CacheRead != 0.1 {
		t.Errorf("row m: %+v; an empty cell is -1", p.Rates)
	}
}
