package convert

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
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

// The end-to-end tests of `agentconv follow`: it runs in-process (Run, as
// the other command-line tests), sessions are written while it runs, and
// each test waits on what it must see, with a generous deadline; no test
// depends on how long anything takes.

const followSessions = "../formats/claude/testdata/sessions/"

// A session of four runs (prompts), and one of one run with its
// subagents' files.
var (
	fourRuns  = followSessions + "claude-code-log-dag-compact-after-rewind.jsonl"
	oneRun    = followSessions + "DRMacIver__claude-reliability__hello-world-script.jsonl"
	subagents = "55550000-0000-4000-8000-000000000001"
)

// syncBuffer is a buffer that follow writes to while the test reads it.
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

// following is one `agentconv follow` running in a goroutine.
type following struct {
	t       *testing.T
	signals chan os.Signal
	code    chan int
	stderr  *syncBuffer
}

func startFollow(t *testing.T, env map[string]string, args ...string) *following {
	t.Helper()
	f := &following{t: t, signals: make(chan os.Signal, 1), code: make(chan int, 1), stderr: &syncBuffer{}}
	sys := Sys{Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: f.stderr, Signals: f.signals,
		Getenv: func(k string) string { return env[k] }}
	go func() { f.code <- Run(append([]string{"agentconv", "follow"}, args...), sys) }()
	return f
}

// stop sends sig and returns the exit status.
func (f *following) stop(sig os.Signal) int {
	f.t.Helper()
	f.signals <- sig
	select {
	case code := <-f.code:
		return code
	case <-time.After(2 * time.Minute):
		var stacks strings.Builder
		pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		f.t.Fatalf("follow did not end after %v; stderr:\n%s\ngoroutines:\n%s", sig, f.stderr.String(), stacks.String())
		return -1
	}
}

// waitFor waits until cond holds, or fails after a generous deadline.
func waitFor(t *testing.T, what string, f *following, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			if f != nil {
				msg = f.stderr.String()
			}
			t.Fatalf("waited 90s for %s; stderr:\n%s", what, msg)
		}
		select {
		case code := <-f.code:
			t.Fatalf("follow ended (exit %d) before %s; stderr:\n%s", code, what, f.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// appendTo appends b to the file.
func appendTo(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runSpans is the span ids of each run (otlp-json line) of a file, as
// sorted lists; a file that is missing has none.
func runSpans(t *testing.T, name string) [][]string {
	t.Helper()
	b, err := os.ReadFile(name)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	// A line the follower is still writing is read once it ends: until
	// then the file ends inside it (seen under load, read mid-write).
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	return spansOfLines(t, b)
}

func spansOfLines(t *testing.T, b []byte) [][]string {
	t.Helper()
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct{ TraceID, SpanID string }
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not OTLP/JSON: %v: %.200s", err, sc.Text())
		}
		var ids []string
		for _, rs := range r.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					ids = append(ids, s.TraceID+"/"+s.SpanID)
				}
			}
		}
		sort.Strings(ids)
		out = append(out, ids)
	}
	return out
}

// oneShot is what `agentconv --to otlp-json FILE` makes of the whole
// file: the runs a follow must deliver, each once.
func oneShot(t *testing.T, name string) [][]string {
	t.Helper()
	var out, errb syncBuffer
	code := Run([]string{"agentconv", "--to", "otlp-json", "--lenient", name}, Sys{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != 0 {
		t.Fatalf("agentconv --to otlp-json %s: exit %d: %s", name, code, errb.String())
	}
	return spansOfLines(t, []byte(out.String()))
}

// lines splits a file into its lines, each with its line break.
func lines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return append(out, b)
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

func equalRuns(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], ",") != strings.Join(b[i], ",") {
			return false
		}
	}
	return true
}

