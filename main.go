// Command agentconv converts the event streams of AI coding agents between
// dialects and exports them as OpenTelemetry traces. See README.md.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/agentconv/agentconv/convert"
)

func main() {
	convert.TuneGC(os.Getenv)
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
