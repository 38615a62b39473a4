package otel

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // registers the gzip compressor
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// uploader delivers one request's spans, retrying within ctx.
type uploader interface {
	// upload sends items as one request; rejected and msg are the
	// collector's partial-success answer.
	upload(ctx context.Context, items []item) (rejected int64, msg string, err error)
	// protobuf: the items must carry their protobuf form, and requests are
	// capped at maxRequest bytes.
	protobuf() bool
	shutdown(ctx context.Context) error
}

// client is agentconv's OTLP client, over grpc or http/protobuf. The
// scheme of the endpoint decides TLS: http is plain text whatever the
// certificate settings, https is TLS with them.
type client struct {
	cfg  *config
	grpc collpb.TraceServiceClient
	conn *grpc.ClientConn
	http *http.Client
	md   metadata.MD
}

func newClient(cfg *config) (*client, error) {
	u, err := url.Parse(cfg.endpoint)
	if err != nil {
		return nil, err
	}
	c := &client{cfg: cfg}
	tlsCfg := cfg.tls
	if tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.protocol == "http/protobuf" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = senders
		if u.Scheme == "https" {
			tr.TLSClientConfig = tlsCfg
		}
		c.http = &http.Client{Transport: tr}
		return c, nil
	}
	creds := insecure.NewCredentials()
	if u.Scheme == "https" {
		creds = credentials.NewTLS(tlsCfg)
	}
	c.conn, err = grpc.NewClient(u.Host, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("OTLP endpoint %s: %v", cfg.endpoint, err)
	}
	c.grpc = collpb.NewTraceServiceClient(c.conn)
	c.md = metadata.New(nil)
	for k, v := range cfg.headers {
		c.md.Set(k, v)
	}
	return c, nil
}

func (c *client) protobuf() bool { return true }

func (c *client) shutdown(context.Context) error {
	if c.conn != nil {
		return c.conn.Close()
	}
	c.http.CloseIdleConnections()
	return nil
}

// upload sends the items, in more than one request if the one would be
// over maxRequest, and retries what may be retried until ctx ends.
func (c *client) upload(ctx context.Context, items []item) (int64, string, error) {
	req := buildRequest(items)
	// The batches are made to fit by their spans' upper bounds; the exact
	// size is reckoned only when those come near the cap.
	bound, groups := 0, map[groupKey]bool{}
	for _, it := range items {
		bound += it.size
		if k := keyOf(it.span); !groups[k] {
			groups[k] = true
			bound += groupSize(it.span)
		}
	}
	if len(items) > 1 && bound > maxRequest-spanHeadroom && proto.Size(req) > maxRequest {
		h := len(items) / 2
		r1, m1, err := c.upload(ctx, items[:h])
		if err != nil {
			return r1, m1, err
		}
		r2, m2, err := c.upload(ctx, items[h:])
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
	backoff := 100 * time.Millisecond
	for {
		resp, retry, wait, err := c.send(ctx, req)
		if err == nil {
			ps := resp.GetPartialSuccess()
			return ps.GetRejectedSpans(), ps.GetErrorMessage(), nil
		}
		if !retry || ctx.Err() != nil {
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
			}
			return 0, "", err
		}
		if wait <= 0 {
			wait = backoff
			backoff = min(2*backoff, 2*time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, "", fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// partError: the items before sent were delivered, the others not.
type partError struct {
	sent int
	err  error
}

func (e *partError) Error() string { return e.err.Error() }
func (e *partError) Unwrap() error { return e.err }

// send makes one attempt; retry says whether another may succeed, and
// wait how long the collector asked to wait first.
func (c *client) send(ctx context.Context, req *collpb.ExportTraceServiceRequest) (resp *collpb.ExportTraceServiceResponse, retry bool, wait time.Duration, err error) {
	if c.grpc != nil {
		var opts []grpc.CallOption
		if c.cfg.compression == "gzip" {
			opts = append(opts, grpc.UseCompressor("gzip"))
		}
		resp, err = c.grpc.Export(metadata.NewOutgoingContext(ctx, c.md), req, opts...)
		if err == nil {
			return resp, false, 0, nil
		}
		switch status.Code(err) {
		case codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted,
			codes.OutOfRange, codes.Unavailable, codes.DataLoss:
			return nil, true, 0, err
		}
		return nil, false, 0, err
	}
	body, err := proto.Marshal(req)
	if err != nil {
		return nil, false, 0, err
	}
	if c.cfg.compression == "gzip" {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, false, 0, err
	}
	hr.Header.Set("Content-Type", "application/x-protobuf")
	if c.cfg.compression == "gzip" {
		hr.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range c.cfg.headers {
		hr.Header.Set(k, v)
	}
	res, err := c.http.Do(hr)
	if err != nil {
		// Refused, reset, unreachable: the collector may come up.
		return nil, true, 0, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxRequest))
	if err != nil {
		return nil, true, 0, err
	}
	if res.StatusCode/100 == 2 {
		resp = &collpb.ExportTraceServiceResponse{}
		if len(data) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/x-protobuf") {
			if err := proto.Unmarshal(data, resp); err != nil {
				return nil, false, 0, fmt.Errorf("the collector's answer is not an OTLP response: %v", err)
			}
		}
		return resp, false, 0, nil
	}
	err = fmt.Errorf("HTTP %s: %s", res.Status, snippet(data))
	switch res.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(res.Header.Get("Retry-After")); perr == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return nil, true, wait, err
	}
	return nil, false, 0, err
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// exporterUploader delivers through an SDK span exporter (tests use an
// in-memory one): all or nothing, without a size cap.
type exporterUploader struct{ exp sdktrace.SpanExporter }

func (e exporterUploader) protobuf() bool { return false }

func (e exporterUploader) upload(ctx context.Context, items []item) (int64, string, error) {
	spans := make([]sdktrace.ReadOnlySpan, len(items))
	for i, it := range items {
		spans[i] = it.span
	}
	return 0, "", e.exp.ExportSpans(ctx, spans)
}

func (e exporterUploader) shutdown(ctx context.Context) error { return e.exp.Shutdown(ctx) }
