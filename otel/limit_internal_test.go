package otel

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutValue: a value cut to the attribute limit keeps whole characters,
// and a JSON value stays valid JSON with its structure.
func TestCutValue(t *testing.T) {
	msgs := `[{"role":"user","parts":[{"type":"text","content":"` + strings.Repeat("é", 300) + `"}]},` +
		`{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"Bash","arguments":{"command":"` + strings.Repeat("x", 500) + `"}}]}]`
	for _, limit := range []int{2048, 400, 200, 170} {
		got := cutValue(msgs, limit)
		if len(got) > limit || !json.Valid([]byte(got)) || !utf8.ValidString(got) {
			t.Errorf("limit %d: %d bytes, valid JSON %v: %s", limit, len(got), json.Valid([]byte(got)), got)
			continue
		}
		var parsed []struct {
			Role  string `json:"role"`
			Parts []struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			} `json:"parts"`
		}
		if err := json.Unmarshal([]byte(got), &parsed); err != nil || len(parsed) != 2 || parsed[1].Parts[0].ID != "call_1" || parsed[0].Parts[0].Type != "text" {
			t.Errorf("limit %d: the structure changed: %s (%v)", limit, got, err)
		}
	}
	if got := cutValue(msgs, 10); got != "[]" {
		t.Errorf("a limit below the structure: %q, want []", got)
	}
	if got := cutValue("héllo wörld", 2); got != "h" || !utf8.ValidString(got) {
		t.Errorf("text: %q, want whole characters", got)
	}
	if got := cutValue(`{"a":"`+strings.Repeat("b", 100)+`"}`, 20); got != `{"a":"bbbbbbbbbbbbb"}` && len(got) > 20 {
		t.Errorf("an object: %q", got)
	}
}

// TestSplitCost: the parts of a run's cost add up to it, by the tokens.
func TestSplitCost(t *testing.T) {
	for _, c := range []struct {
		cost    float64
		weights []int64
	}{
		{0.0123, []int64{30, 52, 80, 105}},
		{0.24722425, []int64{1}},
		{1.0 / 3, []int64{1, 1, 1}},
		{0.0999967, []int64{0, 0}},
		{12.345678912, []int64{7, 1_000_000_000, 3}},
	} {
		parts := splitCost(c.cost, c.weights)
		sum := 0.0
		for _, p := range parts {
			if p < 0 {
				t.Errorf("%v by %v: a negative part %v", c.cost, c.weights, p)
			}
			sum += p
		}
		if d := sum - c.cost; d > 1e-12 || d < -1e-12 {
			t.Errorf("%v by %v: the parts %v add up to %v", c.cost, c.weights, parts, sum)
		}
	}
	if p := splitCost(0.01, []int64{1, 3}); p[0] != 0.0025 || p[1] != 0.0075 {
		t.Errorf("0.01 by 1:3 is %v", p)
	}
}

// TestAttrLimitSettings: the flag wins over OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
// which wins over OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT; none is no limit.
func TestAttrLimitSettings(t *testing.T) {
	both := map[string]string{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "300", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "200"}
	for _, c := range []struct {
		env    map[string]string
		params map[string]string
		want   int
	}{
		{nil, nil, 0},
		{map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "200"}, nil, 200},
		{both, nil, 300},
		{both, map[string]string{ParamAttrLimit: "2048"}, 2048},
	} {
		cfg, err := newConfig(opts(c.env, c.params))
		if err != nil || cfg.attrLimit != c.want {
			t.Errorf("%v %v: limit %v (%v), want %d", c.env, c.params, cfg, err, c.want)
		}
	}
}
