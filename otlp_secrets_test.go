package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats/formatstest"

	"github.com/agentconv/agentconv/convert"
)

// withUser puts user:pass@ into a collector's http://host:port endpoint.
func withUser(endpoint, userinfo string) string {
	return strings.Replace(endpoint, "http://", "http://"+userinfo+"@", 1)
}

// noSecret fails the test when what (stderr, a spool) holds the secret.
func noSecret(t *testing.T, name, what, secret string) {
	t.Helper()
	if strings.Contains(what, secret) {
		t.Errorf("%s shows the password %q:\n%s", name, secret, what)
	}
}

// TestCredentialsInTheEndpoint (issue 28 #14): user:password@ in the
// endpoint is sent as Basic auth, as curl sends it, over grpc and http,
// unless an authorization header is given, which wins; the password is
// never shown, whether the collector takes the spans, answers 500 or is
// down, nor written to the spool.
func TestCredentialsInTheEndpoint(t *testing.T) {
	formatstest.Long(t)
	const secret = "s3cr3t"
	in := fixture("adal/seed-stream.ndjson")
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+secret+"/x"))
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			for _, tc := range []struct {
				name string
				args []string
				want string
			}{
				// The URL's percent-encoding is decoded, as curl does.
				{"basic", nil, basic},
				{"explicit header wins", []string{"--otlp-header", "Authorization=Bearer tok"}, "Bearer tok"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c := newCollector(t, p, nil)
					args := []string{"--to", "otlp", "--otlp-protocol", p, "--otlp-endpoint", withUser(c.endpoint, "alice:"+secret+"%2Fx"),
						"--otlp-spool", filepath.Join(t.TempDir(), "spool")}
					code, _, stderr := runCLI(t, nil, nil, append(append(args, tc.args...), in)...)
					if code != 0 || len(c.headers) == 0 {
						t.Fatalf("exit %d, %d requests; stderr:\n%s", code, len(c.headers), stderr)
					}
					for _, hs := range c.headers {
						if hs["authorization"] != tc.want {
							t.Errorf("authorization %q, want %q", hs["authorization"], tc.want)
						}
					}
					noSecret(t, "stderr", stderr, secret)
				})
			}
		})
	}
	check := func(t *testing.T, endpoint, p string) {
		t.Helper()
		spool := filepath.Join(t.TempDir(), "spool")
		code, _, stderr := runCLI(t, nil, map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "1500"},
			"--to", "otlp", "--otlp-protocol", p, "--otlp-endpoint", endpoint, "--otlp-spool", spool, in)
		if code != convert.ExitOutput || !strings.Contains(stderr, "alice:xxxxx@") {
			t.Errorf("exit %d, want 4 with the endpoint shown as alice:xxxxx@…; stderr:\n%s", code, stderr)
		}
		noSecret(t, "stderr", stderr, secret)
		data, err := os.ReadFile(spool)
		if err != nil || len(data) == 0 {
			t.Fatalf("no spool: %v", err)
		}
		noSecret(t, "the spool", string(data), secret)
	}
	for _, p := range protocols {
		t.Run("down-"+protoName(p), func(t *testing.T) {
			// Port 1 on loopback: nothing listens, connections are refused.
			check(t, "http://alice:"+secret+"@127.0.0.1:1", p)
		})
	}
	t.Run("500", func(t *testing.T) {
		var got atomic.Value
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.Store(r.Header.Get("Authorization"))
			http.Error(w, "no", http.StatusInternalServerError)
		}))
		defer srv.Close()
		check(t, withUser(srv.URL, "alice:"+secret), "http/protobuf")
		if a, _ := got.Load().(string); a != "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:"+secret)) {
			t.Errorf("authorization %q", a)
		}
	})
}

// TestRedirectsAreNotFollowed (issue 28 #15): a 3xx answer over http is a
// delivery error that says so and names the Location (its password
// redacted); nothing, neither spans nor headers, goes to the redirect's
// target, and the spans are spooled.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var reached atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
	}))
	defer target.Close()
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var asked atomic.Int32
			loc := withUser(target.URL, "bob:pw2") + "/v1/traces"
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				http.Redirect(w, r, loc, status)
			}))
			defer redirector.Close()
			spool := filepath.Join(t.TempDir(), "spool")
			start := time.Now()
			code, _, stderr := runCLI(t, nil, nil, "--to", "otlp", "--otlp-protocol", "http/protobuf",
				"--otlp-endpoint", withUser(redirector.URL, "alice:s3cr3t"), "--otlp-header", "x-tenant=t1",
				"--otlp-timeout", "20s", "--otlp-spool", spool, fixture("adal/seed-stream.ndjson"))
			want := fmt.Sprintf("the collector answered %d %s to ", status, http.StatusText(status))
			if code != convert.ExitOutput || !strings.Contains(stderr, want) || !strings.Contains(stderr, "does not follow redirects") ||
				!strings.Contains(stderr, strings.Replace(target.URL, "http://", "http://bob:xxxxx@", 1)+"/v1/traces") {
				t.Errorf("exit %d, want 4 with %q, the redacted Location and why; stderr:\n%s", code, want, stderr)
			}
			noSecret(t, "stderr", stderr, "s3cr3t")
			noSecret(t, "stderr", stderr, "pw2")
			if n := reached.Load(); n != 0 {
				t.Errorf("the redirect's target got %d requests", n)
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the redirecting collector was asked %d times, want once (a redirect is not tried again)", n)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %v: a redirect is not retried until the timeout", took)
			}
			if data, err := os.ReadFile(spool); err != nil || len(data) == 0 {
				t.Errorf("the spans were not spooled: %v", err)
			}
		})
	}
}
