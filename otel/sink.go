package otel

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/agentconv/agentconv/formats"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Batching: spans go out in batches of at most batchSpans spans and
// maxRequest bytes, when a batch is full or batchDelay after its first span
// ended, so that a live run shows up as it goes. senders batches are sent
// at a time; maxPending more wait in memory, and the batches past those go
// to an overflow file on disk, read back as the senders drain: reading the
// input never waits on the network, and memory stays bounded.
const (
	batchSpans = 1024
	batchDelay = 500 * time.Millisecond
	senders    = 6
	maxPending = 2
	// batchBudget is what the spans of a batch, with their resources and
	// scopes, may take of a request.
	batchBudget = maxRequest - 16<<10
)

// exportSink delivers spans in the background. Once a delivery fails (the
// uploader retried within the timeout), the collector counts as down: that
// batch and every later span go to the spool file, so that a dead endpoint
// costs one timeout, never one per span. Closing waits at most the timeout
// for what is left; what is not delivered then is spooled, and so is
// everything at a second SIGINT or SIGTERM.
//
// Batches go to the spool in the order they were made, whichever sender
// gives up on one first: a run's spans come children first and its root
// last, and a reader of the spool holds a trace's spans until its root, so
// a batch spooled after a later one would split its runs. Each batch has a
// number (seq); one settled (delivered or spooled) before an earlier one
// waits for it, among the few the senders hold, and once the collector is
// down no batch is spooled while an earlier one is still out: the later
// ones wait in the queue (pending, then the overflow file on disk).
type exportSink struct {
	up     uploader
	cfg    *config
	target string
	stderr io.Writer
	rep    *formats.Report

	mu        sync.Mutex
	cond      *sync.Cond
	cur       []item // the batch being filled
	curBytes  int
	curGroups map[groupKey]bool
	curSince  time.Time
	pending   []batch   // full batches waiting for a sender
	over      *overflow // batches past maxPending, on disk
	inflight  int
	maxHeld   int  // the most batches held in memory at once (pending and in flight)
	closing   bool // no more spans will come
	stopped   bool // nothing more is sent: what is left is spooled
	stopWhy   error
	down      error // the first delivery error
	delivered int64 // spans in requests the collector answered
	rejected  int64 // of those, what it said it rejected
	messages  []string
	cut       int
	spool     spoolFile
	seq       int64 // the number the next batch gets
	spooled   int64 // every batch numbered below it is settled, in order
	// settled holds what is to be spooled of batches settled before an
	// earlier one (nil: delivered), by number, at most one a sender.
	settled map[int64][]item

	ctx     context.Context // cancelled to abort the requests in flight
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	quit    chan struct{} // closed by close: the batch timer ends
	sigs    chan os.Signal
	abort   chan struct{} // closed at a second signal
	ended   chan struct{} // closed when close is done
	sigOnce sync.Once
}

func newExportSink(up uploader, cfg *config, o formats.WriteOptions, target string, signals bool) *exportSink {
	s := &exportSink{up: up, cfg: cfg, target: target, stderr: o.Stderr, rep: o.Report,
		curGroups: map[groupKey]bool{}, quit: make(chan struct{}), abort: make(chan struct{}), ended: make(chan struct{})}
	if s.stderr == nil {
		s.stderr = io.Discard
	}
	s.cond = sync.NewCond(&s.mu)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.spool.name, s.spool.dir = cfg.spool, cfg.stateDir
	for range senders {
		s.wg.Add(1)
		go s.send()
	}
	go s.timer()
	if signals {
		// The command line ends the conversion at the first signal; the
		// sink counts them so that a second one ends the delivery at once.
		s.sigs = make(chan os.Signal, 2)
		signal.Notify(s.sigs, os.Interrupt, syscall.SIGTERM)
		go s.watch()
	}
	return s
}

func (s *exportSink) watch() {
	n := 0
	for {
		select {
		case <-s.sigs:
			if n++; n == 2 {
				s.sigOnce.Do(func() { close(s.abort) })
			}
		case <-s.ended:
			return
		}
	}
}

// batch is a batch of spans and its number, in the order batches are
// made.
type batch struct {
	seq   int64
	items []item
}

func (s *exportSink) span(d *spanData) error {
	s.add(d.snapshot())
	return nil
}

