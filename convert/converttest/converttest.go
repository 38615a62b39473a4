// Package converttest runs the command line in memory, for the tests of
// dialect packages that convert through other dialects, and conversions
// through the library for tests of many conversions that are not about
// the command line.
package converttest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
)

// Convert converts in from one dialect to another with --deterministic,
// and fails the test if the conversion does not exit 0.
func Convert(t testing.TB, in []byte, from, to string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	code := convert.Run([]string{"agentconv", "--deterministic", "--from", from, "--to", to}, convert.Sys{
		Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != 0 {
		t.Fatalf("%s → %s: exit %d: %s", from, to, code, errb.String())
	}
	return out.Bytes()
}

// Run runs the command line in memory on stdin, with an empty
// environment, and returns its exit status, standard output and standard
// error.
func Run(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = convert.Run(append([]string{"agentconv"}, args...), convert.Sys{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// Library converts in from one dialect to another through the library, as
// the command line does with --deterministic --from FROM --to TO but
// without its parsing: for tests of many conversions that check what the
// readers and writers make. A panic is returned as an error.
func Library(in []byte, from, to string) (stdout []byte, err error) {
	src, ok := convert.Lookup(from)
	if !ok || src.NewReader == nil {
		return nil, fmt.Errorf("no reader of %q", from)
	}
	dst, ok := convert.Lookup(to)
	if !ok || dst.NewWriter == nil {
		return nil, fmt.Errorf("no writer of %q", to)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	var out, errb bytes.Buffer
	rep := formats.NewReport(&errb)
	_, err = convert.ConvertOne(context.Background(), convert.Input{Name: "-", R: bytes.NewReader(in)}, dst, &out,
		formats.WriteOptions{Report: rep, Stderr: &errb, Getenv: func(string) string { return "" }},
		convert.Options{From: src, Clock: convert.DeterministicClock(), Report: rep})
	return out.Bytes(), err
}
