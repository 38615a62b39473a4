package otel

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/trace"
)

// setAnchor fixes what the run's ids derive from: its first record and
// where it stands in the input.
func (b *builder) setAnchor(e *formats.Event) {
	b.hashBuf = binary.BigEndian.AppendUint64(b.hashBuf[:0], uint64(e.Source.LineNo))
	b.hashBuf = append(b.hashBuf, e.Source.Line...)
	sum := sha256.Sum256(b.hashBuf)
	b.anchor, b.anchorSet = sum[:], true
}

// trace is the run's trace id, from the run's first record: each run is
// a trace of its own (a session's runs are linked by their session id and
// by a link from each run's root to the previous run's), so that a
// backend shows each run's prompt and answer, and no trace grows with its
// session.
func (b *builder) trace() trace.TraceID {
	if !b.traceSet {
		b.fixAnchor()
		sum := b.hash("run", string(b.anchor))
		copy(b.traceID[:], sum[:])
		b.traceSet = true
	}
	return b.traceID
}

// fixAnchor fixes the run's anchor, if no record of the source did.
func (b *builder) fixAnchor() {
	if !b.anchorSet {
		sum := b.hash("line", strconv.Itoa(b.startLine))
		b.anchor, b.anchorSet = sum[:], true
	}
}

// spanID derives a span's id from the run's anchor and the span's key, so
// that runs sharing a session (and so a trace) get distinct ids. The anchor
// is fixed by then (b.trace), so the id is made once.
func (b *builder) spanID(s *span) trace.SpanID {
	if !s.idSet {
		sum := b.hash("span", string(b.anchor), s.key)
		copy(s.id[:], sum[:])
		if !s.id.IsValid() {
			s.id[7] = 1
		}
		s.idSet = true
	}
	return s.id
}

// hash is the SHA-256 of length-prefixed parts.
func (b *builder) hash(parts ...string) [sha256.Size]byte {
	buf := b.hashBuf[:0]
	for _, p := range parts {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(p)))
		buf = append(buf, p...)
	}
	b.hashBuf = buf
	return sha256.Sum256(buf)
}
