//go:build race

package convert

// raceDetector: the race detector's instrumentation allocates beside the
// code, so tests that count allocations do not count under it.
const raceDetector = true
