package convert

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// What the backends show of the spans, by their own rules: Phoenix's, by
// running its own GenAI-to-OpenInference converter; Langfuse's, by its
// ingestion rules written down as a model (langfuseObservation). On every
// fixture, each backend's token and cost totals of a run must be the
// run's: nothing counted twice, nothing lost.

// backendRun is one run of a fixture as otlp-json with --otlp-content, and
// the run's own totals.
type backendRun struct {
	where string
	otlp  string // its OTLP/JSON request
	facts runFacts
	spans []otlpSpan
}

// backendRuns converts every fixture with --otlp-content.
func backendRuns(t *testing.T) []backendRun {
	t.Helper()
	var runs []backendRun
	for _, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		if strings.HasPrefix(rel, "otlp-json") {
			continue // spans of an older agentconv, copied as they are
		}
		data := fixtureData(t, in)
		facts := readFacts(t, "", data)
		out := first(convertTo(t, data, "", "otlp-json", "--otlp-content"))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		spans := otlpRuns(t, out)
		if len(lines) != len(facts) || len(spans) != len(facts) {
			continue // TestSpanUsageSums says why
		}
		for i := range lines {
			runs = append(runs, backendRun{where: fmt.Sprintf("%s run %d", rel, i+1), otlp: lines[i], facts: facts[i], spans: spans[i]})
		}
	}
	if len(runs) < 50 {
		t.Fatalf("only %d runs from the fixtures", len(runs))
	}
	return runs
}

// wantCount checks a backend's count of a run against the run's total;
// where the source's run total is below the sum of its requests (it
// contradicts itself), the requests' sum stands, as TestSpanUsageSums says.
func wantCount(t *testing.T, r backendRun, what string, got int64, total formats.Opt[int64], key string) {
	t.Helper()
	if got == total.V {
		return
	}
	var requests int64
	for _, s := range r.spans {
		if op, _ := s.str("gen_ai.operation.name"); op == "chat" && !s.bool("agentconv.chat.aggregate") {
			requests += s.int(key)
		}
	}
	if requests > total.V && got == requests {
		return
	}
	t.Errorf("%s: %s %d, the run's %d", r.where, what, got, total.V)
}

func wantCost(t *testing.T, r backendRun, what string, got float64, seen bool) {
	t.Helper()
	c := r.facts.usage.CostUSD
	if seen != c.OK && !(c.V == 0 && !seen) || math.Abs(got-c.V) > 1e-9 {
		t.Errorf("%s: %s %v (given: %v), the run's %+v", r.where, what, got, seen, c)
	}
}

func (s otlpSpan) int(key string) int64 {
	for _, a := range s.Attributes {
		if a.Key == key && a.Value.IntValue != nil {
			n, _ := strconv.ParseInt(*a.Value.IntValue, 10, 64)
			return n
		}
	}
	return 0
}

// phoenixConverter is where .ci/agents installed @arizeai/openinference-genai
// (its line in testdata/agents/pins.tsv): its node_modules, or "".
func phoenixConverter(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "agents", "pins.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	version := ""
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, "\t"); len(f) == 4 && f[1] == "@arizeai/openinference-genai" {
			version = f[2]
		}
	}
	if version == "" {
		t.Fatal("testdata/agents/pins.tsv pins no @arizeai/openinference-genai")
	}
	cache := os.Getenv("AGENTCONV_AGENTS")
	if cache == "" {
		if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
			cache = filepath.Join(d, "agentconv", "agents")
		} else {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "agentconv", "agents")
		}
	}
	dir := filepath.Join(cache, "openinference-genai-"+version, "node_modules")
	if _, err := os.Stat(filepath.Join(dir, "@arizeai", "openinference-genai")); err != nil {
		return ""
	}
	return dir
}

// phoenixSpan is what Phoenix takes of a span (otel/testdata/backends/phoenix.js).
type phoenixSpan struct {
	Name       string   `json:"name"`
	Kind       string   `json:"openinference.span.kind"`
	Prompt     *int64   `json:"llm.token_count.prompt"`
	Completion *int64   `json:"llm.token_count.completion"`
	Total      *int64   `json:"llm.token_count.total"`
	Cost       *float64 `json:"llm.cost.total"`
	Input      string   `json:"input.value"`
	Output     string   `json:"output.value"`
	Session    string   `json:"session.id"`
}

