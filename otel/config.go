package otel

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
)

// The writer parameters (formats.WriteOptions.Params) that the command
// line's --otlp-* flags set. Each falls back to its OTEL_* variable.
const (
	ParamEndpoint     = "otlp.endpoint"        // URL or host:port
	ParamProtocol     = "otlp.protocol"        // grpc or http/protobuf
	ParamHeaders      = "otlp.headers"         // KEY=VALUE, one per --otlp-header, taken as they are, joined by NUL bytes
	ParamInsecure     = "otlp.insecure"        // "true": no TLS
	ParamTimeout      = "otlp.timeout"         // a Go duration: how long delivery may take
	ParamServiceName  = "otlp.service_name"    // service.name of the resource
	ParamContent      = "otlp.content"         // "true": record tool arguments and results
	ParamContentLimit = "otlp.content_limit"   // bytes kept of each argument or result
	ParamSpool        = "otlp.spool"           // file for spans that could not be delivered
	ParamAttrLimit    = "otlp.attribute_limit" // bytes kept of each attribute value
)

// DefaultContentLimit is how much of a tool call's arguments and of its
// result --otlp-content keeps, in bytes.
const DefaultContentLimit = 4096

// config is what a writer needs to know, from its parameters and the
// standard OpenTelemetry environment variables.
type config struct {
	endpoint     string // URL with scheme, without its userinfo
	shown        string // the endpoint as messages show it: its password redacted
	protocol     string
	headers      map[string]string
	insecure     bool
	timeout      time.Duration
	compression  string
	tls          *tls.Config
	resource     []attribute.KeyValue // OTEL_RESOURCE_ATTRIBUTES, service.name last
	service      string               // "" = the agent's name
	content      bool
	contentLimit int
	attrLimit    int // bytes kept of each attribute value; 0: no limit
	spool        string
	stateDir     string // where a spool goes when none is named
}

// StateDir is the user's state directory for agentconv (the spool's, and
// agentconv follow's state):
// $XDG_STATE_HOME/agentconv, else ~/.local/state/agentconv ("" when there
// is no home either).
func StateDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentconv")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "agentconv")
	}
	return ""
}

// env reads a trace-specific OTEL_EXPORTER_OTLP_TRACES_X or, failing that,
// the general OTEL_EXPORTER_OTLP_X.
func env(o formats.WriteOptions, x string) (string, bool) {
	if v := o.Env("OTEL_EXPORTER_OTLP_TRACES_" + x); v != "" {
		return v, true
	}
	return o.Env("OTEL_EXPORTER_OTLP_" + x), false
}

