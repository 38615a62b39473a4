package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goccy/go-json"
	collpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// slowCollector is an OTLP/grpc receiver on 127.0.0.1 that takes delay to
// answer each request; a request whose client gave up is not accepted.
type slowCollector struct {
	collpb.UnimplementedTraceServiceServer
	delay    time.Duration
	endpoint string
	mu       sync.Mutex
	spans    map[string]int
	requests int
}

func newSlowCollector(t *testing.T, delay time.Duration) *slowCollector {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &slowCollector{delay: delay, endpoint: "http://" + ln.Addr().String(), spans: map[string]int{}}
	srv := grpc.NewServer()
	collpb.RegisterTraceServiceServer(srv, c)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return c
}

func (c *slowCollector) Export(ctx context.Context, req *collpb.ExportTraceServiceRequest) (*collpb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
	select {
	case <-time.After(c.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ctx.Err() != nil {
		// The client gave up as the delay ran out (select picks either
		// when both are ready): it spools these spans, so they are not
		// taken here.
		return nil, ctx.Err()
	}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans[hex.EncodeToString(s.TraceId)+"/"+hex.EncodeToString(s.SpanId)]++
			}
		}
	}
	return &collpb.ExportTraceServiceResponse{}, nil
}

func (c *slowCollector) started() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// otlpInput writes an otlp-json file of generated runs, with its span ids.
func otlpInput(t *testing.T, size string) (string, []string) {
	t.Helper()
	gen, err := exec.Command(binary, "generate", "--to", "adal-stream", "--size", size, "--max-output", "200").Output()
	if err != nil {
		t.Fatal(err)
	}
	conv := exec.Command(binary, "--from", "adal-stream", "--to", "otlp-json", "--deterministic")
	conv.Stdin = bytes.NewReader(gen)
	out, err := conv.Output()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "spans.otlp.jsonl")
	if err := os.WriteFile(name, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return name, spanIDs(t, name)
}

func spanIDs(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 512<<20)
	for sc.Scan() {
		var r struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct{ TraceID, SpanID string }
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: not OTLP/JSON: %v", name, err)
		}
		for _, rs := range r.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					ids = append(ids, s.TraceID+"/"+s.SpanID)
				}
			}
		}
	}
	return ids
}

// accounts checks delivered + spooled = read, each span exactly once.
func accounts(t *testing.T, read []string, c *slowCollector, spooled []string) {
	t.Helper()
	seen := map[string]int{}
	c.mu.Lock()
	for id, n := range c.spans {
		seen[id] += n
	}
	delivered := len(c.spans)
	c.mu.Unlock()
	for _, id := range spooled {
		seen[id]++
	}
	bad := 0
	for _, id := range read {
		if seen[id] != 1 {
			bad++
		}
		delete(seen, id)
	}
	if bad > 0 || len(seen) > 0 {
		t.Errorf("read %d spans, delivered %d, spooled %d: %d not exactly once, %d never read", len(read), delivered, len(spooled), bad, len(seen))
	}
}

// TestSignalsEndTheDelivery: with a collector that takes 3 s a request,
// the first signal flushes within the delivery timeout and spools the
// rest; a second signal, SIGINT or SIGTERM, ends it at once. Either way
// every span read is delivered or spooled, once.
func TestSignalsEndTheDelivery(t *testing.T) {
	in, read := otlpInput(t, "12MB")
	if len(read) < 12*1024 {
		t.Fatalf("only %d spans", len(read))
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		signals []syscall.Signal
		bound   time.Duration // from the last signal to the exit
		code    int
	}{
		{"one SIGINT", 4 * time.Second, []syscall.Signal{syscall.SIGINT}, 4*time.Second + 5*time.Second, 4},
		{"two SIGINTs", time.Minute, []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 5 * time.Second, 4},
		{"SIGINT then SIGTERM", time.Minute, []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}, 5 * time.Second, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSlowCollector(t, 3*time.Second)
			spool := filepath.Join(t.TempDir(), "spool.jsonl")
			cmd := exec.Command(binary, "--from", "otlp-json", "--to", "otlp", "--otlp-endpoint", c.endpoint,
				"--otlp-timeout", tc.timeout.String(), "--otlp-spool", spool)
			f, err := os.Open(in)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stdin = f
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Signal once the input was read: every span of it is then
			// delivered or spooled.
			waitRead(t, cmd.Process.Pid, in)
			for i, sig := range tc.signals {
				if i > 0 {
					time.Sleep(200 * time.Millisecond)
				}
				cmd.Process.Signal(sig)
			}
			last := time.Now()
			select {
			case err = <-done:
			case <-time.After(tc.bound + 30*time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running %v after the last signal; stderr:\n%s", time.Since(last), stderr.String())
			}
			if took := time.Since(last); took > tc.bound {
				t.Errorf("exited %v after the last signal, want within %v", took, tc.bound)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Errorf("exit %v, want %d; stderr:\n%s", err, tc.code, stderr.String())
			}
			if !bytes.Contains(stderr.Bytes(), []byte(spool)) {
				t.Errorf("the spool is not named; stderr:\n%s", stderr.String())
			}
			accounts(t, read, c, spanIDs(t, spool))
		})
	}
}

