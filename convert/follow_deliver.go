package convert

// follow's work on a changed file: its runs counted, then those complete
// and not yet delivered converted through a gate, and the spool resent.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// work reads the live files that are due: those whose change has had a
// moment to end, those that have become quiet, and those abandoned. A
// signal stops it between two files, or cuts a delivery short.
func (f *follower) work() {
	now := f.now()
	var due []string
	for p, lf := range f.live {
		since := now.Sub(lf.last)
		switch {
		case !lf.readAt.Equal(lf.last) && since >= f.debounce() && now.Sub(lf.readTime) >= 4*lf.cost,
			since >= f.idle && !lf.quietRead,
			since >= abandonAfter*f.idle && !lf.abandonRead:
			due = append(due, p)
		}
	}
	sort.Strings(due)
	for _, p := range due {
		if f.sig == nil {
			select {
			case f.sig = <-f.sys.Signals:
			default:
			}
		}
		if f.sig != nil {
			return
		}
		lf := f.live[p]
		since := now.Sub(lf.last)
		quiet, abandoned := since >= f.idle, since >= abandonAfter*f.idle
		began := time.Now()
		settled := f.process(p, quiet, abandoned)
		lf.readAt, lf.quietRead, lf.abandonRead = lf.last, quiet, abandoned
		lf.readTime, lf.cost = time.Now(), time.Since(began)
		if settled || abandoned {
			delete(f.live, p)
		}
		f.saveSoon()
	}
	f.saveSoon()
}

// abandonAfter: a file quiet for this many times --idle whose last run
// has no end is taken as abandoned (its agent is gone), and the run goes
// out cut.
const abandonAfter = 10

// runMark is what the first pass learns of a run.
type runMark struct {
	ended bool // the source ended it (not the pipeline, at the input's end)
}

// runCounter is the writer of the first pass: it marks the runs.
type runCounter struct {
	runs    []runMark
	dialect string
}

func (w *runCounter) Write(e *formats.Event, _ *formats.RunView) error {
	if w.dialect == "" && e.Source.Dialect != "" {
		w.dialect = e.Source.Dialect
	}
	switch e.Kind {
	case formats.RunStart:
		w.runs = append(w.runs, runMark{})
	case formats.RunEnd:
		if n := len(w.runs); n > 0 {
			w.runs[n-1].ended = !e.Synthetic && !e.Cut
		}
	}
	return nil
}

func (w *runCounter) Close() error { return nil }

// gate passes the writer the events of the runs numbered from..to-1 (in
// the order of the file), and nothing of the others: those were
// delivered before, or are not complete yet.
type gate struct {
	w        formats.Writer
	from, to int
	run      int // the current run's number; -1 before the first
	shut     bool
	passed   int // runs whose end went through
}

func (g *gate) Write(e *formats.Event, v *formats.RunView) error {
	if e.Kind == formats.RunStart {
		g.run++
	}
	if g.shut || g.run < g.from || g.run >= g.to {
		return nil
	}
	if e.Kind == formats.RunEnd {
		g.passed++
	}
	return g.w.Write(e, v)
}

func (g *gate) Close() error { return g.w.Close() }