func (s *exportSink) raw(line []byte) error {
	ss, err := decodeLine(line)
	if err != nil {
		return err
	}
	for _, sp := range ss {
		s.add(sp)
	}
	return nil
}

func (s *exportSink) runEnded() error { return nil }

// add puts a span in the current batch.
func (s *exportSink) add(sp sdktrace.ReadOnlySpan) {
	it, cut := fit(sp)
	if cut {
		s.rep.Quirk(lostCutToFit)
	}
	k := keyOf(it.span)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cut {
		s.cut++
	}
	extra := 0
	if !s.curGroups[k] {
		extra = groupSize(it.span)
	}
	if len(s.cur) > 0 && s.curBytes+it.size+extra > batchBudget {
		s.pushLocked()
		extra = groupSize(it.span)
	}
	if len(s.cur) == 0 {
		s.curSince = time.Now()
	}
	s.cur = append(s.cur, it)
	s.curBytes += it.size + extra
	s.curGroups[k] = true
	if len(s.cur) >= batchSpans {
		s.pushLocked()
	}
}

// pushLocked hands the current batch on: to the senders, to the overflow
// file when they have enough waiting, to the spool once the collector is
// down or delivery has stopped (in its turn: after the batches before it).
func (s *exportSink) pushLocked() {
	items := s.cur
	s.cur, s.curBytes = nil, 0
	clear(s.curGroups)
	if len(items) == 0 {
		return
	}
	b := batch{seq: s.seq, items: items}
	s.seq++
	if s.down != nil || s.stopped {
		s.spoolLocked(b)
		return
	}
	if s.queueLocked(b) {
		s.cond.Broadcast()
		return
	}
	// No room on disk either: wait for the senders, memory bounded.
	for len(s.pending) >= maxPending && !s.stopped && s.down == nil {
		s.cond.Wait()
	}
	if s.down != nil || s.stopped {
		s.spoolLocked(b)
		return
	}
	s.pending = append(s.pending, b)
	s.cond.Broadcast()
}

// spoolLocked spools a batch once the collector is down or delivery has
// stopped: at once, after what waits before it, if no earlier batch is
// out with a sender; else it waits behind them in the queue.
func (s *exportSink) spoolLocked(b batch) {
	if s.inflight == 0 {
		s.drainLocked()
		s.settleLocked(b.seq, b.items)
		return
	}
	if !s.queueLocked(b) {
		// No room on disk: it waits in memory.
		s.pending = append(s.pending, b)
	}
}

// queueLocked puts a batch at the end of the queue: with those waiting in
// memory while there are few and none on disk, else on disk; false when
// the disk has no room for it.
func (s *exportSink) queueLocked(b batch) bool {
	if s.over.empty() && len(s.pending) < maxPending {
		s.pending = append(s.pending, b)
		s.maxHeld = max(s.maxHeld, len(s.pending)+s.inflight)
		return true
	}
	if s.over == nil {
		s.over = &overflow{}
	}
	return s.over.write(b) == nil
}

// drainLocked spools the batches waiting in the queue, in order; no batch
// is out with a sender.
func (s *exportSink) drainLocked() {
	for _, b := range s.pending {
		s.settleLocked(b.seq, b.items)
	}
	s.pending = nil
	for !s.over.empty() {
		line, n, seq, ok := s.readOverLocked()
		if !ok {
			return
		}
		s.settleRawLocked(seq, line, n)
	}
}

// readOverLocked reads the next batch of the overflow file: its line, its
// count of spans and its number. ok is false when it cannot be read back:
// then it and the file's other batches are given up, their spans lost.
func (s *exportSink) readOverLocked() (line []byte, n int, seq int64, ok bool) {
	line, n, seq, err := s.over.read()
	if err == nil {
		return line, n, seq, true
	}
	rest, seqs := s.over.drop()
	s.spool.lost(err, n+rest)
	s.settleLocked(seq, nil)
	for _, q := range seqs {
		s.settleLocked(q, nil)
	}
	return nil, 0, 0, false
}

// settleLocked settles batch seq: rest is what of it goes to the spool
// (nil: all of it was delivered). It is spooled when every earlier batch
// is settled, and the later ones that waited for it after it.
func (s *exportSink) settleLocked(seq int64, rest []item) {
	if seq != s.spooled {
		if s.settled == nil {
			s.settled = map[int64][]item{}
		}
		s.settled[seq] = rest
		return
	}
	s.spool.write(rest)
	s.spooled++
	s.settleNextLocked()
}

