package convert

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// Pipeline converts inputs into one writer, event by event. It keeps the
// run view that the writer reads (formats.RunView), reports what the target
// cannot carry from the target's declared features, and copies the records
// that go back to their own dialect.
type Pipeline struct {
	opts   Options
	w      formats.Writer
	to     formats.Dialect
	target string
	res    Result
	view   *formats.RunView
	// start is the run start that Write makes for a run that gives none,
	// reused when the writer keeps no event.
	start formats.Event
	// counter counts losses by the things they name.
	counter formats.LossCounter
	// unknown holds the source event types already warned about, so that
	// each is reported once.
	unknown map[string]bool
	// books holds each source dialect's bookkeeping record types.
	books map[string][]string
	// observer is the writer, when it lets the pipeline copy the records
	// of its own dialect and only observes them.
	observer formats.Observer
	// copying: the open run's records are being copied verbatim.
	copying bool
	// interrupted: a signal is closing the run.
	interrupted bool
	// rawOutput: the writer takes tool outputs as undecoded JSON.
	rawOutput bool
	// copyTo is the writer, when it chooses where copied records go.
	copyTo formats.CopyTarget
	// detect decides the dialect of each input.
	detect detector
}

// New builds the writer of dialect to on out, and the pipeline that feeds
// it.
func New(to formats.Dialect, out io.Writer, wo formats.WriteOptions, opts Options) *Pipeline {
	if opts.View == nil {
		opts.View = &formats.RunView{}
	}
	if opts.Out == nil {
		opts.Out = out
	}
	if wo.Dialect == "" {
		wo.Dialect = to.Name
	}
	if wo.Report == nil {
		wo.Report = opts.Report
	}
	return NewPipeline(to.NewWriter(out, wo), to, opts)
}

// NewPipeline makes a pipeline writing into w, the writer of dialect to.
func NewPipeline(w formats.Writer, to formats.Dialect, opts Options) *Pipeline {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.View == nil {
		opts.View = &formats.RunView{}
	}
	_, raw := w.(formats.RawOutputWriter)
	// A writer that does not read a run's calls back has the view forget
	// those that ended: memory is bounded by what stays live in a run.
	opts.View.Calls.ForgetEnded = !to.HoldsRun
	p := &Pipeline{opts: opts, w: w, to: to, target: to.Name, rawOutput: raw, view: opts.View, detect: newDetector(opts.From)}
	if ob, ok := w.(formats.Observer); ok && opts.Out != nil {
		p.observer = ob
		p.copyTo, _ = w.(formats.CopyTarget)
	}
	return p
}

// ConvertOne converts one input into out, in dialect to: the writer, the
// pipeline, its close, and the report's summary of what the target could
// not carry, as the command line converts its standard input (its flags
// are opts and wo). It is the simplest use of the library.
func ConvertOne(ctx context.Context, in Input, to formats.Dialect, out io.Writer, wo formats.WriteOptions, opts Options) (Result, error) {
	p := New(to, out, wo, opts)
	err := p.Convert(ctx, in)
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if opts.Report != nil {
		opts.Report.Summary(to.Name)
	}
	return p.Result(), err
}

// DeterministicClock is --deterministic's clock for events whose source
// has none: FixedEpoch, then a millisecond more at each call.
func DeterministicClock() func() time.Time {
	n := 0
	return func() time.Time { n++; return formats.FixedEpoch.Add(time.Duration(n) * time.Millisecond) }
}

// Result returns what the conversion did so far.
func (p *Pipeline) Result() Result { return p.res }

type item struct {
	ev  *formats.Event
	err error
}

