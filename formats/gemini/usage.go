package gemini

import "github.com/agentconv/agentconv/formats"

// Gemini CLI counts tokens as the Gemini API does, per model and summed
// over the models in stream-json's result: prompt (input_tokens) is every
// input token, the cached ones included; cached is the part read from the
// cache and input the rest (prompt - cached); candidates (output_tokens)
// are the output without the thoughts, which are counted apart; total is
// all of them. The model's InputTokens include cache reads as Gemini's
// prompt does, but its OutputTokens include the reasoning
// (ReasoningTokens), which Gemini's candidates leave out: readers add the
// thoughts to the output, writers take them out again.

// count is a count as the source gives it: unknown when it is absent or
// negative, which no count is.
func count(p *int64) formats.Opt[int64] {
	if p == nil || *p < 0 {
		return formats.Opt[int64]{}
	}
	return formats.Some(*p)
}

// usageOfCounts is the model's usage from Gemini's counts; thoughts is nil
// where the source gives none.
func usageOfCounts(prompt, candidates, total, cached, thoughts *int64) formats.UsageInfo {
	u := formats.UsageInfo{InputTokens: count(prompt), OutputTokens: count(candidates), TotalTokens: count(total),
		CacheReadTokens: count(cached), ReasoningTokens: count(thoughts)}
	if u.ReasoningTokens.OK {
		u.OutputTokens = u.OutputTokens.Plus(u.ReasoningTokens)
	}
	return u
}

// thoughtsOfTotal are the thoughts that stream-json counts only in its
// total: Gemini CLI's total_tokens is prompt + candidates + thoughts, and
// it prints no thoughts count of its own. Nil where the total is unknown
// or leaves nothing over.
func thoughtsOfTotal(prompt, candidates, total *int64) *int64 {
	if prompt == nil || candidates == nil || total == nil {
		return nil
	}
	t := *total - *prompt - *candidates
	if t <= 0 {
		return nil
	}
	return &t
}

// geminiCounts are Gemini's counts of a usage; nil where unknown.
type geminiCounts struct {
	Prompt, Candidates, Total, Cached, Input, Thoughts *int64
}

// countsOf gives a usage in Gemini's counts, none of them negative.
// thoughts: the target has a thoughts count, so that the candidates leave
// the reasoning out; without one, the candidates are the whole output, so
// that the output survives.
func countsOf(u formats.UsageInfo, thoughts bool) geminiCounts {
	c := geminiCounts{Prompt: nonNegative(u.InputTokens), Candidates: nonNegative(u.OutputTokens),
		Total: nonNegative(u.Total()), Cached: nonNegative(u.CacheReadTokens)}
	if u.InputTokens.OK && u.CacheReadTokens.OK {
		c.Input = nonNegative(formats.Some(u.InputTokens.V - u.CacheReadTokens.V))
	}
	if thoughts && u.ReasoningTokens.OK {
		c.Thoughts = nonNegative(u.ReasoningTokens)
		if u.OutputTokens.OK {
			c.Candidates = nonNegative(formats.Some(u.OutputTokens.V - u.ReasoningTokens.V))
		}
	}
	return c
}

// nonNegative is a known count for a JSON field, never below 0; nil when
// unknown.
func nonNegative(o formats.Opt[int64]) *int64 {
	if !o.OK {
		return nil
	}
	v := max(o.V, 0)
	return &v
}
