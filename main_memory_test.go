package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestResendMemoryIsBounded: resending a 55 MB spool to a collector that
// takes 100 ms a request holds a bounded number of batches, the rest of
// what was read waiting on disk: the peak RSS stays under 128 MB (it was
// nearly four times the input when every batch was queued in memory).
// AGENTCONV_MEMTEST_SIZE sets the size of the generated stream it comes
// from (default 30MB).
func TestResendMemoryIsBounded(t *testing.T) {
	formatstest.Long(t)
	size := os.Getenv("AGENTCONV_MEMTEST_SIZE")
	if size == "" {
		size = "30MB"
	}
	in, read := otlpInput(t, size)
	st, _ := os.Stat(in)
	c := newSlowCollector(t, 100*time.Millisecond)
	spool := filepath.Join(t.TempDir(), "spool.jsonl")
	cmd := exec.Command(binary, "--from", "otlp-json", "--to", "otlp", "--otlp-endpoint", c.endpoint, "--otlp-timeout", "5m", "--otlp-spool", spool, in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The peak RSS, from /proc: the rusage of a child counts the memory of
	// the parent it was forked from.
	peak := make(chan int64, 1)
	go func() {
		var hwm int64
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			b, err := os.ReadFile(status)
			if err != nil {
				peak <- hwm << 10
				return
			}
			for _, l := range strings.Split(string(b), "\n") {
				var kb int64
				if _, err := fmt.Sscanf(l, "VmHWM: %d kB", &kb); err == nil && kb > 0 {
					hwm = kb
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	rss := <-peak
	if rss == 0 {
		t.Skip("no /proc to read the peak RSS from")
	}
	t.Logf("input %d MB, %d spans; peak RSS %d MB; %v; exit %v", st.Size()>>20, len(read), rss>>20, time.Since(start), err)
	if err != nil {
		t.Errorf("exit %v; stderr:\n%s", err, stderr.String())
	}
	accounts(t, read, c, spanIDs(t, spool))
	if rss > 128<<20 {
		t.Errorf("peak RSS %d MB, over the 128 MB bound", rss>>20)
	}
}
