package otel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// heldRun is a run whose session id comes only at its end (as AdaL's
// does), of n model requests without a cost of their own, each followed
// by a tool call, some call ids used again after their call ended, and
// permission requests; the cost comes for the whole run.
func heldRun(n int) []*formats.Event {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	evs := []*formats.Event{
		{Kind: formats.RunStart, Time: at(0), Run: formats.RunInfo{Model: "claude-sonnet-4-5"}},
		{Kind: formats.UserMessage, Time: at(1), Text: "go"},
	}
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		if i%7 == 6 {
			id = fmt.Sprintf("toolu_%d", i-3) // used before, its call ended
		}
		u := formats.UsageInfo{InputTokens: formats.Some(int64(1000 + i%13*97)), OutputTokens: formats.Some(int64(i % 5 * 11))}
		evs = append(evs,
			&formats.Event{Kind: formats.Usage, Time: at(10 + 5*i), Usage: u,
				Response: formats.Response{ID: fmt.Sprintf("msg_%d", i), Model: "claude-sonnet-4-5", StopReason: "tool_use"}},
			&formats.Event{Kind: formats.ToolCall, Time: at(11 + 5*i), Call: formats.Call{ID: id, Name: "Bash", Args: []byte(`{"command":"ls ` + id + `"}`)}},
			&formats.Event{Kind: formats.PermissionRequest, Time: at(12 + 5*i), Call: formats.Call{ID: id, Name: "Bash"}, Permission: formats.Permission{RequestID: "req_" + id}},
			&formats.Event{Kind: formats.PermissionAnswer, Time: at(13 + 5*i), Permission: formats.Permission{RequestID: "req_" + id, Allowed: true}},
			&formats.Event{Kind: formats.ToolResult, Time: at(14 + 5*i), Call: formats.Call{ID: id, Name: "Bash", Status: formats.Completed, Output: formats.TextOutput("out " + id)}})
	}
	return append(evs, &formats.Event{Kind: formats.RunEnd, Time: at(20 + 5*n), Status: formats.Completed,
		Run: formats.RunInfo{SessionID: "held-session"}, Usage: formats.UsageInfo{CostUSD: formats.Some(3.141592653)}})
}

// TestSpilledRunIsTheSame: a run whose held spans wait on disk, wholly
// (holdLimit 0) or past the first few, and whose builder forgets the ids
// of its calls that ended (maxCallUses 0), gives the same otlp-json bytes
// as one held in memory, with the same shares of the run's cost.
func TestSpilledRunIsTheSame(t *testing.T) {
	evs := heldRun(400)
	held := writeAll(t, evs)
	defer func(h, m int) { holdLimit, maxCallUses = h, m }(holdLimit, maxCallUses)
	for _, limit := range []int{0, 5000} {
		holdLimit, maxCallUses = limit, 0
		spilled := writeAll(t, evs)
		if !bytes.Equal(held, spilled) {
			t.Errorf("holdLimit %d: the run held on disk is written otherwise (%d bytes) than in memory (%d bytes)", limit, len(spilled), len(held))
		}
	}
	// The spans did wait on disk, with their session id, and their cost.
	holdLimit = 0
	var out bytes.Buffer
	inner := OTLPJSON.NewWriter(&out, formats.WriteOptions{Dialect: OTLPJSON.Name, Report: formats.NewReport(io.Discard)})
	w := formats.Standalone(inner)
	b := inner.(*writer).b
	for _, e := range evs[:len(evs)-1] {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if b.pendingOver.n != 400 || b.heldOver.n == 0 || len(b.pending) != 0 || len(b.held) != 0 {
		t.Fatalf("held on disk: %d chat spans, %d other spans; in memory %d and %d", b.pendingOver.n, b.heldOver.n, len(b.pending), len(b.held))
	}
	if len(b.callUses) > 400/7+1 || len(b.requests) != 0 { // the ids used twice stay
		t.Errorf("after the calls ended: %d call ids and %d permission requests kept", len(b.callUses), len(b.requests))
	}
	if err := w.Write(evs[len(evs)-1]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var sum float64
	chats, spans, ids := 0, 0, map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var req jsonRequest
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatal(err)
		}
		for _, d := range req.spans() {
			spans++
			ids[d.span.SpanID] = true
			a := attrMap(d.span.Attributes)
			if a[keySessionID].str() != "held-session" {
				t.Fatalf("span %s without the session id", d.span.Name)
			}
			if c, ok := a[keyCost].float(); ok && strings.HasPrefix(d.span.Name, opChat) {
				chats++
				sum += c
			}
		}
	}
	if chats != 400 || math.Abs(sum-3.141592653) > 1e-9 || len(ids) != spans {
		t.Errorf("%d chat spans with costs adding up to %v, not 400 and 3.141592653; %d span ids for %d spans", chats, sum, len(ids), spans)
	}
}

// TestSpillErrorIsReported: where the spans cannot be held on disk, Write
// says so.
func TestSpillErrorIsReported(t *testing.T) {
	defer func(h int) { holdLimit = h }(holdLimit)
	holdLimit = 0
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	w := formats.Standalone(OTLPJSON.NewWriter(io.Discard, formats.WriteOptions{Dialect: OTLPJSON.Name, Report: formats.NewReport(io.Discard)}))
	var err error
	for _, e := range heldRun(3) {
		if err = w.Write(e); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "holding a run's spans on disk") {
		t.Errorf("error %v", err)
	}
	w.Close()
}

