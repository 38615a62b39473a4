package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/goccy/go-json"
	collpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// A span in a form that otlp-json and OTLP protobuf share: what a resend
// must keep of it.
type wireSpan struct {
	Name, Parent, Kind, Start, End, Status string
	Attrs, Events, Resource                []string
}

// jsonAnyValue is an OTLP/JSON AnyValue.
type jsonAnyValue struct {
	StringValue *string  `json:"stringValue"`
	IntValue    *string  `json:"intValue"`
	DoubleValue *float64 `json:"doubleValue"`
	BoolValue   *bool    `json:"boolValue"`
	ArrayValue  *struct {
		Values []jsonAnyValue `json:"values"`
	} `json:"arrayValue"`
}

func (v jsonAnyValue) String() string {
	switch {
	case v.StringValue != nil:
		return "s:" + *v.StringValue
	case v.IntValue != nil:
		return "i:" + *v.IntValue
	case v.DoubleValue != nil:
		return "d:" + strconv.FormatFloat(*v.DoubleValue, 'g', -1, 64)
	case v.BoolValue != nil:
		return "b:" + strconv.FormatBool(*v.BoolValue)
	case v.ArrayValue != nil:
		var vs []string
		for _, e := range v.ArrayValue.Values {
			vs = append(vs, e.String())
		}
		return "a:[" + strings.Join(vs, ",") + "]"
	}
	return "?"
}

type jsonKV struct {
	Key   string       `json:"key"`
	Value jsonAnyValue `json:"value"`
}

func jsonKVs(kvs []jsonKV) []string {
	out := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, kv.Key+"="+kv.Value.String())
	}
	sort.Strings(out)
	return out
}

