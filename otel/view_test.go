package otel_test

import (
	"io"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// exportDirect writes events into the writer outside a pipeline, with the
// run view formats.Standalone keeps.
func exportDirect(t *testing.T, evs []*formats.Event, params map[string]string) []sdktrace.ReadOnlySpan {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	w := formats.Standalone(otel.ExportWriter(memExporter{exp}, formats.WriteOptions{Dialect: "otlp", Report: formats.NewReport(io.Discard),
		Stderr: io.Discard, Params: params, Getenv: func(string) string { return "" }}))
	for _, e := range evs {
		c := *e
		if err := w.Write(&c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans().Snapshots()
}

// TestRunAnswerFromTheView: with content, the root's output is the run's
// answer as the run view gives it: a source that streams its text and
// names no answer answers with its last text, deltas included.
func TestRunAnswerFromTheView(t *testing.T) {
	run := []*formats.Event{
		{Kind: formats.RunStart, Time: at(0), Run: formats.RunInfo{SessionID: "ses_a", AgentName: "malac"}},
		{Kind: formats.UserMessage, Time: at(1), Text: "fix it"},
		{Kind: formats.TextDelta, Time: at(2), Text: "fixed "},
		{Kind: formats.TextDelta, Time: at(3), Text: "it"},
		{Kind: formats.RunEnd, Time: at(4), Status: formats.Completed},
	}
	params := map[string]string{otel.ParamContent: "true"}
	for name, spans := range map[string][]sdktrace.ReadOnlySpan{
		"pipeline": func() []sdktrace.ReadOnlySpan { s, _ := export(t, run, params); return s }(),
		"direct":   exportDirect(t, run, params),
	} {
		root := byName(t, spans, "invoke_agent malac")
		if v, ok := attr(root, "output.value"); !ok || v.AsString() != "fixed it" {
			t.Errorf("%s: the root's output.value = %q (set: %v), want the streamed text", name, v.AsString(), ok)
		}
	}
}

// TestRunOutcomeFromTheView: the root's status is the run view's outcome
// (formats.RunView.Settle), inside a pipeline or not: a run that ends
// without a status after an error failed, with exit code 1; one that ends
// with a non-zero exit code and no status failed too.
func TestRunOutcomeFromTheView(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  formats.Event
		code int64
	}{
		{"an error, no status", formats.Event{Kind: formats.RunEnd, Time: at(3)}, 1},
		{"exit code 3, no status", formats.Event{Kind: formats.RunEnd, Time: at(3), Run: formats.RunInfo{ExitCode: formats.Some(3)}}, 3},
	} {
		run := []*formats.Event{
			{Kind: formats.RunStart, Time: at(0), Run: formats.RunInfo{SessionID: "ses_o", AgentName: "malac"}},
			{Kind: formats.Notice, Time: at(1), Severity: formats.Error, Text: "the model is overloaded"},
			&tc.end,
		}
		for name, spans := range map[string][]sdktrace.ReadOnlySpan{
			"pipeline": func() []sdktrace.ReadOnlySpan { s, _ := export(t, run, nil); return s }(),
			"direct":   exportDirect(t, run, nil),
		} {
			root := byName(t, spans, "invoke_agent malac")
			if root.Status().Code != codes.Error {
				t.Errorf("%s, %s: the root's status is %v, want an error", tc.name, name, root.Status())
			}
			wantAttr(t, root, "error.type", "failed")
			if v, ok := attr(root, "process.exit.code"); !ok || v.AsInt64() != tc.code {
				t.Errorf("%s, %s: process.exit.code = %v (set: %v), want %d", tc.name, name, v.AsInt64(), ok, tc.code)
			}
		}
	}
}
