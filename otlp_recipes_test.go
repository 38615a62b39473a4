package main

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestBackendRecipes runs the README's Langfuse and Phoenix recipes
// against a collector on 127.0.0.1 standing in for the backend: the
// requests go over http/protobuf to the path the backend serves, with
// Langfuse's Basic auth and ingestion version, and every span arrives.
func TestBackendRecipes(t *testing.T) {
	in := fixture("claude/subagent-stream.jsonl")
	_, ref, _ := runCLI(t, nil, nil, "--deterministic", "--otlp-content", "--to", "otlp-json", in)
	want := len(otlpSpans(t, ref))
	auth := base64.StdEncoding.EncodeToString([]byte("pk-lf-1234:sk-lf-5678"))
	for _, c := range []struct {
		name    string
		env     map[string]string
		args    []string
		path    string
		headers map[string]string
	}{
		{"langfuse", nil, nil, "/api/public/otel/v1/traces", map[string]string{
			"authorization": "Basic " + auth, "x-langfuse-ingestion-version": "4", "content-type": "application/x-protobuf"}},
		{"phoenix", nil, []string{"--otlp-protocol", "http/protobuf"}, "/v1/traces", map[string]string{"content-type": "application/x-protobuf"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := newCollector(t, "http/protobuf", nil)
			env := map[string]string{}
			args := []string{"--to", "otlp", "--otlp-content"}
			if c.name == "langfuse" {
				// As the README says it, with the collector's address.
				env["OTEL_EXPORTER_OTLP_ENDPOINT"] = col.endpoint + "/api/public/otel"
				env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/protobuf"
				env["OTEL_EXPORTER_OTLP_HEADERS"] = "Authorization=Basic%20" + auth + ",x-langfuse-ingestion-version=4"
			} else {
				args = append(args, "--otlp-endpoint", col.endpoint)
			}
			args = append(append(args, c.args...), "--otlp-spool", t.TempDir()+"/spool", in)
			code, _, stderr := runCLI(t, nil, env, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			col.mu.Lock()
			defer col.mu.Unlock()
			if len(col.headers) == 0 {
				t.Fatal("no request")
			}
			for _, hs := range col.headers {
				if hs[":path"] != c.path {
					t.Errorf("path %q, want %q", hs[":path"], c.path)
				}
				for k, v := range c.headers {
					if !strings.HasPrefix(hs[k], v) {
						t.Errorf("%s: %q, want %q", k, hs[k], v)
					}
				}
			}
			n := 0
			for _, k := range col.spans {
				n += k
			}
			if n != want {
				t.Errorf("%d spans arrived, want %d", n, want)
			}
		})
	}
}
