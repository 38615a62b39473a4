package adal

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestStreamReaderSeed(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "adal", "seed-stream.ndjson"))
	if got, want := formatstest.Kinds(evs), "tool_call tool_result tool_call tool_result answer run_end"; got != want {
		t.Fatalf("kinds %q, want %q", got, want)
	}
	evs[1].Call.Output.Decode()
	if c := evs[1].Call; c.ID != "3f9c..." || c.Name != "bash" || c.Status != formats.Completed || !strings.HasPrefix(c.Output.Text(), "src/app.ts") {
		t.Errorf("tool_result read as %+v", c)
	}
	if string(evs[0].Call.Args) != `{"command":"npx eslint src/"}` {
		t.Errorf("args %s", evs[0].Call.Args)
	}
	end := evs[5]
	if end.Run.SessionID != "a1b2c3d4-..." || end.Run.Model != "claude-sonnet-4-20250514" || !end.Run.ExitCode.OK || end.Run.ExitCode.V != 0 || end.Status != formats.Completed {
		t.Errorf("complete read as %+v", end)
	}
	for i, e := range evs {
		if e.Source.LineNo != i+1 || e.Source.Dialect != "adal-stream" || len(e.Source.Line) == 0 {
			t.Errorf("event %d source %+v", i, e.Source)
		}
	}
}

func TestStreamReaderRefusalAndOldVariant(t *testing.T) {
	evs := formatstest.Read(t, Stream, formatstest.Fixture(t, "adal", "refused-stream.ndjson"))
	d := evs[2]
	if d.Kind != formats.ToolResult || d.Call.Status != formats.Denied || d.Call.Name != "bash" || !strings.Contains(d.Call.Error, "needs approval") || string(d.Call.Args) != `{"command":"rm -rf build/"}` {
		t.Errorf("permission_denied read as %+v", d)
	}
	if end := evs[3]; end.Status != formats.Denied || end.Run.ExitCode.V != 2 {
		t.Errorf("complete with exit 2 read as %+v", end)
	}

	evs = formatstest.Read(t, Stream, formatstest.Fixture(t, "adal", "old-variant-stream.ndjson"))
	// Results without ids pair with their calls by name.
	if evs[0].Call.ID != "call_1" || evs[1].Call.ID != "call_2" || evs[2].Call.ID != "call_1" || evs[3].Call.ID != "call_2" {
		t.Errorf("ids %q %q %q %q", evs[0].Call.ID, evs[1].Call.ID, evs[2].Call.ID, evs[3].Call.ID)
	}
	if evs[2].Call.Status != formats.Completed || evs[3].Call.Status != formats.Failed {
		t.Errorf("success/error read as %v/%v", evs[2].Call.Status, evs[3].Call.Status)
	}
}

func TestStreamReaderUnknownAndMalformed(t *testing.T) {
	in := `{"type":"tool_call","id":"a","name":"x","args":{}}
{"type":"progress","pct":50}
not json
{"type":"complete","exit_code":0}
`
	evs, bad, err := formatstest.ReadAll(Stream, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 1 || !strings.Contains(bad[0].Error(), "line 3") {
		t.Errorf("malformed lines: %v", bad)
	}
	if got := formatstest.Kinds(evs); got != "tool_call raw run_end" {
		t.Errorf("kinds %q", got)
	}
	if evs[1].Source.Type != "progress" {
		t.Errorf("raw type %q", evs[1].Source.Type)
	}
}

func TestJSONReader(t *testing.T) {
	in := `{"success":false,"answer":null,"error":"bash needs approval","exit_code":2,"session_id":"s1","model":"m","tool_calls":[{"id":"c1","name":"read","args":{"p":1},"status":"completed","output":"ok"},{"id":"c2","name":"bash","args":{"command":"rm"},"status":"denied"}]}
{
  "success": true, "answer": "done", "error": null, "exit_code": 0,
  "tool_calls": []
}
`
	evs := formatstest.Read(t, JSON, in)
	if got, want := formatstest.Kinds(evs), "run_start tool_call tool_result tool_call tool_result run_end run_start answer run_end"; got != want {
		t.Fatalf("kinds %q, want %q", got, want)
	}
	if d := evs[4]; d.Call.Status != formats.Denied || d.Call.Error != "bash needs approval" {
		t.Errorf("denied call %+v", d.Call)
	}
	if evs[5].Status != formats.Denied || evs[5].Run.ExitCode.V != 2 {
		t.Errorf("run end %+v", evs[5])
	}
	if evs[6].Source.LineNo != 2 || evs[6].Source.Line == nil || !evs[7].Source.Continued {
		t.Errorf("sources %+v %+v", evs[6].Source, evs[7].Source)
	}
}

func TestJSONWriterPreview(t *testing.T) {
	big := strings.Repeat("é", 40000) // 80000 bytes
	evs := []*formats.Event{
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c", Name: "cat"}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c", Status: formats.Completed, Output: formats.TextOutput(big)}},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	var out bytes.Buffer
	rep := formats.NewReport(io.Discard)
	w := formats.Standalone(JSON.NewWriter(&out, formats.WriteOptions{Dialect: JSON.Name, Report: rep}))
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	back := formatstest.Read(t, JSON, out.String())
	c := back[2].Call
	// AdaL's preview: 40,000 characters are past 30,000; it keeps the
	// first 2,000 and the last 1,000.
	want := strings.Repeat("é", 2000) + "\n... (37000 characters omitted) ...\n" + strings.Repeat("é", 1000)
	if !c.Truncated || c.Output.Text() != want {
		t.Errorf("preview: truncated=%v len=%d", c.Truncated, len(c.Output.Text()))
	}
	if rep.Losses() != 1 {
		t.Errorf("the preview was not reported as a loss")
	}
}

