package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/otel"
	"github.com/goccy/go-json"
)

// The end-to-end test against a real Jaeger (v2, its defaults: OTLP on
// 127.0.0.1:4317 and :4318, the query API on :16686). .ci/run starts one;
// outside CI the test is skipped when none answers.

const jaegerQuery = "http://127.0.0.1:16686"

func needJaeger(t *testing.T) {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(jaegerQuery + "/api/services")
	if err == nil {
		resp.Body.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Jaeger does not answer at %s under CI (.ci/run starts it): %v", jaegerQuery, err)
	}
	t.Skipf("no Jaeger at %s (start one to run this test): %v", jaegerQuery, err)
}

// jaegerSpan is a span as Jaeger's query API returns it: times in
// microseconds.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"`
	Duration  int64 `json:"duration"`
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	Logs []struct {
		Fields []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"fields"`
	} `json:"logs"`
	ProcessID string `json:"processID"`
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// jaegerSpans polls the query API until the service has want spans.
func jaegerSpans(t *testing.T, service string, want int) map[string]jaegerSpan {
	t.Helper()
	var got map[string]jaegerSpan
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		got = map[string]jaegerSpan{}
		// The runs happened at their source's times (or in 2000, with
		// --deterministic): search all time, not the last hour.
		resp, err := http.Get(jaegerQuery + "/api/traces?limit=100&start=1&end=4102444800000000&service=" + url.QueryEscape(service))
		if err == nil {
			var body struct {
				Data []struct {
					Spans     []jaegerSpan `json:"spans"`
					Processes map[string]struct {
						ServiceName string `json:"serviceName"`
					} `json:"processes"`
				} `json:"data"`
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if json.Unmarshal(b, &body) == nil {
				for _, tr := range body.Data {
					for _, s := range tr.Spans {
						if tr.Processes[s.ProcessID].ServiceName == service {
							got[s.SpanID] = s
						}
					}
				}
			}
		}
		if len(got) >= want {
			return got
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("Jaeger has %d spans of service %s, want %d", len(got), service, want)
	return nil
}

var protocols = []string{"grpc", "http/protobuf"}

func uniqueName(kind, proto string) string {
	return fmt.Sprintf("agentconv-e2e-%s-%s-%d", kind, strings.ReplaceAll(proto, "/", "-"), time.Now().UnixNano())
}

// TestJaegerSpanTree sends a timed run with a subagent, built here, and
// checks what Jaeger shows: the tree, the attributes, the error statuses and
// the durations the source gave.
func TestJaegerSpanTree(t *testing.T) {
	needJaeger(t)
	for _, proto := range protocols {
		t.Run(strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
			service := uniqueName("tree", proto)
			env := map[string]string{"OTEL_SERVICE_NAME": service, "OTEL_EXPORTER_OTLP_PROTOCOL": proto}
			rep := formats.NewReport(io.Discard)
			w := otel.OTLP.NewWriter(nil, formats.WriteOptions{Dialect: "otlp", Report: rep, Stderr: os.Stderr,
				Getenv: func(k string) string { return env[k] }})
			p := convert.NewPipeline(w, otel.OTLP, convert.Options{Report: rep})
			for i, e := range formatstest.SubagentRun(service) { // a session of its own: a trace of its own
				e.Arrived = time.Now()
				e.Source.LineNo = i + 1
				if err := p.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			spans := jaegerSpans(t, service, 8)
			named := map[string]jaegerSpan{}
			for _, s := range spans {
				named[s.OperationName] = s
			}
			root, turn, task := named["invoke_agent malac"], named["turn 1"], named["execute_tool task"]
			sub, bash, edit := named["invoke_agent investigator"], named["execute_tool bash"], named["execute_tool edit"]
			chat := named["chat claude-haiku-4-5"]
			for _, pc := range [][2]jaegerSpan{{root, turn}, {turn, task}, {task, sub}, {sub, bash}, {turn, edit}, {sub, chat}} {
				if pc[1].parent() != pc[0].SpanID || pc[0].SpanID == "" {
					t.Errorf("%q is not under %q", pc[1].OperationName, pc[0].OperationName)
				}
			}
			if root.parent() != "" {
				t.Errorf("the root has a parent")
			}
			for key, want := range map[string]string{"gen_ai.conversation.id": service, "gen_ai.agent.name": "malac",
				"gen_ai.request.model": "", "gen_ai.provider.name": "anthropic", "agentconv.usage.input_tokens": "1000", "gen_ai.usage.input_tokens": "",
				"openinference.span.kind": "AGENT", "langfuse.session.id": service, "session.id": service} {
				if got := root.tag(key); got != want {
					t.Errorf("root %s = %q, want %q", key, got, want)
				}
			}
			if sub.tag("gen_ai.request.model") != "claude-haiku-4-5" || bash.tag("gen_ai.conversation.id") != service {
				t.Errorf("subagent tags %+v, bash tags %+v", sub.Tags, bash.Tags)
			}
			if chat.tag("gen_ai.usage.input_tokens") != "100" || chat.tag("gen_ai.operation.name") != "chat" || chat.tag("span.kind") != "client" {
				t.Errorf("chat tags %+v", chat.Tags)
			}
			if bash.tag("gen_ai.tool.call.id") != "call_s1" || bash.tag("error.type") != "failed" || bash.tag("otel.status_code") != "ERROR" {
				t.Errorf("bash tags %+v", bash.Tags)
			}
			if edit.tag("error.type") != "denied" || edit.tag("otel.status_code") != "ERROR" || len(edit.Logs) != 2 {
				t.Errorf("edit: tags %+v, %d logs", edit.Tags, len(edit.Logs))
			}
			if task.tag("otel.status_code") == "ERROR" || root.tag("otel.status_code") == "ERROR" {
				t.Errorf("task or root marked as errors")
			}
			for _, c := range []struct {
				s              jaegerSpan
				startMs, durMs int64
			}{{root, 0, 9000}, {turn, 100, 7900}, {task, 1000, 3600}, {sub, 1050, 3450}, {bash, 1100, 2800}, {edit, 5000, 500}} {
				if c.s.StartTime != formatstest.SampleStart.Add(time.Duration(c.startMs)*time.Millisecond).UnixMicro() || c.s.Duration != c.durMs*1000 {
					t.Errorf("%s: start %d µs, duration %d µs; want %d, %d", c.s.OperationName, c.s.StartTime, c.s.Duration,
						formatstest.SampleStart.Add(time.Duration(c.startMs)*time.Millisecond).UnixMicro(), c.durMs*1000)
				}
			}
		})
	}
}

// TestJaegerFixtures sends fixtures through the command line, a timed
// malac run with subagents and an untimed AdaL run, and checks that Jaeger
// holds exactly the spans that otlp-json writes for them: ids, names,
// parents, times and error statuses.
func TestJaegerFixtures(t *testing.T) {
	needJaeger(t)
	files := []string{"adal/seed-stream.ndjson", "adal/refused-stream.ndjson"}
	if _, ok := convert.Lookup("malac"); ok {
		files = append(files, "malac/subagents.jsonl")
	}
	for _, f := range files {
		for _, proto := range protocols {
			t.Run(f+"/"+strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
				service := uniqueName("fixture", proto)
				env := map[string]string{"OTEL_SERVICE_NAME": service, "OTEL_EXPORTER_OTLP_PROTOCOL": proto}
				// Deterministic, so that the otlp-json reference has the
				// same times as what is sent.
				code, ref, stderr := runCLI(t, nil, env, "--deterministic", "--to", "otlp-json", fixture(f))
				if code != 0 {
					t.Fatalf("otlp-json: exit %d: %s", code, stderr)
				}
				if code, _, stderr = runCLI(t, nil, env, "--deterministic", "--to", "otlp", fixture(f)); code != 0 {
					t.Fatalf("otlp: exit %d: %s", code, stderr)
				}
				want := decodeSpans(t, ref)
				got := jaegerSpans(t, service, len(want))
				if len(got) != len(want) {
					t.Errorf("Jaeger has %d spans, otlp-json %d", len(got), len(want))
				}
				for _, w := range want {
					g, ok := got[w.SpanID]
					if !ok {
						t.Errorf("span %s %q is not in Jaeger", w.SpanID, w.Name)
						continue
					}
					start, _ := strconv.ParseInt(w.StartTimeUnixNano, 10, 64)
					end, _ := strconv.ParseInt(w.EndTimeUnixNano, 10, 64)
					if g.OperationName != w.Name || g.parent() != w.ParentSpanID || g.StartTime != start/1000 || g.Duration != (end-start)/1000 ||
						(g.tag("otel.status_code") == "ERROR") != (w.Status.Code == 2) {
						t.Errorf("Jaeger has %+v, otlp-json %+v", g, w)
					}
				}
			})
		}
	}
}

type jsonSpanRef struct {
	TraceID, SpanID, ParentSpanID, Name string
	StartTimeUnixNano, EndTimeUnixNano  string
	Status                              struct{ Code int }
}

func decodeSpans(t *testing.T, out string) []jsonSpanRef {
	var spans []jsonSpanRef
	for _, r := range decodeJSON(t, out) {
		for _, rs := range r.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, jsonSpanRef{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name,
						StartTimeUnixNano: s.StartTimeUnixNano, EndTimeUnixNano: s.EndTimeUnixNano, Status: struct{ Code int }{s.Status.Code}})
				}
			}
		}
	}
	return spans
}

// TestJaegerResendSpool: a dead collector leaves a spool file, and sending
// that file on puts the very spans into Jaeger.
func TestJaegerResendSpool(t *testing.T) {
	needJaeger(t)
	service := uniqueName("spool", "grpc")
	env := map[string]string{"OTEL_SERVICE_NAME": service, "OTEL_EXPORTER_OTLP_TIMEOUT": "1000"}
	spool := t.TempDir() + "/spool.jsonl"
	code, _, stderr := runCLI(t, nil, env, "--to", "otlp", "--otlp-endpoint", "http://127.0.0.1:1", "--otlp-spool", spool, fixture("adal/multi-run-stream.ndjson"))
	if code != convert.ExitOutput || !strings.Contains(stderr, spool) {
		t.Fatalf("dead collector: exit %d: %s", code, stderr)
	}
	if code, _, stderr = runCLI(t, nil, env, "--from", "otlp-json", "--to", "otlp", spool); code != 0 {
		t.Fatalf("resend: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(spool)
	if err != nil {
		t.Fatal(err)
	}
	want := decodeSpans(t, string(b))
	got := jaegerSpans(t, service, len(want))
	for _, w := range want {
		if g, ok := got[w.SpanID]; !ok || g.OperationName != w.Name || g.parent() != w.ParentSpanID {
			t.Errorf("span %s %q not resent as it was: %+v", w.SpanID, w.Name, g)
		}
	}
}

// TestJaegerChatSpans sends runs with model requests and --otlp-content (a
// Claude run with a subagent, an ATIF trajectory) and checks what Jaeger
// holds: every span of the otlp-json reference, with its parent and every
// attribute; the chat spans as CLIENT spans under their agent's span, with
// their messages; and over the trace's spans, each gen_ai.usage.* adds up
// to the run's total that the root carries as agentconv.usage.*.
func TestJaegerChatSpans(t *testing.T) {
	needJaeger(t)
	for _, f := range []string{"claude/subagent-stream.jsonl", "atif/rfc-0001-example.json"} {
		for _, proto := range protocols {
			t.Run(f+"/"+strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
				service := uniqueName("chat", proto)
				env := map[string]string{"OTEL_SERVICE_NAME": service, "OTEL_EXPORTER_OTLP_PROTOCOL": proto}
				code, ref, stderr := runCLI(t, nil, env, "--deterministic", "--otlp-content", "--to", "otlp-json", fixture(f))
				if code != 0 {
					t.Fatalf("otlp-json: exit %d: %s", code, stderr)
				}
				if code, _, stderr = runCLI(t, nil, env, "--deterministic", "--otlp-content", "--to", "otlp", fixture(f)); code != 0 {
					t.Fatalf("otlp: exit %d: %s", code, stderr)
				}
				want := otlpSpans(t, ref)
				got := jaegerSpans(t, service, len(want))
				byID := map[string]spanAttrs{}
				for _, w := range want {
					byID[w.SpanID] = w
				}
				chats, messages := 0, 0
				sums := map[string]float64{}
				var root jaegerSpan
				for _, w := range want {
					g, ok := got[w.SpanID]
					if !ok {
						t.Errorf("span %s %q is not in Jaeger", w.SpanID, w.Name)
						continue
					}
					if g.OperationName != w.Name || g.parent() != w.Parent {
						t.Errorf("Jaeger has %q under %q, otlp-json %q under %q", g.OperationName, g.parent(), w.Name, w.Parent)
					}
					if w.Parent == "" {
						root = g
					}
					for _, a := range w.Attributes {
						var v string
						switch {
						case a.Value.StringValue != nil:
							v = *a.Value.StringValue
						case a.Value.IntValue != nil:
							v = *a.Value.IntValue
						case a.Value.DoubleValue != nil:
							v = strconv.FormatFloat(*a.Value.DoubleValue, 'g', -1, 64)
						default:
							continue // arrays: Jaeger shows them as JSON of its own
						}
						if g.tag(a.Key) != v {
							t.Errorf("%s: Jaeger has %s = %q, otlp-json %q", w.Name, a.Key, g.tag(a.Key), v)
						}
						if strings.HasPrefix(a.Key, "gen_ai.usage.") {
							n, _ := strconv.ParseFloat(v, 64)
							sums[a.Key] += n
						}
					}
					if op, _ := w.str("gen_ai.operation.name"); op == "chat" {
						chats++
						if g.tag("span.kind") != "client" {
							t.Errorf("%s: span.kind %q", w.Name, g.tag("span.kind"))
						}
						p := byID[w.Parent]
						if pop, _ := p.str("gen_ai.operation.name"); pop != "invoke_agent" && !strings.HasPrefix(p.Name, "turn ") {
							t.Errorf("%s is under %q, not its agent or turn", w.Name, p.Name)
						}
						if g.tag("gen_ai.output.messages") != "" {
							messages++
						}
					}
				}
				if chats == 0 || messages != chats {
					t.Errorf("%d chat spans, %d with gen_ai.output.messages in Jaeger", chats, messages)
				}
				checked := 0
				for key, sum := range sums {
					total := root.tag("agentconv." + strings.TrimPrefix(key, "gen_ai."))
					if total == "" {
						continue
					}
					checked++
					if n, _ := strconv.ParseFloat(total, 64); n != sum && (n-sum > 1e-9 || sum-n > 1e-9) {
						t.Errorf("%s adds up to %v over the spans in Jaeger; the root's total is %s", key, sum, total)
					}
				}
				if checked == 0 {
					t.Errorf("the root carries no agentconv.usage.* totals: %+v", root.Tags)
				}
				t.Logf("%d spans, %d chat spans with their messages, %d usage sums as the root's totals", len(want), chats, checked)
			})
		}
	}
}

// TestJaegerClaudeSession sends a Claude Code session whose subagents are
// in files of their own beside it (<session>/subagents/agent-*.jsonl) and
// checks what Jaeger shows: a trace per run, each linked to the run
// before it, every span of the otlp-json
// reference with its parent, and each subagent under the Task/Agent call
// that spawned it.
func TestJaegerClaudeSession(t *testing.T) {
	needJaeger(t)
	session := filepath.Join("formats", "claude", "testdata", "sessions", "55550000-0000-4000-8000-000000000001.jsonl")
	subagents, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(session, ".jsonl"), "subagents", "agent-*.jsonl"))
	if len(subagents) == 0 {
		t.Fatalf("the fixture %s has no subagent files beside it", session)
	}
	for _, proto := range protocols {
		t.Run(strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
			service := uniqueName("claude-session", proto)
			env := map[string]string{"OTEL_SERVICE_NAME": service, "OTEL_EXPORTER_OTLP_PROTOCOL": proto}
			code, ref, stderr := runCLI(t, nil, env, "--deterministic", "--from", "claude-session", "--to", "otlp-json", session)
			if code != 0 {
				t.Fatalf("otlp-json: exit %d: %s", code, stderr)
			}
			if code, _, stderr = runCLI(t, nil, env, "--deterministic", "--from", "claude-session", "--to", "otlp", session); code != 0 {
				t.Fatalf("otlp: exit %d: %s", code, stderr)
			}
			want := decodeSpans(t, ref)
			got := jaegerSpans(t, service, len(want))
			if len(got) != len(want) {
				t.Errorf("Jaeger has %d spans, otlp-json %d", len(got), len(want))
			}
			checkRunTraces(t, ref, got)
			for _, w := range want {
				if g, ok := got[w.SpanID]; !ok || g.OperationName != w.Name || g.parent() != w.ParentSpanID {
					t.Errorf("span %s %q (parent %s): Jaeger has %+v", w.SpanID, w.Name, w.ParentSpanID, g)
				}
			}
			// The subagents: agent spans below the root, each under a call
			// span of the tool that spawns subagents.
			nested := 0
			for _, g := range got {
				if !strings.HasPrefix(g.OperationName, "invoke_agent ") || g.parent() == "" {
					continue
				}
				call, ok := got[g.parent()]
				tool := call.tag("gen_ai.tool.name")
				if !ok || !strings.HasPrefix(call.OperationName, "execute_tool ") || tool != "Agent" && tool != "Task" {
					t.Errorf("subagent span %q is under %q (tool %q), not under its Task/Agent call", g.OperationName, call.OperationName, tool)
					continue
				}
				nested++
			}
			if nested != len(subagents) {
				t.Errorf("%d subagent spans nested under their calls, want %d (one per subagent file)", nested, len(subagents))
			}
		})
	}
}

// checkRunTraces checks a trace per run of otlp-json ref in Jaeger, each
// run's root linked to the root of the run before it in its session (a
// FOLLOWS_FROM reference in Jaeger, to another trace).
func checkRunTraces(t *testing.T, ref string, got map[string]jaegerSpan) {
	t.Helper()
	runs := len(strings.Split(strings.TrimSpace(ref), "\n"))
	traces := map[string]bool{}
	var roots []jaegerSpan
	for _, g := range got {
		traces[g.TraceID] = true
		if g.parent() == "" {
			roots = append(roots, g)
		}
	}
	if len(traces) != runs || len(roots) != runs {
		t.Errorf("%d runs are in %d traces with %d roots, want a trace each", runs, len(traces), len(roots))
	}
	rootOf := map[string]jaegerSpan{}
	for _, r := range roots {
		rootOf[r.SpanID] = r
	}
	linked := 0
	for _, r := range roots {
		for _, ref := range r.References {
			if ref.RefType != "FOLLOWS_FROM" {
				continue
			}
			if prev, ok := rootOf[ref.SpanID]; !ok || prev.TraceID != ref.TraceID || prev.TraceID == r.TraceID ||
				prev.tag("gen_ai.conversation.id") != r.tag("gen_ai.conversation.id") || prev.StartTime > r.StartTime {
				t.Errorf("run %s links to %s/%s, not to an earlier run of its session", r.TraceID, ref.TraceID, ref.SpanID)
				continue
			}
			linked++
		}
	}
	if linked != runs-1 {
		t.Errorf("%d of %d runs of one session link to the run before, want %d", linked, runs, runs-1)
	}
}

// TestJaegerSessionRuns sends sessions of several runs (a Gemini CLI
// session file, a Claude stream of four prompts) and checks that Jaeger
// holds a trace per run, linked in order, with every span of the
// otlp-json reference.
func TestJaegerSessionRuns(t *testing.T) {
	needJaeger(t)
	for _, f := range []string{"gemini/chat-pomodoro-timer.json", "claude/untether-autocompact-2.1.285.jsonl"} {
		for _, proto := range protocols {
			t.Run(f+"/"+strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
				service := uniqueName("session", proto)
				env := map[string]string{"OTEL_SERVICE_NAME": service, "OTEL_EXPORTER_OTLP_PROTOCOL": proto}
				code, ref, stderr := runCLI(t, nil, env, "--deterministic", "--lenient", "--to", "otlp-json", fixture(f))
				if code != 0 {
					t.Fatalf("otlp-json: exit %d: %s", code, stderr)
				}
				if runs := len(strings.Split(strings.TrimSpace(ref), "\n")); runs < 2 {
					t.Fatalf("%s has %d runs, want several", f, runs)
				}
				if code, _, stderr = runCLI(t, nil, env, "--deterministic", "--lenient", "--to", "otlp", fixture(f)); code != 0 {
					t.Fatalf("otlp: exit %d: %s", code, stderr)
				}
				want := decodeSpans(t, ref)
				got := jaegerSpans(t, service, len(want))
				if len(got) != len(want) {
					t.Errorf("Jaeger has %d spans, otlp-json %d", len(got), len(want))
				}
				checkRunTraces(t, ref, got)
			})
		}
	}
}
