package otel

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

func opts(env map[string]string, params map[string]string) formats.WriteOptions {
	return formats.WriteOptions{Params: params, Getenv: func(k string) string { return env[k] }}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name           string
		env, params    map[string]string
		endpoint, prot string
		insecure       bool
		timeout        time.Duration
		headers        string
		service        string
		err            string
	}{
		{name: "defaults", endpoint: "http://localhost:4317", prot: "grpc", insecure: true, timeout: 10 * time.Second},
		{name: "http default", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, endpoint: "http://localhost:4318/v1/traces", prot: "http/protobuf", insecure: true, timeout: 10 * time.Second},
		{name: "general endpoint gets the path", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://tempo:4318/otlp"},
			endpoint: "https://tempo:4318/otlp/v1/traces", prot: "http/protobuf", timeout: 10 * time.Second},
		{name: "traces endpoint as it is", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://x:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://tempo:4318/custom"},
			endpoint: "https://tempo:4318/custom", prot: "http/protobuf", timeout: 10 * time.Second},
		{name: "remote host gets TLS", params: map[string]string{ParamEndpoint: "collector.example.com:4317"}, endpoint: "https://collector.example.com:4317", prot: "grpc", timeout: 10 * time.Second},
		{name: "insecure", params: map[string]string{ParamEndpoint: "collector:4317", ParamInsecure: "true"}, endpoint: "http://collector:4317", prot: "grpc", insecure: true, timeout: 10 * time.Second},
		{name: "flag wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "500"}, params: map[string]string{ParamEndpoint: "http://b:2", ParamTimeout: "3s"},
			endpoint: "http://b:2", prot: "grpc", insecure: true, timeout: 3 * time.Second},
		{name: "env timeout in ms, headers, service", env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "1500", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Basic%20abc,x-a=1",
			"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs,deployment.environment=ci", "OTEL_SERVICE_NAME": "svc"}, params: map[string]string{ParamHeaders: "x-b=2"},
			endpoint: "http://localhost:4317", prot: "grpc", insecure: true, timeout: 1500 * time.Millisecond, headers: "authorization=Basic abc,x-a=1,x-b=2", service: "svc"},
		{name: "bad protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: "http/json"},
		{name: "bad timeout", params: map[string]string{ParamTimeout: "soon"}, err: "--otlp-timeout"},
		{name: "bad endpoint", params: map[string]string{ParamEndpoint: "ftp://x"}, err: "not a URL"},
		// The OTel specification: values are percent-decoded, and + stays a plus.
		{name: "header values percent-decoded, + kept", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Basic%20YQ+b/c==, x-a = %2C1 ,"},
			endpoint: "http://localhost:4317", prot: "grpc", insecure: true, timeout: 10 * time.Second, headers: "authorization=Basic YQ+b/c==,x-a=,1"},
		{name: "a flag header keeps its commas", params: map[string]string{ParamHeaders: "x-a=a,b\x00x-b=c%20d"},
			endpoint: "http://localhost:4317", prot: "grpc", insecure: true, timeout: 10 * time.Second, headers: "x-a=a,b,x-b=c%20d"},
		{name: "traces headers win", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-b=2"},
			endpoint: "http://localhost:4317", prot: "grpc", insecure: true, timeout: 10 * time.Second, headers: "x-b=2"},
		{name: "malformed header pair", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-a=1,novalue"}, err: `OTEL_EXPORTER_OTLP_HEADERS: "novalue" is not KEY=VALUE`},
		{name: "header without a key", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "=1"}, err: "OTEL_EXPORTER_OTLP_TRACES_HEADERS"},
		{name: "bad percent escape", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-a=100%"}, err: "percent-encoding"},
		{name: "malformed flag header", params: map[string]string{ParamHeaders: "x-a"}, err: `--otlp-header "x-a"`},
		{name: "a wrapped base64 in the variable", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Basic%20" + strings.Repeat("QUFB", 19) + "\nQUFB"},
			err: `OTLP header "authorization": its value has a control character ('\n') at byte 83`},
		{name: "a wrapped base64 in a flag", params: map[string]string{ParamHeaders: "authorization=Basic " + strings.Repeat("QUFB", 19) + "\nQUFB=="}, err: "use base64 -w0"},
		{name: "a non-ASCII header value over grpc", params: map[string]string{ParamHeaders: "x-user=José"}, err: `OTLP header "x-user": its value has a byte grpc cannot send (0xc3) at byte 4`},
		{name: "a header name with a space", params: map[string]string{ParamHeaders: "x a=1"}, err: `OTLP header "x a": its name has ' '`},
		{name: "attribute limit not a number", env: map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "big"}, err: "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"},
		{name: "bad env timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "abc"}, err: "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{name: "zero timeout", params: map[string]string{ParamTimeout: "0s"}, err: "--otlp-timeout"},
		{name: "endpoint not a URL", params: map[string]string{ParamEndpoint: "http://"}, err: "not a URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newConfig(opts(tc.env, tc.params))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one about %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var hs []string
			for _, k := range []string{"authorization", "x-a", "x-b"} {
				if v, ok := c.headers[k]; ok {
					hs = append(hs, k+"="+v)
				}
			}
			got := fmt.Sprintf("%s %s %v %v %s %s", c.endpoint, c.protocol, c.insecure, c.timeout, strings.Join(hs, ","), c.service)
			want := fmt.Sprintf("%s %s %v %v %s %s", tc.endpoint, tc.prot, tc.insecure, tc.timeout, tc.headers, tc.service)
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
	c, _ := newConfig(opts(map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs,deployment.environment=ci"}, nil))
	if c.service != "from-attrs" || len(c.resource) != 1 || c.resource[0].Value.AsString() != "ci" {
		t.Errorf("resource %v service %q", c.resource, c.service)
	}
}

func TestBadConfigFailsAtFirstWrite(t *testing.T) {
	w := formats.Standalone(OTLP.NewWriter(nil, opts(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}, nil)))
	if err := w.Write(&formats.Event{Kind: formats.RunStart}); err == nil || !strings.Contains(err.Error(), "carrier-pigeon") {
		t.Errorf("error %v", err)
	}
}

func readAll(t testing.TB, data []byte) []*formats.Event {
	t.Helper()
	evs, _, err := formatstest.ReadAll(OTLPJSON, data) // malformed records are skipped
	if err != nil {
		t.Fatalf("fatal read error: %v", err)
	}
	return evs
}

// shape is what a round trip through otlp-json must keep of events.
func shape(evs []*formats.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch e.Kind {
		case formats.ToolCall, formats.ToolResult, formats.AgentStart, formats.AgentEnd, formats.RunEnd, formats.TurnEnd:
			fmt.Fprintf(&b, "%s %s %s %s %s %s %s\n", e.Kind, e.Agent, e.Call.ID, e.Call.Name, e.Call.Status, e.Status, e.Run.SessionID)
		}
	}
	return b.String()
}

func writeAll(t testing.TB, evs []*formats.Event) []byte {
	var out bytes.Buffer
	w := formats.Standalone(OTLPJSON.NewWriter(&out, formats.WriteOptions{Dialect: OTLPJSON.Name, Report: formats.NewReport(io.Discard),
		Params: map[string]string{ParamContent: "true", ParamContentLimit: "1000000"}}))
	for i, ev := range evs {
		e := *ev
		e.Source = formats.Source{}
		if e.Arrived.IsZero() {
			// As the pipeline stamps them: an untimed run is written in
			// the order its events came.
			e.Arrived = formats.FixedEpoch.Add(time.Duration(i) * time.Millisecond)
		}
		if err := w.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "otlp-json", "*"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"01","parentSpanId":"01","name":"x"}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs := readAll(t, data)
		var clean []*formats.Event
		for _, e := range evs {
			if e.Kind != formats.Raw {
				clean = append(clean, e)
			}
		}
		if err := agentOrder(clean); err != nil {
			t.Fatalf("read: %v", err)
		}
		out := writeAll(t, clean)
		back := readAll(t, out)
		if err := agentOrder(back); err != nil {
			t.Fatalf("read back: %v\noutput %s", err, out)
		}
		if w, g := runShapes(clean), runShapes(back); w != g {
			t.Fatalf("round trip changed the events:\nwant %s\ngot  %s\noutput %s", w, g, out)
		}
	})
}

