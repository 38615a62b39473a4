package adal

import (
	"bytes"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/goccy/go-json"
)

var scanSeeds = []string{
	`{"type":"tool_call","id":"call_1","name":"bash","args":{"command":"ls \"a b\"\tc ü"}}`,
	`{"type":"tool_result","id":"call_1","name":"bash","status":"completed","output":"tab\there \"q\" back\\slash 🙂\n"}`,
	`{"type":"permission_denied","id":"c2","name":"bash","args":{},"reason":"needs approval"}`,
	`{"type":"complete","exit_code":0,"session_id":"s","model":"m"}`, `{"type":"complete","exit_code":-0}`, `{"type":"complete","exit_code":1.0}`,
	`{"type":"answer","content":"\u00e9\u2028"}`, `{"type":"error","message":"\ud800"}`, `{"Type":"answer"}`, `{"TYPE":"answer","type":"error"}`,
	`{"type":"answer","type":"error"}`, `{"id":null}`, `{"args":null}`, `{"name":5}`, `{"exit_code":"0"}`, `{"exit_code":99999999999999999999}`,
	`{"x":[1,{"y":null}],"type":"answer"}`, ` { "type" : "answer" , "content" : "a" } `, `{}`, `[]`, `{"type":"answer"} x`, `{"typ\u0065":"x"}`,
	`{"outpuT":"x"}`, "{\"name\":\"a\xffb\"}", `{"output":{"a":1}}`, `{"ſtatus":"x"}`,
}

// FuzzStreamLineScan: a line the one-pass scan takes reads as the decoder
// reads it.
func FuzzStreamLineScan(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, line := range bytes.Split(formatstest.Fixture(f, "adal", "seed-stream.ndjson"), []byte("\n")) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkScanLine(t, line) })
}

// The scan says which args are compact.
func TestStreamLineArgsCompact(t *testing.T) {
	for in, want := range map[string]bool{
		`{"type":"tool_call","args":{"a":[1,2],"b":"x y"}}`:    true,
		`{"type":"tool_call", "args": {"a":[1,2]} }`:           true,
		`{"type":"tool_call","args":{"a": 1}}`:                 false,
		`{"type":"tool_call","args":[1 ,2]}`:                   false,
		`{"type":"tool_call","args":{"a":{"b":[true,null]}}}`:  true,
		`{"type":"tool_call","args":{"a":"\" \\"},"name":"n"}`: true,
	} {
		var l streamLine
		if !l.scan([]byte(in)) {
			t.Fatalf("%s: not scanned", in)
		}
		if l.argsCompact != want {
			t.Errorf("%s: compact %v, want %v", in, l.argsCompact, want)
		}
	}
}

func TestStreamLineScanIsTheDecoder(t *testing.T) {
	for i, s := range scanSeeds {
		checkScanLine(t, []byte(s))
		var l streamLine
		if i < 4 && !l.scan([]byte(s)) {
			t.Errorf("%s: left to the decoder, want it read in one pass", s)
		}
	}
}

func checkScanLine(t *testing.T, line []byte) {
	t.Helper()
	// Twice with one interner: the second reads the names interned.
	names := &formats.Interner{}
	fast := streamLine{names: names}
	if !fast.scan(line) {
		return
	}
	fast = streamLine{names: names}
	if !fast.scan(line) {
		t.Fatalf("%q: scanned once, not twice", line)
	}
	fast.names = nil
	if utf8.Valid(line) {
		// Known valid, the scan reads it alike without checking it again.
		trusting := streamLine{valid: true}
		if !trusting.scan(line) {
			t.Fatalf("%q: scanned, but not when known to be valid UTF-8", line)
		}
		trusting.valid = false
		if !reflect.DeepEqual(trusting, fast) {
			t.Fatalf("%q:\n known valid %+v\n checked     %+v", line, trusting, fast)
		}
	}
	var slow streamLine
	if err := json.Unmarshal(line, &slow); err != nil {
		t.Fatalf("%q: the scan takes a line that the decoder does not: %v", line, err)
	}
	if !(equalPtr(fast.ID, slow.ID) && equalPtr(fast.ExitCode, slow.ExitCode) &&
		bytes.Equal(fast.Args, slow.Args) && bytes.Equal(fast.Output, slow.Output) && sameStrings(fast, slow)) {
		t.Fatalf("%q:\n scan    %+v\n decoder %+v", line, fast, slow)
	}
	// Args said compact are what compacting them gives: a writer copies
	// them as they are.
	if compacted, ok := formats.AppendCompact(nil, fast.Args); fast.argsCompact && (!ok || !bytes.Equal(compacted, fast.Args)) {
		t.Fatalf("%q: args %s said compact, compacted %s (valid %v)", line, fast.Args, compacted, ok)
	}
}

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func sameStrings(a, b streamLine) bool {
	return a.Type == b.Type && a.Name == b.Name && a.Status == b.Status && a.Reason == b.Reason && a.Content == b.Content &&
		a.Message == b.Message && a.SessionID == b.SessionID && a.Model == b.Model
}