// TestSignalAfterTheInputWasRead: a signal while the last spans are being
// delivered is not ignored: they are delivered, and the exit status says
// that agentconv was interrupted.
func TestSignalAfterTheInputWasRead(t *testing.T) {
	in, read := otlpInput(t, "600KB")
	c := newSlowCollector(t, 4*time.Second)
	spool := filepath.Join(t.TempDir(), "spool.jsonl")
	cmd := exec.Command(binary, "--from", "otlp-json", "--to", "otlp", "--otlp-endpoint", c.endpoint, "--otlp-spool", spool)
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdin = f
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitRead(t, cmd.Process.Pid, in)
	if c.started() == 0 {
		t.Fatal("no request under way after the input was read")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Errorf("exit %v, want 143; stderr:\n%s", err, stderr.String())
	}
	accounts(t, read, c, spanIDs(t, spool))
	if _, err := os.Stat(spool); err == nil {
		t.Errorf("spooled with a collector that answers within the timeout:\n%s", stderr.String())
	}
}

// waitRead waits until process pid has read its standard input, the file
// in, to the end, and has had a moment to convert what it buffered.
func waitRead(t *testing.T, pid int, in string) {
	t.Helper()
	st, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	fdinfo := fmt.Sprintf("/proc/%d/fdinfo/0", pid)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fdinfo)
		if err != nil {
			t.Skipf("cannot tell how much of its input agentconv read: %v", err)
		}
		var pos int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "pos:\t%d", &pos)
		if pos >= st.Size() {
			time.Sleep(time.Second) // the last 64 KiB read ahead, converted
			return
		}
	}
	t.Fatal("agentconv did not read its input within a minute")
}

// TestSignalOnALivePipe: an agent still running, a collector taking 6 s a
// request: Ctrl-C ends agentconv within the 4 s delivery timeout, with
// what was not delivered spooled, and nothing both delivered and spooled.
func TestSignalOnALivePipe(t *testing.T) {
	gen, err := exec.Command(binary, "generate", "--to", "adal-stream", "--size", "3MB", "--max-output", "200").Output()
	if err != nil {
		t.Fatal(err)
	}
	c := newSlowCollector(t, 6*time.Second)
	spool := filepath.Join(t.TempDir(), "spool.jsonl")
	cmd := exec.Command(binary, "--to", "otlp", "--otlp-endpoint", c.endpoint, "--otlp-timeout", "4s", "--otlp-spool", spool)
	stdin, _ := cmd.StdinPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	go stdin.Write(gen) // and the agent goes on, silent
	for deadline := time.Now().Add(30 * time.Second); c.started() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	sent := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(40 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 40 s after SIGINT; stderr:\n%s", stderr.String())
	}
	if took := time.Since(sent); took > 4*time.Second+5*time.Second {
		t.Errorf("exited %v after SIGINT, with a 4 s timeout", took)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !bytes.Contains(stderr.Bytes(), []byte(spool)) {
		t.Errorf("exit %v, want 4 with the spool named; stderr:\n%s", err, stderr.String())
	}
	spooled := spanIDs(t, spool)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range spooled {
		if c.spans[id] > 0 {
			t.Errorf("span %s delivered and spooled", id)
			break
		}
	}
	if len(spooled) == 0 {
		t.Errorf("%d delivered, none spooled", len(c.spans))
	}
}
