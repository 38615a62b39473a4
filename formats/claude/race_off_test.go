//go:build !race

package claude

// raceDetector: see race_on_test.go.
const raceDetector = false
