package convert

import (
	"io"
	"slices"
	"sync"
)

// What a signal does to an input being read: the reader stops at its next
// read, and what was taken from the input is still converted.

// drainRead, at a signal, converts what the reader goroutine had taken
// from the input and not handed over yet (what is in its buffers, up to a
// whole record; it takes nothing more, stop ends the input there), so that
// what was read is written: with --to otlp, the spans of an input that
// was read to its end are delivered or spooled, none dropped. A reader
// waiting on a producer that may never write again (a live pipe) is not
// waited for: what it waits for was not read. The records after the
// first error (a record cut by the stop) are not.
func (p *Pipeline) drainRead(in Input, stop *stopReader, batches <-chan []item) {
	if stop.stop() && mayBlock(in.R) {
		return
	}
	for batch := range batches {
		if p.writeCut(in, batch) {
			return
		}
		if _, err := p.deliver(in, batch); err != nil {
			return
		}
	}
}

// writeCut writes a batch read after a signal up to its first error, the
// record the stop cut, which is no error of the input; false if it has
// none, and nothing is written.
func (p *Pipeline) writeCut(in Input, batch []item) bool {
	i := slices.IndexFunc(batch, func(it item) bool { return it.err != nil })
	if i < 0 {
		return false
	}
	if _, err := p.writeBatch(in, batch[:i]); err == nil {
		p.flush()
	}
	return true
}

// stopReader is an input that ends when stop is called or done is
// closed: a signal came.
type stopReader struct {
	r       io.Reader
	done    <-chan struct{}
	mu      sync.Mutex
	stopped bool
	reading bool // a Read of r is under way
}

func (s *stopReader) Read(b []byte) (int, error) {
	s.mu.Lock()
	select {
	case <-s.done:
		s.stopped = true
	default:
	}
	if s.stopped {
		s.mu.Unlock()
		return 0, io.EOF
	}
	s.reading = true
	s.mu.Unlock()
	n, err := s.r.Read(b)
	s.mu.Lock()
	s.reading = false
	s.mu.Unlock()
	return n, err
}

// stop ends the input; busy says a Read of it was under way, which may
// wait on its producer.
func (s *stopReader) stop() (busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	return s.reading
}

// cancelReader refuses to read once done is closed, so that a reader
// busy with its input stops at its next read.
type cancelReader struct {
	done <-chan struct{}
	r    io.Reader
}

func (c cancelReader) Read(b []byte) (int, error) {
	select {
	case <-c.done:
		return 0, ErrInterrupted
	default:
	}
	return c.r.Read(b)
}
