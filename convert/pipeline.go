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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// Input is one named input stream.
type Input struct {
	// Name is the file name, or "-" for standard input; errors use it.
	Name string
	R    io.Reader
	// Path is the file's path, "" for standard input; the reader gets it
	// (formats.ReadOptions.Path).
	Path string
}

// Options steer a conversion.
type Options struct {
	// From is the input dialect; the zero Dialect means detect it per input.
	From formats.Dialect
	// Lenient skips malformed records instead of stopping at the first.
	Lenient bool
	// Strict turns any loss into an error.
	Strict bool
	// Clock stamps Event.Arrived; nil means time.Now.
	Clock func() time.Time
	// Flush is called whenever the events read so far are written and the
	// input has nothing more buffered, so that a live pipe sees each event
	// at once; nil when the output is a file.
	Flush func() error
	// Report receives warnings and losses.
	Report *formats.Report
	// View is the run view the pipeline keeps, and gives the writer with
	// each event; nil makes one.
	View *formats.RunView
	// Out is the writer's output, where the pipeline copies the records
	// that go back to their own dialect; nil leaves that to the writer.
	Out io.Writer
}

// Result sums up a conversion.
type Result struct {
	// Runs is how many runs were written.
	Runs int
	// ExitCode is the last run's own exit code, when it has one.
	ExitCode formats.Opt[int]
	// Skipped lists the malformed records --lenient skipped, as FILE:LINE.
	Skipped []string
	// Events is how many events were read.
	Events int
}

