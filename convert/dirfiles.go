package convert

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// dirFiles is where -o DIR writes for a dialect whose writer names its own
// files (Dialect.Files): the writer makes each through create, by a path
// relative to DIR. Each is written to a temporary file beside its target
// and renamed into place when the writer closes it, so that no
// half-written file ever has the name; a file of the same name from an
// earlier conversion is replaced, as -o replaces a file.
//
// Every file is made through an os.Root on DIR: a symbolic link planted
// under DIR that leads out of it is an error, never followed, so nothing
// outside DIR is written or replaced.
type dirFiles struct {
	dir     string
	root    *os.Root
	rootErr error
	mu      sync.Mutex
	open    map[*dirFile]bool
	err     error // the first failure to put a file in place
}

func newDirFiles(dir string) *dirFiles {
	root, err := os.OpenRoot(dir)
	return &dirFiles{dir: dir, root: root, rootErr: err, open: map[*dirFile]bool{}}
}

// create makes the file at name, a slash-separated path under the
// directory; a path that would leave it is refused.
func (d *dirFiles) create(name string) (io.WriteCloser, error) {
	clean := path.Clean("/" + name)[1:]
	if clean == "" || clean != name || strings.HasPrefix(name, "/") {
		return nil, fmt.Errorf("cannot write %q under %s: not a plain relative path", name, d.dir)
	}
	target := filepath.Join(d.dir, filepath.FromSlash(clean))
	if d.rootErr != nil {
		return nil, fmt.Errorf("cannot write %s: %v", target, unwrapPath(d.rootErr))
	}
	if dir := path.Dir(clean); dir != "." {
		if err := d.root.MkdirAll(dir, 0o777); err != nil {
			return nil, fmt.Errorf("cannot write %s: %v", target, unwrapPath(err))
		}
	}
	f, tmp, err := createTempIn(d.root, clean, 0o666)
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", target, unwrapPath(err))
	}
	df := &dirFile{d: d, f: f, bw: bufio.NewWriterSize(f, 64<<10), target: target, rel: clean, tmp: tmp}
	d.mu.Lock()
	d.open[df] = true
	d.mu.Unlock()
	return df, nil
}

// finish puts in place every file the writer left open, or, when failed,
// removes them; it returns the first failure to put a file in place.
func (d *dirFiles) finish(failed bool) error {
	d.mu.Lock()
	var left []*dirFile
	for f := range d.open {
		left = append(left, f)
	}
	d.mu.Unlock()
	for _, f := range left {
		if failed {
			f.abort()
		} else {
			f.Close()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.root != nil {
		d.root.Close()
	}
	return d.err
}

type dirFile struct {
	d        *dirFiles
	f        *os.File
	bw       *bufio.Writer
	target   string // for messages
	rel, tmp string // the file's and its temporary file's paths under the root
	err      error
	closed   bool
}

func (f *dirFile) Write(p []byte) (int, error) {
	if f.closed {
		return 0, fmt.Errorf("%s: written after it was closed", f.target)
	}
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.bw.Write(p)
	if err != nil {
		f.err = fmt.Errorf("cannot write %s: %v", f.target, unwrapPath(err))
		return n, f.err
	}
	return n, nil
}

// Close puts the file in place.
func (f *dirFile) Close() error {
	if f.closed {
		return f.err
	}
	f.closed = true
	err := f.err
	if err == nil {
		err = f.bw.Flush()
	}
	if err == nil {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.d.root.Rename(f.tmp, f.rel)
	}
	if err != nil {
		f.d.root.Remove(f.tmp)
		if f.err == nil {
			f.err = fmt.Errorf("cannot write %s: %v", f.target, unwrapPath(err))
		}
	}
	f.forget()
	return f.err
}

// abort removes the temporary file: the output failed.
func (f *dirFile) abort() {
	if f.closed {
		return
	}
	f.closed = true
	f.f.Close()
	f.d.root.Remove(f.tmp)
	if f.err == nil {
		f.err = errAborted
	}
	f.forget()
}

func (f *dirFile) forget() {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.open, f)
	if f.err != nil && d.err == nil && !errors.Is(f.err, errAborted) {
		d.err = f.err
	}
}

var errAborted = errors.New("not written: the conversion failed")