// process reads session file p: it counts its runs, and delivers those
// that are complete and not delivered yet. settled: every run it holds
// was delivered.
func (f *follower) process(p string, quiet, abandoned bool) (settled bool) {
	e := f.state.Files[p]
	if e == nil {
		e = &followEntry{}
		f.state.Files[p] = e
	}
	size, mtime, err := f.stats(p)
	if err != nil {
		f.gone(p)
		return true
	}
	fh, err := os.Open(p)
	if err != nil {
		f.warn("%s: cannot read it: %v; it is tried again at its next change", p, unwrapPath(err))
		return true
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return true
	}
	// Up to its last whole line: a cut last line waits for the rest,
	// unless the file is quiet (a document without a last line break).
	end := st.Size()
	if !quiet {
		end = lastLineEnd(fh, end)
	}
	if end < e.Offset {
		f.warn("%s: the file is shorter than when it was last read (%d bytes, then %d): read again from its start; its first %d runs are taken as delivered", p, end, e.Offset, e.Runs)
	}

	// Pass 1: its runs.
	counter := &runCounter{}
	quietRep := formats.NewReport(io.Discard)
	p1 := NewPipeline(counter, formats.Dialect{Name: "follow"}, Options{From: f.from, Lenient: true, Report: quietRep})
	err = p1.Convert(context.Background(), Input{Name: p, R: io.NewSectionReader(fh, 0, end), Path: p})
	if err == nil {
		err = p1.Close()
	}
	var de *detectError
	switch {
	case errors.As(err, &de):
		if end > 0 {
			// No dialect reads it (yet: its head may still be coming).
			e.Skip = quiet
			e.Size, e.MTime = size, mtime
			f.dirty = true
		}
		return quiet
	case err != nil && !quiet:
		return false // a document rewritten whole: read once quiet
	case err != nil:
		f.warn("%s: %v; it is tried again at its next change", p, err)
		return true
	}
	if counter.dialect == "" && len(counter.runs) == 0 {
		return quiet // nothing in it yet
	}
	if d, ok := Lookup(counter.dialect); (!ok || !readsDir(d, p)) && !f.rootOf(p).named {
		// Not one of the directory's session files (a stream of the
		// same agent, a text).
		e.Skip, e.Size, e.MTime = true, size, mtime
		f.dirty = true
		return true
	}
	e.Skip = false

	n := len(counter.runs)
	complete := n - 1 // every run another follows
	if n > 0 && (quiet && counter.runs[n-1].ended || abandoned) {
		complete = n
	}
	complete = max(complete, 0)
	from := e.Runs
	if e.Cut && e.Runs > 0 && e.Runs <= n && (e.Runs < n || counter.runs[e.Runs-1].ended) {
		// The run that went out cut as abandoned went on after all: it
		// goes again, whole (its spans keep their ids).
		from = e.Runs - 1
	}
	if complete > from {
		cut := complete == n && n > 0 && !counter.runs[n-1].ended
		if cut && complete-1 > from {
			// The runs before it first, so that the output file's size
			// before the cut run is known.
			if !f.deliver(p, fh, end, e, from, complete-1) {
				return false
			}
			from = complete - 1
		}
		if from < e.Runs {
			e.OutSize = e.CutOut // the cut run's output is replaced
		}
		if cut {
			e.CutOut = e.OutSize
		}
		if !f.deliver(p, fh, end, e, from, complete) {
			return false
		}
		e.Cut = cut
	}
	e.Offset, e.Size, e.MTime = end, size, mtime
	e.Settled = quiet && e.Runs >= n
	f.dirty = true
	return e.Settled
}

// lastLineEnd is the offset just past the last line break of the file's
// first size bytes, 0 if none.
func lastLineEnd(fh *os.File, size int64) int64 {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := fh.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return 0
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1
		}
		end = start
	}
	return 0
}

