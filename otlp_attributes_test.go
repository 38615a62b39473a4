package main

import (
	"os"
	"strings"
	"testing"
)

// runSpans reads otlp-json output as the spans of each run (one line each).
func runSpans(t *testing.T, out string) [][]spanAttrs {
	t.Helper()
	var runs [][]spanAttrs
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			runs = append(runs, otlpSpans(t, l))
		}
	}
	return runs
}

// knownProvider is the provider that a model's name implies, the way the
// GenAI trace issue lists them.
func knownProvider(model string) string {
	m := model[strings.LastIndexByte(model, '/')+1:]
	switch {
	case strings.HasPrefix(m, "claude-"):
		return "anthropic"
	case strings.HasPrefix(m, "gpt-"), strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"):
		return "openai"
	case strings.HasPrefix(m, "gemini-"):
		return "gcp.gemini"
	}
	return ""
}

// TestTraceAttributes checks, on every fixture, what the GenAI trace
// promises of its attributes: every span of a run with a session id
// carries it; a chat span is named after its model and says the
// operation; every agent and chat span whose model names its provider
// carries one; the root names a model only for a run of one, and lists
// the models used; an MCP call says so and names its server; and, on the
// fixtures that show them, the agent's version, a shell command's exit
// code and a refused call that is one span.
func TestTraceAttributes(t *testing.T) {
	mcpCalls, lateRuns := 0, 0
	for _, f := range contentFixtures(t) {
		rel := strings.TrimPrefix(f, fixture(""))
		code, out, stderr := runCLI(t, nil, nil, "--deterministic", "--lenient", "--to", "otlp-json", f)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", rel, code, stderr)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		head := strings.TrimSpace(string(b))
		if i := strings.IndexByte(head, '\n'); i > 0 && !strings.HasSuffix(f, ".json") {
			head = head[:i] // the first record of a stream
		}
		for i, spans := range runSpans(t, out) {
			var root spanAttrs
			for _, s := range spans {
				if _, ok := s.str("gen_ai.agent.id"); ok && s.Parent == "" {
					root = s
				}
			}
			// Every span carries it, also where the source gives it only
			// at the run's end (AdaL, cli-agents): those spans are held
			// until it is known.
			session, hasSession := root.str("gen_ai.conversation.id")
			if hasSession && !strings.Contains(head, session) {
				lateRuns++
			}
			for _, s := range spans {
				if got, ok := s.str("gen_ai.conversation.id"); hasSession && got != session {
					t.Errorf("%s run %d: %s has gen_ai.conversation.id %q (set: %v), the run's is %q", rel, i+1, s.Name, got, ok, session)
				}
				op, _ := s.str("gen_ai.operation.name")
				model, _ := s.str("gen_ai.request.model")
				if op == "chat" && s.Name != strings.TrimSpace("chat "+model) {
					t.Errorf("%s run %d: chat span %q for model %q", rel, i+1, s.Name, model)
				}
				if want := knownProvider(model); want != "" && (op == "chat" || op == "invoke_agent") {
					if got, _ := s.str("gen_ai.provider.name"); got == "" {
						t.Errorf("%s run %d: %s of %s has no gen_ai.provider.name (%s)", rel, i+1, s.Name, model, want)
					}
				}
				if name, _ := s.str("gen_ai.tool.name"); op == "execute_tool" && strings.HasPrefix(name, "mcp__") {
					mcpCalls++
					server, _ := s.str("agentconv.mcp.server.name")
					if m, _ := s.str("mcp.method.name"); m != "tools/call" || !strings.HasPrefix(name, "mcp__"+server+"__") || server == "" {
						t.Errorf("%s run %d: MCP call %s: mcp.method.name %q, server %q", rel, i+1, name, m, server)
					}
				}
			}
			models := root.strs("agentconv.models")
			model, hasModel := root.str("gen_ai.request.model")
			if hasModel != (len(models) == 1) || hasModel && model != models[0] {
				t.Errorf("%s run %d: the root's gen_ai.request.model %q (set: %v), agentconv.models %v", rel, i+1, model, hasModel, models)
			}
		}
	}
	if mcpCalls == 0 || lateRuns == 0 {
		t.Errorf("%d MCP calls, %d runs whose first record has no session id", mcpCalls, lateRuns)
	}
	t.Logf("%d MCP calls, %d runs whose first record has no session id", mcpCalls, lateRuns)

	_, out, _ := runCLI(t, nil, nil, "--deterministic", "--to", "otlp-json", fixture("claude/failures-stream.jsonl"))
	writes := 0
	for _, s := range otlpSpans(t, out) {
		if id, _ := s.str("gen_ai.tool.call.id"); id == "toolu_write" {
			writes++
			if e, _ := s.str("error.type"); e != "denied" {
				t.Errorf("the refused Write: error.type %q", e)
			}
		}
	}
	if writes != 1 {
		t.Errorf("the refused Write is %d spans, want 1", writes)
	}
	_, out, _ = runCLI(t, nil, nil, "--deterministic", "--to", "otlp-json", fixture("codex/tools-and-todos.jsonl"))
	found := false
	for _, s := range otlpSpans(t, out) {
		if id, _ := s.str("gen_ai.tool.call.id"); id == "item_3" {
			found = true
			if c := s.int("process.exit.code"); c != "1" {
				t.Errorf("item_3: process.exit.code %q, want 1", c)
			}
		}
	}
	if !found {
		t.Error("no span of codex's item_3")
	}
	_, out, _ = runCLI(t, nil, nil, "--deterministic", "--to", "otlp-json", fixture("claude/gleam-basic-query.ndjson"))
	if !strings.Contains(out, `{"key":"service.version","value":{"stringValue":"2.1.7"}}`) {
		t.Errorf("no service.version 2.1.7 from claude_code_version")
	}
}

// strs reads a string-array attribute.
func (s spanAttrs) strs(key string) []string {
	for _, a := range s.Attributes {
		if a.Key == key && a.Value.ArrayValue != nil {
			var out []string
			for _, v := range a.Value.ArrayValue.Values {
				if v.StringValue != nil {
					out = append(out, *v.StringValue)
				}
			}
			return out
		}
	}
	return nil
}

// int reads an int attribute as OTLP/JSON writes it, a decimal string.
func (s spanAttrs) int(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key && a.Value.IntValue != nil {
			return *a.Value.IntValue
		}
	}
	return ""
}
