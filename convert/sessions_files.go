package convert

// sessions' files: found under the agents' places or the paths given,
// and read, each through a pipeline whose writer only counts.

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/prices"
)

// homeEnv is the environment of a user whose home is dir, and nothing
// else: the places the agents keep there by default.
func homeEnv(dir string) func(string) string {
	return func(k string) string {
		if k == "HOME" || k == "USERPROFILE" {
			return dir
		}
		return ""
	}
}

// inProject says whether a session whose file gives no project ran in dir,
// as its dialect tells (Dialect.InProject); if so, dir is its project.
func inProject(s *SessionInfo, dir string) bool {
	d, ok := Lookup(s.Dialect)
	if s.Project != "" || !ok || d.InProject == nil || !d.InProject(s.Path, dir) {
		return false
	}
	s.Project = dir
	return true
}

// sessionFiles lists the files to read: under the places of the dialects
// that name some (each walked for its own dialect's files), or under the
// directories named, and the files named. Each path comes once.
// places counts the agents' places found.
func sessionFiles(names []string, getenv func(string) string, unreadable func(string, error)) (_ []SessionInfo, places int, _ error) {
	type walk struct {
		dir  string
		from formats.Dialect
	}
	var walks []walk
	var out []SessionInfo
	seen := map[string]bool{}
	add := func(src Source, from string) {
		if seen[src.Path] {
			return
		}
		seen[src.Path] = true
		s := SessionInfo{Path: src.Path, Bytes: src.Size, walked: src.Dir != "", from: from}
		if st, err := os.Stat(src.Path); err == nil {
			s.modified = st.ModTime()
		}
		out = append(out, s)
	}
	if len(names) == 0 {
		for _, d := range Readable() {
			if d.Places == nil {
				continue
			}
			for _, dir := range d.Places(getenv) {
				if st, err := os.Stat(dir); err == nil && st.IsDir() {
					walks = append(walks, walk{dir, d})
					places++
				}
			}
		}
	}
	for _, n := range names {
		st, err := os.Stat(n)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: cannot read it: %v", n, unwrapPath(err))
		}
		if st.IsDir() {
			walks = append(walks, walk{dir: n})
			// A home directory: the agents' places under it, which the
			// walk leaves out as hidden (~/.gemini/tmp).
			for _, d := range Readable() {
				if d.Places == nil {
					continue
				}
				for _, dir := range d.Places(homeEnv(n)) {
					if st, err := os.Stat(dir); err == nil && st.IsDir() && dir != n {
						walks = append(walks, walk{dir, d})
					}
				}
			}
		} else {
			add(Source{Path: n, Size: st.Size()}, "")
		}
	}
	owned := map[string]ownedStat{}
	for _, w := range walks {
		known := map[string]string{}
		srcs, err := dirInputsOwned(w.dir, w.from, unreadable, known)
		var none noFilesError
		if errors.As(err, &none) {
			continue // nothing there
		}
		if err != nil {
			return nil, 0, err
		}
		out = slices.Grow(out, len(srcs)) // no slice twice the list's size
		for _, s := range srcs {
			add(s, w.from.Name)
		}
		for f, o := range ownedFiles(w.dir, w.from, known) {
			t := owned[f]
			t.size += o.size
			t.modified = max(t.modified, o.modified)
			owned[f] = t
		}
	}
	for i := range out {
		o := owned[out[i].Path]
		out[i].Bytes += o.size
		out[i].ownedModified = o.modified
	}
	return out, places, nil
}

// ownedStat is the size of the files an owner owns, and the latest of
// their modification times (nanoseconds since 1970).
type ownedStat struct{ size, modified int64 }

// ownedFiles sums, by owner, the sizes of the files under dir that another
// file reads (Dialect.Owner): a session's size includes its subagents'.
// known holds the owners already asked for (dirInputsOwned), "" for none.
func ownedFiles(dir string, from formats.Dialect, known map[string]string) map[string]ownedStat {
	owners := ownerDialects(from)
	out := map[string]ownedStat{}
	if len(owners) == 0 {
		return out
	}
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		o, ok := known[p]
		if !ok {
			o = ownerOf(owners, p)
		}
		if o != "" {
			if info, err := e.Info(); err == nil {
				t := out[o]
				t.size += info.Size()
				t.modified = max(t.modified, info.ModTime().UnixNano())
				out[o] = t
			}
		}
		return nil
	})
	return out
}

// readSessions reads files at once on the machine's cores: the sessions,
// how many files no dialect reads, and how many could not be read whole.
// A file whose entry in cache (nil for none) is of the file as it is now
// is not read again.
func readSessions(files []SessionInfo, rep *formats.Report, progress func(ManyProgress), cache *sessionsCache) (list []SessionInfo, skipped, failed int) {
	ok := make([]bool, len(files))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var done ManyProgress
	work := make(chan int, 64)
	for range max(1, min(runtime.GOMAXPROCS(0), len(files))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newSessionReader()
			for i := range work {
				var hit bool
				if ok[i], hit = cache.lookup(&files[i]); !hit {
					plain := files[i]
					ok[i] = r.read(&files[i], rep)
					cache.store(&plain, &files[i], ok[i])
				}
				mu.Lock()
				done.Files++
				done.Runs += files[i].Runs
				done.Bytes += files[i].Bytes
				progress(done)
				mu.Unlock()
			}
		}()
	}
	// The largest first, so that no core waits on one big file at the end.
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(files[b].Bytes, files[a].Bytes) })
	for _, i := range order {
		work <- i
	}
	close(work)
	wg.Wait()
	// The list in the files' place: a copy of a list of 100,000 would be
	// tens of MB more.
	list = files[:0]
	for i := range files {
		s := &files[i]
		if s.Dialect == "-" || s.malformed {
			failed++
		}
		if ok[i] {
			list = append(list, *s)
		} else if s.Dialect == "" {
			skipped++
		}
	}
	clear(files[len(list):])
	return list, skipped, failed
}

