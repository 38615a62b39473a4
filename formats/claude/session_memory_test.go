package claude

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// longSession is a session of one conversation of calls: an assistant
// record with a call and a user record with its result, each.
func longSession(calls int) []byte {
	var b bytes.Buffer
	parent := "null"
	uuid := func(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i) }
	for i := 1; i <= calls; i++ {
		a, u := uuid(2*i), uuid(2*i+1)
		fmt.Fprintf(&b, `{"parentUuid":%s,"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"2.1.0","type":"assistant","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"ls /w/dir%d"}}],"stop_reason":null,"usage":{"input_tokens":%d,"output_tokens":30}},"uuid":"%s","timestamp":"2026-12-02T23:%02d:%02d.%03dZ"}`+"\n",
			parent, i, i, i, 1000+i, a, i/60000%60, i/1000%60, i%1000)
		fmt.Fprintf(&b, `{"parentUuid":"%s","isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"2.1.0","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_%d","type":"tool_result","content":"file%d.go","is_error":false}]},"uuid":"%s","timestamp":"2026-12-02T23:%02d:%02d.%03dZ","toolUseResult":"file%d.go"}`+"\n",
			a, i, i, u, i/60000%60, i/1000%60, i%1000, i)
		parent = `"` + u + `"`
	}
	return b.Bytes()
}

// TestSessionIndexMemory: what the first pass keeps of a record is a few
// numbers, so that the live heap after it grows by little more than their
// size a record, not by the strings, maps and pointers of each (about 370
// bytes a record were kept).
func TestSessionIndexMemory(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's instrumentation allocates beside the code")
	}
	const n = 10000  // records: n/2 calls
	const most = 130 // bytes a record
	live := func(records int) (uint64, formats.Reader) {
		in := longSession(records / 2)
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		r := newSessionReader(bytes.NewReader(in), formats.ReadOptions{Dialect: Session.Name, Report: formats.NewReport(io.Discard)})
		sr := r.(*sessionReader)
		sr.loaded = true
		if err := sr.load(); err != nil {
			t.Fatal(err)
		}
		in = nil
		runtime.GC()
		runtime.ReadMemStats(&m1)
		return m1.HeapAlloc - min(m0.HeapAlloc, m1.HeapAlloc), r
	}
	small, r1 := live(n)
	big, r2 := live(4 * n)
	per := float64(int64(big)-int64(small)) / float64(3*n)
	t.Logf("live heap %d KB after indexing %d records, %d KB after %d: %.0f bytes a record", small>>10, n, big>>10, 4*n, per)
	if per > most {
		t.Errorf("the index keeps %.0f bytes a record, more than %d", per, most)
	}
	// The index is read to the end: it gives the conversation's calls.
	calls := 0
	for {
		ev, err := r2.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == formats.ToolCall {
			calls++
		}
	}
	if calls != 2*n {
		t.Errorf("%d calls, want %d", calls, 2*n)
	}
	runtime.KeepAlive(r1)
}
