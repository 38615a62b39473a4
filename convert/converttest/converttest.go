// Package converttest runs the command line in memory, for the tests of
// dialect packages that convert through other dialects.
package converttest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
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