// settleRawLocked is settleLocked for a batch read back from the overflow
// file as its line of n spans, which is spooled as it is.
func (s *exportSink) settleRawLocked(seq int64, line []byte, n int) {
	if seq != s.spooled {
		s.settleLocked(seq, s.decode(line))
		return
	}
	s.spool.writeRaw(line, n)
	s.spooled++
	s.settleNextLocked()
}

// settleNextLocked spools the batches that waited for the ones before
// them.
func (s *exportSink) settleNextLocked() {
	for {
		rest, ok := s.settled[s.spooled]
		if !ok {
			return
		}
		delete(s.settled, s.spooled)
		s.spool.write(rest)
		s.spooled++
	}
}

// timer sends a batch batchDelay after its first span, if it did not fill.
func (s *exportSink) timer() {
	t := time.NewTicker(batchDelay / 5)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			s.mu.Lock()
			if len(s.cur) > 0 && time.Since(s.curSince) >= batchDelay {
				s.pushLocked()
			}
			s.mu.Unlock()
		}
	}
}

// next waits for a batch to send; ok is false when there is none to come.
// Once the collector is down, the batches waiting go to the spool, in
// order, when no earlier one is out with a sender (drainLocked), not
// through the senders.
func (s *exportSink) next() (b batch, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.stopped {
			return b, false
		}
		if s.down != nil {
			if s.inflight == 0 {
				s.drainLocked()
			}
			if s.closing {
				return b, false
			}
			s.cond.Wait()
			continue
		}
		if len(s.pending) > 0 {
			b = s.pending[0]
			s.pending = s.pending[1:]
			break
		}
		if !s.over.empty() {
			line, _, seq, ok := s.readOverLocked()
			if !ok {
				continue
			}
			// Decoding is slow: let the reader go on meanwhile.
			s.inflight++
			s.mu.Unlock()
			b = batch{seq: seq, items: s.decode(line)}
			s.mu.Lock()
			s.inflight--
			break
		}
		if s.closing {
			return b, false
		}
		s.cond.Wait()
	}
	s.inflight++
	s.maxHeld = max(s.maxHeld, len(s.pending)+s.inflight)
	s.cond.Broadcast()
	return b, true
}

func (s *exportSink) decode(line []byte) []item {
	ss, _ := decodeLine(line) // the sink wrote it
	b := make([]item, 0, len(ss))
	for _, sp := range ss {
		it, _ := fit(sp)
		b = append(b, it)
	}
	return b
}