// runShapes is shape per run, in no order within a run: spans are a set, and
// spans that start at the same instant have no order among them. Turn ends
// are left out: the writer rebuilds turns around calls, and a call that
// outlives its turn in arbitrary input can make another turn.
func runShapes(evs []*formats.Event) string {
	var out strings.Builder
	var run []string
	for _, e := range evs {
		if e.Kind != formats.TurnEnd {
			if line := shape([]*formats.Event{e}); line != "" {
				run = append(run, line)
			}
		}
		if e.Kind == formats.RunEnd {
			sort.Strings(run)
			out.WriteString(strings.Join(run, "") + "--\n")
			run = run[:0]
		}
	}
	return out.String()
}

// agentOrder checks that every event of a subagent comes between its start
// and its end.
func agentOrder(evs []*formats.Event) error {
	open := map[string]bool{}
	for i, e := range evs {
		switch {
		case e.Kind == formats.RunStart || e.Kind == formats.RunEnd:
			clear(open)
		case e.Kind == formats.AgentStart:
			open[e.Agent] = true
		case e.Agent != "" && !open[e.Agent]:
			return fmt.Errorf("event %d (%s) of agent %q outside its start and end", i, e.Kind, e.Agent)
		case e.Kind == formats.AgentEnd:
			delete(open, e.Agent)
		}
	}
	return nil
}

func TestFixturesRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "otlp-json", "*"))
	for _, name := range files {
		b, _ := os.ReadFile(name)
		evs := readAll(t, b)
		if len(evs) < 4 {
			t.Errorf("%s: only %d events", name, len(evs))
		}
		if back := readAll(t, writeAll(t, evs)); shape(back) != shape(evs) {
			t.Errorf("%s: round trip changed the events:\nwant %s\ngot  %s", name, shape(evs), shape(back))
		}
	}
}
