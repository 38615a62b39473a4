package convert

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats/formatstest"
)

// longRun is claude-stream of one run of n tool calls, each with its
// model request, made as it is read (the input is not held), that measures
// the live heap once the last call has been read.
type longRun struct {
	n, i int
	buf  bytes.Buffer
	// live is the live heap (after a collection) when the last call's
	// records were handed out.
	live uint64
}

func (r *longRun) Read(p []byte) (int, error) {
	for r.buf.Len() < len(p) && r.i <= r.n+1 {
		switch {
		case r.i == 0:
			r.buf.WriteString(`{"type":"system","subtype":"init","session_id":"long","model":"claude-sonnet-4-5","cwd":"/w","tools":["Bash"]}` + "\n")
		case r.i <= r.n:
			c := r.i
			fmt.Fprintf(&r.buf, `{"type":"assistant","session_id":"long","message":{"id":"msg_%d","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"ls -la /w/dir%d"}}],"usage":{"input_tokens":%d,"output_tokens":30}}}`+"\n", c, c, c, 1000+c)
			fmt.Fprintf(&r.buf, `{"type":"user","session_id":"long","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"total 8, file%d.go"}]}}`+"\n", c, c)
		default:
			// The pipeline reads ahead of its writer: a pause lets the
			// writer take what was handed over (up to three batches of
			// events, more than the slack), so that what is measured is
			// what the run keeps, not how full the queue happened to be.
			time.Sleep(50 * time.Millisecond)
			var m runtime.MemStats
			runtime.GC()
			runtime.GC() // what sync.Pools held, too
			runtime.ReadMemStats(&m)
			r.live = m.HeapAlloc
			r.buf.WriteString(`{"type":"result","subtype":"success","session_id":"long","is_error":false,"result":"done","usage":{"input_tokens":1,"output_tokens":1}}` + "\n")
		}
		r.i++
	}
	if r.buf.Len() == 0 {
		return 0, io.EOF
	}
	return r.buf.Read(p)
}

// TestRunMemoryFlat: a run's memory is bounded by what stays live in it
// (its open calls), not by its number of calls. One run of n and then 4n
// tool calls is converted into every local writer that does not hold a
// whole run (Dialect.HoldsRun); the live heap once the last call has been
// read is the same for both, give or take a little. (The view kept every
// call of the run until it ended, the claude reader every call's name and
// arguments: about 1.2 KB a call.)
func TestRunMemoryFlat(t *testing.T) {
	formatstest.Long(t)
	if raceDetector {
		t.Skip("the race detector's instrumentation allocates beside the code")
	}
	const n = 1000
	const slack = 256 << 10
	for _, to := range Writable() {
		if to.Remote || to.HoldsRun {
			continue
		}
		if to.Name == "otlp-json" {
			// Its spans keep up to 8 MiB and 32,768 call ids in memory
			// before they use the disk and a filter, which more calls than
			// this test makes reach: otel's TestHeldMemoryIsBounded lowers
			// those bounds and runs it the same way.
			continue
		}
		live := func(calls int) uint64 {
			in := &longRun{n: calls}
			var errOut bytes.Buffer
			code := Run([]string{"agentconv", "--from", "claude-stream", "--to", to.Name}, Sys{
				Stdin: in, Stdout: io.Discard, Stderr: &errOut, Getenv: func(string) string { return "" }})
			if code != 0 || in.live == 0 {
				t.Fatalf("%s: exit %d: %s", to.Name, code, errOut.String())
			}
			return in.live
		}
		small, big := live(n), live(4*n)
		t.Logf("%s: live heap %d KB at %d calls, %d KB at %d", to.Name, small>>10, n, big>>10, 4*n)
		if big > small+slack {
			t.Errorf("%s: live heap %d KB at %d calls, %d KB at %d: %.0f bytes more a call", to.Name,
				small>>10, n, big>>10, 4*n, float64(big-small)/float64(3*n))
		}
	}
}

// TestForgottenCallsWarnings: with the view forgetting the calls that
// ended (adal-stream keeps none), a result repeated soon after its call's
// still finds it, an id used twice while open is still told, and so is a
// result for a call that never started.
func TestForgottenCallsWarnings(t *testing.T) {
	t.Parallel()
	var in strings.Builder
	in.WriteString(`{"type":"system","subtype":"init","session_id":"s","model":"m","cwd":"/w","tools":[]}` + "\n")
	use := func(id string) {
		fmt.Fprintf(&in, `{"type":"assistant","message":{"id":"m%s","role":"assistant","model":"m","content":[{"type":"tool_use","id":"%s","name":"Bash","input":{"c":"ls"}}]}}`+"\n", id, id)
	}
	result := func(id string) {
		fmt.Fprintf(&in, `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"%s","content":"ok"}]}}`+"\n", id)
	}
	use("t0")
	result("t0")
	for i := 1; i < 20; i++ {
		use(fmt.Sprint("t", i))
		result(fmt.Sprint("t", i))
	}
	result("t0") // twenty calls on: a repeat, which had started
	use("open")
	use("open") // used twice while open
	result("never")
	in.WriteString(`{"type":"result","subtype":"success","is_error":false,"result":"done"}` + "\n")

	for _, to := range []string{"adal-stream", "adal-json"} {
		code, out, errOut := runCLI(in.String(), "--from", "claude-stream", "--to", to)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", to, code, errOut)
		}
		if strings.Contains(errOut, `"t0", which never started`) {
			t.Errorf("%s: a repeated result taken for a call that never started: %s", to, errOut)
		}
		if !strings.Contains(errOut, `tool call id "open" is used twice`) || !strings.Contains(errOut, `"never", which never started`) {
			t.Errorf("%s: warnings: %s", to, errOut)
		}
		if to == "adal-stream" && strings.Count(out, `"tool_result","id":"t0","name":"Bash"`) != 2 {
			t.Errorf("the repeated result is not named from its call:\n%s", out)
		}
	}
}
