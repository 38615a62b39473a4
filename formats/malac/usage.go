package malac

import (
	"strconv"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// tokenCounts decodes the undocumented inner objects of usage.turn and
// usage.total: it recognises the names the model APIs and agents use for
// token counts and cost, and ignores everything else.
type tokenCounts struct {
	InputTokens      num `json:"input_tokens"`
	Input            num `json:"input"`
	InputCamel       num `json:"inputTokens"`
	PromptTokens     num `json:"prompt_tokens"`
	OutputTokens     num `json:"output_tokens"`
	Output           num `json:"output"`
	OutputCamel      num `json:"outputTokens"`
	CompletionTokens num `json:"completion_tokens"`
	CachedTokens     num `json:"cached_tokens"`
	Cached           num `json:"cached"`
	CachedCamel      num `json:"cachedTokens"`
	CachedInput      num `json:"cached_input_tokens"`
	CacheRead        num `json:"cache_read_tokens"`
	CacheReadInput   num `json:"cache_read_input_tokens"`
	CacheWrite       num `json:"cache_write_tokens"`
	CacheCreation    num `json:"cache_creation_input_tokens"`
	TotalTokens      num `json:"total_tokens"`
	Total            num `json:"total"`
	TotalCamel       num `json:"totalTokens"`
	CostUSD          num `json:"cost_usd"`
	Cost             num `json:"cost"`
	CostCamel        num `json:"costUsd"`
	TotalCostUSD     num `json:"total_cost_usd"`
}

// parseUsage reads the counts it recognises from a usage object; anything
// else (null, a number, a field of another type) gives what could be read.
func parseUsage(raw json.RawMessage) formats.UsageInfo {
	if len(raw) == 0 || raw[0] != '{' {
		return formats.UsageInfo{}
	}
	var c tokenCounts
	_ = json.Unmarshal(raw, &c)
	return formats.UsageInfo{
		InputTokens:      count(c.InputTokens, c.Input, c.InputCamel, c.PromptTokens),
		OutputTokens:     count(c.OutputTokens, c.Output, c.OutputCamel, c.CompletionTokens),
		CacheReadTokens:  count(c.CachedTokens, c.Cached, c.CachedCamel, c.CachedInput, c.CacheRead, c.CacheReadInput),
		CacheWriteTokens: count(c.CacheWrite, c.CacheCreation),
		TotalTokens:      count(c.TotalTokens, c.Total, c.TotalCamel),
		CostUSD:          first(c.CostUSD, c.Cost, c.CostCamel, c.TotalCostUSD),
	}
}

// num is a JSON number, or nothing: a value of another type (a string, an
// object) is ignored instead of failing the record. Counts are read as
// floats so that 12.0 still counts.
type num struct {
	v  float64
	ok bool
}

func (n *num) UnmarshalJSON(b []byte) error {
	if f, err := strconv.ParseFloat(string(b), 64); err == nil {
		n.v, n.ok = f, true
	}
	return nil
}

func first(vs ...num) formats.Opt[float64] {
	for _, v := range vs {
		if v.ok {
			return formats.Some(v.v)
		}
	}
	return formats.Opt[float64]{}
}

func count(vs ...num) formats.Opt[int64] {
	f := first(vs...)
	return formats.Opt[int64]{V: int64(f.V), OK: f.OK}
}

// usageObject is the shape this writer gives usage.turn and usage.total.
type usageObject struct {
	InputTokens      *int64   `json:"input_tokens,omitempty"`
	OutputTokens     *int64   `json:"output_tokens,omitempty"`
	CachedTokens     *int64   `json:"cached_tokens,omitempty"`
	CacheWriteTokens *int64   `json:"cache_write_tokens,omitempty"`
	TotalTokens      *int64   `json:"total_tokens,omitempty"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
}

func toUsageObject(u formats.UsageInfo) *usageObject {
	if u.Empty() || (!u.InputTokens.OK && !u.OutputTokens.OK && !u.CacheReadTokens.OK &&
		!u.CacheWriteTokens.OK && !u.TotalTokens.OK && !u.CostUSD.OK) {
		return nil
	}
	return &usageObject{u.InputTokens.Ptr(), u.OutputTokens.Ptr(), u.CacheReadTokens.Ptr(),
		u.CacheWriteTokens.Ptr(), u.TotalTokens.Ptr(), u.CostUSD.Ptr()}
}
