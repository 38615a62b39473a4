//go:build !race

package convert

// raceDetector: see race_on_test.go.
const raceDetector = false
