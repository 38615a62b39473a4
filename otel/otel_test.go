package otel_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var base = time.Date(2026, 3, 2, 9, 14, 0, 0, time.UTC)

func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// memExporter keeps its spans at Shutdown (the SDK's in-memory exporter
// forgets them).
type memExporter struct{ *tracetest.InMemoryExporter }

func (memExporter) Shutdown(context.Context) error { return nil }

// export writes events, as a pipeline gives them, into an in-memory
// exporter, and returns its spans and the losses reported.
func export(t *testing.T, evs []*formats.Event, params map[string]string) ([]sdktrace.ReadOnlySpan, string) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	var stderr bytes.Buffer
	rep := formats.NewReport(&stderr)
	w := otel.ExportWriter(memExporter{exp}, formats.WriteOptions{Dialect: "otlp", Report: rep, Stderr: &stderr, Params: params, Getenv: func(string) string { return "" }})
	p := formats.Standalone(w)
	for i, e := range evs {
		c := *e
		c.Arrived = formats.FixedEpoch.Add(time.Duration(i+1) * time.Millisecond)
		c.Source.LineNo = i + 1
		if err := p.Write(&c); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	rep.Summary("otlp")
	return exp.GetSpans().Snapshots(), stderr.String()
}

func byName(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no span %q", name)
	return nil
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func wantAttr(t *testing.T, s sdktrace.ReadOnlySpan, key, want string) {
	t.Helper()
	v, ok := attr(s, key)
	if !ok || v.String() != want {
		t.Errorf("%s: %s = %q (set: %v), want %q", s.Name(), key, v.String(), ok, want)
	}
}

func TestSpanTree(t *testing.T) {
	spans, stderr := export(t, formatstest.SubagentRun("ses_1"), nil)
	if len(spans) != 8 {
		t.Fatalf("%d spans, want 8", len(spans))
	}
	root := byName(t, spans, "invoke_agent malac")
	turn := byName(t, spans, "turn 1")
	task := byName(t, spans, "execute_tool task")
	sub := byName(t, spans, "invoke_agent investigator")
	bash := byName(t, spans, "execute_tool bash")
	edit := byName(t, spans, "execute_tool edit")
	chat := byName(t, spans, "chat claude-haiku-4-5") // the subagent's one request, on its model
	for _, pc := range [][2]sdktrace.ReadOnlySpan{{root, turn}, {turn, task}, {task, sub}, {sub, bash}, {turn, edit}, {sub, chat}} {
		parent, child := pc[0], pc[1]
		if child.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s: parent is not %s", child.Name(), parent.Name())
		}
	}
	if root.Parent().IsValid() {
		t.Errorf("root has a parent")
	}
	for _, s := range spans {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("%s is in another trace", s.Name())
		}
	}
	wantAttr(t, root, "gen_ai.operation.name", "invoke_agent")
	wantAttr(t, root, "gen_ai.agent.name", "malac")
	wantAttr(t, root, "gen_ai.agent.id", "main")
	wantAttr(t, root, "gen_ai.conversation.id", "ses_1")
	// The run used three models: no one request model, the list instead.
	if v, ok := attr(root, "gen_ai.request.model"); ok {
		t.Errorf("root: gen_ai.request.model = %q for a run of three models", v.String())
	}
	wantAttr(t, root, "agentconv.models", `["claude-sonnet-4-5","claude-haiku-4-5","claude-opus-4"]`)
	wantAttr(t, sub, "gen_ai.request.model", "claude-haiku-4-5")
	wantAttr(t, sub, "gen_ai.provider.name", "anthropic")
	wantAttr(t, bash, "gen_ai.conversation.id", "ses_1")
	wantAttr(t, turn, "gen_ai.conversation.id", "ses_1")
	wantAttr(t, root, "gen_ai.provider.name", "anthropic")
	// The run's totals on the root as agentconv.usage.* only; what its one
	// chat span does not count on a chat span that says it stands for
	// requests the source did not list, under the root.
	wantAttr(t, root, "agentconv.usage.input_tokens", "1000")
	for _, s := range spans {
		if _, ok := attr(s, "gen_ai.usage.input_tokens"); ok && s.SpanKind() != trace.SpanKindClient {
			t.Errorf("%s carries gen_ai.usage.*: only chat spans do", s.Name())
		}
	}
	agg := byName(t, spans, "chat") // three models: none named
	wantAttr(t, agg, "agentconv.chat.aggregate", "true")
	wantAttr(t, agg, "gen_ai.usage.input_tokens", "900")
	wantAttr(t, agg, "gen_ai.usage.output_tokens", "180")
	wantAttr(t, agg, "gen_ai.usage.cache_read.input_tokens", "50")
	wantAttr(t, agg, "langfuse.observation.usage_details", `{"input":850,"output":180,"input_cached_tokens":50,"total":1080}`)
	if agg.Parent().SpanID() != root.SpanContext().SpanID() {
		t.Errorf("the aggregated chat span is not under the root")
	}
	// Every span has a kind Phoenix and Langfuse read, and the session
	// as each names it.
	for _, k := range [][3]any{{root, "AGENT", "agent"}, {sub, "AGENT", "agent"}, {chat, "LLM", "generation"}, {agg, "LLM", "generation"},
		{bash, "TOOL", "tool"}, {turn, "CHAIN", "chain"}} {
		s := k[0].(sdktrace.ReadOnlySpan)
		wantAttr(t, s, "openinference.span.kind", k[1].(string))
		wantAttr(t, s, "langfuse.observation.type", k[2].(string))
	}
	for _, s := range spans {
		wantAttr(t, s, "session.id", "ses_1")
		wantAttr(t, s, "langfuse.session.id", "ses_1")
	}
	wantAttr(t, chat, "gen_ai.operation.name", "chat")
	wantAttr(t, chat, "gen_ai.request.model", "claude-haiku-4-5")
	wantAttr(t, chat, "gen_ai.provider.name", "anthropic")
	wantAttr(t, chat, "gen_ai.conversation.id", "ses_1")
	wantAttr(t, chat, "gen_ai.usage.input_tokens", "100")
	wantAttr(t, chat, "gen_ai.usage.output_tokens", "20")
	if chat.SpanKind() != trace.SpanKindClient {
		t.Errorf("chat span kind %v, want client", chat.SpanKind())
	}
	wantAttr(t, sub, "gen_ai.agent.id", "sub1")
	wantAttr(t, sub, "gen_ai.conversation.id", "ses_1")
	// The run's totals hold the subagent's: the subagent's own are its
	// totals, not counted again.
	wantAttr(t, sub, "agentconv.usage.input_tokens", "100")
	if _, ok := attr(sub, "gen_ai.usage.input_tokens"); ok {
		t.Errorf("the subagent's usage is counted twice: on the root and on its span")
	}
	wantAttr(t, bash, "gen_ai.operation.name", "execute_tool")
	wantAttr(t, bash, "gen_ai.tool.name", "bash")
	wantAttr(t, bash, "gen_ai.tool.call.id", "call_s1")
	wantAttr(t, bash, "error.type", "failed")
	wantAttr(t, edit, "error.type", "denied")
	if _, ok := attr(bash, "gen_ai.tool.call.arguments"); ok {
		t.Errorf("arguments recorded without --otlp-content")
	}
	if bash.Status().Code != codes.Error || bash.Status().Description != "exit status 1" {
		t.Errorf("bash status %+v", bash.Status())
	}
	if edit.Status().Code != codes.Error || root.Status().Code == codes.Error || task.Status().Code == codes.Error {
		t.Errorf("statuses: edit %v root %v task %v", edit.Status(), root.Status(), task.Status())
	}
	// Times: the source's, and the measured duration of the bash call.
	for i, want := range [][2]int{{0, 9000}, {100, 8000}, {1000, 4600}, {1050, 4500}, {1100, 3900}, {5000, 5500}} {
		s := []sdktrace.ReadOnlySpan{root, turn, task, sub, bash, edit}[i]
		if !s.StartTime().Equal(at(want[0])) || !s.EndTime().Equal(at(want[1])) {
			t.Errorf("%s: %v..%v, want %v..%v", s.Name(), s.StartTime(), s.EndTime(), at(want[0]), at(want[1]))
		}
	}
	var editEvents, turnEvents []string
	for _, e := range edit.Events() {
		editEvents = append(editEvents, e.Name+"@"+e.Time.Sub(base).String())
	}
	for _, e := range turn.Events() {
		turnEvents = append(turnEvents, e.Name)
	}
	if got := strings.Join(editEvents, " "); got != "permission_request@5.01s permission_answer@5.5s" {
		t.Errorf("edit events %s", got)
	}
	if got := strings.Join(turnEvents, " "); got != "notice model_change compaction" {
		t.Errorf("turn events %s", got)
	}
	// The writer reports what it leaves out; what the row does not carry
	// (the subagent's report) the pipeline reports, as the goldens show.
	if !strings.Contains(stderr, "lost: 5 × tool arguments and results (without --otlp-content)") {
		t.Errorf("losses: %s", stderr)
	}
}

