package otel_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/convert"
)

func protoName(p string) string { return strings.ReplaceAll(p, "/", "-") }

// send runs --to otlp against a fake collector, with a spool in a
// temporary directory.
func send(t *testing.T, c *fakeCollector, env map[string]string, args ...string) (code int, stderr, spool string) {
	t.Helper()
	spool = filepath.Join(t.TempDir(), "spool.otlp.jsonl")
	all := append([]string{"--to", "otlp", "--otlp-protocol", c.proto, "--otlp-endpoint", c.endpoint, "--otlp-spool", spool}, args...)
	code, _, stderr = runCLI(t, nil, env, all...)
	return code, stderr, spool
}

// TestPartialSuccessIsPartial: spans a collector rejects are counted and
// reported with its message; the rest go on being sent, and nothing is
// spooled that the collector accepted.
func TestPartialSuccessIsPartial(t *testing.T) {
	in, ids := spanInput(t, 3<<20, 200)
	if len(ids) < 3*1024 {
		t.Fatalf("only %d spans in the input", len(ids))
	}
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			first := true
			c := newCollector(t, p, func(c *fakeCollector) {
				c.reject = func(n int) (int64, string) {
					if first {
						first = false
						return 7, "7 spans are too old"
					}
					return 0, ""
				}
			})
			code, stderr, spool := send(t, c, nil, "--from", "otlp-json", in)
			if code != convert.ExitOutput || !strings.Contains(stderr, "rejected 7 of the") || !strings.Contains(stderr, "7 spans are too old") {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
			if strings.Contains(stderr, "could not be delivered") {
				t.Errorf("a partial success made a delivery failure:\n%s", stderr)
			}
			checkAccounts(t, ids, c.accepted(), spanIDsOfFile(t, spool))
		})
	}
	t.Run("a warning with nothing rejected", func(t *testing.T) {
		c := newCollector(t, "grpc", func(c *fakeCollector) {
			c.reject = func(int) (int64, string) { return 0, "deprecated attribute" }
		})
		code, stderr, spool := send(t, c, nil, "--from", "otlp-json", in)
		if code != 0 || !strings.Contains(stderr, "with a warning: deprecated attribute") {
			t.Errorf("exit %d, stderr:\n%s", code, stderr)
		}
		checkAccounts(t, ids, c.accepted(), spanIDsOfFile(t, spool))
	})
}

// TestTimeoutBoundsTheDelivery: --otlp-timeout bounds the whole delivery;
// batches go a few at a time, and what is not sent in time is spooled.
func TestTimeoutBoundsTheDelivery(t *testing.T) {
	in, ids := spanInput(t, 6<<20, 200)
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			c := newCollector(t, p, func(c *fakeCollector) { c.delay = 1500 * time.Millisecond })
			start := time.Now()
			code, stderr, spool := send(t, c, nil, "--otlp-timeout", "2s", "--from", "otlp-json", in)
			took := time.Since(start)
			t.Logf("took %v; stderr:\n%s", took, stderr)
			if code != convert.ExitOutput || !strings.Contains(stderr, "delivery timeout") || !strings.Contains(stderr, spool) {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
			if took > 2*time.Second+5*time.Second {
				t.Errorf("took %v with a 2 s timeout", took)
			}
			delivered, spooled := c.accepted(), spanIDsOfFile(t, spool)
			if len(delivered) == 0 || len(spooled) == 0 {
				t.Errorf("%d delivered, %d spooled: want some of each", len(delivered), len(spooled))
			}
			if c.maxConc < 2 {
				t.Errorf("requests went one at a time")
			}
			checkAccounts(t, ids, delivered, spooled)
		})
	}
}

// TestHTTPRetriesARefusedConnection: a collector that comes up late gets
// every span, over http as over grpc.
func TestHTTPRetriesARefusedConnection(t *testing.T) {
	in, ids := spanInput(t, 200<<10, 200)
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			c := newCollector(t, p, func(c *fakeCollector) { c.late = 1500 * time.Millisecond })
			code, stderr, spool := send(t, c, nil, "--from", "otlp-json", in)
			if code != 0 {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
			checkAccounts(t, ids, c.accepted(), spanIDsOfFile(t, spool))
			if _, err := os.Stat(spool); err == nil {
				t.Errorf("a spool was written")
			}
		})
	}
}