// wireSpansOfJSON reads otlp-json lines, by trace and span id.
func wireSpansOfJSON(t *testing.T, data string) map[string]wireSpan {
	t.Helper()
	out := map[string]wireSpan{}
	for _, l := range strings.Split(strings.TrimSpace(data), "\n") {
		var req struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []jsonKV `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID           string   `json:"traceId"`
						SpanID            string   `json:"spanId"`
						ParentSpanID      string   `json:"parentSpanId"`
						Name              string   `json:"name"`
						Kind              int      `json:"kind"`
						StartTimeUnixNano string   `json:"startTimeUnixNano"`
						EndTimeUnixNano   string   `json:"endTimeUnixNano"`
						Attributes        []jsonKV `json:"attributes"`
						Events            []struct {
							Name         string   `json:"name"`
							TimeUnixNano string   `json:"timeUnixNano"`
							Attributes   []jsonKV `json:"attributes"`
						} `json:"events"`
						Status struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"status"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal([]byte(l), &req); err != nil {
			t.Fatalf("not OTLP/JSON: %v", err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					w := wireSpan{Name: s.Name, Parent: s.ParentSpanID, Kind: strconv.Itoa(s.Kind), Start: s.StartTimeUnixNano,
						End: s.EndTimeUnixNano, Status: fmt.Sprintf("%d %s", s.Status.Code, s.Status.Message),
						Attrs: jsonKVs(s.Attributes), Resource: jsonKVs(rs.Resource.Attributes)}
					for _, e := range s.Events {
						w.Events = append(w.Events, e.Name+"@"+e.TimeUnixNano+strings.Join(jsonKVs(e.Attributes), ";"))
					}
					out[s.TraceID+"/"+s.SpanID] = w
				}
			}
		}
	}
	return out
}

func protoValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return "s:" + x.StringValue
	case *commonpb.AnyValue_IntValue:
		return "i:" + strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return "d:" + strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return "b:" + strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var vs []string
		for _, e := range x.ArrayValue.GetValues() {
			vs = append(vs, protoValue(e))
		}
		return "a:[" + strings.Join(vs, ",") + "]"
	}
	return "?"
}

func protoKVs(kvs []*commonpb.KeyValue) []string {
	out := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, kv.GetKey()+"="+protoValue(kv.GetValue()))
	}
	sort.Strings(out)
	return out
}

// wireSpansOfProto reads the requests a collector received.
func wireSpansOfProto(reqs []*collpb.ExportTraceServiceRequest) map[string]wireSpan {
	out := map[string]wireSpan{}
	for _, req := range reqs {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					w := wireSpan{Name: s.GetName(), Parent: hex.EncodeToString(s.GetParentSpanId()), Kind: strconv.Itoa(int(s.GetKind())),
						Start: strconv.FormatUint(s.GetStartTimeUnixNano(), 10), End: strconv.FormatUint(s.GetEndTimeUnixNano(), 10),
						Status: fmt.Sprintf("%d %s", s.GetStatus().GetCode(), s.GetStatus().GetMessage()),
						Attrs:  protoKVs(s.GetAttributes()), Resource: protoKVs(rs.GetResource().GetAttributes())}
					for _, e := range s.GetEvents() {
						w.Events = append(w.Events, e.GetName()+"@"+strconv.FormatUint(e.GetTimeUnixNano(), 10)+strings.Join(protoKVs(e.GetAttributes()), ";"))
					}
					out[hex.EncodeToString(s.GetTraceId())+"/"+hex.EncodeToString(s.GetSpanId())] = w
				}
			}
		}
	}
	return out
}

func sameSpans(t *testing.T, what string, want, got map[string]wireSpan) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d spans, want %d", what, len(got), len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("%s: span %s %q missing", what, id, w.Name)
			continue
		}
		if a, b := fmt.Sprintf("%+v", g), fmt.Sprintf("%+v", w); a != b {
			t.Errorf("%s: span %s changed:\n got  %s\n want %s", what, id, a, b)
		}
	}
}

// TestResendKeepsTheSpans: the spans of runs with chat spans and their
// messages (--otlp-content) come through otlp-json → otlp-json, and
// through a spool and its resend to a collector, over grpc and
// http/protobuf, exactly as they were written: ids, parents, times,
// statuses, events and every attribute.
func TestResendKeepsTheSpans(t *testing.T) {
	var all []string
	for _, f := range []string{"claude/subagent-stream.jsonl", "atif/rfc-0001-example.json", "codex/tools-and-todos.jsonl", "malac/subagents.jsonl"} {
		code, out, stderr := runCLI(t, nil, nil, "--deterministic", "--lenient", "--to", "otlp-json", "--otlp-content", fixture(f))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", f, code, stderr)
		}
		all = append(all, out)
	}
	data := strings.Join(all, "")
	want := wireSpansOfJSON(t, data)
	chats, messages := 0, 0
	for _, s := range want {
		if s.Kind == "3" && strings.HasPrefix(s.Name, "chat") {
			chats++
		}
		for _, a := range s.Attrs {
			if strings.HasPrefix(a, "gen_ai.input.messages=") || strings.HasPrefix(a, "gen_ai.output.messages=") {
				messages++
			}
		}
	}
	if chats == 0 || messages == 0 {
		t.Fatalf("%d chat spans, %d message attributes in the input", chats, messages)
	}
	in := t.TempDir() + "/runs.otlp.jsonl"
	if err := os.WriteFile(in, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	code, again, stderr := runCLI(t, nil, nil, "--to", "otlp-json", in)
	if code != 0 || again != data {
		t.Errorf("otlp-json → otlp-json changed the spans (exit %d): %s", code, stderr)
	}
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			dead := &fakeCollector{proto: p, endpoint: "http://127.0.0.1:1"}
			code, stderr, spool := send(t, dead, map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "500"}, "--from", "otlp-json", in)
			if code != convert.ExitOutput {
				t.Fatalf("to a dead collector: exit %d: %s", code, stderr)
			}
			b, err := os.ReadFile(spool)
			if err != nil {
				t.Fatal(err)
			}
			sameSpans(t, "the spool", want, wireSpansOfJSON(t, string(b)))
			c := newCollector(t, p, func(c *fakeCollector) { c.keep = true })
			if code, stderr, _ := send(t, c, nil, "--from", "otlp-json", spool); code != 0 {
				t.Fatalf("resend: exit %d: %s", code, stderr)
			}
			sameSpans(t, "the resend", want, wireSpansOfProto(c.received()))
		})
	}
	t.Logf("%d spans, %d chat spans, %d message attributes", len(want), chats, messages)
}
