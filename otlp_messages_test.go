package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/otel"
)

// needOracle skips a test whose oracle cannot run here, except under CI,
// where a missing oracle is a failure.
func needOracle(t *testing.T, why string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v", why, err)
	}
	t.Skipf("%s (%v); CI runs it", why, err)
}

// The message attributes and the schema file of each, in testdata/genai.
var messageSchemas = map[string]string{
	"gen_ai.input.messages":      "gen-ai-input-messages.json",
	"gen_ai.output.messages":     "gen-ai-output-messages.json",
	"gen_ai.system_instructions": "gen-ai-system-instructions.json",
}

// spanAttrs is what the message tests read of an otlp-json span.
type spanAttrs struct {
	Name       string `json:"name"`
	SpanID     string `json:"spanId"`
	Parent     string `json:"parentSpanId"`
	Attributes []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue *string  `json:"stringValue"`
			IntValue    *string  `json:"intValue"`
			DoubleValue *float64 `json:"doubleValue"`
			ArrayValue  *struct {
				Values []struct {
					StringValue *string `json:"stringValue"`
				} `json:"values"`
			} `json:"arrayValue"`
		} `json:"value"`
	} `json:"attributes"`
}

func (s spanAttrs) str(key string) (string, bool) {
	for _, a := range s.Attributes {
		if a.Key == key && a.Value.StringValue != nil {
			return *a.Value.StringValue, true
		}
	}
	return "", false
}

