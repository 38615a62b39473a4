package convert

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A text that comes in many pieces (the deltas of a streamed message, or
// a message that Claude Code prints over many records sharing message.id)
// is gathered in work linear in its length: the bytes allocated to convert
// 4N pieces are about 4 times those of N pieces, never 16 times (a string
// grown with += copies all of it at each piece). The bytes allocated are
// counted rather than timed, so the test says the same on a loaded machine.

const (
	piecesN = 1000
	// piecesLinear is the largest ratio of the bytes allocated for 4N
	// pieces to those for N that the test takes as linear.
	piecesLinear = 6.0
)

var piece = strings.Repeat("x", 150)

// pieceInputs make an input of n pieces of text in one message, for each
// reader whose records can split one.
var pieceInputs = map[string]func(n int) string{
	"claude-stream": func(n int) string {
		var b strings.Builder
		b.WriteString(`{"type":"system","subtype":"init","session_id":"s1","model":"m","cwd":"/tmp","tools":[]}` + "\n")
		for i := range n {
			fmt.Fprintf(&b, `{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"%d %s"}],"stop_reason":null},"parent_tool_use_id":null,"session_id":"s1","uuid":"u%d"}`+"\n", i, piece, i)
		}
		b.WriteString(`{"type":"result","subtype":"success","is_error":false,"duration_ms":10,"num_turns":1,"result":"done","session_id":"s1"}` + "\n")
		return b.String()
	},
	"claude-session": func(n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"sessionId":"s1","uuid":"p","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp","version":"2.0.0"}`+"\n")
		parent := "p"
		for i := range n {
			u := fmt.Sprintf("u%d", i)
			fmt.Fprintf(&b, `{"parentUuid":%q,"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"%d %s"}],"stop_reason":null},"sessionId":"s1","uuid":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp","version":"2.0.0"}`+"\n", parent, i, piece, u)
			parent = u
		}
		return b.String()
	},
	"gemini-stream": func(n int) string {
		var b strings.Builder
		b.WriteString(`{"type":"init","timestamp":"2026-01-01T00:00:00.000Z","session_id":"s1","model":"gemini-2.5-pro"}` + "\n")
		b.WriteString(`{"type":"message","timestamp":"2026-01-01T00:00:00.000Z","role":"user","content":"hi"}` + "\n")
		for i := range n {
			fmt.Fprintf(&b, `{"type":"message","timestamp":"2026-01-01T00:00:00.000Z","role":"assistant","content":"%d %s","delta":true}`+"\n", i, piece)
		}
		b.WriteString(`{"type":"result","timestamp":"2026-01-01T00:00:01.000Z","status":"success","stats":{"total_tokens":10,"input_tokens":5,"output_tokens":5,"duration_ms":1000,"tool_calls":0}}` + "\n")
		return b.String()
	},
	"cursor-stream": func(n int) string {
		var b strings.Builder
		b.WriteString(`{"type":"system","subtype":"init","session_id":"s1","model":"m","cwd":"/tmp","apiKeySource":"env","permissionMode":"default"}` + "\n")
		b.WriteString(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"session_id":"s1"}` + "\n")
		for i := range n {
			fmt.Fprintf(&b, `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"%d %s"}]},"session_id":"s1"}`+"\n", i, piece)
		}
		b.WriteString(`{"type":"result","subtype":"success","is_error":false,"duration_ms":10,"result":"done","session_id":"s1"}` + "\n")
		return b.String()
	},
	"malac": func(n int) string {
		var b strings.Builder
		b.WriteString(`{"agent":"ses_1","seq":1,"at":"2026-01-01T00:00:00Z","type":"agent_started","label":"malac","parent":null,"model":"m","cwd":"/tmp"}` + "\n")
		b.WriteString(`{"agent":"ses_1","seq":2,"at":"2026-01-01T00:00:00Z","type":"assistant_message","message":{"role":"assistant","content":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"type":"text","text":"%d %s"}`, i, piece)
		}
		b.WriteString("]}}\n")
		return b.String()
	},
}

// allocated is the number of bytes allocated to run the command line on in.
func allocated(t *testing.T, in string, args ...string) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code, _, stderr := runCLI(in, args...)
	runtime.ReadMemStats(&after)
	if code != ExitOK && code != ExitInput {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "not valid JSON") {
		t.Fatalf("%s", stderr)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// linear fails the test when converting 4N pieces allocates more than
// piecesLinear times what N pieces do.
func linear(t *testing.T, gen func(int) string, args ...string) {
	t.Helper()
	small, large := gen(piecesN), gen(4*piecesN)
	allocated(t, small, args...) // warm up: the first run makes what later ones share
	a, b := allocated(t, small, args...), allocated(t, large, args...)
	if r := float64(b) / float64(a); r > piecesLinear {
		t.Errorf("%d pieces allocate %d bytes, %d pieces %d: %.1f times as many (quadratic?)", piecesN, a, 4*piecesN, b, r)
	}
}

// TestPiecesLinearReaders: each reader gathers one message from many
// records (or many blocks of one record) in linear work.
func TestPiecesLinearReaders(t *testing.T) {
	for from, gen := range pieceInputs {
		t.Run(from, func(t *testing.T) {
			linear(t, gen, "--deterministic", "--from", from, "--to", "adal-stream")
		})
	}
}

// TestPiecesLinearDialects: every dialect that is read and written reads
// back a message its writer streamed in many pieces in linear work.
func TestPiecesLinearDialects(t *testing.T) {
	for _, d := range Readable() {
		if d.NewWriter == nil || d.Remote {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			gen := func(n int) string {
				code, out, stderr := runCLI(pieceInputs["gemini-stream"](n), "--deterministic", "--from", "gemini-stream", "--to", d.Name)
				if code != ExitOK {
					t.Fatalf("making the input: exit %d: %s", code, stderr)
				}
				return out
			}
			linear(t, gen, "--deterministic", "--from", d.Name, "--to", "adal-stream")
		})
	}
}

// BenchmarkPieces converts a message of 40,000 pieces (6 MB) from each
// reader whose records can split one.
func BenchmarkPieces(b *testing.B) {
	for from, gen := range pieceInputs {
		in := gen(40000)
		b.Run(from, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for range b.N {
				if code, _, stderr := runCLI(in, "--deterministic", "--from", from, "--to", "adal-stream"); code != ExitOK {
					b.Fatalf("exit %d: %s", code, stderr)
				}
			}
		})
	}
}

// TestPiecesLinearWriters: each local writer takes a message streamed in
// many deltas in linear work.
func TestPiecesLinearWriters(t *testing.T) {
	for _, to := range Writable() {
		if to.Remote {
			continue
		}
		t.Run(to.Name, func(t *testing.T) {
			linear(t, pieceInputs["gemini-stream"], "--deterministic", "--from", "gemini-stream", "--to", to.Name)
		})
	}
}
