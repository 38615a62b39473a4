package otel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// TestRetainedPerCall: of a run's calls that ended, the builder keeps no
// span open, and of each model request whose cost only the run's end
// gives, the span it becomes with room for its share and nothing more
// (its attributes were held in a slice grown to twice their number, the
// most of what a long run to otlp-json held); at the run's end they go,
// with shares that add up to the run's cost.
func TestRetainedPerCall(t *testing.T) {
	const n = 500
	var out bytes.Buffer
	inner := OTLPJSON.NewWriter(&out, formats.WriteOptions{Dialect: OTLPJSON.Name, Report: formats.NewReport(io.Discard)})
	w := formats.Standalone(inner)
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	write := func(e *formats.Event) {
		t.Helper()
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	write(&formats.Event{Kind: formats.RunStart, Time: at(0), Run: formats.RunInfo{SessionID: "long", Model: "claude-sonnet-4-5"}})
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		u := formats.UsageInfo{InputTokens: formats.Some(int64(1000 + i)), OutputTokens: formats.Some(int64(30)),
			CacheReadTokens: formats.Some(int64(200)), CacheWriteTokens: formats.Some(int64(50))}
		write(&formats.Event{Kind: formats.Usage, Time: at(10 + 3*i), Usage: u,
			Response: formats.Response{ID: fmt.Sprintf("msg_%d", i), Model: "claude-sonnet-4-5", StopReason: "tool_use"}})
		write(&formats.Event{Kind: formats.ToolCall, Time: at(11 + 3*i), Call: formats.Call{ID: id, Name: "Bash", Args: []byte(`{"command":"ls"}`)}})
		write(&formats.Event{Kind: formats.ToolResult, Time: at(12 + 3*i), Call: formats.Call{ID: id, Status: formats.Completed, Output: formats.TextOutput("out")}})
	}
	b := inner.(*writer).b
	if len(b.calls) != 0 || len(b.held) != 0 {
		t.Fatalf("after %d calls that ended: %d open call spans, %d spans held for the session id", n, len(b.calls), len(b.held))
	}
	if len(b.pending) != n {
		t.Fatalf("%d chat spans held for the run's cost, not %d", len(b.pending), n)
	}
	for i, p := range b.pending {
		if room := cap(p.data.attrs) - len(p.data.attrs); room != pendingRoom || cap(p.data.events) != len(p.data.events) {
			t.Fatalf("held chat span %d: room for %d more attributes (%d), %d more events", i, room, len(p.data.attrs), cap(p.data.events)-len(p.data.events))
		}
	}
	write(&formats.Event{Kind: formats.RunEnd, Time: at(20 + 3*n), Status: formats.Completed,
		Usage: formats.UsageInfo{CostUSD: formats.Some(2.5)}})
	if len(b.pending) != 0 {
		t.Fatalf("%d chat spans still held after the run's end", len(b.pending))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var sum float64
	chats := 0
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						Name       string
						Attributes []struct {
							Key   string
							Value struct{ DoubleValue float64 }
						}
					}
				}
			}
		}
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatal(err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if s.Name != opChat+" claude-sonnet-4-5" {
						continue
					}
					chats++
					for _, kv := range s.Attributes {
						if kv.Key == keyCost {
							sum += kv.Value.DoubleValue
						}
					}
				}
			}
		}
	}
	if chats != n || math.Abs(sum-2.5) > 1e-9 {
		t.Fatalf("%d chat spans with costs adding up to %v, not %d and 2.5", chats, sum, n)
	}
}
