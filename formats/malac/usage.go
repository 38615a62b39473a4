package malac

import (
	"math"
	"strconv"
	"strings"

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

// excludesCache reports whether the usage counts of an agent on a model
// leave cached tokens out of the input count. malac does not document its
// counts; they are taken in the convention of the API of the model's
// provider: Anthropic's input_tokens exclude cache reads and writes, while
// OpenAI's and Gemini's input counts include cached tokens, as the model's
// InputTokens do.
func excludesCache(model string) bool {
	m := strings.ToLower(model)
	return strings.HasPrefix(m, "claude") || strings.HasPrefix(m, "anthropic") || strings.Contains(m, "/claude") ||
		strings.Contains(m, ".claude") // anthropic/claude-…, us.anthropic.claude-… (Bedrock)
}

// readUsage reads a usage object of an agent on a model, in the model's
// meaning: input counts cache reads and writes.
func readUsage(rep *formats.Report, line int, raw json.RawMessage, model string) formats.UsageInfo {
	u, prompt, odd := parseUsage(raw)
	if len(odd) > 0 {
		rep.Warn(line, "token counts that are not whole numbers (%s): read as not given", strings.Join(odd, ", "))
	}
	// prompt_tokens is OpenAI's name, which counts cached tokens whatever
	// the model.
	if excludesCache(model) && u.InputTokens.OK && !prompt {
		u.InputTokens.V += u.CacheReadTokens.V + u.CacheWriteTokens.V
	}
	return u
}

// parseUsage reads the counts it recognises from a usage object, as they
// are; anything else (null, a number, a field of another type) gives what
// could be read.
func parseUsage(raw json.RawMessage) (u formats.UsageInfo, prompt bool, odd []string) {
	if len(raw) == 0 || raw[0] != '{' {
		return formats.UsageInfo{}, false, nil
	}
	var c tokenCounts
	_ = json.Unmarshal(raw, &c)
	prompt = !c.InputTokens.ok && !c.Input.ok && !c.InputCamel.ok && c.PromptTokens.ok
	return formats.UsageInfo{
		InputTokens:      count(&odd, c.InputTokens, c.Input, c.InputCamel, c.PromptTokens),
		OutputTokens:     count(&odd, c.OutputTokens, c.Output, c.OutputCamel, c.CompletionTokens),
		CacheReadTokens:  count(&odd, c.CachedTokens, c.Cached, c.CachedCamel, c.CachedInput, c.CacheRead, c.CacheReadInput),
		CacheWriteTokens: count(&odd, c.CacheWrite, c.CacheCreation),
		TotalTokens:      count(&odd, c.TotalTokens, c.Total, c.TotalCamel),
		CostUSD:          first(c.CostUSD, c.Cost, c.CostCamel, c.TotalCostUSD),
	}, prompt, odd
}

// num is a JSON number, or nothing: a value of another type (a string, an
// object) is ignored instead of failing the record. Counts are read as
// floats so that 12.0 still counts.
type num struct {
	v    float64
	ok   bool
	text string
}

func (n *num) UnmarshalJSON(b []byte) error {
	// A number beyond float64 (1e400) is ±Inf, and an error.
	if f, err := strconv.ParseFloat(string(b), 64); err == nil || math.IsInf(f, 0) {
		n.v, n.ok, n.text = f, true, string(b)
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

// count is the first count of vs given; one that is not a whole number
// is added to odd, and read as not given.
func count(odd *[]string, vs ...num) formats.Opt[int64] {
	for _, v := range vs {
		if v.ok {
			c, ok := formats.CountOf(v.v)
			if !ok {
				*odd = append(*odd, v.text)
			}
			return c
		}
	}
	return formats.Opt[int64]{}
}

// usageObject is the shape this writer gives usage.turn and usage.total.
type usageObject struct {
	InputTokens      *int64   `json:"input_tokens,omitempty"`
	PromptTokens     *int64   `json:"prompt_tokens,omitempty"`
	OutputTokens     *int64   `json:"output_tokens,omitempty"`
	CachedTokens     *int64   `json:"cached_tokens,omitempty"`
	CacheWriteTokens *int64   `json:"cache_write_tokens,omitempty"`
	TotalTokens      *int64   `json:"total_tokens,omitempty"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
}

// toUsageObject writes counts of the model's meaning in the convention of
// the agent's model (see excludesCache).
func toUsageObject(u formats.UsageInfo, model string) *usageObject {
	if !u.InputTokens.OK && !u.OutputTokens.OK && !u.CacheReadTokens.OK &&
		!u.CacheWriteTokens.OK && !u.TotalTokens.OK && !u.CostUSD.OK {
		return nil
	}
	o := &usageObject{InputTokens: u.InputTokens.Ptr(), OutputTokens: u.OutputTokens.Ptr(), CachedTokens: u.CacheReadTokens.Ptr(),
		CacheWriteTokens: u.CacheWriteTokens.Ptr(), TotalTokens: u.TotalTokens.Ptr(), CostUSD: u.CostUSD.Ptr()}
	if excludesCache(model) && u.InputTokens.OK {
		if n := u.InputTokens.V - u.CacheReadTokens.V - u.CacheWriteTokens.V; n >= 0 {
			*o.InputTokens = n
		} else {
			// Fewer input tokens than cached ones: the counts break the
			// model's rule, and only the name that includes cached tokens
			// keeps them as they are.
			o.InputTokens, o.PromptTokens = nil, o.InputTokens
		}
	}
	return o
}