// Convert reads one input to its end and writes its events. A cancelled
// context closes the open run as cancelled and returns ErrInterrupted.
func (p *Pipeline) Convert(ctx context.Context, in Input) error {
	rep := p.opts.Report
	if rep != nil {
		old := rep.SetWhere(func(line int) string { return fmt.Sprintf("%s:%d: ", in.Name, line) })
		defer func() { rep.SetWhere(old) }()
	}
	// At a signal, what was taken from the input is still converted (see
	// drainRead); nothing more is read, not even by a reader that reads
	// its whole input before it gives an event (a session file): its next
	// read ends the input.
	stop := &stopReader{r: in.R, done: ctx.Done()}
	src := newValidUTF8Reader(stop, func(line int) {
		rep.Warn(line, "invalid UTF-8; each bad byte is replaced with U+FFFD (reported once per input)")
	})
	src.detecting = true
	br := bufio.NewReaderSize(src, 64<<10)
	d, err := p.detect.dialect(in, br, Source{}, rep)
	raw := src.detected(d.Binary)
	if err != nil {
		return err
	}
	if d.Binary {
		// The reader takes the input's bytes as they are, from the start.
		br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(raw), stop), 64<<10)
	}
	ropts := formats.ReadOptions{Dialect: d.Name, Report: rep, Path: in.Path}
	// What br gives is valid UTF-8 (src repairs it): a reader need not
	// check it again.
	unmark := formats.MarkValidUTF8(br)
	r := d.NewReader(br, ropts)
	unmark()

	if !mayBlock(in.R) && !p.readAhead(r, br) {
		return p.convertInline(ctx, in, r, br, stop)
	}

	// The reader runs in its own goroutine so that a signal can stop the
	// conversion while a live pipe is silent, and so that a file is read
	// ahead of its writer. It hands over events in batches: a batch ends
	// when it is full or when no more input is buffered, so that a live
	// pipe still sees each event at once while a file goes through
	// without a handover and a flush per event.
	batches := make(chan []item, 1)
	// The batches written come back, their events to a reader that reuses
	// them.
	recycler := p.recycler(r)
	written := make(chan []item, 2)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(batches)
		var batch []item
		bytes := 0
		for {
			if batch == nil && recycler != nil {
				select {
				case b := <-written:
					for _, it := range b {
						if it.ev != nil {
							recycler.Recycle(it.ev)
						}
					}
					clear(b)
					batch = b[:0]
				default:
				}
			}
			if batch == nil {
				batch = make([]item, 0, batchSize)
			}
			ev, err := safeNext(r)
			if ev != nil {
				ev.Arrived = p.opts.Clock()
				bytes += len(ev.Source.Line)
			}
			batch = append(batch, item{ev, err})
			last := err != nil && !(p.opts.Lenient && isLineError(err))
			if last || len(batch) == batchSize || bytes >= batchBytes || br.Buffered() == 0 {
				select {
				case batches <- batch:
				case <-done:
					return
				}
				batch, bytes = nil, 0
			}
			if last {
				return
			}
		}
	}()

	for {
		var batch []item
		var ok bool
		select {
		case <-ctx.Done():
			p.drainRead(in, stop, batches)
			p.closeRun(formats.Cancelled, "interrupted by a signal")
			return ErrInterrupted
		case batch, ok = <-batches:
		}
		if !ok {
			break
		}
		// A signal came while the batch was read: the reading stopped
		// there, and the line it ends with, read in part, is no error of
		// the input (as in drainRead).
		if ctx.Err() != nil && p.writeCut(in, batch) {
			p.closeRun(formats.Cancelled, "interrupted by a signal")
			return ErrInterrupted
		}
		end, err := p.deliver(in, batch)
		if err != nil {
			return err
		}
		if end {
			break
		}
		if recycler != nil {
			select {
			case written <- batch:
			default:
			}
		}
	}
	return p.endInput(in)
}

// recycler is r if it reuses its events and the target's writer keeps
// none, so that the events written may go back to it; else nil.
func (p *Pipeline) recycler(r formats.Reader) formats.Recycler {
	if rc, ok := r.(formats.Recycler); ok && p.to.KeepsNoEvents {
		return rc
	}
	return nil
}

// readAheadHead is how much of a file readAhead looks at, and shortRecord
// the longest average record it reads ahead of.
const (
	readAheadHead = 64 << 10
	shortRecord   = 512
)

// readAhead says whether a file is read ahead of its writer, in a goroutine
// of its own, rather than in the pipeline's: when reading and writing an
// event cost about the same, so that each core has half the work. That is
// when the target's writer has much to do for an event (its row says
// ReadAhead), the reader little (it reuses its events, a Recycler: a
// one-pass scan, not a decoder), a second core is there, and the file's
// records are short (in its first 64 KB), so that the work is per event
// rather than per byte. Then the second core takes about a third off the
// time, for a tenth more CPU or so; elsewhere it cost up to a third more
// CPU for little or no time.
func (p *Pipeline) readAhead(r formats.Reader, br *bufio.Reader) bool {
	if _, cheap := r.(formats.Recycler); !cheap || !p.to.ReadAhead || runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	head, _ := br.Peek(readAheadHead)
	return len(head) == readAheadHead && bytes.Count(head, []byte{'\n'})*shortRecord >= len(head)
}

// endInput closes the run an input left open.
func (p *Pipeline) endInput(in Input) error {
	if p.view.Open {
		if rep := p.opts.Report; rep != nil {
			rep.Warn(0, "%s: the stream ended before its run completed (the producer was killed?); closing it as a failed, cut run", in.Name)
		}
		return p.closeRun(formats.Failed, "the stream was cut before the run completed")
	}
	return nil
}

