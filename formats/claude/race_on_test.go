//go:build race

package claude

// raceDetector: the race detector's instrumentation allocates beside the
// code, so tests that measure memory do not under it.
const raceDetector = true