// InputError is a problem with the input at a place: FILE:LINE: what.
type InputError struct {
	File string
	Line int
	Msg  string
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// OutputError is a failure to write or deliver the output.
type OutputError struct{ Err error }

func (e *OutputError) Error() string { return e.Err.Error() }
func (e *OutputError) Unwrap() error { return e.Err }

// LossError is a loss met under --strict.
type LossError struct{ What, Target string }

func (e *LossError) Error() string {
	return fmt.Sprintf("--strict: %s cannot carry %s", e.Target, e.What)
}

// ErrInterrupted is returned when the context is cancelled (a signal).
var ErrInterrupted = errors.New("interrupted")

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
	p := &Pipeline{opts: opts, w: w, to: to, target: to.Name, rawOutput: raw, view: opts.View}
	if ob, ok := w.(formats.Observer); ok && opts.Out != nil {
		p.observer = ob
		p.copyTo, _ = w.(formats.CopyTarget)
	}
	return p
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
	d, err := p.dialectFor(in, br)
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
// buffered.
// drainRead, at a signal, converts what the reader goroutine had taken
// from the input and not handed over yet (what is in its buffers, up to a
// whole record; it takes nothing more, stop ends the input there), so that
// what was read is written: with --to otlp, the spans of an input that
// was read to its end are delivered or spooled, none dropped. A reader
// waiting on a producer that may never write again (a live pipe) is not
// waited for: what it waits for was not read. The records after the
// first error (a record cut by the stop) are not.
func (p *Pipeline) drainRead(in Input, stop *stopReader, batches <-chan []item) {
	if stop.stop() && mayBlock(in.R) {
		return
	}
	for batch := range batches {
		for i, it := range batch {
			if it.err != nil {
				if _, err := p.writeBatch(in, batch[:i]); err == nil {
					p.flush()
				}
				return
			}
		}
		if _, err := p.deliver(in, batch); err != nil {
			return
		}
	}
}

// stopReader is an input that ends when stop is called or done is
// closed: a signal came.
type stopReader struct {
	r       io.Reader
	done    <-chan struct{}
	mu      sync.Mutex
	stopped bool
	reading bool // a Read of r is under way
}

func (s *stopReader) Read(b []byte) (int, error) {
	s.mu.Lock()
	select {
	case <-s.done:
		s.stopped = true
	default:
	}
	if s.stopped {
		s.mu.Unlock()
		return 0, io.EOF
	}
	s.reading = true
	s.mu.Unlock()
	n, err := s.r.Read(b)
	s.mu.Lock()
	s.reading = false
	s.mu.Unlock()
	return n, err
}

// stop ends the input; busy says a Read of it was under way, which may
// wait on its producer.
func (s *stopReader) stop() (busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	return s.reading
}

// convertInline reads and writes in turn, in the caller's goroutine. At a
// signal, with stop given, what the buffer holds is still converted (see
// drainRead); without, nothing more is.
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

// cancelReader refuses to read once done is closed, so that a reader
// busy with its input stops at its next read.
type cancelReader struct {
	done <-chan struct{}
	r    io.Reader
}

func (c cancelReader) Read(b []byte) (int, error) {
	select {
	case <-c.done:
		return 0, ErrInterrupted
	default:
	}
	return c.r.Read(b)
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

// Write passes one event to the writer, opening a run first if the event
// comes outside one, and keeping track of what is open.
func (p *Pipeline) Write(ev *formats.Event) error {
	p.res.Events++
	if !p.view.Open && ev.Kind != formats.RunStart {
		start := &formats.Event{Kind: formats.RunStart, Time: ev.Time, Arrived: ev.Arrived, Synthetic: true,
			Source: formats.Source{Dialect: ev.Source.Dialect, LineNo: ev.Source.LineNo}}
		if err := p.emit(start); err != nil {
			return err
		}
	}
	if ev.Kind == formats.RunStart && p.view.Open {
		// A new run begins before the last one ended.
		if err := p.closeRun(formats.Failed, "a new run began before this one completed"); err != nil {
			return err
		}
	}
	return p.emit(ev)
}

// emit follows an event in the run view, reports what the target cannot
// carry of it, and writes it: copied verbatim when it goes back to its own
// dialect, else through the writer.
func (p *Pipeline) emit(ev *formats.Event) error {
	if !p.rawOutput {
		ev.Call.Output.Decode()
	}
	p.warn(ev)
	p.bound(ev)
	if bad := ev.Usage.Negative(); len(bad) > 0 {
		p.opts.Report.Warn(ev.Source.LineNo, "token counts below zero (%s): read as not given", strings.Join(bad, ", "))
	}
	if ev.Kind == formats.RunStart {
		p.copying = p.observer != nil && ev.Source.Dialect == p.target
	}
	p.view.Observe(ev)
	if p.observer != nil && (ev.Source.Dialect == p.target && (ev.Source.Line != nil || ev.Source.NothingToCopy()) ||
		ev.Synthetic && p.copying && !p.interrupted) {
		// Its own dialect: the record goes out as it came. What the pipeline
		// made to start or close a copied cut run is only observed: the
		// source never printed it (the warning said it was closed). A run
		// interrupted by a signal is closed in every dialect: that end is
		// agentconv's own, and a live reader needs it.
		p.observer.Observe(ev, p.view)
		if ev.Source.Line != nil && !ev.Source.Continued && !ev.Synthetic {
			out := p.opts.Out
			if p.copyTo != nil {
				if w := p.copyTo.CopyTo(); w != nil {
					out = w
				}
			}
			if err := formats.WriteRawLine(out, ev.Source.Line); err != nil {
				return &OutputError{err}
			}
		}
	} else {
		if !slices.Contains(p.to.Resends, ev.Source.Dialect) {
			if err := p.lose(ev); err != nil {
				return err
			}
		}
		before := p.opts.Report.Losses()
		if err := p.w.Write(ev, p.view); err != nil {
			return &OutputError{err}
		}
		if p.opts.Strict && p.opts.Report.Losses() > before {
			return &LossError{What: p.opts.Report.LastLoss(), Target: p.target}
		}
	}
	if ev.Kind == formats.RunEnd {
		p.res.Runs++
		p.res.ExitCode = formats.Some(p.view.ExitCode)
		p.copying = false
	}
	return nil
}

// lose reports what the event needs and the target does not carry; under
// --strict, it fails before the event is written.
func (p *Pipeline) lose(ev *formats.Event) error {
	needs := formats.Needs(ev)
	if ev.Kind == formats.UserMessage && ev.Agent == "" && p.view.Prompts > 1 {
		// The view has seen this prompt: it is not the run's first.
		needs |= formats.FollowUpPrompts
	}
	counted := p.counter.Count(ev, needs)
	missing := formats.Missing(needs, p.to.Carries)
	if missing == 0 {
		return nil
	}
	if p.opts.Strict {
		var first formats.Feature
		missing.Each(func(f formats.Feature) {
			if first == 0 {
				first = f
			}
		})
		return &LossError{What: formats.LossName(first, ev), Target: p.target}
	}
	// Counted by the things named (calls, messages, runs), not by events.
	(missing & counted).Each(func(f formats.Feature) { p.opts.Report.Feature(f, ev) })
	return nil
}

// closeRun ends an open run that its source never ended: every open call is
// ended as cancelled (it never completed), every open subagent with status,
// and the run ends as a cut run with exit code 1 (130 for a signal).
func (p *Pipeline) closeRun(status formats.Status, why string) error {
	v := p.view
	if !v.Open {
		return nil
	}
	p.interrupted = status == formats.Cancelled
	now, last := p.opts.Clock(), v.Last
	for _, c := range v.Calls.Open() {
		ev := &formats.Event{Kind: formats.ToolResult, Agent: c.Agent, Time: last, Arrived: now, Synthetic: true,
			Call: formats.Call{ID: c.ID, Name: c.Name, Status: formats.Cancelled, Error: "not completed: " + why}}
		if err := p.emit(ev); err != nil {
			return err
		}
	}
	for i := len(v.Agents) - 1; i >= 0; i-- {
		if v.Agents[i].Ended {
			continue
		}
		ev := &formats.Event{Kind: formats.AgentEnd, Agent: v.Agents[i].ID, Time: last, Arrived: now, Status: status, Synthetic: true}
		if err := p.emit(ev); err != nil {
			return err
		}
	}
	code := 1
	if status == formats.Cancelled {
		code = 130
	}
	end := &formats.Event{Kind: formats.RunEnd, Time: last, Arrived: now, Status: status, Cut: true, Text: why, Synthetic: true,
		Run: formats.RunInfo{ExitCode: formats.Some(code), SessionID: v.Info.SessionID}}
	return p.emit(end)
}

// Close ends the conversion: it closes a run left open, then the writer.
func (p *Pipeline) Close() error {
	if err := p.closeRun(formats.Failed, "the stream was cut before the run completed"); err != nil {
		return err
	}
	if err := p.w.Close(); err != nil {
		return &OutputError{err}
	}
	return nil
}

// Interrupt closes the open run as cancelled and the writer, after a signal.
func (p *Pipeline) Interrupt() error {
	if err := p.closeRun(formats.Cancelled, "interrupted by a signal"); err != nil {
		return err
	}
	if err := p.w.Close(); err != nil {
		return &OutputError{err}
	}
	return nil
}

// bookkeeping says whether a raw event's record type is one that its
// dialect declares as its agent's own bookkeeping (Dialect.Bookkeeping).
func (p *Pipeline) bookkeeping(src formats.Source) bool {
	if p.books == nil {
		p.books = map[string][]string{}
	}
	types, ok := p.books[src.Dialect]
	if !ok {
		d, _ := Lookup(src.Dialect)
		types = d.Bookkeeping
		p.books[src.Dialect] = types
	}
	return slices.Contains(types, src.Type)
}

// warn says what is odd about an event: a type the model has no place for
// (once per type), a call id used twice, a result without its call.
func (p *Pipeline) warn(ev *formats.Event) {
	rep := p.opts.Report
	switch ev.Kind {
	case formats.Raw:
		if !ev.Source.Known && p.bookkeeping(ev.Source) {
			ev.Source.Known = true
		}
		if ev.Source.Known {
			break // the reader knows it: nothing of the run
		}
		if key := ev.Source.Dialect + "\x00" + ev.Source.Type; !p.unknown[key] {
			if p.unknown == nil {
				p.unknown = map[string]bool{}
			}
			p.unknown[key] = true
			what := fmt.Sprintf("%s event type %q", ev.Source.Dialect, ev.Source.Type)
			if ev.Source.Type == "" {
				what = "a " + ev.Source.Dialect + " event without a type"
			}
			rep.Warn(ev.Source.LineNo, "%s has no place in the event model; kept as it is (reported once per type)", what)
		}
	case formats.ToolCall:
		if c := p.view.Calls.Get(ev.Call.ID); c != nil && !c.Done && ev.Call.ID != "" {
			rep.Warn(ev.Source.LineNo, "tool call id %q is used twice; both calls are kept", ev.Call.ID)
		}
	case formats.ToolResult:
		if c := p.view.Calls.Get(ev.Call.ID); c == nil && ev.Call.Status != formats.Denied && ev.Call.ID != "" {
			rep.Warn(ev.Source.LineNo, "result for tool call %q, which never started; kept", ev.Call.ID)
		}
	}
}
