package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentconv/agentconv/convert"
)

// untouched is a standard input that records whether it was read.
type untouched struct{ reads atomic.Int32 }

func (u *untouched) Read([]byte) (int, error) {
	u.reads.Add(1)
	select {} // a live pipe whose agent has printed nothing yet
}

// TestBadSettingsExitAtStart: bad settings are refused with exit 2 before
// anything is read, so that a live pipe learns of them at once.
func TestBadSettingsExitAtStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"protocol flag", nil, []string{"--otlp-protocol", "bogus"}, `OTLP protocol "bogus"`},
		{"protocol variable", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "bogus"}, nil, `OTLP protocol "bogus"`},
		{"endpoint", nil, []string{"--otlp-endpoint", "ftp://x:1"}, "is not a URL"},
		{"endpoint variable", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://"}, nil, "is not a URL"},
		{"timeout variable", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "abc"}, nil, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"zero timeout", nil, []string{"--otlp-timeout", "0s"}, "--otlp-timeout"},
		{"malformed header variable", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization"}, nil, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"malformed header flag", nil, []string{"--otlp-header", "authorization"}, "--otlp-header"},
		// A malformed header is named by its key, never its value (issue 28 #17).
		{"header with a colon flag", nil, []string{"--otlp-header", "authorization: Bearer s3cr3t"}, `--otlp-header "authorization"`},
		{"header with a colon variable", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-a=1,authorization:Bearer%20s3cr3t"}, nil, `OTEL_EXPORTER_OTLP_HEADERS: "authorization" is not KEY=VALUE`},
		{"header without a key", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "=s3cr3t"}, nil, "OTEL_EXPORTER_OTLP_HEADERS: (a pair with no key)"},
		{"header with a bad escape", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=s3cr3t%zz"}, nil, `"authorization": bad percent-encoding`},
		// A port out of 1..65535 (issue 28 #19); the endpoint is shown
		// without its password (#14).
		{"port out of range", nil, []string{"--otlp-endpoint", "http://127.0.0.1:99999999"}, "port 99999999 is out of range"},
		{"port out of range variable", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector.example.com:70000"}, nil, "port 70000 is out of range"},
		{"port zero", nil, []string{"--otlp-endpoint", "http://alice:s3cr3t@127.0.0.1:0"}, `"http://alice:xxxxx@127.0.0.1:0": port 0`},
		// An endpoint that is not a URL never shows its password (#14).
		{"password in an endpoint that is not a URL", nil, []string{"--otlp-endpoint", "http://alice:s3c/r3t@host"}, `"http://xxxxx@host" is not a URL`},
		{"missing certificate", map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, nil, "OTEL_EXPORTER_OTLP_CERTIFICATE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &untouched{}
			args := append([]string{"--to", "otlp"}, tc.args...)
			code, _, stderr := runCLI(t, in, tc.env, args...)
			if code != convert.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 with %q; stderr:\n%s", code, tc.want, stderr)
			}
			for _, secret := range []string{"s3cr3t", "r3t"} {
				noSecret(t, "stderr", stderr, secret)
			}
			if n := in.reads.Load(); n != 0 {
				t.Errorf("standard input was read %d times before the settings were refused", n)
			}
		})
	}
}

// TestSpoolIsNotTheInput: a resend whose spool is its own input would read
// its own appends; it is refused with exit 2, whatever names the file.
func TestSpoolIsNotTheInput(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool.jsonl")
	data, err := os.ReadFile(fixture("otlp-json/malac-subagents.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spool, data, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(spool, link); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{spool, link, filepath.Join(dir, ".", "spool.jsonl")} {
		code, _, stderr := runCLI(t, nil, nil, "--from", "otlp-json", "--to", "otlp", "--otlp-endpoint", "http://127.0.0.1:1", "--otlp-spool", spool, name)
		if code != convert.ExitUsage || !strings.Contains(stderr, "is also the input") {
			t.Errorf("input %s: exit %d, want 2; stderr:\n%s", name, code, stderr)
		}
	}
	if after, _ := os.ReadFile(spool); string(after) != string(data) {
		t.Errorf("the spool changed: %d bytes, was %d", len(after), len(data))
	}
}