// sessionReader reads the session files of one worker, one after
// another, as ConvertMany's workers read a directory's files: one buffer
// for all of them, the head of each looked at once, and a file found
// under a directory that its own dialect is sure of (detector.dialect) read
// as that one without putting it to every other dialect. Detection, and a
// buffer of 64 KiB made and cleared for each file, were most of the work
// of a small file, and the garbage of the buffers made the collector run
// through the list read so far ever more often as it grew.
type sessionReader struct {
	br   *bufio.Reader
	dirs []formats.Dialect
}

func newSessionReader() *sessionReader {
	return &sessionReader{br: bufio.NewReaderSize(eofReader{}, formats.DetectSize), dirs: dirDialects()}
}

// eofReader is an empty input: the buffer's before its first file.
type eofReader struct{}

// read reads one file through a pipeline whose writer only counts;
// false: the file is not a session (no dialect reads it, or it failed).
func (r *sessionReader) read(s *SessionInfo, rep *formats.Report) bool {
	plain := *s
	f, err := openInput(s.Path)
	if err != nil {
		rep.Warn(0, "%s: cannot read it: %v; skipped", s.Path, unwrapPath(err))
		s.Dialect = "-"
		return false
	}
	defer f.Close()
	// A file of an agent's place is of its dialect: read as such, without
	// detection, unless that fails.
	p, w, err := r.readAs(s, f, s.from)
	if s.from != "" && (err != nil || s.Runs == 0 || len(p.Result().Skipped) > 0) {
		if _, serr := f.Seek(0, io.SeekStart); serr == nil {
			*s = plain
			p, w, err = r.readAs(s, f, "")
		}
	}
	var de *detectError
	switch {
	case errors.As(err, &de):
		return false
	case err != nil:
		rep.Warn(0, "%s: %v; left out of the list", s.Path, err)
		s.Dialect = "-"
		return false
	}
	if bad := p.Result().Skipped; len(bad) > 0 {
		// Listed with what could be read; the exit status says the rest.
		rep.Warn(0, "%d malformed %s (%s) left out of its counts", len(bad), plural(len(bad), "line", "lines"), strings.Join(limit(bad, 3), ", "))
		s.malformed = true
	}
	if s.walked {
		if d, ok := Lookup(w.dialect); !ok || !readsDir(d, s.Path) {
			return false
		}
	}
	if s.Dialect == "" {
		s.Dialect = w.dialect
	}
	if s.Agent == "" {
		s.Agent = s.Dialect
	}
	return s.Runs > 0 || s.Dialect != ""
}

// readAs reads a session file of dialect from, or of the dialect detected
// when from is "". A regular file is read through the worker's buffer,
// its head looked at once; anything else (a FIFO named on the command
// line), and a binary dialect, whose reader wants the bytes as they are,
// through Pipeline.Convert.
func (r *sessionReader) readAs(s *SessionInfo, f *os.File, from string) (*Pipeline, *sessionStats, error) {
	view := &formats.RunView{}
	w := &sessionStats{s: s, view: view, prices: prices.Default()}
	quiet := formats.NewReport(io.Discard)
	o := Options{Lenient: true, Report: quiet, View: view}
	if from != "" {
		o.From, _ = Lookup(from)
	}
	p := NewPipeline(w, formats.Dialect{Name: "sessions"}, o)
	w.p = p
	in := Input{Name: s.Path, R: f, Path: s.Path}
	err := p.convertFile(in, r, s.walked)
	if err == nil {
		err = p.Close()
	}
	return p, w, err
}

// convertFile reads a file into the pipeline through the reader's buffer.
func (p *Pipeline) convertFile(in Input, r *sessionReader, walked bool) error {
	f := in.R.(*os.File)
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return p.Convert(context.Background(), in)
	}
	rep := p.opts.Report
	old := rep.SetWhere(func(line int) string { return fmt.Sprintf("%s:%d: ", in.Name, line) })
	defer func() { rep.SetWhere(old) }()
	src := newValidUTF8Reader(f, func(line int) {
		rep.Warn(line, "invalid UTF-8; each bad byte is replaced with U+FFFD (reported once per input)")
	})
	src.detecting = true
	br := r.br
	br.Reset(src)
	src0 := Source{Path: in.Path}
	if walked {
		src0.Dir = filepath.Dir(in.Path)
	}
	p.detect.dirs = r.dirs
	d, err := p.detect.dialect(in, br, src0, rep)
	if err != nil {
		src.detected(false)
		return err
	}
	if d.Binary {
		// Its reader takes the input's bytes as they are, from the start.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return &InputError{File: in.Name, Msg: err.Error()}
		}
		return p.Convert(context.Background(), in)
	}
	src.detected(false)
	unmark := formats.MarkValidUTF8(br)
	rd := d.NewReader(br, formats.ReadOptions{Dialect: d.Name, Report: rep, Path: in.Path, Figures: true})
	unmark()
	return p.convertInline(context.Background(), in, rd, br, nil)
}
