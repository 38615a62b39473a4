package convert

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentconv/agentconv/formats"
)

// runFiles is where -o DIR writes, for a dialect whose writer writes one
// document per run (Dialect.RunFile): each run's output goes to a file of
// its own, DIR/<name>/<RunFile>. The name is the run's session id, made
// safe for a file name, or run-N for the Nth run without one; a name
// already given in this conversion (in any case, for a case-insensitive
// file system) gets -2, -3, … (with a warning), so that no run replaces
// another. Each file is written to a temporary file in DIR
// and renamed into place when its run is over, so that no half-written
// file ever has the name; a file left from an earlier conversion is
// replaced, as -o replaces a file.
//
// It is both the writer's output and, wrapped around the writer, what the
// pipeline writes events to: a run's output is every byte written from
// its first event until the next run's first event (or the end), so that
// a record the pipeline copies after the writer saw the run's end still
// belongs to the run.
type runFiles struct {
	dir, file string
	view      *formats.RunView
	report    *formats.Report
	w         formats.Writer

	// root is dir, through which every file is made: a symbolic link
	// under it that leads out is an error, never followed.
	root    *os.Root
	rootErr error
	// The run being written: its bytes in buf, or, once they pass spillAt,
	// in its temporary file (spill, at spillTmp under root, through bw).
	buf      []byte
	spill    *os.File
	spillTmp string
	bw       *bufio.Writer
	// ended: the run's end was seen; name is its file's name.
	ended bool
	name  string
	used  map[string]bool // names given, lower-cased
	next  map[string]int  // by name given, lower-cased: the suffix to try next
	anon  int             // runs without a session id

	// The placer, a goroutine started with the first run's end, puts the
	// ended runs' files in place (jobs) while the conversion goes on.
	// free gives its buffers back; done is closed when it has placed
	// every job.
	jobs chan placeJob
	free chan []byte
	done chan struct{}
	mu   sync.Mutex
	err  error // the first failure to write a file (mu)
	// placed: files were put in place, to be made durable at the end
	// (syncDir) rather than each with an fsync of its own (the placer's,
	// read once it is done).
	placed bool
}

// placeJob is an ended run's file for the placer: its bytes, or its
// temporary file, written whole.
type placeJob struct {
	name string
	data []byte
	f    *os.File
	tmp  string
}

const (
	// spillAt: a run's bytes are held until they pass spillAt, then
	// written to its temporary file as they come.
	spillAt = 1 << 20
	// placeQueue: the ended runs that wait for the placer, at most; with
	// spillAt, what the runs waiting hold is bounded by 8 MiB.
	placeQueue = 8
)

// fail keeps the first failure and gives it; failed gives it.
func (rf *runFiles) fail(err error) error {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.err == nil {
		rf.err = err
	}
	return rf.err
}

func (rf *runFiles) failed() error {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return rf.err
}

// outputDir tells whether -o names a directory that dialect to writes per
// run files into: an existing directory, or a name ending in a slash,
// which is made.
func outputDir(name string, to formats.Dialect) (bool, error) {
	if to.RunFile == "" && !to.Files {
		return false, nil
	}
	if st, err := os.Stat(name); err == nil {
		return st.IsDir(), nil
	}
	if !strings.HasSuffix(name, "/") {
		return false, nil
	}
	if err := os.MkdirAll(name, 0o777); err != nil {
		return false, fmt.Errorf("cannot write %s: %v", name, unwrapPath(err))
	}
	return true, nil
}

// newRunFilesPipeline makes the writer of to, writing under dir, and the
// pipeline that feeds it.
func newRunFilesPipeline(to formats.Dialect, dir string, wo formats.WriteOptions, opts Options) (*Pipeline, *runFiles) {
	if opts.View == nil {
		opts.View = &formats.RunView{}
	}
	if wo.Report == nil {
		wo.Report = opts.Report
	}
	if wo.Dialect == "" {
		wo.Dialect = to.Name
	}
	rf := &runFiles{dir: dir, file: to.RunFile, view: opts.View, report: opts.Report, used: map[string]bool{}}
	rf.root, rf.rootErr = os.OpenRoot(dir)
	rf.w = to.NewWriter(rf, wo)
	opts.Out = rf
	var w formats.Writer = (*runFilesWriter)(rf)
	if _, ok := rf.w.(formats.Observer); ok {
		w = (*runFilesObserver)(rf)
	}
	return NewPipeline(w, to, opts), rf
}

