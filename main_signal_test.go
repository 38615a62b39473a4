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
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats/formatstest"

	"github.com/goccy/go-json"
	collpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// slowCollector is an OTLP/grpc receiver on 127.0.0.1 that takes delay to
// answer each request; a request whose client gave up is not accepted.
type slowCollector struct {
	collpb.UnimplementedTraceServiceServer
	delay time.Duration
	// answers, when not negative, is how many requests it answers: those
	// after them it holds until the client gives up, so that a request
	// cancelled by agentconv is never one the collector was just
	// accepting (which it would both deliver and spool).
	answers  int
	endpoint string
	mu       sync.Mutex
	spans    map[string]int
	requests int
	// answering counts the requests it is answering (not held).
	answering int
}

func newSlowCollector(t *testing.T, delay time.Duration) *slowCollector {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &slowCollector{delay: delay, answers: -1, endpoint: "http://" + ln.Addr().String(), spans: map[string]int{}}
	srv := grpc.NewServer()
	collpb.RegisterTraceServiceServer(srv, c)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return c
}

func (c *slowCollector) Export(ctx context.Context, req *collpb.ExportTraceServiceRequest) (*collpb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	c.requests++
	hold := c.answers >= 0 && c.requests > c.answers
	if !hold {
		c.answering++
	}
	c.mu.Unlock()
	if hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	defer func() {
		c.mu.Lock()
		c.answering--
		c.mu.Unlock()
	}()
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

// holdNow makes the collector hold every request from now on; it returns
// how many it took before.
func (c *slowCollector) holdNow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answers = c.requests
	return c.requests
}