// TestPhoenixTotals runs Phoenix's own converter over every fixture's
// spans and checks what Phoenix counts, which is the LLM spans alone:
// their prompt and completion tokens, and their cost, are the run's; every
// span has a kind; the root shows the run's prompt and answer where the
// source gives them; every span of a run with a session is in it.
func TestPhoenixTotals(t *testing.T) {
	t.Parallel()
	dir := phoenixConverter(t)
	node, err := exec.LookPath("node")
	if dir == "" || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("@arizeai/openinference-genai is not installed, or no node (%v): run .ci/agents", err)
		}
		t.Skipf("@arizeai/openinference-genai is not installed, or no node (%v): run .ci/agents", err)
	}
	runs := backendRuns(t)
	var in bytes.Buffer
	for _, r := range runs {
		in.WriteString(r.otlp + "\n")
	}
	cmd := exec.Command(node, filepath.Join("..", "otel", "testdata", "backends", "phoenix.js"), dir)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("the converter: %v: %s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	i, llm, costed := 0, 0, 0
	for ; sc.Scan(); i++ {
		if i >= len(runs) {
			t.Fatalf("the converter gave more lines than the %d runs", len(runs))
		}
		r := runs[i]
		var spans []phoenixSpan
		if err := json.Unmarshal(sc.Bytes(), &spans); err != nil {
			t.Fatal(err)
		}
		var prompt, completion, total int64
		var cost float64
		costSeen := false
		root := phoenixSpan{}
		session := ""
		for j, s := range spans {
			if s.Kind == "" {
				t.Errorf("%s: span %q has no kind", r.where, s.Name)
			}
			if s.Session != "" {
				session = s.Session
			}
			if strings.HasPrefix(s.Name, "invoke_agent ") && j == len(spans)-1 {
				root = s
			}
			if s.Kind != "LLM" {
				if s.Prompt != nil || s.Completion != nil || s.Cost != nil {
					t.Errorf("%s: %s span %q has tokens or a cost, which Phoenix does not count", r.where, s.Kind, s.Name)
				}
				continue
			}
			llm++
			if s.Prompt != nil {
				prompt += *s.Prompt
			}
			if s.Completion != nil {
				completion += *s.Completion
			}
			if s.Total != nil {
				total += *s.Total
			}
			if s.Cost != nil {
				cost += *s.Cost
				costSeen = true
				costed++
			}
		}
		u := r.facts.usage
		wantCount(t, r, "Phoenix's prompt tokens", prompt, u.InputTokens, "gen_ai.usage.input_tokens")
		wantCount(t, r, "Phoenix's completion tokens", completion, u.OutputTokens, "gen_ai.usage.output_tokens")
		if total != prompt+completion {
			t.Errorf("%s: Phoenix's total tokens %d, its prompt and completion %d", r.where, total, prompt+completion)
		}
		wantCost(t, r, "Phoenix's cost", cost, costSeen)
		for _, s := range spans {
			if session != "" && s.Session != session {
				t.Errorf("%s: span %q is not in the session %s", r.where, s.Name, session)
			}
		}
		if root.Name == "" {
			t.Errorf("%s: the root is not the last span", r.where)
		} else if strings.HasPrefix(root.Input, `[{"role":"user","parts":`) || strings.HasPrefix(root.Output, `[{"role":"assistant","parts":`) {
			t.Errorf("%s: the root shows message JSON, not the prompt and answer: %q, %q", r.where, root.Input, root.Output)
		}
	}
	if i != len(runs) {
		t.Fatalf("the converter gave %d lines for %d runs", i, len(runs))
	}
	t.Logf("%d runs, %d LLM spans, %d with a cost", len(runs), llm, costed)
}

