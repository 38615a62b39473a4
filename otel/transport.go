package otel

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
)

// uploader delivers one request's spans, retrying within ctx.
type uploader interface {
	// upload sends items; rejected and msg are the collector's
	// partial-success answer.
	upload(ctx context.Context, items []item) (rejected int64, msg string, err error)
	shutdown(ctx context.Context) error
}

// maxRequest is the largest request sent: grpc servers refuse messages
// over 4 MiB unless told otherwise, and so do many http collectors.
const maxRequest = 4 << 20

// newTransport makes the SDK's OTLP trace exporter for cfg: otlptracegrpc
// or otlptracehttp. Every setting is given as an option (and to grpc the
// connection), so that the exporter's own reading of the OTEL_* variables
// changes nothing: newConfig reads them. The scheme of the endpoint
// decides TLS: http is plain text whatever the certificate settings, https
// is TLS with them.
func newTransport(cfg *config) (*exporterUploader, error) {
	u, err := url.Parse(cfg.endpoint)
	if err != nil {
		return nil, err
	}
	tlsCfg := cfg.tls
	if tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	secure := u.Scheme == "https"
	// The exporter retries what the protocol says may be retried (grpc
	// Unavailable and the like, http 429/502/503/504 with Retry-After),
	// until the delivery's context ends.
	retry := struct {
		Enabled         bool
		InitialInterval time.Duration
		MaxInterval     time.Duration
		MaxElapsedTime  time.Duration
	}{true, 100 * time.Millisecond, 2 * time.Second, 0}
	headers := cfg.headers
	if headers == nil {
		headers = map[string]string{}
	}
	ctx := context.Background()
	if cfg.protocol == "http/protobuf" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = senders
		var clientTLS *tls.Config
		if secure {
			tr.TLSClientConfig = tlsCfg
			clientTLS = tlsCfg
		}
		compression := otlptracehttp.NoCompression
		if cfg.compression == "gzip" {
			compression = otlptracehttp.GzipCompression
		}
		// Redirects are not followed: the spans and the headers (the
		// credentials among them) go to the endpoint named, or nowhere.
		hc := &http.Client{Transport: tr, Timeout: cfg.timeout, CheckRedirect: refuseRedirect}
		exp, err := otlptracehttp.New(ctx,
			otlptracehttp.WithEndpointURL(cfg.endpoint),
			otlptracehttp.WithTLSClientConfig(clientTLS),
			otlptracehttp.WithHTTPClient(hc),
			otlptracehttp.WithHeaders(headers),
			otlptracehttp.WithCompression(compression),
			otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf),
			otlptracehttp.WithTimeout(cfg.timeout),
			otlptracehttp.WithMaxRequestSize(maxRequest),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig(retry)))
		if err != nil {
			return nil, fmt.Errorf("OTLP endpoint %s: %v", cfg.shown, err)
		}
		return &exporterUploader{exp: exp, capped: true, retryConn: true, http: hc}, nil
	}
	// The connection is made here, so that the exporter's own reading of
	// OTEL_EXPORTER_OTLP_CERTIFICATE, _INSECURE and _COMPRESSION adds no
	// dial option of its own.
	creds := insecure.NewCredentials()
	if secure {
		creds = credentials.NewTLS(tlsCfg)
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithUserAgent("agentconv")}
	if cfg.compression == "gzip" {
		dial = append(dial, grpc.WithDefaultCallOptions(grpc.UseCompressor(gzip.Name)))
	}
	conn, err := grpc.NewClient(u.Host, dial...)
	if err != nil {
		return nil, fmt.Errorf("OTLP endpoint %s: %v", cfg.shown, err)
	}
	exp, err := otlptracegrpc.New(ctx,
		otlptracegrpc.WithGRPCConn(conn),
		otlptracegrpc.WithHeaders(headers),
		otlptracegrpc.WithTimeout(cfg.timeout),
		otlptracegrpc.WithMaxRequestSize(maxRequest),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig(retry)))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("OTLP endpoint %s: %v", cfg.shown, err)
	}
	return &exporterUploader{exp: exp, capped: true, conn: conn}, nil
}

// exporterUploader delivers through an SDK span exporter: the OTLP ones,
// or an in-memory one in tests.
type exporterUploader struct {
	exp sdktrace.SpanExporter
	// capped: the exporter refuses a request over maxRequest bytes before
	// sending it; such a batch is sent in halves.
	capped bool
	// retryConn: a request that got no answer at all (a refused or reset
	// connection) is tried again, within ctx. otlptracehttp retries only
	// the errors net/http calls temporary, which a refused connection is
	// not; otlptracegrpc's Unavailable covers it.
	retryConn bool
	// http is the http exporter's client, whose idle connections the
	// exporter leaves open at Shutdown.
	http *http.Client
	// conn is the grpc exporter's connection, which the exporter does not
	// close, having been given it.
	conn *grpc.ClientConn
}

