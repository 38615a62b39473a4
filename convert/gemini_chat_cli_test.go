package convert_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/gemini"
)

const chatMeta = `{"sessionId":"sess-1","projectHash":"h","startTime":"2026-06-10T10:00:00.000Z","lastUpdated":"2026-06-10T10:00:00.000Z","kind":"main"}` + "\n"

// TestChatThroughStream: gemini-chat is read only, so the round trip of
// the issue is checked from the session file: gemini-chat → gemini-stream
// gives back, read again, every event that both carry: the prompts, the
// assistant messages, every call with its id, tool and arguments, every
// result with its status, output and error, the notices of warning and
// error, and each run's session id and outcome.
func TestChatThroughStream(t *testing.T) {
	for _, name := range []string{"chat-pomodoro-timer.json", "chat-pomodoro-timer-resumed.jsonl", "chat-aim-control-pro-run4.json"} {
		in := formatstest.Fixture(t, "gemini", name)
		out := converttest.Convert(t, in, "gemini-chat", "gemini-stream")
		kinds := []formats.Kind{formats.UserMessage, formats.Message, formats.ToolCall, formats.ToolResult, formats.RunEnd}
		want := formatstest.Compare(formatstest.Read(t, gemini.Chat, in), kinds...)
		back := formatstest.Read(t, gemini.Stream, out)
		got := formatstest.Compare(back, kinds...)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: gemini-chat → gemini-stream changed the events\nwant %+v\ngot  %+v", name, want, got)
		}
		args := func(evs []*formats.Event) []string {
			var a []string
			for _, e := range formatstest.OfKind(evs, formats.ToolCall) {
				a = append(a, string(e.Call.Args))
			}
			return a
		}
		if !reflect.DeepEqual(args(formatstest.Read(t, gemini.Chat, in)), args(back)) {
			t.Errorf("%s: call arguments changed", name)
		}
		if len(want) < 20 {
			t.Errorf("%s: only %d events compared", name, len(want))
		}
	}
	// Notices: warnings and errors are carried, info notices are not.
	in := chatMeta + `{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":"go"}
{"id":"w1","timestamp":"2026-06-10T10:00:02.000Z","type":"warning","content":"slow"}
{"id":"e1","timestamp":"2026-06-10T10:00:03.000Z","type":"error","content":"[API Error: quota]"}
`
	out := converttest.Run
	code, stdout, stderr := out(in, "--deterministic", "--from", "gemini-chat", "--to", "gemini-stream")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	back := formatstest.Read(t, gemini.Stream, stdout)
	notices := formatstest.OfKind(back, formats.Notice)
	end := formatstest.OfKind(back, formats.RunEnd)
	if len(notices) != 2 || notices[0].Severity != formats.Warning || notices[1].Text != "[API Error: quota]" ||
		len(end) != 1 || end[0].Status != formats.Failed || end[0].Run.SessionID != "sess-1" {
		t.Errorf("read back as %s: %+v", formatstest.Kinds(back), end)
	}
}

