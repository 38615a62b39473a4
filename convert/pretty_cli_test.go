package convert_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/pretty"
)

const seed = "../testdata/adal/seed-stream.ndjson"

// TestColorFlags: --color always colours even a pipe, --color never and
// auto on a pipe do not, whatever NO_COLOR says.
func TestColorFlags(t *testing.T) {
	for _, c := range []struct {
		flag, noColor string
		want          bool
	}{
		{"always", "", true},
		{"always", "1", true},
		{"never", "", false},
		{"auto", "", false}, // the output is not a terminal
		{"auto", "1", false},
	} {
		var out, errb bytes.Buffer
		code := convert.Run([]string{"agentconv", "--to", "pretty", "--color", c.flag, seed}, convert.Sys{
			Stdout: &out, Stderr: &errb,
			Getenv: func(k string) string {
				if k == "NO_COLOR" {
					return c.noColor
				}
				return ""
			},
		})
		if code != 0 {
			t.Fatalf("--color %s: exit %d: %s", c.flag, code, errb.String())
		}
		if got := strings.Contains(out.String(), "\x1b["); got != c.want {
			t.Errorf("--color %s, NO_COLOR=%q: escape codes %v, want %v:\n%s", c.flag, c.noColor, got, c.want, out.String())
		}
		if strings.Contains(errb.String(), "\x1b[") {
			t.Errorf("escape codes on stderr: %q", errb.String())
		}
	}
}

// syncBuffer is an output that a test can read while the pipeline writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the output holds want, as a person watching would.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(out.String(), want) {
			return
		}
	}
	t.Fatalf("%q did not show while the input stayed open; the output so far:\n%s", want, out.String())
}

// TestLive: each event shows as soon as its line arrives, with the input
// still open: a call's line first, its status when the result comes.
func TestLive(t *testing.T) {
	pr, pw := io.Pipe()
	out := &syncBuffer{}
	rep := formats.NewReport(io.Discard)
	w := pretty.Dialect.NewWriter(out, formats.WriteOptions{Dialect: "pretty", Report: rep})
	p := convert.NewPipeline(w, pretty.Dialect, convert.Options{Report: rep, Flush: func() error { return nil }})
	done := make(chan error, 1)
	go func() { done <- p.Convert(context.Background(), convert.Input{Name: "live", R: pr}) }()

	io.WriteString(pw, `{"type":"tool_call","id":"c1","name":"bash","args":{"command":"make test"}}`+"\n")
	waitFor(t, out, "▸ bash  make test")
	io.WriteString(pw, `{"type":"tool_result","id":"c1","name":"bash","status":"completed","output":"ok"}`+"\n")
	waitFor(t, out, "▸ bash  make test ✓")
	io.WriteString(pw, `{"type":"answer","content":"All green."}`+"\n")
	waitFor(t, out, "All green.")
	io.WriteString(pw, `{"type":"complete","exit_code":0}`+"\n")
	waitFor(t, out, "■ ✓ completed")
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