func (e *exporterUploader) shutdown(ctx context.Context) error {
	err := e.exp.Shutdown(ctx)
	if e.http != nil {
		e.http.CloseIdleConnections()
	}
	if e.conn != nil {
		if cerr := e.conn.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// upload sends the items, in more than one request if the exporter finds
// the one over maxRequest, and retries a connection that failed until ctx
// ends.
func (e *exporterUploader) upload(ctx context.Context, items []item) (int64, string, error) {
	spans := make([]sdktrace.ReadOnlySpan, len(items))
	for i, it := range items {
		spans[i] = it.span
	}
	backoff := 100 * time.Millisecond
	for {
		rejected, msg, err := partialSuccess(e.exp.ExportSpans(ctx, spans))
		if err == nil {
			return rejected, msg, nil
		}
		if e.capped && len(items) > 1 && tooLarge(err) {
			return e.halves(ctx, items)
		}
		var re *redirectError
		if errors.As(err, &re) {
			return 0, "", re // not tried again, and without the url.Error's unredacted Location
		}
		var ue *url.Error
		if !e.retryConn || ctx.Err() != nil || !errors.As(err, &ue) {
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
			}
			return 0, "", err
		}
		t := time.NewTimer(backoff)
		backoff = min(2*backoff, 2*time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, "", fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// redirectError is a collector's redirect, which is not followed.
type redirectError struct {
	status   string // "307 Temporary Redirect"
	location string // redacted
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("the collector answered %s to %s; agentconv does not follow redirects: point --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT) at the final URL", e.status, e.location)
}

// refuseRedirect is the http client's CheckRedirect: req, the request the
// redirect would make, is never sent.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	status := "a redirect"
	if req.Response != nil {
		status = req.Response.Status
	}
	return &redirectError{status: status, location: redactEndpoint(req.URL.String())}
}

// halves sends items in two parts.
func (e *exporterUploader) halves(ctx context.Context, items []item) (int64, string, error) {
	h := len(items) / 2
	r1, m1, err := e.upload(ctx, items[:h])
	if err != nil {
		return r1, m1, err
	}
	r2, m2, err := e.upload(ctx, items[h:])
	if err != nil {
		sent := h
		var pe *partError
		if errors.As(err, &pe) {
			sent += pe.sent
			err = pe.err
		}
		return r1 + r2, m1, &partError{sent: sent, err: err}
	}
	return r1 + r2, strings.Trim(m1+"; "+m2, "; "), nil
}

// partError: the items before sent were delivered, the others not.
type partError struct {
	sent int
	err  error
}

func (e *partError) Error() string { return e.err.Error() }
func (e *partError) Unwrap() error { return e.err }

// tooLarge says whether err is the exporter's refusal of a request over
// its WithMaxRequestSize, made before anything was sent. The exporters
// make it with fmt.Errorf, so its words are all there is to go by
// (TestExporterRefusesLargeRequests checks them).
func tooLarge(err error) bool {
	s := err.Error()
	return strings.Contains(s, "request body too large") || strings.Contains(s, "request message too large")
}

// partialSuccess takes the collector's partial-success answers out of an
// exporter's error. The OTLP exporters return them from ExportSpans as
// errors of their internal type PartialSuccess (joined with any other
// error), which cannot be named outside them: it is known by its name and
// read by its exported fields. err is what is left, nil when the request
// was taken.
func partialSuccess(err error) (rejected int64, msg string, rest error) {
	if err == nil {
		return 0, "", nil
	}
	var msgs []string
	other := false
	var walk func(error)
	walk = func(e error) {
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
			return
		case interface{ Unwrap() error }:
			if in := u.Unwrap(); in != nil {
				walk(in)
				return
			}
		}
		if n, m, ok := asPartialSuccess(e); ok {
			rejected += n
			if m != "" {
				msgs = append(msgs, m)
			}
			return
		}
		other = true
	}
	walk(err)
	if other {
		return 0, "", err
	}
	return rejected, strings.Join(msgs, "; "), nil
}

func asPartialSuccess(e error) (int64, string, bool) {
	v := reflect.ValueOf(e)
	if v.Kind() != reflect.Struct || v.Type().Name() != "PartialSuccess" ||
		!strings.HasPrefix(v.Type().PkgPath(), "go.opentelemetry.io/otel/exporters/otlp/") {
		return 0, "", false
	}
	n, m := v.FieldByName("RejectedItems"), v.FieldByName("ErrorMessage")
	if n.Kind() != reflect.Int64 || m.Kind() != reflect.String {
		return 0, "", false
	}
	return n.Int(), m.String(), true
}
