package convert

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProgress: on a terminal, many files show a bar on stderr with files,
// runs, bytes and the time left, cleared at the end; not with --quiet, nor
// when stderr is not a terminal; NO_COLOR leaves out the colours. The
// output is the same with and without it.
func TestProgress(t *testing.T) {
	withDialects(t, streamsReadDirs)
	dir := t.TempDir()
	for i := range 30 {
		cp(t, seedStream, filepath.Join(dir, strings.Repeat("a", i+1)+".ndjson"))
	}
	oldTerm, oldTick, oldFiles := stderrIsTerminal, progressTick, progressFiles
	t.Cleanup(func() { stderrIsTerminal, progressTick, progressFiles = oldTerm, oldTick, oldFiles })
	progressTick, progressFiles = time.Millisecond, 1

	_, plain, plainErr := runCLI("", "--to", "adal-json", dir)
	if strings.Contains(plainErr, "files,") {
		t.Errorf("progress shown when stderr is not a terminal:\n%q", plainErr)
	}
	stderrIsTerminal = func(io.Writer) bool { return true }
	slow(t)
	code, out, stderr := runCLI("", "--to", "adal-json", "--workers", "1", dir)
	if code != 0 || out != plain {
		t.Fatalf("exit %d; output changed with progress: %s", code, stderr)
	}
	t.Logf("%q", stderr[max(0, len(stderr)-400):])
	for _, want := range []string{"/30 files, ", " runs", " kB/", "[0s:", "\x1b[32m", "\r"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the bar lacks %q:\n%q", want, stderr)
		}
	}
	var errb strings.Builder
	Run([]string{"agentconv", "--to", "adal-json", dir}, Sys{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb,
		Getenv: func(k string) string {
			if k == "NO_COLOR" {
				return "1"
			}
			return ""
		}})
	if !strings.Contains(errb.String(), "/30 files, ") || strings.Contains(errb.String(), "\x1b[32m") {
		t.Errorf("NO_COLOR: the bar is missing or coloured:\n%q", errb.String())
	}
	_, _, stderr = runCLI("", "--to", "adal-json", "--quiet", dir)
	if strings.Contains(stderr, "files,") {
		t.Errorf("--quiet shows progress:\n%q", stderr)
	}
}

// slow makes each file of the test take a few ticks, so that the bar shows.
func slow(t *testing.T) {
	old := openInput
	openInput = func(name string) (*os.File, error) {
		time.Sleep(3 * time.Millisecond)
		return old(name)
	}
	t.Cleanup(func() { openInput = old })
}