func newConfig(o formats.WriteOptions) (*config, error) {
	c := &config{timeout: 10 * time.Second, contentLimit: DefaultContentLimit}

	c.protocol = o.Param(ParamProtocol, "")
	if c.protocol == "" {
		c.protocol, _ = env(o, "PROTOCOL")
	}
	switch c.protocol {
	case "", "grpc":
		c.protocol = "grpc"
	case "http", "http/protobuf":
		c.protocol = "http/protobuf"
	default:
		return nil, fmt.Errorf("OTLP protocol %q is not supported: use grpc or http/protobuf", c.protocol)
	}

	insecure := o.Param(ParamInsecure, "")
	if insecure == "" {
		insecure, _ = env(o, "INSECURE")
	}
	c.insecure = strings.EqualFold(insecure, "true")

	// A flag or OTEL_EXPORTER_OTLP_ENDPOINT is a base URL, to which http
	// adds /v1/traces; OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is.
	ep, specific := o.Param(ParamEndpoint, ""), false
	if ep == "" {
		ep, specific = env(o, "ENDPOINT")
	}
	user, err := c.endpointURL(ep, specific)
	if err != nil {
		return nil, err
	}

	if c.headers, err = headers(o); err != nil {
		return nil, err
	}
	if c.protocol == "grpc" {
		// grpc sends headers as metadata, whose text values are printable
		// ASCII; any other byte fails every request.
		for k, v := range c.headers {
			for i, ch := range []byte(v) {
				if (ch < 0x20 || ch > 0x7e) && !strings.HasSuffix(strings.ToLower(k), "-bin") {
					return nil, fmt.Errorf("OTLP header %s: its value has a byte grpc cannot send (0x%02x) at byte %d: grpc takes only printable ASCII in header values; use --otlp-protocol http/protobuf for others", strconv.Quote(k), ch, i+1)
				}
			}
		}
	}
	// Credentials in the URL are sent as Basic auth, as curl sends them,
	// unless an authorization header is given, which wins.
	if user != nil && !hasHeader(c.headers, "authorization") {
		pass, _ := user.Password()
		c.headers["authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(user.Username()+":"+pass))
	}

	if t := o.Param(ParamTimeout, ""); t != "" {
		if c.timeout, err = time.ParseDuration(t); err != nil || c.timeout <= 0 {
			return nil, fmt.Errorf("--otlp-timeout %q: give a duration such as 5s", t)
		}
	} else if t, _ := env(o, "TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT %q: give milliseconds", t)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}

	c.compression, _ = env(o, "COMPRESSION")
	if c.compression != "" && c.compression != "gzip" && c.compression != "none" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION %q: use gzip or none", c.compression)
	}
	if c.tls, err = tlsConfig(o); err != nil {
		return nil, err
	}

	if c.resource, c.service, err = resourceAttrs(o); err != nil {
		return nil, err
	}
	c.content = o.Param(ParamContent, "") == "true" || captureContent(o.Env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"))
	if l := o.Param(ParamContentLimit, ""); l != "" {
		if c.contentLimit, err = strconv.Atoi(l); err != nil || c.contentLimit < 0 {
			return nil, fmt.Errorf("--otlp-content-limit %q: give a number of bytes", l)
		}
	}
	if c.attrLimit, err = attrLimit(o); err != nil {
		return nil, err
	}
	c.spool = o.Param(ParamSpool, "")
	c.stateDir = StateDir(o.Env)
	return c, nil
}

// endpointURL completes an endpoint into c.endpoint, a URL, and c.shown.
// Without a scheme, a loopback host gets plain http (a local Jaeger or
// Collector) and any other host https, unless insecure is set. The URL's
// userinfo (user:password@) is taken out of c.endpoint and returned: it is
// sent as a header, and never shown (see redactEndpoint).
func (c *config) endpointURL(ep string, specific bool) (*url.Userinfo, error) {
	if ep == "" {
		ep = "localhost:4317"
		if c.protocol == "http/protobuf" {
			ep = "localhost:4318"
		}
	}
	if !strings.Contains(ep, "://") {
		hostport := ep
		if i := strings.IndexAny(hostport, "/?#"); i >= 0 {
			hostport = hostport[:i]
		}
		hostport = hostport[strings.LastIndex(hostport, "@")+1:]
		host := hostport
		if h, _, err := net.SplitHostPort(hostport); err == nil {
			host = h
		}
		scheme := "https"
		if c.insecure || host == "localhost" || net.ParseIP(host).IsLoopback() {
			scheme = "http"
		}
		ep = scheme + "://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("OTLP endpoint %q is not a URL such as http://localhost:4317", redactEndpoint(ep))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("OTLP endpoint %q: port %s is out of range: give a port from 1 to 65535", redactEndpoint(ep), p)
		}
	}
	if u.Scheme == "http" {
		c.insecure = true
	}
	if c.protocol == "http/protobuf" && (!specific || u.Path == "" || u.Path == "/") && !strings.HasSuffix(u.Path, "/v1/traces") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	user := u.User
	if _, hasPass := user.Password(); user != nil && user.Username() == "" && !hasPass {
		user = nil // http://@host
	}
	u.User = nil
	c.endpoint = u.String()
	c.shown = c.endpoint
	if user != nil {
		u.User = user
		c.shown = redactEndpoint(u.String())
	}
	return user, nil
}

