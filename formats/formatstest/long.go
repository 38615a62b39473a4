package formatstest

import (
	"flag"
	"os"
	"runtime/debug"
	"testing"
	"time"
)

// LongDeadline is how far go test's deadline must be for Long tests to run:
// the README's test command, and CI's, give -timeout 45m.
const LongDeadline = 30 * time.Minute

// Long skips a long test in the quick loop. A long test spends seconds of
// CPU or of waiting on what a quick change rarely breaks: inputs at scale,
// every core kept busy, a delivery's deadlines, an outside validator. go
// test ./... (its deadline 10 minutes away) leaves them out; they run under
// the README's test command (go test -timeout 45m ./...), with -timeout 0,
// or when -run names tests. -short leaves them out too.
func Long(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a long test: -short leaves it out")
	}
	if !IsLong(t) {
		d, _ := t.Deadline()
		t.Skipf("a long test: go test's deadline is in %v; the README's test command (go test -timeout 45m ./...) runs it, as -run NAME does",
			time.Until(d).Round(time.Minute))
	}
}

// IsLong reports whether long tests run (see Long): a test that checks a
// matrix checks all of it then, and a sample of it in the quick loop.
func IsLong(t *testing.T) bool {
	if testing.Short() {
		return false
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		return true
	}
	d, ok := t.Deadline()
	return !ok || time.Until(d) >= LongDeadline
}

// TestGC is the GOGC a test binary of many conversions sets in its
// TestMain, unless GOGC is set: its live heap is small and its garbage
// plentiful. Measured on 2 cores: convert's tests took 57 CPU-seconds at
// the default (100) and 42 at 400, the kept captures' checks 34 and 28.
// Tests that measure memory collect first, and do not depend on it.
const TestGC = 400

// SetTestGC sets TestGC, unless the environment sets GOGC.
func SetTestGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(TestGC)
	}
}
