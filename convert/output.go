package convert

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// outputFile is where -o writes. A regular file (or a new one) is written
// to a temporary file beside it and renamed into place only when writing
// succeeded, so that no half-written file ever has the name; its
// permissions are kept (a new file gets 0666 less the umask). Anything else
// (a device, a FIFO, a socket, a terminal) is written in place: replacing
// /dev/null or a FIFO would be wrong. A symlink is followed to its target.
type outputFile struct {
	f      *os.File
	target string // the file the temporary one replaces; "" when in place
}

// openOutput opens the -o file.
func openOutput(name string) (*outputFile, error) {
	target, err := followLinks(name)
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", name, err)
	}
	st, err := os.Stat(target)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("cannot write %s: it is a directory; name a file in it", name)
	case err == nil && !st.Mode().IsRegular():
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("cannot write %s: %v", name, unwrapPath(err))
		}
		return &outputFile{f: f}, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("cannot write %s: %v", name, unwrapPath(err))
	}
	perm := os.FileMode(0o666) // less the umask, by the kernel
	if err == nil {
		perm = st.Mode().Perm()
	}
	f, err := createTemp(target, perm)
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", name, unwrapPath(err))
	}
	if st != nil {
		// Keep the existing file's mode exactly (the umask applied to the
		// new one), and its owner where we may.
		f.Chmod(st.Mode().Perm())
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			f.Chown(int(sys.Uid), int(sys.Gid))
		}
	}
	return &outputFile{f: f, target: target}, nil
}

// createTemp makes a new file beside target, with perm less the umask.
func createTemp(target string, perm os.FileMode) (*os.File, error) {
	dir, base := filepath.Split(target)
	for range 100 {
		var b [6]byte
		rand.Read(b[:])
		f, err := os.OpenFile(filepath.Join(dir, "."+base+"."+hex.EncodeToString(b[:])+".tmp"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, errors.New("cannot make a temporary file beside it")
}

// createTempIn makes a new file beside rel, a slash-separated path under
// root, with perm less the umask; it returns the file and its path under
// root. Through root, nothing is made outside it: a symbolic link under
// it that leads out is an error, never followed.
func createTempIn(root *os.Root, rel string, perm os.FileMode) (*os.File, string, error) {
	dir, base := path.Split(rel)
	for range 100 {
		var b [6]byte
		rand.Read(b[:])
		tmp := dir + "." + base + "." + hex.EncodeToString(b[:]) + ".tmp"
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, tmp, err
		}
	}
	return nil, "", errors.New("cannot make a temporary file beside it")
}

// replaceFile writes a file of agentconv's own (follow's state, the
// sessions' cache) whole: into a temporary file beside it, in a directory
// made for it if need be (0700), then renamed over it, so that a reader
// never sees it half written. durable: the file is synced before the
// rename.
func replaceFile(name string, durable bool, write func(w io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	err = write(tmp)
	if err == nil && durable {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// followLinks resolves name through its symlinks, to the file they name,
// which may not exist yet (a dangling link is written through).
func followLinks(name string) (string, error) {
	for range 40 {
		st, err := os.Lstat(name)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return name, nil
		}
		link, err := os.Readlink(name)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(name), link)
		}
		name = link
	}
	return "", errors.New("too many levels of symbolic links")
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		// os.Root's refusal to follow a link out of the output directory.
		return errors.New("a symbolic link under the output directory leads out of it, and nothing is written outside it: remove the link")
	}
	return err
}

func (o *outputFile) Write(p []byte) (int, error) { return o.f.Write(p) }

// finish ends the output: failed says that what was written must not
// replace the file (the temporary file is removed). It returns the error
// of syncing, closing or renaming.
func (o *outputFile) finish(failed bool) error {
	if o.target == "" {
		return o.f.Close()
	}
	err := o.f.Sync()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err != nil || failed {
		os.Remove(o.f.Name())
		return err
	}
	if err := os.Rename(o.f.Name(), o.target); err != nil {
		os.Remove(o.f.Name())
		return err
	}
	return nil
}

// discard removes what was written, for a run that never started.
func (o *outputFile) discard() { o.finish(true) }

var _ io.Writer = (*outputFile)(nil)
