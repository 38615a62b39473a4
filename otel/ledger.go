package otel

import (
	"sync"

	"github.com/agentconv/agentconv/formats"
)

// A ledger follows the otlp-json records between the reader and an otel
// writer of one conversion (they share its Report): the reader notes each
// record it reads, the writer each one it is given. What was read and never
// given (records held for a root that has not come, or left in the
// pipeline when a signal stopped it) the writer still sends or spools when
// it closes, so that an interrupted resend loses nothing.
type ledger struct {
	mu    sync.Mutex
	lines []record // read and not yet given to the writer, in order
}

var ledgers sync.Map // *formats.Report → *ledger

// openLedger is the writer's: it starts the ledger of its conversion.
func openLedger(rep *formats.Report) *ledger {
	if rep == nil {
		return nil
	}
	l := &ledger{}
	ledgers.Store(rep, l)
	return l
}

// readerLedger is the reader's: the ledger of its conversion, emptied for
// a new input, or nil when the writer keeps none.
func readerLedger(rep *formats.Report) *ledger {
	if rep == nil {
		return nil
	}
	v, ok := ledgers.Load(rep)
	if !ok {
		return nil
	}
	l := v.(*ledger)
	l.mu.Lock()
	l.lines = nil
	l.mu.Unlock()
	return l
}

func (l *ledger) read(rec record) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.lines = append(l.lines, rec)
	l.mu.Unlock()
}

// given: the writer has the record of line no, and those before it.
func (l *ledger) given(no int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	i := 0
	for i < len(l.lines) && l.lines[i].no <= no {
		i++
	}
	l.lines = l.lines[i:]
	l.mu.Unlock()
}

// close ends the ledger and returns what was read and never given.
func (l *ledger) close(rep *formats.Report) []record {
	if l == nil {
		return nil
	}
	ledgers.CompareAndDelete(rep, l)
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}
