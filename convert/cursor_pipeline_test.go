package convert_test

import (
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/convert/converttest"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// cursorRun runs the command line in memory.
func cursorRun(stdin string, args ...string) (int, string, string) {
	return converttest.Run(stdin, args...)
}

// TestDetectedAgainstNeighbours: on Cursor's stream, cursor-stream wins
// detection by far over the dialects whose envelope or types it shares.
func TestDetectedAgainstNeighbours(t *testing.T) {
	head := formatstest.Fixture(t, "cursor", "takopi-stream-success.jsonl")
	d, score := convert.Detect(head)
	if d.Name != "cursor-stream" || score != 100 {
		t.Fatalf("detected as %s (%d)", d.Name, score)
	}
	// A run without tools or thinking has Claude's envelope throughout,
	// and claude-stream scores it as high: Cursor's apiKeySource marks it,
	// and cursor-stream comes first in the table, which breaks the tie.
	plain := `{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/x","session_id":"c","model":"Auto","permissionMode":"default"}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"session_id":"c"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Hello."}]},"session_id":"c"}
{"type":"result","subtype":"success","duration_ms":1,"duration_api_ms":1,"is_error":false,"result":"Hello.","session_id":"c"}
`
	if d, _ := convert.Detect([]byte(plain)); d.Name != "cursor-stream" {
		t.Errorf("a plain Cursor run is detected as %s", d.Name)
	}
	for _, name := range []string{"claude-stream", "claude-json", "adal-stream"} {
		other, ok := convert.Lookup(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		if s := other.Detect(head); s > score-20 {
			t.Errorf("%s scores %d on Cursor's stream", name, s)
		}
	}
}

// TestCopiedVerbatim: cursor → cursor gives every line back, unknown
// types and a cut run included, and invents none.
func TestCopiedVerbatim(t *testing.T) {
	in := `{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/x","session_id":"c","model":"Auto","permissionMode":"default"}
{"type":"thinking","subtype":"delta","text":"hm","session_id":"c","timestamp_ms":1770823434041}
{"type":"thinking","subtype":"completed","session_id":"c","timestamp_ms":1770823434050}
{"type":"interaction_query","subtype":"request","query_type":"shell","query":{"command":"rm -rf /"},"session_id":"c"}
{"type":"tool_call","subtype":"started","call_id":"t","tool_call":{"shellToolCall":{"args":{"command":"sleep 9"}}},"session_id":"c","timestamp_ms":1770823434060}
`
	code, out, stderr := cursorRun(in, "--to", "cursor")
	if code != 0 || out != in {
		t.Errorf("exit %d, output:\n%s\nwant:\n%s", code, out, in)
	}
	if !strings.Contains(stderr, "cut") || strings.Contains(stderr, "lost:") {
		t.Errorf("stderr %q", stderr)
	}
	// A stream cut in the middle of streamed text: its message is made
	// for other dialects, but no line is added.
	partial := in[:strings.Index(in, `{"type":"thinking"`)] +
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Work"}]},"session_id":"c","timestamp_ms":1770823434041}` + "\n"
	if _, out, _ := cursorRun(partial, "--to", "cursor"); out != partial {
		t.Errorf("output:\n%s\nwant:\n%s", out, partial)
	}
	if _, out, _ := cursorRun(partial, "--to", "malac"); !strings.Contains(out, `"type":"assistant_message","message":{"role":"assistant","content":[{"type":"text","text":"Work"}]}`) {
		t.Errorf("malac %s", out)
	}
	// Into another dialect, the cut run is closed and its call cancelled.
	code, out, _ = cursorRun(in, "--exit-status", "--to", "adal-json")
	if code != 1 || !strings.Contains(formatstest.OneLine(out), `"status":"cancelled"`) {
		t.Errorf("exit %d, adal-json %s", code, out)
	}
}

// TestThroughCursor: a run keeps its outcome, calls and usage through
// cursor-stream, and says what it loses in the table's words.
func TestThroughCursor(t *testing.T) {
	d, _ := convert.Lookup("cursor")
	named := map[string]bool{}
	for _, f := range formats.Features() {
		if d.Carries&f == 0 {
			named[f.Name()] = true
		}
	}
	for _, q := range d.Quirks {
		named[q.Name()] = true
	}
	for _, fixture := range []string{"adal/refused-stream.ndjson", "malac/subagents.jsonl", "claude/failures-stream.jsonl"} {
		data := string(formatstest.Fixture(t, strings.Split(fixture, "/")[0], strings.Split(fixture, "/")[1]))
		_, direct, _ := cursorRun(data, "--deterministic", "--to", "adal-json")
		code, mid, stderr := cursorRun(data, "--deterministic", "--to", "cursor")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", fixture, code, stderr)
		}
		for _, l := range strings.Split(stderr, "\n") {
			what, ok := strings.CutPrefix(l, "agentconv: lost: ")
			if !ok {
				continue
			}
			_, what, _ = strings.Cut(what, " × ")
			what = strings.TrimSuffix(what, " (cursor-stream cannot carry them)")
			if strings.HasPrefix(what, "unknown ") {
				what = formats.RawEvents.Name()
			}
			if !named[what] {
				t.Errorf("%s: %q is not in cursor-stream's loss table", fixture, what)
			}
		}
		_, back, _ := cursorRun(mid, "--deterministic", "--from", "cursor", "--to", "adal-json")
		if outcome(direct) != outcome(back) {
			t.Errorf("%s: directly %s\nthrough cursor %s", fixture, outcome(direct), outcome(back))
		}
	}
}

// outcome is what adal-json says of each run: success, exit code and the
// calls' ids and statuses.
func outcome(adalJSON string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(formatstest.OneLine(adalJSON)), "\n") {
		for _, k := range []string{`"success":`, `"exit_code":`} {
			if i := strings.Index(l, k); i >= 0 {
				j := strings.IndexAny(l[i+len(k):], ",}")
				b.WriteString(l[i : i+len(k)+j])
				b.WriteByte(' ')
			}
		}
		for rest := l; ; {
			i := strings.Index(rest, `"id":"`)
			if i < 0 {
				break
			}
			rest = rest[i:]
			j := strings.Index(rest, `"status":"`)
			if j < 0 {
				break
			}
			k := strings.IndexByte(rest[j+10:], '"')
			b.WriteString(rest[:strings.IndexByte(rest[6:], '"')+7] + "=" + rest[j+10:j+10+k] + " ")
			rest = rest[j+10+k:]
		}
		b.WriteByte('\n')
	}
	return b.String()
}
