package otel

import (
	"strings"
	"testing"
)

// TestEndpointCredentials (issue 28 #14): the userinfo of the endpoint is
// taken out of the URL that is dialled and sent as Basic auth, unless an
// authorization header is given in any case; messages show the endpoint
// with its password redacted.
func TestEndpointCredentials(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		params    map[string]string
		endpoint  string
		shown     string
		auth      string // every authorization header, key=value
		protocol  string
		wantNoKey bool
	}{
		{name: "grpc", params: map[string]string{ParamEndpoint: "http://alice:s3cr3t@collector:4317"},
			endpoint: "http://collector:4317", shown: "http://alice:xxxxx@collector:4317", auth: "authorization=Basic YWxpY2U6czNjcjN0"},
		{name: "http, percent-decoded", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://alice:s3cr%40t@tempo.example.com/otlp"},
			endpoint: "https://tempo.example.com/otlp/v1/traces", shown: "https://alice:xxxxx@tempo.example.com/otlp/v1/traces", auth: "authorization=Basic YWxpY2U6czNjckB0"},
		{name: "no scheme, loopback", params: map[string]string{ParamEndpoint: "alice:s3cr3t@127.0.0.1:4317"},
			endpoint: "http://127.0.0.1:4317", shown: "http://alice:xxxxx@127.0.0.1:4317", auth: "authorization=Basic YWxpY2U6czNjcjN0"},
		{name: "a user alone may be a token", params: map[string]string{ParamEndpoint: "https://tok3n@collector:4317"},
			endpoint: "https://collector:4317", shown: "https://xxxxx@collector:4317", auth: "authorization=Basic dG9rM246"},
		{name: "explicit header wins", params: map[string]string{ParamEndpoint: "http://alice:s3cr3t@collector:4317", ParamHeaders: "Authorization=Bearer x"},
			endpoint: "http://collector:4317", shown: "http://alice:xxxxx@collector:4317", auth: "Authorization=Bearer x"},
		{name: "explicit variable header wins", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "AUTHORIZATION=Bearer%20y"}, params: map[string]string{ParamEndpoint: "http://alice:s3cr3t@collector:4317"},
			endpoint: "http://collector:4317", shown: "http://alice:xxxxx@collector:4317", auth: "AUTHORIZATION=Bearer y"},
		{name: "an empty userinfo is none", params: map[string]string{ParamEndpoint: "http://@collector:4317"},
			endpoint: "http://collector:4317", shown: "http://collector:4317"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newConfig(opts(tc.env, tc.params))
			if err != nil {
				t.Fatal(err)
			}
			var auth []string
			for k, v := range c.headers {
				if strings.EqualFold(k, "authorization") {
					auth = append(auth, k+"="+v)
				}
			}
			if c.endpoint != tc.endpoint || c.shown != tc.shown || strings.Join(auth, " ") != tc.auth {
				t.Errorf("endpoint %s, shown %s, %v; want %s, %s, %s", c.endpoint, c.shown, auth, tc.endpoint, tc.shown, tc.auth)
			}
		})
	}
}

// TestRedactEndpoint: the password, or a user without one, never shows;
// an @ that is not the userinfo's is left alone; a URL that does not
// parse loses everything up to its last @.
func TestRedactEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://collector:4317":                  "http://collector:4317",
		"http://alice:s3cr3t@collector:4318/v1":  "http://alice:xxxxx@collector:4318/v1",
		"http://alice:s3@cr3t@collector:4318":    "http://alice:xxxxx@collector:4318",
		"https://tok3n@collector":                "https://xxxxx@collector",
		"http://collector/a@b?c=d@e":             "http://collector/a@b?c=d@e",
		"http://u:p@collector/a@b":               "http://u:xxxxx@collector/a@b",
		"http://alice:s3c/r3t@collector":         "http://xxxxx@collector",
		"http://alice:s3c#r3t@collector":         "http://xxxxx@collector",
		"http://alice:s3cr3t@collector:99999999": "http://alice:xxxxx@collector:99999999",
	} {
		if got := redactEndpoint(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
