package formats

import "unsafe"

// Text gathers the pieces of one text: the deltas of a streamed message,
// or the blocks of a message that an agent prints over several records.
// Adding a piece copies that piece only, so that gathering n pieces takes
// time linear in the text's length (a string grown with += copies all of it
// each time: 40,000 pieces of 200 bytes made 160 GB of copying). The zero
// Text is empty and ready to use; a Text is not to be copied once
// written to (both copies would append over the same bytes).
type Text struct {
	// buf is only appended to: the strings String gave stay valid.
	buf []byte
}

// Add appends s.
func (t *Text) Add(s string) { t.buf = append(t.buf, s...) }

// Join appends s after a blank line, as one more paragraph: an empty s, or
// an s added to an empty text, gets no blank line.
func (t *Text) Join(s string) {
	if s == "" {
		return
	}
	if len(t.buf) > 0 {
		t.buf = append(t.buf, "\n\n"...)
	}
	t.buf = append(t.buf, s...)
}

// Set makes the text s.
func (t *Text) Set(s string) {
	t.buf = nil
	t.Add(s)
}

// Reset empties the text.
func (t *Text) Reset() { t.buf = nil }

// Len is the text's length in bytes.
func (t *Text) Len() int { return len(t.buf) }

// String returns the text so far, without copying it: what is added later
// goes after it, never over it.
func (t *Text) String() string {
	if len(t.buf) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(t.buf), len(t.buf))
}
