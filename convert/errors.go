package convert

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/agentconv/agentconv/formats"
)

// Exit statuses of agentconv itself. With --exit-status, a successful
// conversion exits with the last run's own exit code instead of ExitOK.
const (
	ExitOK          = 0
	ExitInput       = 1 // the input is malformed, unreadable or of an unknown dialect
	ExitUsage       = 2 // bad flags or arguments
	ExitLoss        = 3 // --strict met something the target cannot carry
	ExitOutput      = 4 // the output could not be written or delivered
	ExitInterrupted = 130
	ExitTerminated  = 143
)

// InputError is a problem with the input at a place: FILE:LINE: what.
type InputError struct {
	File string
	Line int
	Msg  string
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// OutputError is a failure to write or deliver the output.
type OutputError struct{ Err error }

func (e *OutputError) Error() string { return e.Err.Error() }
func (e *OutputError) Unwrap() error { return e.Err }

// LossError is a loss met under --strict.
type LossError struct{ What, Target string }

func (e *LossError) Error() string {
	return fmt.Sprintf("--strict: %s cannot carry %s", e.Target, e.What)
}

// ErrInterrupted is returned when the context is cancelled (a signal).
var ErrInterrupted = errors.New("interrupted")

// exitFor prints an error and maps it to an exit status.
func exitFor(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var (
		ie *InputError
		oe *OutputError
		le *LossError
	)
	switch {
	case errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	case errors.Is(err, syscall.EPIPE):
		// The reader of our output went away (| head): end quietly.
		return ExitOK
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "agentconv: %s\n", formats.Visible(ie.Error(), true))
		return ExitInput
	case errors.As(err, &le):
		fmt.Fprintf(stderr, "agentconv: %s\n", formats.Visible(le.Error(), true))
		return ExitLoss
	case errors.As(err, &oe):
		fmt.Fprintf(stderr, "agentconv: cannot write the output: %s\n", formats.Visible(oe.Err.Error(), true))
		return ExitOutput
	}
	fmt.Fprintf(stderr, "agentconv: %s\n", formats.Visible(err.Error(), true))
	return ExitInput
}

// exitError is a failure of the command before it converts anything: the
// message (none for the help shown) and the exit status.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func failure(code int, format string, args ...any) error {
	return &exitError{code, fmt.Sprintf(format, args...)}
}

func usage(format string, args ...any) error { return failure(ExitUsage, format, args...) }

// exit prints a failure and returns its exit status.
func (cv *convertJob) exit(err error) int {
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{ExitInput, err.Error()}
	}
	if ee.msg != "" {
		fmt.Fprintf(cv.sys.Stderr, "agentconv: %s\n", formats.Visible(ee.msg, true))
	}
	return ee.code
}

// status is the exit status: the conversion's, or the output's, or the
// signal's, or with --exit-status the last run's own.
func (cv *convertJob) status() int {
	stderr := cv.sys.Stderr
	code := exitFor(cv.runErr, stderr)
	if code == ExitOK && cv.nothingRead() {
		fmt.Fprintf(stderr, "agentconv: nothing under the input directories was read (each file was skipped, see above)\n")
		code = ExitInput
	}
	if code == ExitOK && cv.unread > 0 && !cv.opts.Lenient {
		fmt.Fprintf(stderr, "agentconv: %d %s under the input directories could not be read (see the warnings); the rest was converted (--lenient: exit 0 all the same)\n",
			cv.unread, plural(cv.unread, "file", "files"))
		code = ExitInput
	}
	if code == ExitOK || code == ExitInterrupted {
		if c2 := exitFor(cv.closeErr, stderr); c2 != ExitOK {
			code = c2
		}
	}
	signalled := false
	select {
	case <-cv.sigSeen:
		signalled = true
	default:
	}
	if code == ExitOK && signalled { // after the input was read, while delivering
		code = ExitInterrupted
	}
	if code == ExitInterrupted && signalled && cv.sig == syscall.SIGTERM {
		code = ExitTerminated
	}
	if res := cv.p.Result(); code == ExitOK && cv.c.Bool("exit-status") && res.ExitCode.OK {
		code = res.ExitCode.V
	}
	return code
}

// nothingRead: every file found under the input directories was skipped
// or could not be read.
func (cv *convertJob) nothingRead() bool {
	if !cv.fromDirs || len(cv.srcs) == 0 {
		return false
	}
	left := cv.many.Unread
	for _, n := range cv.many.Skipped {
		left += n
	}
	return left == len(cv.srcs)
}