// settled: a request past the first answered ones (held) is under way,
// and none is being answered.
func (c *slowCollector) settled(answered int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answering == 0 && c.requests > answered
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

// TestSignalsEndTheDelivery: with a collector that answers some requests
// and holds the rest, the first signal flushes within the delivery timeout
// and spools the rest; a second signal, SIGINT or SIGTERM, ends it at
// once, long before the timeout of two minutes would. Either way every span read is delivered or spooled,
// once. The cores are kept busy meanwhile, and the signals come when the
// process is in the state each case is about (its input read, no
// request being answered, a held one under way), not after a sleep.
func TestSignalsEndTheDelivery(t *testing.T) {
	formatstest.Long(t)
	in, read := otlpInput(t, "12MB")
	if len(read) < 12*1024 {
		t.Fatalf("only %d spans", len(read))
	}
	burnCores(t)
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		signals []syscall.Signal
	}{
		{"one SIGINT", 20 * time.Second, []syscall.Signal{syscall.SIGINT}},
		{"two SIGINTs", 2 * time.Minute, []syscall.Signal{syscall.SIGINT, syscall.SIGINT}},
		{"SIGINT then SIGTERM", 2 * time.Minute, []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No request may be cancelled as the collector accepts it (its
			// spans would be delivered and spooled). One signal: requests
			// answered in 3 s until the input was read, held from then on;
			// the signal comes once none is being answered, and the
			// timeout (20 s: a request answered in 3 s must not miss it
			// with the cores busy) cancels only held ones. Two signals, whose
			// second cancels what is under way at once: three requests
			// answered at the start, long before, and the rest held.
			c := newSlowCollector(t, 3*time.Second)
			if len(tc.signals) > 1 {
				c = newSlowCollector(t, 0)
				c.answers = 3
			}
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
			done, exited := make(chan error, 1), make(chan struct{})
			go func() {
				err := cmd.Wait()
				close(exited)
				done <- err
			}()
			// Signal once the input was read and a request is under way:
			// every span read is then delivered or spooled.
			waitRead(t, cmd.Process.Pid, in)
			held := c.answers
			if len(tc.signals) == 1 {
				held = c.holdNow()
			}
			for deadline := time.Now().Add(time.Minute); !c.settled(held) && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			cmd.Process.Signal(tc.signals[0])
			if len(tc.signals) > 1 {
				// Two of a signal sent at once may arrive as one: the
				// second is sent again until it ends the process, as a user
				// presses Ctrl-C again.
				go func() {
					for {
						select {
						case <-exited:
							return
						case <-time.After(50 * time.Millisecond):
							cmd.Process.Signal(tc.signals[1])
						}
					}
				}()
			}
			last := time.Now()
			// A hang, not a speed: the delivery timeout ends the one-signal
			// case; the two-signal cases end long before their timeout.
			select {
			case err = <-done:
			case <-time.After(tc.timeout + 30*time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running %v after the last signal; stderr:\n%s", time.Since(last), stderr.String())
			}
			if took := time.Since(last); len(tc.signals) > 1 && took >= tc.timeout {
				t.Errorf("exited %v after the second signal: it waited out the delivery timeout of %v", took, tc.timeout)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 4 {
				t.Errorf("exit %v, want 4; stderr:\n%s", err, stderr.String())
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
	formatstest.Long(t)
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
	for deadline := time.Now().Add(time.Minute); c.started() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no request under way a minute after the input was read")
		}
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
// in, to the end.
func waitRead(t *testing.T, pid int, in string) {
	t.Helper()
	st, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	fdinfo := fmt.Sprintf("/proc/%d/fdinfo/0", pid)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fdinfo)
		if _, serr := os.Stat("/proc/self/fdinfo"); err != nil && serr == nil {
			t.Fatalf("agentconv exited before it had read its input: %v", err)
		}
		if err != nil {
			t.Skipf("cannot tell how much of its input agentconv read: %v", err)
		}
		var pos int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "pos:\t%d", &pos)
		if pos >= st.Size() {
			// What it read and has not converted yet is converted at a
			// signal all the same.
			return
		}
	}
	t.Fatal("agentconv did not read its input within a minute")
}

// TestSignalOnALivePipe: an agent still running, a collector taking 6 s a
// request: Ctrl-C ends agentconv within the 4 s delivery timeout, with
// what was not delivered spooled, and nothing both delivered and spooled.
func TestSignalOnALivePipe(t *testing.T) {
	formatstest.Long(t)
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

// burnCores keeps every core busy in this process until the test ends:
// the machine under load, where the conversion and its delivery lag.
func burnCores(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := 0; ; x++ {
				if x%1024 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// waitFileRead waits until process pid has read the file in (named as an
// argument) to its end, or closed it.
func waitFileRead(t *testing.T, pid int, in string) {
	t.Helper()
	st, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if _, serr := os.Stat("/proc/self/fd"); err != nil && serr == nil {
			return // it ended: it read all of it
		}
		if err != nil {
			t.Skipf("cannot tell how much of its input agentconv read: %v", err)
		}
		open := false
		for _, fd := range fds {
			target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if target != in {
				continue
			}
			open = true
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
			if err != nil {
				continue
			}
			var pos int64
			fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "pos:\t%d", &pos)
			if pos >= st.Size() {
				return
			}
		}
		if !open && time.Since(deadline.Add(-60*time.Second)) > time.Second {
			return // read and closed
		}
	}
	t.Fatal("agentconv did not read its input within a minute")
}

// TestSignalAfterAFileWasReadUnderLoad: the cores busy, a collector that
// answers no request, a SIGINT once agentconv has read its input file to
// the end, while it still converts what it read: every span of the file is
// delivered or spooled, once. What the reader had taken from the file and
// not yet parsed when the signal came was dropped (1,292 spans of 4,122,
// once in two runs).
func TestSignalAfterAFileWasReadUnderLoad(t *testing.T) {
	formatstest.Long(t)
	in, read := otlpInput(t, "4MB")
	burnCores(t)
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			// A collector that answers nothing: what is not spooled was
			// dropped.
			c := newSlowCollector(t, 0)
			c.answers = 0
			spool := filepath.Join(t.TempDir(), "spool.jsonl")
			cmd := exec.Command(binary, "--from", "otlp-json", "--to", "otlp", "--otlp-endpoint", c.endpoint,
				"--otlp-timeout", "2s", "--otlp-spool", spool, in)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFileRead(t, cmd.Process.Pid, in)
			cmd.Process.Signal(syscall.SIGINT)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 4 && ee.ExitCode() != 130 {
				t.Errorf("exit %v, want 4 or 130; stderr:\n%s", err, stderr.String())
			}
			accounts(t, read, c, spanIDs(t, spool))
		})
	}
}