// TestFollowFiles: sessions written while follow runs, a line cut in two
// writes, a subagent's files appearing after its session's, a SIGTERM in
// the middle of a session and a restart: each run is written once, whole,
// and the output is what a conversion of the finished files gives.
func TestFollowFiles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	watched := filepath.Join(home, "sessions")
	out := filepath.Join(home, "out")
	state := filepath.Join(home, "follow.json")
	os.MkdirAll(watched, 0o755)
	env := map[string]string{"HOME": home}
	args := []string{"--to", "otlp-json", "-o", out, "--state", state, "--idle", "1s", "--poll", "100ms", watched}

	session := filepath.Join(watched, "proj", "four.jsonl")
	all := readBytes(t, fourRuns)
	want := oneShot(t, fourRuns)
	if len(want) != 4 {
		t.Fatalf("the fixture has %d runs, not 4", len(want))
	}
	outFile := filepath.Join(out, "sessions", "proj", "four.jsonl.otlp-json")
	recs := lines(all)
	// k: the records up to the third run's first, which complete the first
	// two runs.
	k := 0
	for k = 1; k < len(recs); k++ {
		part := filepath.Join(home, "part.jsonl")
		os.WriteFile(part, bytes.Join(recs[:k], nil), 0o644)
		if len(oneShot(t, part)) >= 3 {
			break
		}
	}
	f := startFollow(t, env, args...)
	for i, rec := range recs[:k] {
		if i == 1 {
			// A record written in two writes: the first half waits for
			// the rest.
			appendTo(t, session, rec[:len(rec)/2])
			waitFor(t, "the state to note the cut line's start", f, func() bool {
				var st followState
				b, err := os.ReadFile(state)
				return err == nil && json.Unmarshal(b, &st) == nil && st.Files[session] != nil
			})
			appendTo(t, session, rec[len(rec)/2:])
			continue
		}
		appendTo(t, session, rec)
	}
	waitFor(t, "the first two runs", f, func() bool { return len(runSpans(t, outFile)) >= 2 })
	if got := runSpans(t, outFile); !equalRuns(got, want[:2]) {
		t.Fatalf("after %d records, the output has runs %v, want %v", k, got, want[:2])
	}
	i := k
	// Killed in the middle of the session.
	if code := f.stop(syscall.SIGTERM); code != ExitTerminated {
		t.Fatalf("exit %d after SIGTERM, want %d; stderr:\n%s", code, ExitTerminated, f.stderr.String())
	}
	var st followState
	if err := json.Unmarshal(readBytes(t, state), &st); err != nil {
		t.Fatalf("state file: %v", err)
	}
	if e := st.Files[session]; e == nil || e.Runs < 2 {
		t.Fatalf("the state after the kill: %+v, want at least 2 runs of %s", st.Files, session)
	}

	// The rest is written while it is down, and after it is back; a new
	// session comes with its subagents' files after its own.
	for ; i < len(recs)-1; i++ {
		appendTo(t, session, recs[i])
	}
	f = startFollow(t, env, args...)
	appendTo(t, session, recs[len(recs)-1])
	sub := filepath.Join(watched, "proj2", subagents+".jsonl")
	subRecs := lines(readBytes(t, followSessions+subagents+".jsonl"))
	for _, rec := range subRecs[:len(subRecs)/2] {
		appendTo(t, sub, rec)
	}
	subDir := filepath.Join(followSessions, subagents, "subagents")
	entries, err := os.ReadDir(subDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		appendTo(t, filepath.Join(watched, "proj2", subagents, "subagents", e.Name()), readBytes(t, filepath.Join(subDir, e.Name())))
	}
	for _, rec := range subRecs[len(subRecs)/2:] {
		appendTo(t, sub, rec)
	}
	subOut := filepath.Join(out, "sessions", "proj2", subagents+".jsonl.otlp-json")
	// What a conversion of the finished files gives, in place.
	subWant := oneShot(t, sub)
	waitFor(t, "every run of both sessions", f, func() bool {
		return len(runSpans(t, outFile)) >= len(want) && len(runSpans(t, subOut)) >= len(subWant)
	})
	if code := f.stop(os.Interrupt); code != ExitInterrupted {
		t.Fatalf("exit %d after SIGINT, want %d; stderr:\n%s", code, ExitInterrupted, f.stderr.String())
	}
	if got := runSpans(t, outFile); !equalRuns(got, want) {
		t.Errorf("%s: runs\n%v\nwant\n%v", session, got, want)
	}
	if got := runSpans(t, subOut); !equalRuns(got, subWant) {
		t.Errorf("%s: runs\n%v\nwant\n%v", sub, got, subWant)
	}
	subSpans := 0
	for _, r := range subWant {
		subSpans += len(r)
	}
	if subSpans < 8 {
		t.Errorf("the session with subagents gave only %d spans", subSpans)
	}

	// A deleted session leaves the state; nothing is written again.
	os.Remove(sub)
	os.RemoveAll(filepath.Join(watched, "proj2"))
	f = startFollow(t, env, args...)
	waitFor(t, "the deleted session to leave the state", f, func() bool {
		var st followState
		b, err := os.ReadFile(state)
		return err == nil && json.Unmarshal(b, &st) == nil && st.Files[sub] == nil
	})
	if code := f.stop(os.Interrupt); code != ExitInterrupted {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitInterrupted, f.stderr.String())
	}
	if got := runSpans(t, outFile); !equalRuns(got, want) {
		t.Errorf("after a restart, %s: runs\n%v\nwant\n%v", session, got, want)
	}
}

// testCollector is an OTLP/grpc receiver on 127.0.0.1 that can go down
// and come back on the same address.
type testCollector struct {
	collpb.UnimplementedTraceServiceServer
	addr  string
	mu    sync.Mutex
	spans map[string]int
	srv   *grpc.Server
}

