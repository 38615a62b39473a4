package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run the real program: signals and closed pipes cannot be
// tested in memory. The test binary is the program when asMain is set in
// its environment (the tests set it for the processes they start), so
// that no second binary is built and linked; under the race detector the
// program is built as users build it, since the instrumented one takes
// several times the memory and time that the tests bound.

var binary string

const asMain = "AGENTCONV_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		return
	}
	if !raceDetector {
		exe, err := os.Executable()
		if err != nil {
			panic(err)
		}
		binary = exe
		os.Setenv(asMain, "1") // for the processes the tests start, not for this one
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "agentconv-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "agentconv")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestSignalsCloseTheOpenRun(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		args []string
	}{
		{syscall.SIGINT, 130, []string{"--from", "adal-stream", "--to", "adal-stream"}},
		{syscall.SIGTERM, 143, []string{"--to", "adal-stream"}}, // detected live, from the first line
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			cmd := exec.Command(binary, tc.args...)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			io.WriteString(stdin, `{"type":"tool_call","id":"c1","name":"bash","args":{"command":"sleep 100"}}`+"\n")
			out := bufio.NewReader(stdout)
			first, err := out.ReadString('\n') // the event shows live, before the run ends
			if err != nil || !strings.Contains(first, `"tool_call"`) {
				t.Fatalf("first line %q, %v", first, err)
			}
			cmd.Process.Signal(tc.sig)
			rest, _ := io.ReadAll(out)
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("exit %v, want %d; stderr %s", err, tc.code, stderr.String())
			}
			for _, want := range []string{`"status":"cancelled"`, `{"type":"error","message":"interrupted by a signal"}`, `{"type":"complete","exit_code":130`} {
				if !strings.Contains(string(rest), want) {
					t.Errorf("after the signal, output lacks %s:\n%s", want, rest)
				}
			}
			stdin.Close()
		})
	}
}

func TestClosedStdoutIsQuiet(t *testing.T) {
	seed, err := os.ReadFile("testdata/adal/seed-stream.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "big.ndjson")
	if err := os.WriteFile(big, bytes.Repeat(seed, 20000), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--to", "adal-stream", big)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n') // like | head -1
	stdout.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("agentconv did not end after its reader went away")
	}
	if !strings.Contains(line, "tool_call") {
		t.Errorf("first line %q", line)
	}
	if stderr.Len() != 0 {
		t.Errorf("a closed stdout printed on stderr: %q", stderr.String())
	}
}

func TestReadmeQuickStart(t *testing.T) {
	// The README's first command must convert a real file.
	out, err := exec.Command(binary, "--to", "adal-json", "testdata/adal/seed-stream.ndjson").Output()
	if err != nil || !strings.Contains(string(out), `"success": true`) {
		t.Fatalf("%s, %v", out, err)
	}
}
