package formats

import (
	"fmt"
	"io"
	"os"
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