// redactEndpoint is an endpoint as a message may show it: the password of
// its userinfo replaced by xxxxx, and a user without a password (which may
// be a token) replaced whole. A URL that does not parse, with an @ after
// its scheme, has everything from the scheme to its last @ replaced.
func redactEndpoint(ep string) string {
	scheme, rest, ok := strings.Cut(ep, "://")
	if !ok {
		scheme, rest = "", ep
	} else {
		scheme += "://"
	}
	if strings.LastIndex(rest, "@") < 0 {
		return ep
	}
	if u, err := url.Parse(ep); err == nil && ok {
		if u.User == nil {
			return ep // an @ in the path, query or fragment
		}
		// As url.Parse reads it: the authority ends at the first /, ? or
		// #, and the userinfo at its last @.
		authority := rest
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			authority = rest[:i]
		}
		at := strings.LastIndex(authority, "@")
		if user, _, hasPass := strings.Cut(rest[:at], ":"); hasPass {
			return scheme + user + ":xxxxx" + rest[at:]
		}
		return scheme + "xxxxx" + rest[at:]
	}
	return scheme + "xxxxx" + rest[strings.LastIndex(rest, "@"):]
}

// hasHeader says whether hs has key, in any case.
func hasHeader(hs map[string]string, key string) bool {
	for k := range hs {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// headers reads OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, then the
// --otlp-header flags, which win. A malformed pair is an error.
func headers(o formats.WriteOptions) (map[string]string, error) {
	m := map[string]string{}
	name := "OTEL_EXPORTER_OTLP_HEADERS"
	envHs, specific := env(o, "HEADERS")
	if specific {
		name = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	}
	pairs, err := parsePairs(envHs)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	for _, kv := range pairs {
		m[kv[0]] = kv[1]
	}
	for _, h := range strings.Split(o.Param(ParamHeaders, ""), "\x00") {
		if strings.TrimSpace(h) == "" {
			continue
		}
		k, v, ok := strings.Cut(h, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			return nil, fmt.Errorf("--otlp-header %s: give KEY=VALUE, such as authorization=Bearer%%20…", malformedPair(h))
		}
		m[k] = strings.TrimSpace(v)
	}
	for k, v := range m {
		if err := checkHeader(k, v); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// checkHeader refuses a header that no collector can be sent: a name that
// is not an HTTP token, or a value with a control character, such as the
// line break that base64 puts every 76 characters (use base64 -w0). Only
// the name is shown: the value may be a secret.
func checkHeader(k, v string) error {
	for _, c := range []byte(k) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return fmt.Errorf("OTLP header %s: its name has %q, which a header name may not have", strconv.Quote(k), c)
		}
	}
	for i, c := range []byte(v) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return fmt.Errorf("OTLP header %s: its value has a control character (%q) at byte %d, which no collector takes; a line break comes from base64 wrapping long input: use base64 -w0 (or tr -d '\\n')", strconv.Quote(k), c, i+1)
		}
	}
	return nil
}

// parsePairs reads k=v,k2=v2 in order, as the OTEL_* lists are written
// (the W3C baggage format): the values are percent-decoded, and "+" is a
// plus, not a space. Empty members are skipped; a member without a key or
// "=", or with a bad percent escape, is an error.
func parsePairs(s string) ([][2]string, error) {
	var out [][2]string
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s is not KEY=VALUE; separate pairs with commas and percent-encode commas in values (%%2C)", malformedPair(kv))
		}
		dv, err := url.PathUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("%q: bad percent-encoding in its value (write %% as %%25)", k)
		}
		out = append(out, [2]string{k, dv})
	}
	return out, nil
}

