package convert

import (
	"fmt"
	"strings"
	"testing"
)

// Amplification (issue 28 #10): arguments nested 9,000 deep (18 KB) made a
// 162 MB atif file, as every level was indented on a line of its own; a
// 100 KB session id made 300 MB of malac, written on each of 2,000 events.
// Every writer's output now stays within ten times the input's size (otlp-json
// writes a span of about a kilobyte for each of the 1,000 tiny calls), and
// what was changed is said: the arguments are kept as their JSON text,
// the session id is replaced by a UUID made from it.
func TestAmplificationBounded(t *testing.T) {
	t.Parallel()
	const depth = 9000
	nested := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	deep := `{"type":"system","subtype":"init","session_id":"s1","model":"m","cwd":"/w","tools":[]}
{"type":"assistant","session_id":"s1","message":{"id":"m1","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"a":` + nested + `}}],"usage":{"input_tokens":1,"output_tokens":1}}}
{"type":"user","session_id":"s1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}
{"type":"result","subtype":"success","session_id":"s1","is_error":false,"result":"done","usage":{"input_tokens":1,"output_tokens":1}}
`
	var long strings.Builder
	fmt.Fprintf(&long, `{"type":"system","subtype":"init","session_id":"%s","model":"m","cwd":"/w","tools":[]}`+"\n", strings.Repeat("x", 100_000))
	for i := range 1000 {
		fmt.Fprintf(&long, `{"type":"assistant","message":{"id":"m%d","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"c":"ls"}}],"usage":{"input_tokens":1,"output_tokens":1}}}`+"\n", i, i)
		fmt.Fprintf(&long, `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"ok"}]}}`+"\n", i)
	}
	long.WriteString(`{"type":"result","subtype":"success","is_error":false,"result":"done","usage":{"input_tokens":1,"output_tokens":1}}` + "\n")

	for _, c := range []struct {
		name, in, warning string
	}{
		{"arguments nested 9,000 deep", deep, "nested more than 64 deep: kept as their JSON text"},
		{"a session id of 100 KB", long.String(), "a session id of 100000 bytes (more than 1024): written as "},
	} {
		for _, to := range Writable() {
			if to.Remote || to.RunFile != "" && to.Name != "atif" {
				continue
			}
			code, out, errOut := runCLI(c.in, "--from", "claude-stream", "--to", to.Name)
			if code != 0 {
				t.Errorf("%s to %s: exit %d: %s", c.name, to.Name, code, errOut)
				continue
			}
			if len(out) > 10*len(c.in)+64<<10 {
				t.Errorf("%s to %s: %d bytes of input made %d bytes", c.name, to.Name, len(c.in), len(out))
			}
			if !strings.Contains(errOut, c.warning) {
				t.Errorf("%s to %s: no warning %q in %q", c.name, to.Name, c.warning, errOut)
			}
		}
	}

	// The arguments are all there, as text (atif keeps arguments that
	// are not an object in the call's extra).
	if _, out, _ := runCLI(deep, "--from", "claude-stream", "--to", "atif"); !strings.Contains(out, `"{\"a\":`+nested+`}"`) {
		t.Errorf("atif: the call's arguments are not kept: %.300s", out)
	}
}

func TestJSONDepth(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`1`, 0}, {`{}`, 1}, {`{"a":[1,{"b":2}]}`, 3}, {`"[[[["`, 0}, {`{"a":"\"[[["}`, 1}, {`[[[[[`, 3},
	} {
		if got := jsonDepth([]byte(c.in), 2); got != c.want {
			t.Errorf("jsonDepth(%s, 2) = %d, want %d", c.in, got, c.want)
		}
	}
}