func spanIDs(spans []sdktrace.ReadOnlySpan) []string {
	var ids []string
	for _, s := range spans {
		ids = append(ids, s.SpanContext().TraceID().String()+"/"+s.SpanContext().SpanID().String()+"/"+s.Parent().SpanID().String())
	}
	return ids
}

func TestStableIDs(t *testing.T) {
	lines := func(evs []*formats.Event) []*formats.Event {
		for i, e := range evs {
			e.Source.Line = []byte(e.Kind.String() + e.Call.ID + e.Agent + e.Time.String() + string(rune('a'+i)))
		}
		return evs
	}
	a, _ := export(t, lines(formatstest.SubagentRun("ses_1")), nil)
	b, _ := export(t, lines(formatstest.SubagentRun("ses_1")), nil)
	if strings.Join(spanIDs(a), ",") != strings.Join(spanIDs(b), ",") {
		t.Fatalf("ids differ between two exports:\n%v\n%v", spanIDs(a), spanIDs(b))
	}
	// Two runs of one session: a trace each, the second's root linked to
	// the first's, no id twice.
	second := lines(formatstest.SubagentRun("ses_1"))
	for _, e := range second {
		e.Time = e.Time.Add(time.Hour)
	}
	both, _ := export(t, append(lines(formatstest.SubagentRun("ses_1")), second...), nil)
	seen := map[string]bool{}
	traces := map[trace.TraceID]int{}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range both {
		traces[s.SpanContext().TraceID()]++
		id := s.SpanContext().SpanID().String()
		if seen[id] {
			t.Errorf("span id %s used twice", id)
		}
		seen[id] = true
		if !s.Parent().IsValid() {
			roots = append(roots, s)
		}
	}
	if len(both) != 2*len(a) || len(traces) != 2 || len(roots) != 2 {
		t.Fatalf("%d spans in %d traces with %d roots, want %d in 2 with 2", len(both), len(traces), len(roots), 2*len(a))
	}
	if roots[0].SpanContext().TraceID() != a[0].SpanContext().TraceID() {
		t.Errorf("the first run's trace changed when a second run followed")
	}
	if l := roots[1].Links(); len(l) != 1 || l[0].SpanContext.SpanID() != roots[0].SpanContext().SpanID() ||
		l[0].SpanContext.TraceID() != roots[0].SpanContext().TraceID() {
		t.Errorf("the second run's root links to %+v, want the first run's root", l)
	}
	if l := roots[0].Links(); len(l) != 0 {
		t.Errorf("the first run's root links to %+v", l)
	}
	other, _ := export(t, lines(formatstest.SubagentRun("ses_2")), nil)
	if l := other[len(other)-1].Links(); len(l) != 0 {
		t.Errorf("a run of another session links to %+v", l)
	}
}