// malformedPair names a pair that is not KEY=VALUE in an error, by its key
// alone, never its value, which may be a secret: what comes before its
// first "=", ":" or space, quoted ("authorization: Bearer …" is
// "authorization"), or "a pair with no key" when that is empty.
func malformedPair(kv string) string {
	kv = strings.TrimSpace(kv)
	if i := strings.IndexAny(kv, "=: \t"); i >= 0 {
		kv = kv[:i]
	}
	if kv == "" {
		return "(a pair with no key)"
	}
	return strconv.Quote(kv)
}

// resourceAttrs reads OTEL_RESOURCE_ATTRIBUTES in their order, and the
// service name from the flag, OTEL_SERVICE_NAME or those attributes.
func resourceAttrs(o formats.WriteOptions) ([]attribute.KeyValue, string, error) {
	service := o.Param(ParamServiceName, o.Env("OTEL_SERVICE_NAME"))
	var attrs []attribute.KeyValue
	pairs, err := parsePairs(o.Env("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return nil, "", fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	for _, kv := range pairs {
		if kv[0] == "service.name" {
			if service == "" {
				service = kv[1]
			}
			continue
		}
		attrs = append(attrs, attribute.String(kv[0], kv[1]))
	}
	return attrs, service, nil
}

// tlsConfig reads the certificate variables; nil when none is set.
func tlsConfig(o formats.WriteOptions) (*tls.Config, error) {
	ca, _ := env(o, "CERTIFICATE")
	cert, _ := env(o, "CLIENT_CERTIFICATE")
	key, _ := env(o, "CLIENT_KEY")
	if ca == "" && cert == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE %s: no PEM certificate in it", ca)
		}
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/CLIENT_KEY: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// CheckConfig checks the settings of the otel writers (o.Dialect otlp or
// otlp-json; any other is fine), so that the command line can refuse bad
// ones at start-up, before it reads anything. inputs are the files to be
// read ("-" is standard input): a spool file that is also an input would
// read its own appends, so it is refused.
func CheckConfig(o formats.WriteOptions, inputs []string) error {
	if o.Dialect != nameOTLP && o.Dialect != nameOTLPJSON {
		return nil
	}
	c, err := newConfig(o)
	if err != nil {
		return err
	}
	if o.Dialect != nameOTLP || c.spool == "" {
		return nil
	}
	spool, err := os.Stat(c.spool)
	if err != nil {
		return nil // a new file
	}
	if spool.IsDir() {
		return fmt.Errorf("--otlp-spool %s is a directory: name a file", c.spool)
	}
	for _, in := range inputs {
		name := in
		if in == "-" {
			name = "/dev/stdin"
		}
		if st, err := os.Stat(name); err == nil && os.SameFile(st, spool) {
			if in == "-" {
				in = "standard input"
			}
			return fmt.Errorf("--otlp-spool %s is also the input (%s): spans that are still undelivered would be appended to what is being read; name a new file, or leave --otlp-spool out to get one", c.spool, in)
		}
	}
	return nil
}

// The dialects' names, which CheckConfig needs before the table rows exist.
const (
	nameOTLP     = "otlp"
	nameOTLPJSON = "otlp-json"
)

// captureContent reads the GenAI instrumentations' content switch: true,
// SPAN_ONLY or SPAN_AND_EVENT put content on spans, as --otlp-content does.
func captureContent(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "TRUE", "SPAN_ONLY", "SPAN_AND_EVENT":
		return true
	}
	return false
}

// attrLimit reads the attribute length limit: the flag, else
// OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else
// OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT (the OpenTelemetry SDKs' variables);
// 0 when none is set.
func attrLimit(o formats.WriteOptions) (int, error) {
	for _, src := range []struct{ name, v string }{
		{"--otlp-attribute-limit", o.Param(ParamAttrLimit, "")},
		{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", o.Env("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")},
		{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", o.Env("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")},
	} {
		if v := strings.TrimSpace(src.v); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%s %q: give a number of bytes (0: no limit)", src.name, src.v)
			}
			return n, nil
		}
	}
	return 0, nil
}