// streamRun gives the events of one run of n model requests, each with its
// usage and a tool call, the cost given for the whole run by its end, as
// the claude-stream reader reads them; before that end, at, if set, is
// called. The events are made as they are asked for, so that the input
// holds none of them.
type streamRun struct {
	n, i int
	at   func()
}

func (r *streamRun) Next() (*formats.Event, error) {
	const session = "5e55a001-0000-4000-8000-000000000001"
	r.i++
	switch r.i {
	case 1:
		return &formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: session, Model: "claude-sonnet-4-5", Cwd: "/w", Provider: "anthropic", AgentName: "claude-code"}}, nil
	case 2:
		return &formats.Event{Kind: formats.UserMessage, Text: "go"}, nil
	}
	k, step := (r.i-3)/3, (r.i-3)%3
	id := fmt.Sprintf("toolu_%d", k)
	switch {
	case k < r.n && step == 0:
		return &formats.Event{Kind: formats.Usage, Usage: formats.UsageInfo{InputTokens: formats.Some(int64(100 + k%50)), OutputTokens: formats.Some[int64](20)},
			Response: formats.Response{ID: fmt.Sprintf("msg_%d", k), Model: "claude-sonnet-4-5", StopReason: "tool_use"}}, nil
	case k < r.n && step == 1:
		return &formats.Event{Kind: formats.ToolCall, Call: formats.Call{ID: id, Name: "Bash", Args: []byte(`{"command":"ls"}`)}}, nil
	case k < r.n:
		return &formats.Event{Kind: formats.ToolResult, Call: formats.Call{ID: id, Name: "Bash", Status: formats.Completed, Output: formats.TextOutput("out")}}, nil
	case k == r.n && step == 0:
		if r.at != nil {
			r.at()
		}
		return &formats.Event{Kind: formats.Answer, Text: "done"}, nil
	case k == r.n && step == 1:
		return &formats.Event{Kind: formats.RunEnd, Status: formats.Completed, Run: formats.RunInfo{SessionID: session, Model: "claude-sonnet-4-5", ExitCode: formats.Some(0)},
			Usage: formats.UsageInfo{CostUSD: formats.Some(12.345)}}, nil
	}
	return nil, io.EOF
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// keepNothing is a writer that keeps nothing: what the run view keeps,
// without spans.
type keepNothing struct{}

func (keepNothing) Write(*formats.Event, *formats.RunView) error { return nil }
func (keepNothing) Close() error                                 { return nil }

// retained writes a run of n calls through w and returns the live heap,
// over what it was before, when the input is all read but its end (the
// run's cost).
func retained(t *testing.T, n int, w formats.Writer) int64 {
	t.Helper()
	base := liveHeap()
	var live int64 = -1
	r := &streamRun{n: n, at: func() { live = liveHeap() - base }}
	sw := formats.Standalone(w)
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if live < 0 {
		t.Fatal("the run's end was never reached")
	}
	return live
}

// TestHeldMemoryIsBounded: what the spans of one run keep in memory does
// not grow with its model requests and calls, to otlp-json and to a
// collector: the live heap when all but its end is read grows from
// a run of n calls to one of 4n by about what it grows through a writer
// that keeps nothing (the run view's own record of the calls), within a
// small constant. Each request's span waits for its share of the run's
// cost, which the end gives (it held some 3 KB a call).
func TestHeldMemoryIsBounded(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's shadow memory is not the heap's")
	}
	defer func(h, m, l int) { holdLimit, maxCallUses, maxRequestLine = h, m, l }(holdLimit, maxCallUses, maxRequestLine)
	// Bounds that a few thousand calls pass (the otlp-json writer holds a
	// request line of up to maxRequestLine).
	holdLimit, maxCallUses, maxRequestLine = 64<<10, 256, 256<<10
	const n = 2000
	growth := func(w func() formats.Writer) int64 { return retained(t, 4*n, w()) - retained(t, n, w()) }
	view := growth(func() formats.Writer { return keepNothing{} })
	for _, c := range []struct {
		name string
		w    func() formats.Writer
	}{
		{"otlp-json", func() formats.Writer {
			return OTLPJSON.NewWriter(io.Discard, formats.WriteOptions{Dialect: OTLPJSON.Name, Report: formats.NewReport(io.Discard)})
		}},
		{"otlp", func() formats.Writer {
			return ExportWriter(tracetest.NewNoopExporter(), formats.WriteOptions{Dialect: OTLP.Name, Report: formats.NewReport(io.Discard), Stderr: io.Discard})
		}},
	} {
		got := growth(c.w)
		t.Logf("%s: the live heap grows by %d KB from %d calls to %d, through a writer that keeps nothing by %d KB", c.name, got>>10, n, 4*n, view>>10)
		if got-view > 1<<20 {
			t.Errorf("%s: from %d calls to %d, the spans keep %d KB more (%d B a call)", c.name, n, 4*n, (got-view)>>10, (got-view)/(3*n))
		}
	}
}