// deliver converts the runs from..upto-1 of session file p (its first
// end bytes) and delivers them; the state then counts them. false: a
// signal cut it short (what was sent stays sent; the state does not
// count the runs, which go again next time).
func (f *follower) deliver(p string, fh *os.File, end int64, e *followEntry, from, upto int) bool {
	rep := formats.NewReport(io.Discard)
	wo := f.wopts(rep)
	var out io.Writer = io.Discard
	var of *os.File
	var bw *bufio.Writer
	if f.outDir != "" {
		name := f.outName(p)
		if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
			f.warn("cannot write %s: %v; the runs of %s go out at its next change", name, unwrapPath(err), p)
			return true
		}
		var err error
		of, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o666)
		if err == nil {
			// What a delivery cut short (a kill) left after the last one.
			err = of.Truncate(e.OutSize)
		}
		if err == nil {
			_, err = of.Seek(e.OutSize, io.SeekStart)
		}
		if err != nil {
			if of != nil {
				of.Close()
			}
			f.warn("cannot write %s: %v; the runs of %s go out at its next change", name, unwrapPath(err), p)
			return true
		}
		defer of.Close()
		bw = bufio.NewWriterSize(of, 64<<10)
		out = bw
	}
	g := &gate{w: f.to.NewWriter(out, wo), from: from, to: upto, run: -1}
	// The gate is no Observer: every event reaches the writer through it.
	to := f.to
	to.KeepsNoEvents, to.ReadAhead = false, false
	pl := NewPipeline(g, to, Options{From: f.from, Lenient: true, Report: rep})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	stopped := make(chan os.Signal, 1)
	// watched ends with the watcher, so that a signal it took as the pass
	// ended is in stopped before stopped is looked at: else the signal was
	// lost, and follow went on watching (seen under load).
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case s := <-f.sys.Signals:
			stopped <- s
			cancel()
		case <-done:
		}
	}()
	err := pl.Convert(ctx, Input{Name: p, R: io.NewSectionReader(fh, 0, end), Path: p})
	interrupted := errors.Is(err, ErrInterrupted)
	// The runs the pipeline closes itself (cut at the end, or at a
	// signal) are not the source's: the gate lets nothing more through.
	g.shut = true
	var cerr error
	if interrupted {
		cerr = pl.Interrupt()
	} else {
		cerr = pl.Close()
	}
	close(done)
	<-watched
	select {
	case s := <-stopped:
		// A signal after the input was read (while delivering): the
		// pass is whole, delivered or spooled; the watch ends after it.
		f.sig = s
	default:
	}
	if err != nil && !interrupted {
		f.warn("%s: %v", p, err)
	}
	if bw != nil {
		if ferr := bw.Flush(); ferr != nil && cerr == nil {
			cerr = ferr
		}
	}
	if cerr != nil {
		var oe *OutputError
		msg := cerr.Error()
		if errors.As(cerr, &oe) {
			msg = oe.Err.Error()
		}
		if f.to.Remote {
			// Spooled: delivered + spooled = read; the runs are counted.
			f.spooled = true
			f.warn("%s: %s", p, msg)
		} else {
			f.warn("cannot write the runs of %s: %s; they go out at its next change", p, msg)
			return !interrupted
		}
	} else if f.to.Remote {
		f.resendSpool()
	}
	if interrupted {
		return false
	}
	if of != nil {
		if st, err := of.Stat(); err == nil {
			e.OutSize = st.Size()
		}
	}
	f.delivered += upto - from
	e.Runs = upto
	f.dirty = true
	return true
}

// wopts are the writer's options.
func (f *follower) wopts(rep *formats.Report) formats.WriteOptions {
	return formats.WriteOptions{Dialect: f.to.Name, Report: rep, Stderr: f.stderr, Params: f.params, Getenv: f.sys.Getenv}
}

// outName is where -o DIR puts the runs of session file p: its path
// under the home directory (else its absolute path), with the leading
// dots of its names taken off, and the dialect's name added.
func (f *follower) outName(p string) string {
	rel := p
	if home := f.sys.getenv("HOME"); home != "" {
		if r, err := filepath.Rel(home, p); err == nil && !strings.HasPrefix(r, "..") {
			rel = r
		}
	}
	parts := strings.Split(filepath.ToSlash(strings.TrimPrefix(rel, string(filepath.Separator))), "/")
	for i, part := range parts {
		if t := strings.TrimLeft(part, "."); t != "" {
			parts[i] = t
		}
	}
	return filepath.Join(f.outDir, filepath.FromSlash(strings.Join(parts, "/"))+"."+f.to.Name)
}

// resendSpool sends again what the spool holds, once the collector took
// a delivery whole: it is renamed aside, resent, and removed; what does
// not go through is spooled again.
func (f *follower) resendSpool() {
	spool := f.params["otlp.spool"]
	aside := spool + ".resending"
	if st, err := os.Stat(aside); err != nil || st.Size() == 0 {
		if st, err := os.Stat(spool); err != nil || st.Size() == 0 {
			return
		}
		if err := os.Rename(spool, aside); err != nil {
			return
		}
	}
	fh, err := os.Open(aside)
	if err != nil {
		return
	}
	defer fh.Close()
	rep := formats.NewReport(io.Discard)
	otlpJSON, _ := Lookup("otlp-json")
	pl := New(f.to, io.Discard, f.wopts(rep), Options{From: otlpJSON, Lenient: true, Report: rep})
	err = pl.Convert(context.Background(), Input{Name: aside, R: fh, Path: aside})
	cerr := pl.Close()
	if err != nil {
		f.warn("resending %s: %v; it is kept", aside, err)
		return
	}
	if cerr != nil {
		f.spooled = true
		f.warn("resending %s: %v", aside, cerr)
	}
	os.Remove(aside)
}