// TestChatCutThroughPipeline: a session file still being written converts
// with a warning and a cut run, not an error of its own.
func TestChatCutThroughPipeline(t *testing.T) {
	in := chatMeta + `{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":"go"}
{"id":"g1","timestamp":"2026-06-10T10:00:02.000Z","type":"gemini","content":"","model":"m","toolCalls":[{"id":"c1","name":"ls","args":{},"status":"success","timestamp":"2026-06-10T10:00:03.000Z"}]}
{"id":"g2","timestamp":"2026-06-10T10:00:04.000Z","type":"gemini","content":"do`
	code, out, stderr := converttest.Run(in, "--deterministic", "--from", "gemini-chat", "--to", "gemini-stream")
	if code != 0 || !strings.Contains(stderr, "<stdin>:4: the file ends inside a record") || !strings.Contains(stderr, "closing it as a failed, cut run") ||
		!strings.Contains(out, `"tool_id":"c1"`) || !strings.Contains(out, `"message":"the stream was cut before the run completed"`) {
		t.Errorf("exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestChatBadRecords: a malformed record in the middle is an error that
// names its line (--lenient goes on); records of shapes not known are kept
// raw, and the pipeline warns once per type.
func TestChatBadRecords(t *testing.T) {
	in := chatMeta + `{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":"go"}
not json
{"$patch":{"x":1}}
{"$patch":{"x":2}}
{"id":"t1","timestamp":"2026-06-10T10:00:02.000Z","type":"telemetry","content":"x"}
{"id":"g1","timestamp":"2026-06-10T10:00:03.000Z","type":"gemini","content":"ok","model":"m"}
`
	code, _, stderr := converttest.Run(in, "--from", "gemini-chat", "--to", "gemini-stream")
	if code == 0 || !strings.Contains(stderr, "<stdin>:3: not valid JSON") {
		t.Errorf("without --lenient: exit %d: %s", code, stderr)
	}
	code, out, stderr := converttest.Run(in, "--lenient", "--from", "gemini-chat", "--to", "gemini-stream")
	if code != 0 || strings.Count(stderr, `"$patch" has no place`) != 1 || !strings.Contains(stderr, `"telemetry" has no place`) ||
		!strings.Contains(out, `"content":"ok"`) {
		t.Errorf("--lenient: exit %d: %s", code, stderr)
	}
}

// TestChatDirectory: a chats directory converts its session with the
// subagent nested under its call, in one trace; the subagent's file is
// read through its session, not again on its own.
func TestChatDirectory(t *testing.T) {
	dir := t.TempDir()
	chats := filepath.Join(dir, "chats")
	sid := "5e1f0c2a-1111-4222-8333-444455556666"
	agent := "9a8b7c6d-aaaa-4bbb-8ccc-dddddddddddd"
	os.MkdirAll(filepath.Join(chats, sid), 0o755)
	os.WriteFile(filepath.Join(chats, "session-2026-06-10T10-00-5e1f0c2a.jsonl"), []byte(`{"sessionId":"`+sid+`","projectHash":"h","startTime":"2026-06-10T10:00:00.000Z","lastUpdated":"2026-06-10T10:00:00.000Z","kind":"main"}
{"id":"u1","timestamp":"2026-06-10T10:00:01.000Z","type":"user","content":[{"text":"investigate"}]}
{"id":"g1","timestamp":"2026-06-10T10:00:02.000Z","type":"gemini","content":"","model":"gemini-3-pro","tokens":{"input":10,"output":2,"cached":0,"total":12},"toolCalls":[{"id":"inv1","name":"codebase_investigator","args":{},"agentId":"`+agent+`","status":"success","timestamp":"2026-06-10T10:00:09.000Z","result":[{"functionResponse":{"id":"inv1","name":"codebase_investigator","response":{"output":"found"}}}]}]}
{"id":"g2","timestamp":"2026-06-10T10:00:10.000Z","type":"gemini","content":"Found.","model":"gemini-3-pro","tokens":{"input":20,"output":2,"cached":10,"total":22}}
`), 0o644)
	os.WriteFile(filepath.Join(chats, sid, agent+".jsonl"), []byte(`{"sessionId":"`+agent+`","projectHash":"h","startTime":"2026-06-10T10:00:03.000Z","lastUpdated":"2026-06-10T10:00:03.000Z","kind":"subagent"}
{"id":"s1","timestamp":"2026-06-10T10:00:03.000Z","type":"user","content":[{"text":"look"}]}
{"id":"s2","timestamp":"2026-06-10T10:00:05.000Z","type":"gemini","content":"found","model":"gemini-3-flash","tokens":{"input":5,"output":1,"cached":0,"total":6}}
`), 0o644)
	code, out, stderr := converttest.Run("", "--deterministic", "--to", "otlp-json", chats)
	if code != 0 || strings.Contains(stderr, "warning") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(out, `"name":"invoke_agent`); n != 2 {
		t.Errorf("%d agent spans, want the run's and the subagent's", n)
	}
	if n := strings.Count(out, `"name":"chat`); n != 3 {
		t.Errorf("%d chat spans, want 3 (one per response)", n)
	}
	// The subagent's span is a child of its call's, in the session's trace.
	type span struct {
		TraceID, SpanID, ParentSpanID, Name string
	}
	spans := map[string]span{}
	traces := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var doc struct {
			ResourceSpans []struct {
				ScopeSpans []struct{ Spans []span }
			}
		}
		if err := json.Unmarshal([]byte(l), &doc); err != nil {
			t.Fatal(err)
		}
		for _, rs := range doc.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					spans[sp.SpanID] = sp
					traces[sp.TraceID] = true
				}
			}
		}
	}
	nested := false
	for _, sp := range spans {
		if strings.HasPrefix(sp.Name, "invoke_agent codebase_investigator") {
			nested = strings.HasPrefix(spans[sp.ParentSpanID].Name, "execute_tool codebase_investigator")
		}
	}
	if !nested || len(traces) != 1 {
		t.Errorf("the subagent is not nested under its call in one trace: %d traces, %+v", len(traces), spans)
	}
}