// Langfuse's OTel ingestion (packages/shared/src/server/otel/
// OtelIngestionProcessor.ts, ObservationTypeMapper.ts, and the ingestion
// service's total), as rules, at its two layouts: up to v3.205, every
// span's usage and cost count; from v3.206 on (Langfuse issue #14808), a
// span whose gen_ai.operation.name is invoke_agent or agent_step has no
// model, usage or cost. From v4.7.0 on, reasoning is taken out of the
// output tokens of gen_ai.usage.* (#15415); before, it is counted beside
// them, and so twice in the total.
type langfuseLayout struct {
	name            string
	skipsAgentUsage bool // from v3.206.0
	subtractsReason bool // from v4.7.0
}

var langfuseLayouts = []langfuseLayout{
	{name: "Langfuse v3.205", skipsAgentUsage: false, subtractsReason: false},
	{name: "Langfuse v3.206 to v4.6", skipsAgentUsage: true, subtractsReason: false},
	{name: "Langfuse v4.7 on", skipsAgentUsage: true, subtractsReason: true},
}

// langfuseObs is what Langfuse makes of a span.
type langfuseObs struct {
	typ      string
	usage    map[string]float64 // usage_details, with its total
	cost     float64
	hasCost  bool // a cost the span gives
	inferred bool // Langfuse would price it itself: a generation-like type with a model and usage, and no cost given
}

// langfuseObservation applies Langfuse's rules to a span's attributes.
func langfuseObservation(attrs map[string]any, l langfuseLayout) langfuseObs {
	str := func(k string) string { s, _ := attrs[k].(string); return s }
	num := func(k string) (float64, bool) {
		switch v := attrs[k].(type) {
		case float64:
			return v, true
		case int64:
			return float64(v), true
		}
		return 0, false
	}
	var o langfuseObs
	// The observation type, in ObservationTypeMapper's order.
	op := str("gen_ai.operation.name")
	switch {
	case str("langfuse.observation.type") != "":
		o.typ = strings.ToUpper(str("langfuse.observation.type"))
	case str("openinference.span.kind") != "":
		o.typ = map[string]string{"LLM": "GENERATION"}[str("openinference.span.kind")]
		if o.typ == "" {
			o.typ = str("openinference.span.kind")
		}
	case op == "chat" || op == "completion" || op == "text_completion" || op == "generate_content" || op == "generate":
		o.typ = "GENERATION"
	case op == "invoke_agent" || op == "create_agent":
		o.typ = "AGENT"
	case op == "execute_tool" || str("gen_ai.tool.name") != "" || str("gen_ai.tool.call.id") != "":
		o.typ = "TOOL"
	case str("gen_ai.request.model") != "" || str("gen_ai.response.model") != "":
		o.typ = "GENERATION"
	default:
		o.typ = "SPAN"
	}
	if l.skipsAgentUsage && (op == "invoke_agent" || op == "agent_step") {
		return o
	}
	// Usage: langfuse.observation.usage_details, else every gen_ai.usage.*
	// and llm.token_count.* key but the cost, renamed.
	o.usage = map[string]float64{}
	if j := str("langfuse.observation.usage_details"); j != "" {
		if err := json.Unmarshal([]byte(j), &o.usage); err != nil {
			o.usage = map[string]float64{"unreadable": 0}
		}
	} else {
		raw := map[string]float64{}
		for k := range attrs {
			if (strings.HasPrefix(k, "gen_ai.usage.") && k != "gen_ai.usage.cost") || strings.HasPrefix(k, "llm.token_count.") {
				if v, ok := num(k); ok {
					raw[strings.TrimPrefix(strings.TrimPrefix(k, "gen_ai.usage."), "llm.token_count.")] = v
				}
			}
		}
		pick := func(keys ...string) (float64, bool) {
			for _, k := range keys {
				if v, ok := raw[k]; ok {
					return v, true
				}
			}
			return 0, false
		}
		in, hasIn := pick("prompt_tokens", "input_tokens", "prompt")
		out, hasOut := pick("completion_tokens", "output_tokens", "completion")
		total, hasTotal := pick("total_tokens", "total")
		cr, hasCR := pick("cache_read.input_tokens", "cache_read_input_tokens", "cache_read_tokens", "prompt_details.cache_read", "input_cached_tokens")
		cw, hasCW := pick("cache_creation.input_tokens", "cache_creation_input_tokens", "cache_write_tokens", "prompt_details.cache_write", "input_cache_creation")
		reason, hasReason := pick("reasoning.output_tokens", "completion_details.reasoning")
		known := map[string]bool{"prompt_tokens": true, "input_tokens": true, "prompt": true, "completion_tokens": true, "output_tokens": true,
			"completion": true, "total_tokens": true, "total": true, "cache_read.input_tokens": true, "cache_read_input_tokens": true,
			"cache_read_tokens": true, "prompt_details.cache_read": true, "input_cached_tokens": true, "cache_creation.input_tokens": true,
			"cache_creation_input_tokens": true, "cache_write_tokens": true, "prompt_details.cache_write": true, "input_cache_creation": true}
		if l.subtractsReason {
			known["reasoning.output_tokens"], known["completion_details.reasoning"] = true, true
		}
		for k, v := range raw {
			if !known[k] {
				o.usage[k] = v // a custom usage type, counted as it is
			}
		}
		if hasIn {
			o.usage["input"] = math.Max(in-cr-cw, 0)
		}
		if hasOut {
			o.usage["output"] = out
			if l.subtractsReason {
				o.usage["output"] = math.Max(out-reason, 0)
			}
		}
		if hasTotal {
			o.usage["total"] = total
		}
		if hasCR {
			o.usage["input_cached_tokens"] = cr
		}
		if hasCW {
			o.usage["input_cache_creation"] = cw
		}
		if hasReason && l.subtractsReason {
			o.usage["output_reasoning_tokens"] = reason
		}
	}
	if _, ok := o.usage["total"]; !ok && len(o.usage) > 0 {
		sum := 0.0
		for _, v := range o.usage {
			sum += v
		}
		o.usage["total"] = sum
	}
	// Cost: langfuse.observation.cost_details, else gen_ai.usage.cost,
	// else llm.cost.total.
	if j := str("langfuse.observation.cost_details"); j != "" {
		var c map[string]float64
		if json.Unmarshal([]byte(j), &c) == nil {
			o.cost, o.hasCost = c["total"], true
		}
	} else if v, ok := num("gen_ai.usage.cost"); ok {
		o.cost, o.hasCost = v, true
	} else if v, ok := num("llm.cost.total"); ok {
		o.cost, o.hasCost = v, true
	}
	generationLike := map[string]bool{"GENERATION": true, "AGENT": true, "TOOL": true, "CHAIN": true, "RETRIEVER": true,
		"EVALUATOR": true, "EMBEDDING": true, "GUARDRAIL": true}[o.typ]
	hasModel := str("gen_ai.request.model") != "" || str("gen_ai.response.model") != ""
	o.inferred = !o.hasCost && generationLike && hasModel && len(o.usage) > 0
	return o
}

