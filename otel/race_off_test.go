//go:build !race

package otel

// raceDetector: see race_on_test.go.
const raceDetector = false
