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
	"sync"
	"sync/atomic"

	"github.com/agentconv/agentconv/formats"
)

// Source is one file of a conversion of many files (ConvertMany).
type Source struct {
	// Path is the file's path.
	Path string
	// Dir is the directory named as an input that the file was found
	// under, "" for a file named itself. A file found under a directory
	// that no dialect reads is skipped and counted, and one that cannot be
	// opened is warned about and skipped; a file named itself is an error
	// in either case, as with Convert.
	Dir string
	// Size is the file's size in bytes, for progress; 0 if unknown.
	Size int64
}

// ManyResult sums up what ConvertMany left out.
type ManyResult struct {
	// Skipped counts, by directory (Source.Dir), the files that no
	// dialect reads; SkippedDirs lists those directories in input order.
	Skipped     map[string]int
	SkippedDirs []string
	// Unread counts the files of directories that could not be read
	// (permission denied, vanished); each was warned about.
	Unread int
}

// ManyOptions steer ConvertMany.
type ManyOptions struct {
	// Workers is how many files are read at once; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is told of each file as it is written.
	Progress func(p ManyProgress)
}

// ManyProgress is how far ConvertMany got.
type ManyProgress struct {
	Files, Runs int
	Bytes       int64
}

// openInput opens a file of ConvertMany; tests make it fail.
var openInput = os.Open

// manyBatches is how many batches of one file may wait, read, for the
// writer: with the window of files read ahead (manyAhead per worker), it
// bounds the memory that reading ahead takes.
const (
	manyBatches = 4
	manyAhead   = 4
)

// manyJob is one file being read by a worker. The jobs are a ring as large
// as the window of files read ahead: the file i is read into the slot
// i % len(ring), which the writer is done with by the time a worker takes
// the file, and its channel is made once, so that ten thousand files keep
// ten thousand channels neither in memory nor for the collector to mark.
type manyJob struct {
	src     Source
	batches chan manyBatch
	log     warnLog
	rep     *formats.Report
	// Set by the worker before it closes batches:
	skipped bool  // no dialect reads it (a directory's file)
	unread  error // it could not be opened (a directory's file)
}

// reset makes the slot the job of src; its channel stays, and the writer,
// which may be waiting on it already, reads nothing else of the job until
// the worker's last batch.
func (j *manyJob) reset(src Source) {
	j.src, j.rep, j.skipped, j.unread = src, nil, false, nil
	j.log.mu.Lock()
	j.log.warnings, j.log.part = warnings{}, nil
	j.log.mu.Unlock()
}

// ConvertMany converts files in the order given, reading and parsing
// several at once (one per worker) while this goroutine writes their events
// in order, so that the output is the same whatever the number of workers.
// Each file is read as Convert reads one input: detected (or --from), its
// malformed lines skipped under Lenient, a run it leaves open closed as cut.
// Memory is bounded: a worker reads at most a few batches of its file ahead
// of the writer, and the workers at most a few files each.
func (p *Pipeline) ConvertMany(ctx context.Context, srcs []Source, mo ManyOptions) (ManyResult, error) {
	res := ManyResult{Skipped: map[string]int{}}
	workers := mo.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(srcs)))
	// window holds a token per file read ahead of the writer; a worker
	// takes one before it takes the next file, the writer gives it back
	// when the file is written. Files are taken in order, so the file the
	// writer waits for is always being read; and a file's slot in the ring
	// is free when a worker takes the file (its token was given back when
	// the file len(ring) before it was written).
	window := make(chan struct{}, workers*manyAhead)
	ring := make([]manyJob, cap(window))
	for i := range ring {
		ring[i].batches = make(chan manyBatch, manyBatches)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(done); wg.Wait() }()
	var next atomic.Int64
	var dirDialects []formats.Dialect
	for _, d := range Readable() {
		if d.DirFiles != "" && d.Detect != nil {
			dirDialects = append(dirDialects, d)
		}
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var br *bufio.Reader // each file's in turn
			for {
				select {
				case window <- struct{}{}:
				case <-done:
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(srcs) {
					return
				}
				job := &ring[i%len(ring)]
				job.reset(srcs[i])
				br = p.readJob(job, br, dirDialects, done)
			}
		}()
	}

	rep := p.opts.Report
	var prog ManyProgress
	for i, src := range srcs {
		job := &ring[i%len(ring)]
		in := Input{Name: src.Path, Path: src.Path}
		var old func(int) string
		if rep != nil {
			old = rep.SetWhere(func(line int) string { return fmt.Sprintf("%s:%d: ", in.Name, line) })
		}
		err := p.writeJob(ctx, job, in)
		if rep != nil {
			rep.SetWhere(old)
		}
		if err != nil {
			return res, err
		}
		switch {
		case job.skipped:
			if res.Skipped[src.Dir] == 0 {
				res.SkippedDirs = append(res.SkippedDirs, src.Dir)
			}
			res.Skipped[src.Dir]++
		case job.unread != nil:
			res.Unread++
		}
		<-window
		prog.Files++
		prog.Bytes += src.Size
		prog.Runs = p.res.Runs
		if mo.Progress != nil {
			mo.Progress(prog)
		}
	}
	return res, nil
}