func TestContentOptIn(t *testing.T) {
	spans, stderr := export(t, formatstest.SubagentRun("s"), map[string]string{otel.ParamContent: "true", otel.ParamContentLimit: "8"})
	bash := byName(t, spans, "execute_tool bash")
	wantAttr(t, bash, "gen_ai.tool.call.arguments", `{"comman`)
	wantAttr(t, bash, "gen_ai.tool.call.result", "FAIL che")
	if !strings.Contains(stderr, "past --otlp-content-limit") || strings.Contains(stderr, "without --otlp-content") {
		t.Errorf("losses: %s", stderr)
	}
}

// TestSpansLeaveAsTheyEnd: a live run shows up while it is still going,
// and the rest of it when it ends.
func TestSpansLeaveAsTheyEnd(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	rep := formats.NewReport(io.Discard)
	w := otel.ExportWriter(memExporter{exp}, formats.WriteOptions{Report: rep, Getenv: func(string) string { return "" }})
	p := formats.Standalone(w)
	run := formatstest.SubagentRun("live")
	for _, e := range run[:6] { // up to the end of the subagent's bash call
		if err := p.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(exp.GetSpans()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := exp.GetSpans(); len(got) != 1 || got[0].Name != "execute_tool bash" {
		t.Fatalf("while the run goes on, exported %d spans, want the ended bash call", len(got))
	}
	for _, e := range run[6:] {
		if err := p.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 8 {
		t.Errorf("%d spans after Close, want the run's 8", n)
	}
}

// TestServiceVersion: the agent's version, where the source gives it, is
// the resource's service.version.
func TestServiceVersion(t *testing.T) {
	evs := formatstest.SubagentRun("ses_v")
	evs[0].Run.AgentVersion = "2.1.7"
	spans, _ := export(t, evs, nil)
	for _, s := range spans {
		v, ok := s.Resource().Set().Value("service.version")
		if !ok || v.AsString() != "2.1.7" {
			t.Errorf("%s: service.version = %q (set: %v), want 2.1.7", s.Name(), v.AsString(), ok)
		}
	}
}

// TestContentMessages: with content asked for, by --otlp-content or by
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, the root carries the
// prompt and the answer as gen_ai.input.messages and
// gen_ai.output.messages, which otlp-json reads back; without, neither.
func TestContentMessages(t *testing.T) {
	run := []*formats.Event{
		{Kind: formats.RunStart, Time: at(0), Run: formats.RunInfo{SessionID: "ses_c", AgentName: "malac"}},
		{Kind: formats.UserMessage, Time: at(1), Text: "fix the test"},
		{Kind: formats.AgentStart, Time: at(1), Agent: "sub1", AgentInfo: formats.AgentInfo{Label: "helper"}},
		{Kind: formats.UserMessage, Time: at(1), Agent: "sub1", Text: "look"},
		{Kind: formats.AgentEnd, Time: at(2), Agent: "sub1", Status: formats.Completed},
		{Kind: formats.Answer, Time: at(2), Text: "done"},
		{Kind: formats.RunEnd, Time: at(3), Status: formats.Completed},
	}
	write := func(params map[string]string, env map[string]string) string {
		var out bytes.Buffer
		w := formats.Standalone(otel.OTLPJSON.NewWriter(&out, formats.WriteOptions{Dialect: otel.OTLPJSON.Name, Report: formats.NewReport(io.Discard),
			Stderr: io.Discard, Params: params, Getenv: func(k string) string { return env[k] }}))
		for _, e := range run {
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	in := `"gen_ai.input.messages","value":{"stringValue":"[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"content\":\"fix the test\"}]}]"}`
	outMsg := `"gen_ai.output.messages","value":{"stringValue":"[{\"role\":\"assistant\",\"parts\":[{\"type\":\"text\",\"content\":\"done\"}],\"finish_reason\":\"stop\"}]"}`
	for name, got := range map[string]string{
		"--otlp-content": write(map[string]string{otel.ParamContent: "true"}, nil),
		"SPAN_ONLY":      write(nil, map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}),
		"true":           write(nil, map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}),
	} {
		if !strings.Contains(got, in) || !strings.Contains(got, outMsg) {
			t.Errorf("%s: no messages on the root: %s", name, got)
		}
		if !strings.Contains(got, `"content\":\"look\"`) {
			t.Errorf("%s: no prompt on the subagent's span", name)
		}
		var prompt, answer string
		for _, e := range formatstest.Read(t, otel.OTLPJSON, got) {
			switch {
			case e.Kind == formats.UserMessage && e.Agent == "sub1":
				if e.Text != "look" {
					t.Errorf("%s: the subagent's prompt read back as %q", name, e.Text)
				}
			case e.Kind == formats.UserMessage:
				prompt = e.Text
			case e.Kind == formats.Answer:
				answer = e.Text
			}
		}
		if prompt != "fix the test" || answer != "done" {
			t.Errorf("%s: read back prompt %q, answer %q", name, prompt, answer)
		}
	}
	for _, v := range []string{"", "false", "EVENT_ONLY", "NO_CONTENT"} {
		if got := write(nil, map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": v}); strings.Contains(got, "gen_ai.input.messages") {
			t.Errorf("%q: messages recorded", v)
		}
	}
}
