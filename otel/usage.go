package otel

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
)

// placeRest puts on chat spans what of the run's totals its requests'
// spans do not carry, so that over the trace's spans each gen_ai.usage.*
// adds up to the run's totals: tokens beyond the requests' (or all of them,
// where the source gives only the run's) on a chat span marked as
// aggregated, and a cost the source gives only for the run split over the
// chat spans by their tokens. Then the chat spans held for it go.
func (b *builder) placeRest(root *span, totals formats.UsageInfo, t time.Time) {
	rest := remainder(totals, b.placed)
	// A cost of the run that the requests' spans do not carry goes to the
	// chat spans without a cost of their own, by their tokens (nothing
	// left over: a share of 0, so that no backend prices them itself).
	split := totals.CostUSD.OK && b.split.n > 0
	costLeft := rest.CostUSD.V
	if split {
		rest.CostUSD = formats.Opt[float64]{}
	}
	if counted(rest) || rest.CostUSD.OK && rest.CostUSD.V != 0 {
		model := ""
		if len(b.view.Models) == 1 {
			model = b.view.Models[0]
		}
		b.aggregateChat(root, "chat\x00run", model, rest, root.start, t)
	}
	// The shares, in the order of the spans: those held in memory, then
	// those on disk, read twice (what the heaviest takes is what the
	// others leave).
	var nanos, given float64
	if split {
		nanos = math.Round(costLeft * 1e9)
		i := 0
		others := func(w int64) {
			if i != b.split.heaviest {
				given += b.split.part(nanos, w)
			}
			i++
		}
		for j := range b.pending {
			others(b.pending[j].weight)
		}
		b.fail(b.pendingOver.weights(others))
	}
	i := 0
	give := func(d *spanData, w int64) {
		// The session id, where it came after the span ended.
		d.attrs = b.sessionAttrs(d.attrs)
		if split {
			c := costLeft - given
			if i != b.split.heaviest {
				c = b.split.part(nanos, w)
			}
			d.attrs = append(d.attrs, attribute.Float64(keyCost, c), attribute.Float64(keyOICost, c))
		}
		i++
		b.hand(d)
	}
	for j := range b.pending {
		give(&b.pending[j].data, b.pending[j].weight)
		b.pending[j] = pendingChat{}
	}
	b.pending, b.pendingSize = b.pending[:0], 0
	b.fail(b.pendingOver.drain(pendingRoom, give))
	b.split = costSplit{}
}

// counted: a usage has a token count.
func counted(u formats.UsageInfo) bool {
	for _, f := range usageKeys {
		if f.of(&u).OK {
			return true
		}
	}
	return false
}

// pendingRoom is the room a held chat span keeps for its share of the
// run's cost: the two attributes placeRest adds.
const pendingRoom = 2

// pendingChat is a chat span held for its share of the run's cost.
type pendingChat struct {
	data   spanData
	weight int64
}

// tokens is what a cost is split by: the input tokens (cache included)
// and the output tokens.
func tokens(u formats.UsageInfo) int64 { return u.InputTokens.V + u.OutputTokens.V }

// costSplit follows the weights of the spans a cost is split over, in
// order: their count, their sum and the heaviest (the first of them).
type costSplit struct {
	n        int
	sum      float64
	heaviest int
	top      int64
}

func (c *costSplit) add(w int64) {
	if c.n == 0 || w > c.top {
		c.heaviest, c.top = c.n, w
	}
	c.sum += float64(w)
	c.n++
}

// part is the share of a span of weight w other than the heaviest, of a
// cost of nanos nano-dollars: by its weight (evenly where none has any),
// rounded down to a nano-dollar. The heaviest takes what the others leave.
func (c *costSplit) part(nanos float64, w int64) float64 {
	share := 1 / float64(c.n)
	if c.sum > 0 {
		share = float64(w) / c.sum
	}
	return math.Floor(nanos*share) / 1e9
}

// splitCost splits a cost over spans by their weights (evenly where none
// has any), in nano-dollars, with what rounding leaves over on the
// heaviest, so that the parts add up to the cost.
func splitCost(cost float64, weights []int64) []float64 {
	parts := make([]float64, len(weights))
	if len(weights) == 0 {
		return parts
	}
	var c costSplit
	for _, w := range weights {
		c.add(w)
	}
	nanos := math.Round(cost * 1e9)
	given := 0.0
	for i, w := range weights {
		if i == c.heaviest {
			continue
		}
		parts[i] = c.part(nanos, w)
		given += parts[i]
	}
	parts[c.heaviest] = cost - given
	return parts
}

