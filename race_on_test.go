//go:build race

package main

// raceDetector: the test binary is instrumented, and the processes the
// tests start are the program as users run it, so they are built apart.
const raceDetector = true