func newTestCollector(t *testing.T) *testCollector {
	c := &testCollector{spans: map[string]int{}}
	c.up(t, "127.0.0.1:0")
	t.Cleanup(c.down)
	return c
}

func (c *testCollector) up(t *testing.T, addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.addr = ln.Addr().String()
	c.srv = grpc.NewServer()
	collpb.RegisterTraceServiceServer(c.srv, c)
	srv := c.srv
	c.mu.Unlock()
	go srv.Serve(ln)
}

func (c *testCollector) down() {
	c.mu.Lock()
	srv := c.srv
	c.srv = nil
	c.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

func (c *testCollector) Export(ctx context.Context, req *collpb.ExportTraceServiceRequest) (*collpb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans[hex.EncodeToString(s.TraceId)+"/"+hex.EncodeToString(s.SpanId)]++
			}
		}
	}
	return &collpb.ExportTraceServiceResponse{}, nil
}

func (c *testCollector) accepted() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]int{}
	for k, v := range c.spans {
		m[k] = v
	}
	return m
}

func flat(runs [][]string) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r...)
	}
	return out
}

// has: every span of want was accepted.
func has(got map[string]int, want []string) bool {
	for _, id := range want {
		if got[id] == 0 {
			return false
		}
	}
	return true
}

// TestFollowOTLP: sessions shipped live to a collector that goes down
// and comes back, across a restart: delivered + spooled = read, each span
// once.
func TestFollowOTLP(t *testing.T) {
	t.Parallel()
	formatstest.Long(t)
	home := t.TempDir()
	watched := filepath.Join(home, "sessions")
	os.MkdirAll(watched, 0o755)
	stateDir := filepath.Join(home, "state")
	env := map[string]string{"HOME": home, "XDG_STATE_HOME": stateDir}
	coll := newTestCollector(t)
	args := []string{"--to", "otlp", "--otlp-endpoint", "http://" + coll.addr, "--otlp-timeout", "2s", "--idle", "1s", "--poll", "100ms", watched}
	spool := filepath.Join(stateDir, "agentconv", "follow-undelivered.otlp.jsonl")

	first := filepath.Join(watched, "a", "first.jsonl")
	second := filepath.Join(watched, "b", "second.jsonl")
	third := filepath.Join(watched, "c", subagents+".jsonl")
	wantFirst := flat(oneShot(t, fourRuns))
	wantSecond := flat(oneShot(t, oneRun))

	f := startFollow(t, env, args...)
	for _, rec := range lines(readBytes(t, fourRuns)) {
		appendTo(t, first, rec[:len(rec)/3])
		appendTo(t, first, rec[len(rec)/3:])
	}
	waitFor(t, "the first session's spans at the collector", f, func() bool { return has(coll.accepted(), wantFirst) })

	// The collector goes down: the second session is spooled.
	addr := coll.addr
	coll.down()
	appendTo(t, second, readBytes(t, oneRun))
	waitFor(t, "the second session's spans in the spool", f, func() bool {
		return has(idSet(t, spool), wantSecond)
	})
	if code := f.stop(os.Interrupt); code != ExitOutput {
		t.Fatalf("exit %d after SIGINT with spans spooled, want %d; stderr:\n%s", code, ExitOutput, f.stderr.String())
	}
	if !strings.Contains(f.stderr.String(), spool) {
		t.Errorf("stderr does not name the spool %s:\n%s", spool, f.stderr.String())
	}

	// Up again, and follow restarted: a new session goes, and the spool
	// with it.
	coll.up(t, addr)
	f = startFollow(t, env, args...)
	third0 := filepath.Join(followSessions, subagents)
	appendTo(t, third, readBytes(t, third0+".jsonl"))
	entries, _ := os.ReadDir(filepath.Join(third0, "subagents"))
	for _, e := range entries {
		appendTo(t, filepath.Join(watched, "c", subagents, "subagents", e.Name()), readBytes(t, filepath.Join(third0, "subagents", e.Name())))
	}
	wantThird := flat(oneShot(t, third))
	waitFor(t, "every session's spans at the collector", f, func() bool {
		got := coll.accepted()
		return has(got, wantFirst) && has(got, wantSecond) && has(got, wantThird)
	})
	if code := f.stop(syscall.SIGTERM); code != ExitTerminated {
		t.Fatalf("exit %d after SIGTERM, want %d; stderr:\n%s", code, ExitTerminated, f.stderr.String())
	}

	// Delivered + spooled = read, each once.
	read := append(append(append([]string(nil), wantFirst...), wantSecond...), wantThird...)
	got := coll.accepted()
	for id, n := range idSet(t, spool) {
		got[id] += n
	}
	want := map[string]bool{}
	for _, id := range read {
		want[id] = true
	}
	for id, n := range got {
		if !want[id] {
			t.Errorf("span %s was delivered but never read", id)
		} else if n != 1 {
			t.Errorf("span %s was delivered or spooled %d times", id, n)
		}
	}
	for id := range want {
		if got[id] == 0 {
			t.Errorf("span %s was read but neither delivered nor spooled", id)
		}
	}
}