// writeJob writes the events of one file as its worker hands them over.
func (p *Pipeline) writeJob(ctx context.Context, job *manyJob, in Input) error {
	rep := p.opts.Report
	ended := false
	for {
		var mb manyBatch
		if ctx.Err() != nil {
			p.closeRun(formats.Cancelled, "interrupted by a signal")
			return ErrInterrupted
		}
		select {
		case <-ctx.Done():
			p.closeRun(formats.Cancelled, "interrupted by a signal")
			return ErrInterrupted
		case mb = <-job.batches:
		}
		mb.warns.replay(rep)
		if mb.last {
			break
		}
		if ended {
			continue // after the input's end, only the worker's last word
		}
		batch := mb.items
		for _, it := range batch {
			if it.ev != nil {
				it.ev.Arrived = p.opts.Clock()
			}
		}
		end, err := p.deliver(in, batch)
		if err != nil {
			return err
		}
		ended = end
	}
	if job.rep != nil && rep != nil {
		// What the reader counted as lost, in the conversion's report.
		rep.Merge(job.rep)
	}
	if job.unread != nil {
		rep.Warn(0, "%s: cannot read it: %v; skipped", in.Name, job.unread)
		return nil
	}
	if p.view.Open {
		if rep != nil {
			rep.Warn(0, "%s: the stream ended before its run completed (the producer was killed?); closing it as a failed, cut run", in.Name)
		}
		if err := p.closeRun(formats.Failed, "the stream was cut before the run completed"); err != nil {
			return err
		}
	}
	if e, ok := p.w.(formats.InputEnder); ok {
		e.EndInput()
	}
	return nil
}