// convertInline converts an input that never waits on a producer (a
// regular file, a buffer) in the calling goroutine: a second goroutine
// would only hand events over, at a cost, and a signal is seen between
// events. As in Convert, the output is flushed whenever no more input is
// buffered. At a signal, with stop given, what the buffer holds is still
// converted (see drainRead); without, nothing more is.
func (p *Pipeline) convertInline(ctx context.Context, in Input, r formats.Reader, br *bufio.Reader, stop *stopReader) error {
	done := ctx.Done()
	var one [1]item
	// A reader that reuses its events gets each back once it is written.
	recycler := p.recycler(r)
	// Each event is written and handed back before the next is read: a
	// reader may lend its lines.
	if l, ok := recycler.(formats.Lender); ok {
		l.LendLines()
	}
	interrupted := false
	for {
		select {
		case <-done:
			if stop == nil {
				p.closeRun(formats.Cancelled, "interrupted by a signal")
				return ErrInterrupted
			}
			// The rest of what was read, then no more (a regular file:
			// stop never waits).
			stop.stop()
			interrupted, done = true, nil
		default:
		}
		ev, err := safeNext(r)
		if err != nil && (interrupted || ctx.Err() != nil) {
			// What was taken is written; the reader ended at a read that
			// the signal refused, or at the end of what it had.
			p.flush()
			p.closeRun(formats.Cancelled, "interrupted by a signal")
			return ErrInterrupted
		}
		if ev != nil {
			ev.Arrived = p.opts.Clock()
		}
		one[0] = item{ev, err}
		end, werr := p.writeBatch(in, one[:])
		if werr != nil {
			return werr
		}
		if recycler != nil && ev != nil {
			one[0] = item{}
			recycler.Recycle(ev)
		}
		if end || br.Buffered() == 0 {
			if err := p.flush(); err != nil {
				return err
			}
		}
		if end {
			return p.endInput(in)
		}
	}
}

// mayBlock reports whether reading r can wait on a producer for ever (a
// pipe, a terminal, a socket), rather than only on a disk.
func mayBlock(r io.Reader) bool {
	switch r := r.(type) {
	case *bytes.Reader, *strings.Reader, *bytes.Buffer:
		return false
	case *os.File:
		fi, err := r.Stat()
		return err != nil || !fi.Mode().IsRegular()
	}
	return true
}

// batchSize and batchBytes bound what the reader hands over at once: the
// events, and the bytes of their records, so that memory stays bounded.
const (
	batchSize  = 256
	batchBytes = 256 << 10
)

// writeBatch writes a batch of events; end reports the end of the input.
func (p *Pipeline) writeBatch(in Input, batch []item) (end bool, err error) {
	for _, it := range batch {
		if it.err == io.EOF {
			return true, nil
		}
		if it.err != nil {
			var le *formats.LineError
			if errors.As(it.err, &le) {
				if p.opts.Lenient {
					p.res.Skipped = append(p.res.Skipped, fmt.Sprintf("%s:%d", in.Name, le.Line))
					continue
				}
				p.closeRun(formats.Failed, "the input had a malformed line")
				return true, &InputError{File: in.Name, Line: le.Line, Msg: le.Msg + "; fix the line, or pass --lenient to skip malformed lines"}
			}
			p.closeRun(formats.Failed, "reading the input failed")
			return true, &InputError{File: in.Name, Msg: it.err.Error()}
		}
		if err := p.Write(it.ev); err != nil {
			return true, err
		}
	}
	return false, nil
}

// isLineError reports whether err is a malformed line, which --lenient
// skips. It is apart so that the target errors.As needs is allocated only
// when there is an error.
func isLineError(err error) bool {
	var le *formats.LineError
	return errors.As(err, &le)
}

// deliver writes a batch that the reader goroutine handed over, then
// flushes: no more of the input is buffered here.
func (p *Pipeline) deliver(in Input, batch []item) (end bool, err error) {
	if end, err = p.writeBatch(in, batch); err != nil {
		return true, err
	}
	return end, p.flush()
}

// flush flushes the output, if the caller gave a way to.
func (p *Pipeline) flush() error {
	if p.opts.Flush == nil {
		return nil
	}
	if err := p.opts.Flush(); err != nil {
		return &OutputError{err}
	}
	return nil
}

// safeNext calls a reader and turns a panic into an error: a reader bug must
// cost the rest of one input, never the data already converted.
func safeNext(r formats.Reader) (ev *formats.Event, err error) {
	defer func() {
		if v := recover(); v != nil {
			ev, err = nil, fmt.Errorf("internal error in the reader: %v (please report it)", v)
		}
	}()
	return r.Next()
}
