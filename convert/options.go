package convert

import (
	"io"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// Input is one named input stream.
type Input struct {
	// Name is the file name, or "-" for standard input; errors use it.
	Name string
	R    io.Reader
	// Path is the file's path, "" for standard input; the reader gets it
	// (formats.ReadOptions.Path).
	Path string
}

// Options steer a conversion.
type Options struct {
	// From is the input dialect; the zero Dialect means detect it per input.
	From formats.Dialect
	// Lenient skips malformed records instead of stopping at the first.
	Lenient bool
	// Strict turns any loss into an error.
	Strict bool
	// Clock stamps Event.Arrived; nil means time.Now.
	Clock func() time.Time
	// Flush is called whenever the events read so far are written and the
	// input has nothing more buffered, so that a live pipe sees each event
	// at once; nil when the output is a file.
	Flush func() error
	// Report receives warnings and losses.
	Report *formats.Report
	// View is the run view the pipeline keeps, and gives the writer with
	// each event; nil makes one.
	View *formats.RunView
	// Out is the writer's output, where the pipeline copies the records
	// that go back to their own dialect; nil leaves that to the writer.
	Out io.Writer
}

// Result sums up a conversion.
type Result struct {
	// Runs is how many runs were written.
	Runs int
	// ExitCode is the last run's own exit code, when it has one.
	ExitCode formats.Opt[int]
	// Skipped lists the malformed records --lenient skipped, as FILE:LINE.
	Skipped []string
	// Events is how many events were read.
	Events int
}