// attrValues turns a span's attributes into what Langfuse reads.
func attrValues(s otlpSpan) map[string]any {
	m := map[string]any{}
	for _, a := range s.Attributes {
		switch {
		case a.Value.StringValue != nil:
			m[a.Key] = *a.Value.StringValue
		case a.Value.IntValue != nil:
			n, _ := strconv.ParseInt(*a.Value.IntValue, 10, 64)
			m[a.Key] = n
		case a.Value.DoubleValue != nil:
			m[a.Key] = *a.Value.DoubleValue
		case a.Value.BoolValue != nil:
			m[a.Key] = *a.Value.BoolValue
		}
	}
	return m
}

// TestLangfuseRules pins the model of Langfuse's rules to cases read in
// its source, so that the fixture test below stands on them.
func TestLangfuseRules(t *testing.T) {
	old, now := langfuseLayouts[0], langfuseLayouts[2]
	agent := map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "claude-sonnet-4-5",
		"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(10), "gen_ai.usage.cost": 0.5}
	reasoning := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-5",
		"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(30), "gen_ai.usage.reasoning.output_tokens": int64(20),
		"gen_ai.usage.cache_read.input_tokens": int64(40)}
	for _, c := range []struct {
		name   string
		attrs  map[string]any
		layout langfuseLayout
		typ    string
		total  float64
		cost   float64
		priced bool // Langfuse prices it itself
	}{
		{"an agent's usage counts up to v3.205", agent, old, "AGENT", 110, 0.5, false},
		{"and not from v3.206", agent, now, "AGENT", 0, 0, false},
		{"reasoning counts twice in the total up to v3.205", reasoning, old, "GENERATION", 150, 0, true},
		{"and once from v4.7", reasoning, now, "GENERATION", 130, 0, true},
		{"and twice still in v3.206 to v4.6", reasoning, langfuseLayouts[1], "GENERATION", 150, 0, true},
		{"usage_details wins, with its total", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": int64(5),
			"langfuse.observation.usage_details": `{"input":60,"output":10,"output_reasoning_tokens":20,"input_cached_tokens":40,"total":130}`}, old, "GENERATION", 130, 0, false},
		{"gen_ai.usage.cost before llm.cost.total", map[string]any{"openinference.span.kind": "LLM", "gen_ai.usage.cost": 0.25, "llm.cost.total": 0.25}, now, "GENERATION", 0, 0.25, false},
		{"a span with a model is a generation", map[string]any{"gen_ai.request.model": "m"}, now, "GENERATION", 0, 0, false},
		{"langfuse.observation.type first", map[string]any{"langfuse.observation.type": "chain", "openinference.span.kind": "AGENT"}, now, "CHAIN", 0, 0, false},
	} {
		o := langfuseObservation(c.attrs, c.layout)
		if o.typ != c.typ || o.usage["total"] != c.total || o.cost != c.cost || o.inferred != c.priced {
			t.Errorf("%s: %s, total %v, cost %v, priced by Langfuse %v; want %s, %v, %v, %v", c.name, o.typ, o.usage["total"], o.cost, o.inferred, c.typ, c.total, c.cost, c.priced)
		}
	}
}