// otlpSpans reads the spans of otlp-json lines.
func otlpSpans(t *testing.T, out string) []spanAttrs {
	t.Helper()
	var spans []spanAttrs
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []spanAttrs `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal([]byte(l), &req); err != nil {
			t.Fatalf("not OTLP/JSON: %v", err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	return spans
}

// contentFixtures are the fixtures that the readers read: every file under
// testdata but the goldens, fuzz inputs, benchmarks, notes, the agents'
// captures (convert/agenttest checks them), and the
// otlp-json copies (passed on as they are).
func contentFixtures(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && (d.Name() == "golden" || d.Name() == "fuzz" || d.Name() == "bench" || d.Name() == "otlp-json" || d.Name() == "agents"):
			return filepath.SkipDir
		case !d.IsDir() && !strings.HasPrefix(d.Name(), ".") && !strings.HasSuffix(d.Name(), ".md"):
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// messageValue is one message attribute to validate.
type messageValue struct {
	Where  string          `json:"where"`
	Schema string          `json:"schema"`
	Value  json.RawMessage `json:"value"`
}

// validateMessages checks values against the conventions' JSON schemas
// with Python's jsonschema, and returns the errors by value index.
func validateMessages(t *testing.T, values []messageValue) map[int]string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		needOracle(t, "no python3 to validate the message attributes", err)
	}
	if out, err := exec.Command(py, "-c", "import jsonschema").CombinedOutput(); err != nil {
		needOracle(t, "no jsonschema for python3 to validate the message attributes", fmt.Errorf("%v: %s", err, out))
	}
	in := filepath.Join(t.TempDir(), "values.json")
	b, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// Any part with a type matches the schemas' GenericPart: a part of one
	// of the conventions' own types is checked against its own definition
	// too, and agentconv writes no other.
	script := `import json, os, sys
import jsonschema
defs = {"text": "TextPart", "reasoning": "ReasoningPart", "tool_call": "ToolCallRequestPart",
        "tool_call_response": "ToolCallResponsePart"}
schemas, validators = {}, {}
def validator(name, ref=None):
    if (name, ref) not in validators:
        if name not in schemas:
            schemas[name] = json.load(open(os.path.join(sys.argv[2], name)))
        s = schemas[name]
        if ref:
            s = {"$defs": s["$defs"], "$ref": "#/$defs/" + ref}
        validators[(name, ref)] = jsonschema.validators.validator_for(s)(s)
    return validators[(name, ref)]
for i, v in enumerate(json.load(open(sys.argv[1]))):
    name, value = v["schema"], v["value"]
    errs = ["%s at %s" % (e.message, list(e.path)) for e in validator(name).iter_errors(value)]
    if not errs:
        parts = value if name.endswith("system-instructions.json") else [p for m in value for p in m["parts"]]
        for p in parts:
            if p.get("type") not in defs:
                errs.append("a part of type %r" % p.get("type"))
                continue
            errs += ["%s in %s" % (e.message, p) for e in validator(name, defs[p["type"]]).iter_errors(p)]
    if errs:
        print(json.dumps({"i": i, "error": "; ".join(errs)}))
`
	cmd := exec.Command(py, "-c", script, in, filepath.Join("otel", "testdata", "genai"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the schema check failed to run: %v: %s", err, stderr.String())
	}
	bad := map[int]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		var r struct {
			I     int
			Error string
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("the schema check printed %q", l)
		}
		bad[r.I] = r.Error
	}
	return bad
}

// TestMessagesMatchTheSchema: with --otlp-content, every fixture's
// gen_ai.input.messages, gen_ai.output.messages and
// gen_ai.system_instructions, read back from otlp-json, are valid under
// the conventions' JSON schemas; every fixture with model requests has
// chat spans that carry the model's answer, and without --otlp-content no
// span carries any of them.
func TestMessagesMatchTheSchema(t *testing.T) {
	formatstest.Long(t)
	var values []messageValue
	// Two the schemas refuse, so that the check is seen to refuse.
	values = append(values,
		messageValue{Where: "refused: a result without its response", Schema: messageSchemas["gen_ai.input.messages"],
			Value: json.RawMessage(`[{"role":"tool","parts":[{"type":"tool_call_response","id":"c1"}]}]`)},
		messageValue{Where: "refused: an answer without parts", Schema: messageSchemas["gen_ai.output.messages"],
			Value: json.RawMessage(`[{"role":"assistant","finish_reason":"stop"}]`)})
	chatFixtures, chatsWithOutput := 0, 0
	for _, f := range contentFixtures(t) {
		rel, _ := filepath.Rel("testdata", f)
		code, out, stderr := runCLI(t, nil, nil, "--deterministic", "--lenient", "--to", "otlp-json", "--otlp-content", f)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", rel, code, stderr)
			continue
		}
		// Texts cut at the tightest limits are still messages, and so
		// are messages cut to an attribute length limit.
		for _, limit := range [][]string{{"--otlp-content-limit", "0"}, {"--otlp-content-limit", "1"}, {"--otlp-attribute-limit", "100"}} {
			_, cut, _ := runCLI(t, nil, nil, append([]string{"--deterministic", "--lenient", "--to", "otlp-json", "--otlp-content"}, append(limit, f)...)...)
			for _, s := range otlpSpans(t, cut) {
				for _, a := range s.Attributes {
					if v := a.Value.StringValue; v != nil && limit[0] == "--otlp-attribute-limit" && (len(*v) > 100 || !utf8.ValidString(*v)) {
						t.Errorf("%s, %v: span %q: %s is %d bytes (valid UTF-8: %v)", rel, limit, s.Name, a.Key, len(*v), utf8.ValidString(*v))
					}
				}
				for key, schema := range messageSchemas {
					if v, ok := s.str(key); ok {
						values = append(values, messageValue{Where: fmt.Sprintf("%s, %v: span %s %q: %s", rel, limit, s.SpanID, s.Name, key), Schema: schema, Value: json.RawMessage(v)})
					}
				}
			}
		}
		chats, answered := 0, 0
		for _, s := range otlpSpans(t, out) {
			op, _ := s.str("gen_ai.operation.name")
			if _, agg := s.str("agentconv.chat.aggregate"); op == "chat" && !agg && !strings.Contains(fmt.Sprint(s.Attributes), "agentconv.chat.aggregate") {
				chats++
			}
			for key, schema := range messageSchemas {
				v, ok := s.str(key)
				if !ok {
					continue
				}
				if !json.Valid([]byte(v)) {
					t.Errorf("%s: span %s %q: %s is not JSON: %s", rel, s.SpanID, s.Name, key, v)
					continue
				}
				if op == "chat" && key == "gen_ai.output.messages" {
					answered++
				}
				values = append(values, messageValue{Where: fmt.Sprintf("%s: span %s %q: %s", rel, s.SpanID, s.Name, key), Schema: schema, Value: json.RawMessage(v)})
			}
		}
		if chats > 0 {
			chatFixtures++
			chatsWithOutput += answered
			if answered == 0 {
				t.Errorf("%s: %d chat spans, none with gen_ai.output.messages", rel, chats)
			}
		}
		_, plain, _ := runCLI(t, nil, nil, "--deterministic", "--lenient", "--to", "otlp-json", f)
		for key := range messageSchemas {
			if strings.Contains(plain, `"`+key+`"`) {
				t.Errorf("%s: %s without --otlp-content", rel, key)
			}
		}
	}
	if chatFixtures == 0 {
		t.Fatal("no fixture has chat spans")
	}
	bad := validateMessages(t, values)
	for i, v := range values {
		refused := strings.HasPrefix(v.Where, "refused: ")
		if _, isBad := bad[i]; isBad != refused {
			t.Errorf("%s: schema errors %q", v.Where, bad[i])
		}
	}
	t.Logf("%d message attributes valid, %d fixtures with chat spans, %d chat spans with the model's answer", len(values)-2, chatFixtures, chatsWithOutput)
}

// TestSystemInstructions: with --otlp-content, the system prompt a source
// gives (here an ATIF trajectory's first system step) is
// gen_ai.system_instructions on the root and on the run's first chat span,
// valid under the conventions' schema, and otlp-json reads it back;
// without, it is a loss.
func TestSystemInstructions(t *testing.T) {
	doc := `{"schema_version":"ATIF-v1.6","session_id":"s1","agent":{"name":"a","version":"1","model_name":"claude-sonnet-4-5"},"steps":[
{"step_id":1,"source":"system","message":"You are a careful agent."},
{"step_id":2,"source":"user","message":"hi"},
{"step_id":3,"source":"agent","message":"hello","metrics":{"prompt_tokens":5,"completion_tokens":2}},
{"step_id":4,"source":"user","message":"bye"},
{"step_id":5,"source":"agent","message":"bye","metrics":{"prompt_tokens":9,"completion_tokens":1}}]}`
	code, out, stderr := runCLI(t, strings.NewReader(doc), nil, "--deterministic", "--to", "otlp-json", "--otlp-content")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `[{"type":"text","content":"You are a careful agent."}]`
	var values []messageValue
	chats := 0
	for _, s := range otlpSpans(t, out) {
		v, ok := s.str("gen_ai.system_instructions")
		op, _ := s.str("gen_ai.operation.name")
		if op == "chat" {
			chats++
		}
		switch first := op == "chat" && chats == 1; {
		case (first || s.Name == "invoke_agent a") && v != want:
			t.Errorf("%s: gen_ai.system_instructions = %q (set: %v), want %q", s.Name, v, ok, want)
		case !first && s.Name != "invoke_agent a" && ok:
			t.Errorf("%s (chat %d): gen_ai.system_instructions = %q", s.Name, chats, v)
		}
		if ok {
			values = append(values, messageValue{Where: s.Name, Schema: messageSchemas["gen_ai.system_instructions"], Value: json.RawMessage(v)})
		}
	}
	if chats != 2 {
		t.Errorf("%d chat spans, want 2", chats)
	}
	if evs := formatstest.Read(t, otel.OTLPJSON, out); len(evs) == 0 || evs[0].Run.SystemInstructions != "You are a careful agent." {
		t.Errorf("otlp-json reads back no system instructions")
	}
	for i, e := range validateMessages(t, values) {
		t.Errorf("%s: %s", values[i].Where, e)
	}
	_, out, stderr = runCLI(t, strings.NewReader(doc), nil, "--deterministic", "--to", "otlp-json")
	if strings.Contains(out, "gen_ai.system_instructions") || !strings.Contains(stderr, "lost: 1 × system instructions (without --otlp-content)") {
		t.Errorf("without --otlp-content: %s", stderr)
	}
}

// TestMessagesReadBack: otlp-json reads a chat span's answer back as the
// agent's message, so that runs written with --otlp-content and read
// back, then written again (as events, not copied), have chat spans with
// the same input and the same text and reasoning in their answer. (Where
// the answer's tool calls stand among its text, and so its finish reason,
// follows the times of the spans: parallel calls of one request are read
// back one after the other.)
func TestMessagesReadBack(t *testing.T) {
	for _, f := range []string{"claude/subagent-stream.jsonl", "claude/split-messages-stream.jsonl", "atif/rfc-0001-example.json", "acp/prompt-turn-example.jsonl"} {
		t.Run(f, func(t *testing.T) {
			_, first, _ := runCLI(t, nil, nil, "--deterministic", "--lenient", "--to", "otlp-json", "--otlp-content", fixture(f))
			var out bytes.Buffer
			w := formats.Standalone(otel.OTLPJSON.NewWriter(&out, formats.WriteOptions{Dialect: otel.OTLPJSON.Name, Report: formats.NewReport(io.Discard),
				Stderr: io.Discard, Params: map[string]string{otel.ParamContent: "true"}, Getenv: func(string) string { return "" }}))
			for i, e := range formatstest.Read(t, otel.OTLPJSON, first) {
				e.Source = formats.Source{} // written as events, not copied
				e.Arrived = formats.FixedEpoch.Add(time.Duration(i) * time.Millisecond)
				if err := w.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			messages := func(data string) []string {
				var m []string
				for _, s := range otlpSpans(t, data) {
					if op, _ := s.str("gen_ai.operation.name"); op == "chat" {
						in, _ := s.str("gen_ai.input.messages")
						out, _ := s.str("gen_ai.output.messages")
						var msgs []struct {
							Parts []struct{ Type, Content string }
						}
						if err := json.Unmarshal([]byte(out), &msgs); out != "" && err != nil {
							t.Fatalf("%s: %v", out, err)
						}
						var said []string
						for _, msg := range msgs {
							for _, p := range msg.Parts {
								if p.Type == "text" || p.Type == "reasoning" {
									said = append(said, p.Type+":"+p.Content)
								}
							}
						}
						m = append(m, s.Name+" "+in+" "+strings.Join(said, " | "))
					}
				}
				sort.Strings(m)
				return m
			}
			want, got := messages(first), messages(out.String())
			if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("read back and written again:\n%s\nwritten first:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