// idSet counts the span ids of an otlp-json file (a spool).
func idSet(t *testing.T, name string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, run := range runSpans(t, name) {
		for _, id := range run {
			m[id]++
		}
	}
	return m
}

// TestFollowPoll: without file notifications (--poll-only, as on a
// network file system), new directories, new sessions and deleted ones
// are found by polling.
func TestFollowPoll(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	watched := filepath.Join(home, "sessions")
	out := filepath.Join(home, "out")
	state := filepath.Join(home, "follow.json")
	os.MkdirAll(watched, 0o755)
	f := startFollow(t, map[string]string{"HOME": home}, "--to", "otlp-json", "-o", out, "--state", state,
		"--idle", "300ms", "--poll", "100ms", "--poll-only", watched)
	session := filepath.Join(watched, "new", "deep", "s.jsonl")
	for _, rec := range lines(readBytes(t, oneRun)) {
		appendTo(t, session, rec)
	}
	want := oneShot(t, oneRun)
	outFile := filepath.Join(out, "sessions", "new", "deep", "s.jsonl.otlp-json")
	waitFor(t, "the session's run", f, func() bool { return len(runSpans(t, outFile)) >= len(want) })
	// A second follow on the same state would deliver every run again.
	var errb syncBuffer
	stop := make(chan os.Signal, 1)
	stop <- os.Interrupt // should it run after all
	if code := Run([]string{"agentconv", "follow", "--to", "otlp-json", "-o", out, "--state", state, watched},
		Sys{Stderr: &errb, Stdout: &errb, Signals: stop, Getenv: func(string) string { return "" }}); code != ExitUsage || !strings.Contains(errb.String(), "another agentconv follow") {
		t.Errorf("a second follow on the same state: exit %d, %s", code, errb.String())
	}
	os.RemoveAll(filepath.Join(watched, "new"))
	waitFor(t, "the deleted session to leave the state", f, func() bool {
		var st followState
		b, err := os.ReadFile(state)
		return err == nil && json.Unmarshal(b, &st) == nil && len(st.Files) == 0
	})
	if code := f.stop(os.Interrupt); code != ExitInterrupted {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitInterrupted, f.stderr.String())
	}
	if got := runSpans(t, outFile); !equalRuns(got, want) {
		t.Errorf("runs\n%v\nwant\n%v", got, want)
	}
}

// TestFollowAbandoned: a run whose file stops without its end goes out
// cut once the file has been quiet for ten times --idle (its agent is
// gone); if the file goes on after all, the run goes again, whole, in
// place of the cut one.
func TestFollowAbandoned(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	watched := filepath.Join(home, "sessions")
	out := filepath.Join(home, "out")
	os.MkdirAll(watched, 0o755)
	f := startFollow(t, map[string]string{"HOME": home}, "--to", "otlp-json", "-o", out, "--state", filepath.Join(home, "follow.json"),
		"--idle", "150ms", "--poll", "100ms", watched)
	session := filepath.Join(watched, "s.jsonl")
	recs := lines(readBytes(t, oneRun))
	half := len(recs) / 2
	os.WriteFile(filepath.Join(home, "half.jsonl"), bytes.Join(recs[:half], nil), 0o644)
	cut := oneShot(t, filepath.Join(home, "half.jsonl"))
	want := oneShot(t, oneRun)
	if len(cut) != 1 || equalRuns(cut, want) {
		t.Fatalf("the first half of %s is not a cut run of it: %v, %v", oneRun, cut, want)
	}
	for _, rec := range recs[:half] {
		appendTo(t, session, rec)
	}
	outFile := filepath.Join(out, "sessions", "s.jsonl.otlp-json")
	waitFor(t, "the abandoned run", f, func() bool { return len(runSpans(t, outFile)) >= 1 })
	if got := runSpans(t, outFile); !equalRuns(got, cut) {
		t.Fatalf("the abandoned run: %v, want %v", got, cut)
	}
	for _, rec := range recs[half:] {
		appendTo(t, session, rec)
	}
	waitFor(t, "the whole run in place of the cut one", f, func() bool { return equalRuns(runSpans(t, outFile), want) })
	if code := f.stop(os.Interrupt); code != ExitInterrupted {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitInterrupted, f.stderr.String())
	}
	if got := runSpans(t, outFile); !equalRuns(got, want) {
		t.Errorf("runs\n%v\nwant\n%v", got, want)
	}
}