// readJob reads one file into its job's batches, as Convert's reader does.
// The reader warns into the job's own report, which the writer replays in
// order, so that each warning names its file and comes where it did.
//
// br is the buffer of the worker's last file, or nil; readJob returns the
// one it used. A file is read at once, so its head is what one read of the
// buffer gives: detection looks at it once (a pipe's head, by contrast, is
// looked at as it comes, see peekHead).
//
// A directory's file that one of the dialects reading directories (dirs)
// whose pattern matches its name is sure of (100) is read as that one
// without asking every dialect: detection is most of the work of a small
// file.
func (p *Pipeline) readJob(job *manyJob, br *bufio.Reader, dirs []formats.Dialect, done <-chan struct{}) *bufio.Reader {
	defer func() {
		select {
		case job.batches <- manyBatch{warns: job.log.take(), last: true}:
		case <-done:
		}
	}()
	send := func(b []item) bool {
		select {
		case job.batches <- manyBatch{items: b, warns: job.log.take()}:
			return true
		case <-done:
			return false
		}
	}
	name := job.src.Path
	rep := formats.NewReport(&job.log)
	rep.Prefix, rep.MaxWarnings = "", 0
	rep.Where = func(line int) string { return fmt.Sprintf("%s:%d: ", name, line) }
	job.rep = rep
	in := Input{Name: name, Path: name}
	f, err := openInput(name)
	if err != nil {
		if job.src.Dir != "" {
			job.unread = unwrapPath(err)
			return br
		}
		send([]item{{err: &InputError{File: name, Msg: err.Error()}}})
		return br
	}
	defer f.Close()
	in.R = f
	// Once the conversion ends (a signal), a reader still reading its
	// whole file stops at its next read.
	src := newValidUTF8Reader(cancelReader{done, f}, func(line int) {
		rep.Warn(line, "invalid UTF-8; each bad byte is replaced with U+FFFD (reported once per input)")
	})
	if br == nil {
		br = bufio.NewReaderSize(src, formats.DetectSize)
	} else {
		br.Reset(src)
	}
	var d formats.Dialect
	head, err := br.Peek(formats.DetectSize)
	if err == nil || err == io.EOF || err == bufio.ErrBufferFull {
		var sure bool
		if job.src.Dir != "" && p.opts.From.Name == "" {
			d, sure = sureDirDialect(head, name, dirs)
		}
		if err = nil; !sure {
			d, err = dialectOfHead(in, br, head, p.opts.From, rep)
		}
	} else {
		err = &InputError{File: in.Name, Msg: err.Error()}
	}
	if err != nil {
		var de *detectError
		switch {
		case job.src.Dir == "":
		case errors.As(err, &de):
			job.skipped = true
			return br
		default:
			job.unread = errors.New(strings.TrimPrefix(err.Error(), name+": "))
			return br
		}
		send([]item{{err: err}})
		return br
	}
	if job.src.Dir != "" && !readsDir(d, name) {
		job.skipped = true
		return br
	}
	r := d.NewReader(br, formats.ReadOptions{Dialect: d.Name, Report: rep, Path: name})
	batch := make([]item, 0, 16)
	bytes := 0
	for {
		ev, err := safeNext(r)
		if ev != nil {
			bytes += len(ev.Source.Line)
		}
		batch = append(batch, item{ev, err})
		var le *formats.LineError
		last := err != nil && !(errors.As(err, &le) && p.opts.Lenient)
		if last || len(batch) == batchSize || bytes >= batchBytes {
			if !send(batch) || last {
				return br
			}
			batch, bytes = make([]item, 0, batchSize), 0
		}
	}
}

// sureDirDialect returns the first of dirs whose pattern matches the
// file's name and that is sure (100) the head is its own; only for a head
// that starts with its JSON (no lines to skip, see sniff).
func sureDirDialect(head []byte, path string, dirs []formats.Dialect) (formats.Dialect, bool) {
	if n, _ := leadingText(head); n > 0 {
		return formats.Dialect{}, false
	}
	for _, d := range dirs {
		if readsDir(d, path) && d.Detect(head) >= 100 {
			return d, true
		}
	}
	return formats.Dialect{}, false
}

// manyBatch is a batch of a file's events, with the warnings its reader
// gave before the batch was handed over: the writer prints them before it
// writes the batch, so that they come in the same place whatever the
// number of workers.
type manyBatch struct {
	items []item
	warns warnings
	// last: the worker is done with the file; its slot's channel serves
	// another file next.
	last bool
}

// warnings are the lines of a reader's warnings: the first ones as they
// are, the rest only counted (the report prints no more than its limit
// anyway).
type warnings struct {
	lines [][]byte
	more  int
}

// warnLog holds the warnings a reader printed on its file's report until
// they go with the next batch.
type warnLog struct {
	mu sync.Mutex
	warnings
	part []byte
}

// warnLogMax is how many lines of one file's warnings are kept.
const warnLogMax = 200

func (l *warnLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, b...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		if len(l.lines) < warnLogMax {
			l.lines = append(l.lines, append([]byte(nil), l.part[:i]...))
		} else {
			l.more++
		}
		l.part = l.part[i+1:]
	}
	return len(b), nil
}

// take returns the warnings held so far, and forgets them.
func (l *warnLog) take() warnings {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.warnings
	l.warnings = warnings{}
	return w
}

// replay prints the warnings on rep.
func (w warnings) replay(rep *formats.Report) {
	if rep == nil {
		return
	}
	for _, line := range w.lines {
		rep.Warn(0, "%s", bytes.TrimPrefix(line, []byte("warning: ")))
	}
	for range w.more {
		rep.Warn(0, "(more warnings of the same file)")
	}
}

var _ io.Writer = (*warnLog)(nil)
