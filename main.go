// Command agentconv converts the event streams of AI coding agents between
// dialects and exports them as OpenTelemetry traces. See README.md.
package main

import (
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/agentconv/agentconv/convert"
)

func main() {
	// A stream's live heap is small (one run), so the collector's default
	// pace runs it hundreds of times per 100 MB of input, on the second
	// core when there is one. At 400 it spends a fifth less CPU on a dense
	// stream, for a peak under 64 MB. (A soft memory limit was worse: a
	// session file is read whole, and over the limit the collector ran
	// without rest.) GOGC still decides when it is set.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(convert.Run(os.Args, convert.Sys{
		Stdin:   os.Stdin,
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Getenv:  os.Getenv,
		Signals: sigs,
	}))
}
