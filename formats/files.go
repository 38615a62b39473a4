package formats

import (
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
)

// OpenFound opens a file that a reader found by itself beside its input (a
// subagent's file, a session's metadata), which the user did not name: only
// a regular file, so that a FIFO never blocks the reader and a link to a
// device (/dev/zero) is never read. The FIFO is opened without blocking and
// checked once open, so that nothing can swap it in between.
func OpenFound(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("not a regular file but %s", kindOf(fi.Mode()))
	}
	return f, nil
}

// ReadFound reads a small file a reader found by itself (OpenFound), at
// most max bytes of it: more is an error.
func ReadFound(path string, max int64) ([]byte, error) {
	f, err := OpenFound(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("larger than %d bytes", max)
	}
	return b, err
}

func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// SessionFiles are the files a writer of Files writes its sessions to
// under -o DIR (WriteOptions.Create). When a run of another session
// begins, the writer lets the files of the sessions before go (Park): they
// are closed, so put in place, and a conversion of any number of sessions
// holds few files open. A session written to again goes on in its file,
// reopened (WriteOptions.Reopen) on its first write.
type SessionFiles struct {
	create, reopen func(string) (io.WriteCloser, error)
	open           []*SessionFile
}

// NewSessionFiles makes the files of a writer given o.
func NewSessionFiles(o WriteOptions) *SessionFiles {
	return &SessionFiles{create: o.Create, reopen: o.Reopen}
}

// SessionFile is one file of SessionFiles.
type SessionFile struct {
	set  *SessionFiles
	name string
	c    io.WriteCloser // nil when parked or closed
	done bool           // closed: written to no more
}

// Create makes the file at name.
func (s *SessionFiles) Create(name string) (*SessionFile, error) {
	c, err := s.create(name)
	if err != nil {
		return nil, err
	}
	f := &SessionFile{set: s, name: name, c: c}
	s.open = append(s.open, f)
	return f, nil
}

// Park closes every file open but keep, for the conversion to put in
// place; each is reopened when it is written to again. Without Reopen
// (outside -o DIR) the files stay open.
func (s *SessionFiles) Park(keep ...*SessionFile) error {
	if s.reopen == nil {
		return nil
	}
	var first error
	kept := s.open[:0]
	for _, f := range s.open {
		if slices.Contains(keep, f) {
			kept = append(kept, f)
			continue
		}
		if f.c != nil {
			if err := f.c.Close(); err != nil && first == nil {
				first = err
			}
			f.c = nil
		}
	}
	clear(s.open[len(kept):])
	s.open = kept
	return first
}

// Close closes every file open, in the order they were opened.
func (s *SessionFiles) Close() error {
	var first error
	for _, f := range s.open {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.open = nil
	return first
}

func (f *SessionFile) Write(p []byte) (int, error) {
	if f.c == nil {
		if f.done {
			return 0, fmt.Errorf("%s: written after it was closed", f.name)
		}
		c, err := f.set.reopen(f.name)
		if err != nil {
			return 0, err
		}
		f.c = c
		f.set.open = append(f.set.open, f)
	}
	return f.c.Write(p)
}

// Close closes the file for good.
func (f *SessionFile) Close() error {
	f.done = true
	if f.c == nil {
		return nil
	}
	c := f.c
	f.c = nil
	return c.Close()
}