// send is a sender: it delivers batches until there are none, or until
// delivery stops.
func (s *exportSink) send() {
	defer s.wg.Done()
	for {
		bt, ok := s.next()
		if !ok {
			return
		}
		b := bt.items
		s.mu.Lock()
		down := s.down != nil || s.stopped
		s.mu.Unlock()
		var (
			rejected int64
			msg      string
			err      error
		)
		if !down {
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.timeout)
			rejected, msg, err = s.up.upload(ctx, b)
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = s.timedOut(err)
			}
			cancel()
		}
		s.mu.Lock()
		s.inflight--
		sent := len(b)
		switch {
		case down:
			sent = 0
		case err != nil:
			sent = 0
			var pe *partError
			if errors.As(err, &pe) {
				sent, err = pe.sent, pe.err
			}
			if s.down == nil {
				if s.stopWhy != nil {
					err = s.stopWhy
				}
				s.down = err
			}
		}
		s.delivered += int64(sent)
		s.rejected += rejected
		if msg != "" && len(s.messages) < 5 {
			s.messages = append(s.messages, msg)
		}
		if sent == len(b) {
			s.settleLocked(bt.seq, nil)
		} else {
			s.settleLocked(bt.seq, b[sent:])
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// timedOut words an error of a request that ran out of time.
func (s *exportSink) timedOut(err error) error {
	why := fmt.Errorf("not delivered within the delivery timeout (%v; --otlp-timeout sets it)", s.cfg.timeout)
	if errors.Is(err, context.DeadlineExceeded) && err.Error() == context.DeadlineExceeded.Error() {
		return why
	}
	return fmt.Errorf("%v: %w", why, err)
}

// stop ends the delivery: the requests in flight are cancelled, and what is
// left goes to the spool.
func (s *exportSink) stop(why error) {
	s.mu.Lock()
	if !s.stopped {
		s.stopped, s.stopWhy = true, why
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	s.cancel()
}

func (s *exportSink) close() error {
	s.mu.Lock()
	s.pushLocked()
	s.closing = true
	s.cond.Broadcast()
	s.mu.Unlock()
	close(s.quit)

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	t := time.NewTimer(s.cfg.timeout)
	select {
	case <-done:
	case <-t.C:
		s.stop(s.timedOut(context.DeadlineExceeded))
		<-done
	case <-s.abort:
		s.stop(errors.New("a second signal ended the delivery"))
		<-done
	}
	t.Stop()
	if s.sigs != nil {
		signal.Stop(s.sigs)
	}
	close(s.ended)
	// What no sender took, in order; then, should a batch never have
	// been settled, those that waited for it.
	s.mu.Lock()
	s.drainLocked()
	for len(s.settled) > 0 {
		s.spooled = slices.Min(slices.Collect(maps.Keys(s.settled)))
		s.settleNextLocked()
	}
	if s.over != nil {
		s.over.close()
	}
	if s.down == nil && s.stopWhy != nil && s.spool.spans() > 0 {
		s.down = s.stopWhy
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	s.up.shutdown(ctx)
	cancel()
	s.cancel()
	return s.report()
}

// report says what became of the spans: delivered, rejected by the
// collector, or spooled.
func (s *exportSink) report() error {
	var errs []error
	if s.rejected > 0 {
		errs = append(errs, fmt.Errorf("the collector at %s rejected %d of the %d spans sent (partial success): %s", s.target, s.rejected, s.delivered, joinMessages(s.messages)))
	} else if len(s.messages) > 0 {
		fmt.Fprintf(s.stderr, "agentconv: the collector at %s accepted every span, with a warning: %s\n", s.target, joinMessages(s.messages))
	}
	if n := s.spool.spans(); n > 0 {
		errs = append(errs, s.spool.finish(s.target, s.down, s.stderr))
	}
	return errors.Join(errs...)
}

func joinMessages(ms []string) string {
	if len(ms) == 0 {
		return "(no message)"
	}
	out := ms[0]
	for _, m := range ms[1:] {
		if m != out {
			out += "; " + m
		}
	}
	return out
}

// spoolFile takes the spans that were not delivered, as OTLP/JSON lines.
// It is made at the first of them. It counts the spans it holds whole: at
// a write error (a full disk) it cuts back what it was writing, and counts
// the rest as lost.
type spoolFile struct {
	name   string // the name asked for; "" for a new one
	dir    string // where a new one goes (the user's state directory)
	f      spoolTarget
	enc    requestEncoder
	off    int64 // the end of the last whole line
	whole  int   // spans written whole
	failed int   // spans that could not be written
	err    error
}

// spoolTarget is the spool's file (tests give one whose disk fills).
type spoolTarget interface {
	io.WriteCloser
	Name() string
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
}

var createSpoolFile = func(name, dir string) (spoolTarget, error) {
	f, err := createSpool(name, dir)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (p *spoolFile) spans() int { return p.whole + p.failed }

func (p *spoolFile) open() bool {
	if p.err != nil {
		return false
	}
	if p.f == nil {
		if p.f, p.err = createSpoolFile(p.name, p.dir); p.err != nil {
			return false
		}
		if st, err := p.f.Stat(); err == nil {
			p.off = st.Size()
		}
	}
	return true
}

func (p *spoolFile) write(b []item) {
	if len(b) == 0 {
		return
	}
	if !p.open() {
		p.failed += len(b)
		return
	}
	for _, it := range b {
		d := readOnlyData(it.span)
		p.enc.add(&d)
	}
	lw := &lineWriter{p: p, n: len(b)}
	if err := p.enc.writeTo(lw); err != nil && !lw.called {
		// A value JSON cannot carry (NaN): nothing was written.
		p.failed += len(b)
		if p.err == nil {
			p.err = err
		}
	}
}

func (p *spoolFile) writeRaw(line []byte, n int) {
	if !p.open() {
		p.failed += n
		return
	}
	(&lineWriter{p: p, n: n}).Write(line)
}

// lost counts spans that could not even be read back for the spool.
func (p *spoolFile) lost(err error, n int) {
	if p.err == nil {
		p.err = err
	}
	p.failed += n
}

// lineWriter writes one line of n spans to the spool.
type lineWriter struct {
	p      *spoolFile
	n      int
	called bool
}

func (w *lineWriter) Write(line []byte) (int, error) {
	w.called = true
	p := w.p
	k, err := p.f.Write(line)
	if err == nil && k == len(line) {
		p.off += int64(k)
		p.whole += w.n
		return k, nil
	}
	if err == nil {
		err = io.ErrShortWrite
	}
	p.err = err
	p.failed += w.n
	// Take the cut line back out, so that the file holds whole lines.
	p.f.Truncate(p.off)
	return k, err
}

func (p *spoolFile) finish(target string, why error, stderr io.Writer) error {
	if why == nil {
		why = errors.New("delivery stopped")
	}
	if p.f == nil {
		return fmt.Errorf("%d spans could not be delivered to %s (%v), nor written to a spool file (%v); give --otlp-spool a file in a writable directory", p.failed, target, why, p.err)
	}
	name := p.f.Name()
	if abs, err := filepath.Abs(name); err == nil {
		name = abs
	}
	if err := p.f.Close(); err != nil && p.err == nil {
		p.err = err
	}
	resend := fmt.Sprintf("agentconv: resend them with: agentconv --from otlp-json --to otlp %s\n", name)
	if p.failed > 0 {
		if p.whole > 0 {
			fmt.Fprintf(stderr, "agentconv: %d spans could not be delivered; %d of them are in %s\n%s", p.spans(), p.whole, name, resend)
		}
		return fmt.Errorf("%d spans could not be delivered to %s (%v); %d of them are whole in the spool file %s, the other %d could not be written to it (%v): free some space, or give --otlp-spool another disk", p.spans(), target, why, p.whole, name, p.failed, p.err)
	}
	fmt.Fprintf(stderr, "agentconv: %d spans could not be delivered; they are in %s\n%s", p.whole, name, resend)
	return fmt.Errorf("%d spans could not be delivered to %s: %v (kept in %s)", p.whole, target, why, name)
}

// overflow holds batches on disk, as OTLP/JSON lines, in an unlinked
// temporary file, until the senders can take them.
type overflow struct {
	w, rf  *os.File
	r      *bufio.Reader
	enc    requestEncoder
	buf    bytes.Buffer
	off    int64
	counts []int   // the spans of each line not yet read
	seqs   []int64 // and its batch's number
}

func (o *overflow) empty() bool { return o == nil || len(o.counts) == 0 }

func (o *overflow) write(bt batch) error {
	b := bt.items
	if o.w == nil {
		f, err := os.CreateTemp("", "agentconv-overflow-*.otlp.jsonl")
		if err != nil {
			return err
		}
		rf, err := os.Open(f.Name())
		os.Remove(f.Name())
		if err != nil {
			f.Close()
			return err
		}
		o.w, o.rf, o.r = f, rf, bufio.NewReaderSize(rf, 1<<20)
	}
	for _, it := range b {
		d := readOnlyData(it.span)
		o.enc.add(&d)
	}
	if err := o.enc.writeTo(&o.buf); err != nil {
		return err
	}
	k, err := o.w.Write(o.buf.Bytes())
	o.buf.Reset()
	if err != nil {
		// Take back what was written of the line, if anything.
		if k > 0 {
			o.w.Truncate(o.off)
			o.w.Seek(o.off, io.SeekStart)
		}
		return err
	}
	o.off += int64(k)
	o.counts = append(o.counts, len(b))
	o.seqs = append(o.seqs, bt.seq)
	return nil
}

// read gives the next line, its count of spans and its batch's number.
func (o *overflow) read() ([]byte, int, int64, error) {
	line, err := o.r.ReadBytes('\n')
	n, seq := o.counts[0], o.seqs[0]
	o.counts, o.seqs = o.counts[1:], o.seqs[1:]
	if err != nil {
		return nil, n, seq, err
	}
	return line, n, seq, nil
}

// drop gives up on what is left, returning its count of spans and the
// numbers of its batches.
func (o *overflow) drop() (int, []int64) {
	n := 0
	for _, c := range o.counts {
		n += c
	}
	seqs := o.seqs
	o.counts, o.seqs = nil, nil
	return n, seqs
}

func (o *overflow) close() {
	if o.w != nil {
		o.w.Close()
		o.rf.Close()
	}
}
