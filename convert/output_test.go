package convert

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats/formatstest"
)

var seedStream = filepath.Join("..", "testdata", "adal", "seed-stream.ndjson")

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

func noTemporaryFiles(t *testing.T, dir string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestOutputKeepsWhatIsThere: -o replaces a regular file only, keeping its
// permissions; it writes through a symlink to its target, in place to a
// FIFO or a device, gives a new file 0666 less the umask, and says plainly
// that a directory is one.
func TestOutputKeepsWhatIsThere(t *testing.T) {
	t.Run("existing file keeps its mode", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "out.json")
		if err := os.WriteFile(out, []byte("old\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		os.Chmod(out, 0o640)
		if code, _, stderr := runCLI("", "--to", "adal-json", "-o", out, seedStream); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		st, err := os.Stat(out)
		b, _ := os.ReadFile(out)
		if err != nil || st.Mode().Perm() != 0o640 || !strings.Contains(formatstest.OneLine(string(b)), `"success":true`) {
			t.Errorf("mode %v (want -rw-r-----), content %q, %v", st.Mode(), b, err)
		}
		noTemporaryFiles(t, dir)
	})
	t.Run("new file gets 0666 less the umask", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "new.json")
		if code, _, stderr := runCLI("", "--to", "adal-json", "-o", out, seedStream); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		st, err := os.Stat(out)
		if want := 0o666 &^ umask(); err != nil || st.Mode().Perm() != want {
			t.Errorf("mode %v, want %v (%v)", st.Mode(), want, err)
		}
	})
	t.Run("symlink is followed", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "real.json")
		os.WriteFile(target, []byte("old\n"), 0o600)
		os.Chmod(target, 0o600)
		link := filepath.Join(dir, "link.json")
		if err := os.Symlink("real.json", link); err != nil {
			t.Fatal(err)
		}
		dangling := filepath.Join(dir, "dangling.json")
		os.Symlink("later.json", dangling)
		for _, l := range []string{link, dangling} {
			if code, _, stderr := runCLI("", "--to", "adal-json", "-o", l, seedStream); code != 0 {
				t.Fatalf("%s: exit %d: %s", l, code, stderr)
			}
			if st, err := os.Lstat(l); err != nil || st.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("%s is no longer a symlink: %v %v", l, st.Mode(), err)
			}
		}
		for _, f := range []string{target, filepath.Join(dir, "later.json")} {
			b, err := os.ReadFile(f)
			if err != nil || !strings.Contains(formatstest.OneLine(string(b)), `"success":true`) {
				t.Errorf("%s was not written through the link: %q %v", f, b, err)
			}
		}
		if st, _ := os.Stat(target); st.Mode().Perm() != 0o600 {
			t.Errorf("target mode %v, want -rw-------", st.Mode())
		}
		noTemporaryFiles(t, dir)
	})
	t.Run("fifo is written in place", func(t *testing.T) {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- err.Error()
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			got <- string(b)
		}()
		if code, _, stderr := runCLI("", "--to", "adal-json", "-o", fifo, seedStream); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		select {
		case b := <-got:
			if !strings.Contains(formatstest.OneLine(b), `"success":true`) {
				t.Errorf("the FIFO's reader got %q", b)
			}
		case <-time.After(time.Minute):
			t.Fatal("the FIFO's reader got nothing: was the FIFO replaced?")
		}
		if st, err := os.Lstat(fifo); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the FIFO was replaced: %v %v", st.Mode(), err)
		}
		noTemporaryFiles(t, dir)
	})
	t.Run("device is written in place", func(t *testing.T) {
		before, err := os.Stat(os.DevNull)
		if err != nil || before.Mode()&fs.ModeCharDevice == 0 {
			t.Skip("no character device at", os.DevNull)
		}
		if code, _, stderr := runCLI("", "--to", "adal-json", "-o", os.DevNull, seedStream); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		after, err := os.Stat(os.DevNull)
		if err != nil || !os.SameFile(before, after) || after.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("%s was replaced: %v %v", os.DevNull, after.Mode(), err)
		}
		noTemporaryFiles(t, "/dev")
	})
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		code, _, stderr := runCLI("", "--to", "adal-json", "-o", dir, seedStream)
		if code != ExitOutput || !strings.Contains(stderr, dir+": it is a directory") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
		noTemporaryFiles(t, filepath.Dir(dir))
	})
}