// Write is the output of the run being written.
func (rf *runFiles) Write(p []byte) (int, error) {
	if err := rf.failed(); err != nil {
		return 0, err
	}
	if rf.rootErr != nil {
		return 0, rf.fail(fmt.Errorf("cannot write in %s: %v", rf.dir, unwrapPath(rf.rootErr)))
	}
	if rf.spill == nil {
		if len(rf.buf)+len(p) <= spillAt {
			rf.buf = append(rf.buf, p...)
			return len(p), nil
		}
		f, tmp, err := createTempIn(rf.root, "run", 0o666)
		if err != nil {
			return 0, rf.fail(fmt.Errorf("cannot write in %s: %v", rf.dir, unwrapPath(err)))
		}
		rf.spill, rf.spillTmp, rf.bw = f, tmp, bufio.NewWriterSize(f, 64<<10)
		_, err = rf.bw.Write(rf.buf)
		rf.buf = rf.buf[:0]
		if err != nil {
			return 0, rf.fail(err)
		}
	}
	n, err := rf.bw.Write(p)
	if err != nil {
		rf.fail(err)
	}
	return n, err
}

// before is called with each event before the writer gets it: the first
// event after a run's end puts that run's file in place.
func (rf *runFiles) before() {
	if rf.ended {
		rf.finish()
	}
}

// after is called with each event after the writer got it.
func (rf *runFiles) after(e *formats.Event) {
	if e.Kind == formats.RunEnd {
		rf.ended, rf.name = true, rf.nameFor(rf.view.Info.SessionID)
	}
}

// nameFor gives a run its directory's name.
func (rf *runFiles) nameFor(session string) string {
	base := safeName(session)
	if base == "" {
		rf.anon++
		base = fmt.Sprintf("run-%d", rf.anon)
	}
	name, key := base, strings.ToLower(base)
	if rf.used[key] {
		// The suffixes tried before for this name are taken: a session of
		// many runs is named in linear work, not quadratic.
		i := max(rf.next[key], 2)
		for name = fmt.Sprintf("%s-%d", base, i); rf.used[strings.ToLower(name)]; name = fmt.Sprintf("%s-%d", base, i) {
			i++
		}
		if rf.next == nil {
			rf.next = map[string]int{}
		}
		rf.next[key] = i + 1
	}
	rf.used[strings.ToLower(name)] = true
	if name != base {
		rf.report.Warn(0, "another run was already written to %s; this one goes to %s", filepath.Join(rf.dir, base, rf.file), filepath.Join(rf.dir, name, rf.file))
	}
	return name
}

// safeName makes a session id a directory's name: a letter, digit, '.',
// '_' or '-' stays, anything else becomes '_'; leading dots go (no hidden
// name, no ".."); at most 128 bytes. "" for an id that leaves nothing.
func safeName(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 128 {
			break
		}
	}
	return strings.TrimLeft(b.String(), ".")
}

// finish hands the ended run's file to the placer.
func (rf *runFiles) finish() {
	rf.ended = false
	if rf.failed() != nil {
		rf.discard()
		return
	}
	if rf.spill == nil && len(rf.buf) == 0 {
		return // the run wrote nothing
	}
	j := placeJob{name: rf.name, data: rf.buf}
	if rf.spill != nil {
		j.data, j.f, j.tmp = nil, rf.spill, rf.spillTmp
		rf.spill = nil
		if err := rf.bw.Flush(); err != nil {
			j.f.Close()
			rf.root.Remove(j.tmp)
			rf.fail(rf.cannotWrite(j.name, err))
			return
		}
	}
	if rf.jobs == nil {
		rf.jobs, rf.free, rf.done = make(chan placeJob, placeQueue), make(chan []byte, placeQueue+1), make(chan struct{})
		go rf.placer()
	}
	rf.jobs <- j
	rf.buf = nil
	if j.data != nil {
		select {
		case b := <-rf.free:
			rf.buf = b[:0]
		default:
		}
	}
}

