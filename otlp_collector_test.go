package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
	collpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// fakeCollector is an OTLP trace receiver on 127.0.0.1, over grpc or
// http/protobuf, that misbehaves as a test asks: slow, stuck, rejecting
// spans, late to come up.
type fakeCollector struct {
	proto    string
	endpoint string

	mu       sync.Mutex
	spans    map[string]int // span id → how many times it was accepted
	requests int
	biggest  int // bytes of the largest request
	active   int
	maxConc  int // the most requests handled at once
	headers  []map[string]string

	// delay is how long each request takes; a cancelled request is not
	// accepted.
	delay time.Duration
	// fast: the first fast requests take no delay.
	fast    int
	started int
	// late: the collector comes up this long after it was made.
	late time.Duration
	// hold, when set, keeps every request until it is closed.
	hold chan struct{}
	// reject answers a request of n spans with a partial success.
	reject func(n int) (rejected int64, msg string)
	// keep: the requests accepted are kept whole.
	keep bool
	kept []*collpb.ExportTraceServiceRequest

	grpc *grpc.Server
	http *http.Server
}

func newCollector(t testing.TB, protocol string, configure func(*fakeCollector)) *fakeCollector {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &fakeCollector{proto: protocol, spans: map[string]int{}}
	if configure != nil {
		configure(c)
	}
	c.endpoint = "http://" + ln.Addr().String()
	t.Cleanup(c.stop)
	if c.late > 0 {
		// Nothing listens until late has passed: connections are refused.
		addr := ln.Addr().String()
		ln.Close()
		go func() {
			time.Sleep(c.late)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				panic(err)
			}
			c.serve(ln)
		}()
		return c
	}
	c.serve(ln)
	return c
}

// serve starts the receiver on ln.
func (c *fakeCollector) serve(ln net.Listener) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proto == "grpc" {
		c.grpc = grpc.NewServer() // the usual 4 MiB limit on what it receives
		collpb.RegisterTraceServiceServer(c.grpc, grpcReceiver{c: c})
		go c.grpc.Serve(ln)
		return
	}
	c.http = &http.Server{Handler: http.HandlerFunc(c.serveHTTP)}
	go c.http.Serve(ln)
}

func (c *fakeCollector) stop() {
	c.mu.Lock()
	g, h := c.grpc, c.http
	c.mu.Unlock()
	if c.hold != nil {
		select {
		case <-c.hold:
		default:
			close(c.hold)
		}
	}
	if g != nil {
		g.Stop()
	}
	if h != nil {
		h.Close()
	}
}

type grpcReceiver struct {
	collpb.UnimplementedTraceServiceServer
	c *fakeCollector
}

func (g grpcReceiver) Export(ctx context.Context, req *collpb.ExportTraceServiceRequest) (*collpb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	hs := map[string]string{}
	for k, v := range md {
		hs[k] = strings.Join(v, ",")
	}
	return g.c.take(ctx, req, proto.Size(req), hs)
}

func (c *fakeCollector) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := &collpb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hs := map[string]string{}
	for k, v := range r.Header {
		hs[strings.ToLower(k)] = strings.Join(v, ",")
	}
	hs[":path"] = r.URL.Path
	resp, err := c.take(r.Context(), req, len(body), hs)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// take handles a request: it waits as told, then accepts its spans unless
// the client gave up first.
func (c *fakeCollector) take(ctx context.Context, req *collpb.ExportTraceServiceRequest, size int, hs map[string]string) (*collpb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	c.active++
	c.maxConc = max(c.maxConc, c.active)
	c.started++
	delay := c.delay
	if c.started <= c.fast {
		delay = 0
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.active--
		c.mu.Unlock()
	}()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	if c.hold != nil {
		select {
		case <-c.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	n := 0
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans[hex.EncodeToString(s.TraceId)+"/"+hex.EncodeToString(s.SpanId)]++
				n++
			}
		}
	}
	c.requests++
	if c.keep {
		c.kept = append(c.kept, req)
	}
	c.biggest = max(c.biggest, size)
	c.headers = append(c.headers, hs)
	resp := &collpb.ExportTraceServiceResponse{}
	if c.reject != nil {
		if r, msg := c.reject(n); r > 0 || msg != "" {
			resp.PartialSuccess = &collpb.ExportTracePartialSuccess{RejectedSpans: r, ErrorMessage: msg}
		}
	}
	return resp, nil
}

// received is the requests accepted, with keep.
func (c *fakeCollector) received() []*collpb.ExportTraceServiceRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*collpb.ExportTraceServiceRequest(nil), c.kept...)
}

func (c *fakeCollector) accepted() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.spans))
	for k, v := range c.spans {
		m[k] = v
	}
	return m
}

// spanIDsOf lists the span ids in OTLP/JSON lines; a last line that was
// cut (no newline, not JSON) is left out, as the reader does.
func spanIDsOf(t testing.TB, data []byte) []string {
	t.Helper()
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 512<<20)
	for sc.Scan() {
		var r struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct{ TraceID, SpanID string }
				}
			}
		}
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			if !bytes.HasSuffix(data, []byte("\n")) && bytes.HasSuffix(data, sc.Bytes()) {
				break
			}
			t.Fatalf("not OTLP/JSON: %v", err)
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

func spanIDsOfFile(t testing.TB, name string) []string {
	t.Helper()
	data, err := os.ReadFile(name)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return spanIDsOf(t, data)
}

// spanInput writes an otlp-json file of at least size bytes of generated
// runs (small calls: many spans), and returns it with its span ids.
func spanInput(t testing.TB, size int64, maxOutput int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var stream bytes.Buffer
	d, _ := convert.Lookup("adal-stream")
	if err := convert.Generate(&stream, d, size/3, 7, maxOutput); err != nil {
		t.Fatal(err)
	}
	name := dir + "/spans.otlp.jsonl"
	var out, errb bytes.Buffer
	code := convert.Run([]string{"agentconv", "--from", "adal-stream", "--to", "otlp-json", "--deterministic"},
		convert.Sys{Stdin: &stream, Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != 0 {
		t.Fatalf("making the input: exit %d: %s", code, errb.String())
	}
	if err := os.WriteFile(name, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return name, spanIDsOf(t, out.Bytes())
}

// checkAccounts checks that every span read was delivered or spooled,
// exactly once, and that nothing else was.
func checkAccounts(t testing.TB, read []string, delivered map[string]int, spooled []string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range read {
		want[id] = true
	}
	if len(want) != len(read) {
		t.Fatalf("the input has %d spans but %d distinct ids", len(read), len(want))
	}
	seen := map[string]int{}
	for id, n := range delivered {
		seen[id] += n
	}
	for _, id := range spooled {
		seen[id]++
	}
	missing, twice, invented := 0, 0, 0
	for id := range want {
		switch seen[id] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	for id := range seen {
		if !want[id] {
			invented++
		}
	}
	nd := 0
	for _, n := range delivered {
		nd += n
	}
	if missing+twice+invented > 0 || nd+len(spooled) != len(read) {
		t.Errorf("read %d spans; delivered %d + spooled %d: %d lost, %d twice, %d never read", len(read), nd, len(spooled), missing, twice, invented)
	}
}

func discardReport() *formats.Report { return formats.NewReport(io.Discard) }
