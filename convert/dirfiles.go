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

// maxOpenDirFiles is how many files of -o DIR are open at once: a file
// written to after it was let go is opened again, to append, so that a
// conversion of any number of sessions holds a bounded number of
// descriptors and write buffers.
var maxOpenDirFiles = 32

// dirFiles is where -o DIR writes for a dialect whose writer names its own
// files (Dialect.Files): the writer makes each through create, by a path
// relative to DIR. Each is written to a temporary file beside its target
// and renamed into place when the writer closes it, so that no
// half-written file ever has the name; a file of the same name from an
// earlier conversion is replaced, as -o replaces a file. A writer closes
// each session's file when it is done with it, so files are put in place
// as the conversion goes; one it continues later is reopened (reopen).
//
// At most maxOpenDirFiles of the files not yet closed hold a descriptor
// and a buffer: the one written to least recently lets both go when
// another needs them.
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
	// live are the files holding a descriptor, the one written to last
	// first.
	live []*dirFile
	// placed are the names put in place by this conversion.
	placed map[string]bool
	err    error // the first failure to put a file in place
}

func newDirFiles(dir string) *dirFiles {
	root, err := os.OpenRoot(dir)
	return &dirFiles{dir: dir, root: root, rootErr: err, open: map[*dirFile]bool{}, placed: map[string]bool{}}
}

// create makes the file at name, a slash-separated path under the
// directory; a path that would leave it is refused.
func (d *dirFiles) create(name string) (io.WriteCloser, error) {
	return d.make(name, false)
}

// reopen continues the file at name that this conversion put in place:
// what it holds is kept and what is written follows, the whole put in
// place again when closed. A name not written yet is made, as create.
func (d *dirFiles) reopen(name string) (io.WriteCloser, error) {
	return d.make(name, true)
}

func (d *dirFiles) make(name string, cont bool) (io.WriteCloser, error) {
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
	d.mu.Lock()
	d.evict(1)
	cont = cont && d.placed[clean]
	d.mu.Unlock()
	f, tmp, err := createTempIn(d.root, clean, 0o666)
	if err == nil && cont {
		err = d.copyPlaced(f, clean)
		if err != nil {
			f.Close()
			d.root.Remove(tmp)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", target, unwrapPath(err))
	}
	df := &dirFile{d: d, f: f, bw: bufio.NewWriterSize(f, 64<<10), target: target, rel: clean, tmp: tmp}
	d.mu.Lock()
	d.open[df] = true
	d.live = append(d.live, df)
	d.mu.Unlock()
	return df, nil
}

// copyPlaced copies the file placed at rel into f.
func (d *dirFiles) copyPlaced(f *os.File, rel string) error {
	old, err := d.root.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer old.Close()
	_, err = io.Copy(f, old)
	return err
}

// evict lets go of the descriptors of the files written to least
// recently, so that n more can be opened; d.mu is held.
func (d *dirFiles) evict(n int) {
	for len(d.live)+n > maxOpenDirFiles && len(d.live) > 0 {
		f := d.live[0]
		d.live = d.live[1:]
		f.park()
	}
}

// touch makes f the file written to last, opening its temporary file
// again if it was let go.
func (d *dirFiles) touch(f *dirFile) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := len(d.live); n > 0 && d.live[n-1] == f {
		return nil
	}
	if f.f != nil {
		for i, g := range d.live {
			if g == f {
				d.live = append(d.live[:i], d.live[i+1:]...)
				break
			}
		}
		d.live = append(d.live, f)
		return nil
	}
	d.evict(1)
	h, err := d.root.OpenFile(f.tmp, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	f.f, f.bw = h, bufio.NewWriterSize(h, 64<<10)
	d.live = append(d.live, f)
	return nil
}

// drop takes f out of the files holding a descriptor; d.mu is held.
func (d *dirFiles) drop(f *dirFile) {
	for i, g := range d.live {
		if g == f {
			d.live = append(d.live[:i], d.live[i+1:]...)
			return
		}
	}
}

// finish puts in place every file the writer left open, or, when failed,
// removes them; it makes the files put in place durable, and returns the
// first failure to put a file in place.
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
	if len(d.placed) > 0 {
		if err := syncDir(d.dir); err != nil && d.err == nil {
			d.err = fmt.Errorf("cannot make the files written in %s durable: %v", d.dir, err)
		}
	}
	if d.root != nil {
		d.root.Close()
	}
	return d.err
}

type dirFile struct {
	d        *dirFiles
	f        *os.File // nil while let go (park)
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
	if err := f.d.touch(f); err != nil {
		f.err = fmt.Errorf("cannot write %s: %v", f.target, unwrapPath(err))
		return 0, f.err
	}
	n, err := f.bw.Write(p)
	if err != nil {
		f.err = fmt.Errorf("cannot write %s: %v", f.target, unwrapPath(err))
		return n, f.err
	}
	return n, nil
}

// park writes out f's buffer and lets its descriptor go; d.mu is held.
func (f *dirFile) park() {
	if f.f == nil {
		return
	}
	err := f.bw.Flush()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("cannot write %s: %v", f.target, unwrapPath(err))
	}
	f.f, f.bw = nil, nil
}

// Close puts the file in place.
func (f *dirFile) Close() error {
	if f.closed {
		return f.err
	}
	f.closed = true
	d := f.d
	d.mu.Lock()
	d.drop(f)
	d.mu.Unlock()
	err := f.err
	if f.f != nil {
		if err == nil {
			err = f.bw.Flush()
		}
		if err == nil && !syncsDir {
			err = f.f.Sync()
		}
		if cerr := f.f.Close(); err == nil {
			err = cerr
		}
		f.f, f.bw = nil, nil
	} else if err == nil && !syncsDir {
		err = syncPath(d.root, f.tmp)
	}
	if err == nil {
		err = d.root.Rename(f.tmp, f.rel)
	}
	if err != nil {
		d.root.Remove(f.tmp)
		if f.err == nil {
			f.err = fmt.Errorf("cannot write %s: %v", f.target, unwrapPath(err))
		}
	}
	f.forget(err == nil)
	return f.err
}

// syncPath syncs the file at rel under root.
func syncPath(root *os.Root, rel string) error {
	h, err := root.OpenFile(rel, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = h.Sync()
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	return err
}

// abort removes the temporary file: the output failed.
func (f *dirFile) abort() {
	if f.closed {
		return
	}
	f.closed = true
	d := f.d
	d.mu.Lock()
	d.drop(f)
	d.mu.Unlock()
	if f.f != nil {
		f.f.Close()
		f.f, f.bw = nil, nil
	}
	d.root.Remove(f.tmp)
	if f.err == nil {
		f.err = errAborted
	}
	f.forget(false)
}

func (f *dirFile) forget(placed bool) {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.open, f)
	if placed {
		d.placed[f.rel] = true
	}
	if f.err != nil && d.err == nil && !errors.Is(f.err, errAborted) {
		d.err = f.err
	}
}

var errAborted = errors.New("not written: the conversion failed")