// remainder is what of the totals the requests do not count: for each
// count, the difference, where it is more than none.
func remainder(totals, req formats.UsageInfo) formats.UsageInfo {
	var out formats.UsageInfo
	for _, f := range usageKeys {
		if t, r := f.of(&totals), f.of(&req); t.OK && t.V > r.V {
			*f.of(&out) = formats.Some(t.V - r.V)
		}
	}
	switch c := totals.CostUSD.V - req.CostUSD.V; {
	case totals.CostUSD.OK && !req.CostUSD.OK:
		out.CostUSD = totals.CostUSD // only a run total is known
	case totals.CostUSD.OK && c > 1e-12:
		out.CostUSD = formats.Some(c)
	}
	return out
}

// usageKeys are the token counts of UsageInfo and their keys.
var usageKeys = []struct {
	key string
	of  func(*formats.UsageInfo) *formats.Opt[int64]
}{
	{keyInputTokens, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.InputTokens }},
	{keyOutputTokens, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.OutputTokens }},
	{keyCacheRead, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.CacheReadTokens }},
	{keyCacheCreation, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.CacheWriteTokens }},
	{keyReasoning, func(u *formats.UsageInfo) *formats.Opt[int64] { return &u.ReasoningTokens }},
}

// totalKey is the agentconv.usage.* twin of a gen_ai.usage.* key.
func totalKey(key string) string { return keyTotalPrefix + strings.TrimPrefix(key, "gen_ai.usage.") }

// setUsage puts counts on a span as gen_ai.usage.*: what the span itself
// used, counted nowhere else in the trace.
func (b *builder) setUsage(s *span, u formats.UsageInfo) { setUsageAs(s, u, false) }

// setTotals puts an agent's totals on its span as agentconv.usage.*.
func (b *builder) setTotals(s *span, u formats.UsageInfo) { setUsageAs(s, u, true) }

func setUsageAs(s *span, u formats.UsageInfo, total bool) {
	for _, f := range usageKeys {
		if v := f.of(&u); v.OK {
			key := f.key
			if total {
				key = totalKey(key)
			}
			s.set(attribute.Int64(key, v.V))
		}
	}
	if u.CostUSD.OK {
		key := keyCost
		if total {
			key = totalKey(key)
		} else {
			s.set(attribute.Float64(keyOICost, u.CostUSD.V))
		}
		s.set(attribute.Float64(key, u.CostUSD.V))
	}
	if !total {
		if j := langfuseUsage(u); j != "" {
			s.set(attribute.String(keyLangfuseUsage, j))
		}
		// Phoenix's converter totals a span only where it has both
		// counts; its total is what Phoenix sums.
		if u.InputTokens.OK || u.OutputTokens.OK {
			s.set(attribute.Int64(keyOITotal, u.InputTokens.V+u.OutputTokens.V))
		}
	}
}

// langfuseUsage is a request's usage as Langfuse counts it: input less
// the cache reads and writes, which it counts apart, output less the
// reasoning, and the total, so that no token counts twice in it (Langfuse
// up to 3.205 added reasoning to a total of the gen_ai.usage.* keys that
// counts it already). "" without tokens.
func langfuseUsage(u formats.UsageInfo) string {
	if !u.InputTokens.OK && !u.OutputTokens.OK && !u.CacheReadTokens.OK && !u.CacheWriteTokens.OK && !u.ReasoningTokens.OK {
		return ""
	}
	b := []byte{'{'}
	add := func(k string, v int64) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		b = strconv.AppendInt(b, v, 10)
	}
	// Langfuse adds the parts up: where a source's parts exceed its
	// input or output (a run total that contradicts its requests), they
	// are cut to them, so that the sum stays the count.
	in, out := u.InputTokens.V, u.OutputTokens.V
	read := min(u.CacheReadTokens.V, in)
	write := min(u.CacheWriteTokens.V, in-read)
	reasoning := min(u.ReasoningTokens.V, out)
	if !u.InputTokens.OK {
		read, write = u.CacheReadTokens.V, u.CacheWriteTokens.V // only the parts are known
		in = read + write
	}
	if !u.OutputTokens.OK {
		reasoning = u.ReasoningTokens.V
		out = reasoning
	}
	if u.InputTokens.OK {
		add("input", in-read-write)
	}
	if u.OutputTokens.OK {
		add("output", out-reasoning)
	}
	if u.CacheReadTokens.OK {
		add("input_cached_tokens", read)
	}
	if u.CacheWriteTokens.OK {
		add("input_cache_creation", write)
	}
	if u.ReasoningTokens.OK {
		add("output_reasoning_tokens", reasoning)
	}
	add("total", in+out)
	return string(append(b, '}'))
}