// TestLangfuseTotals applies Langfuse's rules, at both layouts, to every
// fixture's spans: a run's input tokens (cache included), output tokens
// (reasoning included), total and cost are the run's; Langfuse prices no
// span itself where the run's cost is known; every span has a type other
// than a plain span, and the session of the run.
func TestLangfuseTotals(t *testing.T) {
	t.Parallel()
	runs := backendRuns(t)
	for _, l := range langfuseLayouts {
		t.Run(l.name, func(t *testing.T) {
			for _, r := range runs {
				var in, out, total, cost float64
				costSeen, priced := false, 0
				session := ""
				for _, s := range r.spans {
					if v, ok := s.str("gen_ai.conversation.id"); ok {
						session = v
					}
				}
				for _, s := range r.spans {
					attrs := attrValues(s)
					o := langfuseObservation(attrs, l)
					if o.typ == "SPAN" {
						t.Errorf("%s: span %q is a plain span in Langfuse", r.where, s.Name)
					}
					if v, _ := s.str("langfuse.session.id"); session != "" && v != session {
						t.Errorf("%s: span %q has session %q, the run's is %q", r.where, s.Name, v, session)
					}
					u := o.usage
					in += u["input"] + u["input_cached_tokens"] + u["input_cache_creation"]
					out += u["output"] + u["output_reasoning_tokens"]
					total += u["total"]
					if o.hasCost {
						cost += o.cost
						costSeen = true
					}
					if o.inferred {
						priced++
					}
				}
				u := r.facts.usage
				wantCount(t, r, l.name+"'s input tokens", int64(in), u.InputTokens, "gen_ai.usage.input_tokens")
				wantCount(t, r, l.name+"'s output tokens", int64(out), u.OutputTokens, "gen_ai.usage.output_tokens")
				if total != in+out {
					t.Errorf("%s: %s's total %v, its input and output %v", r.where, l.name, total, in+out)
				}
				wantCost(t, r, l.name+"'s cost", cost, costSeen)
				if u.CostUSD.OK && priced > 0 {
					t.Errorf("%s: the run's cost is known, and %s prices %d spans itself", r.where, l.name, priced)
				}
			}
		})
	}
}