func TestTextWriterAndReader(t *testing.T) {
	var out, errb bytes.Buffer
	w := formats.Standalone(Text.NewWriter(&out, formats.WriteOptions{Dialect: Text.Name, Report: formats.NewReport(io.Discard), Stderr: &errb}))
	for _, e := range formatstest.Read(t, Stream, formatstest.Fixture(t, "adal", "multi-run-stream.ndjson")) {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != "Fixed 3 lint errors in src/app.ts...\n" {
		t.Errorf("stdout %q", out.String())
	}
	want := "Stopped: bash needs approval and no one could approve it (non-interactive run)\nRefused call: bash {\"command\":\"rm -rf build/\"}\nmodel error: overloaded, retries exhausted\n"
	if errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	evs := formatstest.Read(t, Text, "\ufeffline one\r\nline two\n")
	if len(evs) != 2 || evs[0].Kind != formats.Answer || evs[0].Text != "line one\nline two" {
		t.Errorf("text read as %+v", evs)
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		d    formats.Dialect
		head string
		want bool
	}{
		{Stream, string(formatstest.Fixture(t, "adal", "seed-stream.ndjson")), true},
		{Stream, `{"agent":"a","seq":1,"at":"2025-01-01T00:00:00Z","type":"error"}`, false},
		{Stream, `{"type":"tool_start","toolId":"t"}`, false},
		{JSON, `{"success":true,"answer":"x","exit_code":0}`, true},
		{JSON, string(formatstest.Fixture(t, "adal", "seed-stream.ndjson")), false},
		{Text, "hello", true},
		{Text, `{"a":1}`, false},
	} {
		if got := tc.d.Detect([]byte(tc.head)) > 0; got != tc.want {
			t.Errorf("%s.Detect(%.40q) = %v", tc.d.Name, tc.head, got)
		}
	}
}

var roundTripKinds = []formats.Kind{formats.ToolCall, formats.ToolResult, formats.Answer, formats.Notice, formats.RunEnd}

func FuzzStreamReader(f *testing.F) {
	for _, n := range []string{"seed-stream.ndjson", "refused-stream.ndjson", "error-stream.ndjson", "old-variant-stream.ndjson", "cut-stream.ndjson"} {
		f.Add(formatstest.Fixture(f, "adal", n))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, Stream, data, roundTripKinds...)
	})
}

func FuzzJSONReader(f *testing.F) {
	f.Add([]byte(`{"success":false,"answer":null,"error":"e","exit_code":2,"tool_calls":[{"id":"c2","name":"bash","args":{},"status":"denied"}]}`))
	f.Add([]byte("{\"success\":true,\"answer\":\"a\",\"exit_code\":0,\"tool_calls\":[{\"id\":\"1\",\"name\":\"n\",\"status\":\"completed\",\"output\":\"o\"}]}\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		formatstest.RoundTrip(t, JSON, data, formats.ToolCall, formats.ToolResult, formats.Answer)
	})
}

func FuzzTextReader(f *testing.F) {
	f.Add([]byte("Fixed 3 lint errors.\n"))
	f.Add([]byte("\ufeffline\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The reader turns CRLF into LF by design, so a CR does not
		// survive a round trip; check the rest.
		data = bytes.ReplaceAll(data, []byte("\r"), nil)
		// Likewise a byte order mark at the start is taken as one.
		for bytes.HasPrefix(data, []byte("\ufeff")) {
			data = data[3:]
		}
		formatstest.RoundTrip(t, Text, data, formats.Answer)
	})
}