// placer puts each ended run's file in place, in the order the runs
// ended; after a failure it only removes what the runs left.
func (rf *runFiles) placer() {
	defer close(rf.done)
	for j := range rf.jobs {
		if rf.failed() != nil {
			if j.f != nil {
				j.f.Close()
				rf.root.Remove(j.tmp)
			}
			continue
		}
		if err := rf.place(j); err != nil {
			rf.fail(rf.cannotWrite(j.name, err))
			continue
		}
		rf.placed = true
		if j.data != nil {
			select {
			case rf.free <- j.data:
			default:
			}
		}
	}
}

// place writes a run's file under a temporary name (its bytes, or the
// temporary file it spilled to) and renames it into place; on a failure
// nothing is left.
func (rf *runFiles) place(j placeJob) error {
	f, tmp := j.f, j.tmp
	var err error
	if f == nil {
		if f, tmp, err = createTempIn(rf.root, "run", 0o666); err != nil {
			return err
		}
		_, err = f.Write(j.data)
	}
	if err == nil && !syncsDir {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// One directory a run, named once (nameFor): a mkdir, not the
		// walk of MkdirAll.
		if err = rf.root.Mkdir(j.name, 0o777); errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	if err == nil {
		err = rf.root.Rename(tmp, path.Join(j.name, rf.file))
	}
	if err != nil {
		rf.root.Remove(tmp)
	}
	return err
}

// cannotWrite is the error of the run file of name.
func (rf *runFiles) cannotWrite(name string, err error) error {
	return fmt.Errorf("cannot write %s: %v", filepath.Join(rf.dir, name, rf.file), unwrapPath(err))
}

// wait lets the placer place every run handed to it, and end.
func (rf *runFiles) wait() {
	if rf.jobs != nil {
		close(rf.jobs)
		<-rf.done
		rf.jobs = nil
	}
}

// Close closes the writer, puts the last run's file in place, waits for
// the placer and makes the files durable.
func (rf *runFiles) Close() error {
	err := rf.w.Close()
	if rf.ended {
		rf.finish()
	}
	if rf.spill != nil || len(rf.buf) > 0 {
		rf.fail(errors.New("the writer wrote after the last run ended"))
	}
	rf.wait()
	if rf.placed && rf.failed() == nil {
		if serr := syncDir(rf.dir); serr != nil {
			rf.fail(fmt.Errorf("cannot make the files written in %s durable: %v", rf.dir, serr))
		}
	}
	if err == nil {
		err = rf.failed()
	}
	return err
}

// abort lets the placer place the runs handed to it, removes the file of
// a run not put in place, and lets the directory go: it is the
// conversion's end.
func (rf *runFiles) abort() {
	rf.wait()
	rf.discard()
	if rf.root != nil {
		rf.root.Close()
	}
}

// discard drops the run being written: its bytes, or its temporary file.
func (rf *runFiles) discard() {
	if rf.spill != nil {
		rf.spill.Close()
		rf.root.Remove(rf.spillTmp)
		rf.spill = nil
	}
	rf.buf = rf.buf[:0]
}

// runFilesWriter is the runFiles wrapped around a writer; runFilesObserver
// also lets the pipeline copy records of the writer's own dialect. Neither
// passes on formats.RawOutputWriter (atif's writer is not one): the
// pipeline then decodes tool outputs for the writer, which is only slower.
type (
	runFilesWriter   runFiles
	runFilesObserver runFiles
)

func (w *runFilesWriter) Write(e *formats.Event, v *formats.RunView) error {
	rf := (*runFiles)(w)
	rf.before()
	if err := rf.failed(); err != nil {
		return err
	}
	err := rf.w.Write(e, v)
	rf.after(e)
	return err
}

func (w *runFilesWriter) Close() error { return (*runFiles)(w).Close() }

func (w *runFilesObserver) Write(e *formats.Event, v *formats.RunView) error {
	return (*runFilesWriter)(w).Write(e, v)
}
func (w *runFilesObserver) Close() error { return (*runFiles)(w).Close() }

func (w *runFilesObserver) Observe(e *formats.Event, v *formats.RunView) {
	rf := (*runFiles)(w)
	rf.before()
	rf.w.(formats.Observer).Observe(e, v)
	rf.after(e)
}
