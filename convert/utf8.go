package convert

import (
	"bytes"
	"io"
	"unicode/utf8"
)

// validUTF8Reader passes an input through, replacing each invalid UTF-8
// byte with U+FFFD, so that every writer's output is valid UTF-8 whatever
// the agent printed. onBad is called once, with the line of the first bad
// byte. Valid input is passed on without a copy.
type validUTF8Reader struct {
	r       io.Reader
	onBad   func(line int)
	warned  bool
	line    int    // newlines passed so far
	carry   []byte // a rune cut by the end of the last read
	pending []byte // repaired bytes not yet returned
	eof     bool
	// detecting: the dialect is not known yet, and may be one whose
	// reader takes the input's bytes as they are (Dialect.Binary): raw
	// keeps the bytes read, and the warning of a bad byte waits (badLine).
	detecting bool
	raw       []byte
	badLine   int
}

func newValidUTF8Reader(r io.Reader, onBad func(line int)) *validUTF8Reader {
	return &validUTF8Reader{r: r, onBad: onBad, line: 1}
}

func (v *validUTF8Reader) Read(p []byte) (int, error) {
	if len(v.pending) > 0 {
		n := copy(p, v.pending)
		v.pending = v.pending[n:]
		return n, nil
	}
	if v.eof {
		return 0, io.EOF
	}
	if len(p) < 8 {
		// Too small to hold a carried rune with room to spare: go through
		// pending.
		buf := make([]byte, 4096)
		n, err := v.Read(buf)
		v.pending = append(v.pending[:0], buf[:n]...)
		m := copy(p, v.pending)
		v.pending = v.pending[m:]
		return m, err
	}
	c := copy(p, v.carry)
	v.carry = v.carry[:0]
	n, err := v.r.Read(p[c:])
	if v.detecting {
		v.raw = append(v.raw, p[c:c+n]...)
	}
	n += c
	if err == io.EOF {
		v.eof = true
	} else if err != nil {
		return 0, err
	}
	chunk := p[:n]
	// Hold back a rune that the read cut in two, unless the input ended.
	if !v.eof {
		if k := cutRune(chunk); k > 0 {
			v.carry = append(v.carry, chunk[len(chunk)-k:]...)
			chunk = chunk[:len(chunk)-k]
		}
	}
	if utf8.Valid(chunk) {
		v.line += bytes.Count(chunk, []byte{'\n'})
		if len(chunk) == 0 && v.eof {
			return 0, io.EOF
		}
		return len(chunk), nil
	}
	fixed := v.repair(chunk)
	m := copy(p, fixed)
	v.pending = append(v.pending[:0], fixed[m:]...)
	return m, nil
}

// detected ends detection: for a dialect whose reader takes the input as
// it is (binary), it returns the bytes read so far, unrepaired, and the
// warning of a bad byte among them is not given; for any other, the
// warning is given now.
func (v *validUTF8Reader) detected(binary bool) []byte {
	raw := v.raw
	v.detecting, v.raw = false, nil
	if v.badLine > 0 && !binary {
		v.onBad(v.badLine)
	}
	v.badLine = 0
	return raw
}

// repair replaces invalid bytes, reporting the first once.
func (v *validUTF8Reader) repair(b []byte) []byte {
	out := make([]byte, 0, len(b)+16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			if !v.warned {
				v.warned = true
				if v.detecting {
					v.badLine = v.line
				} else {
					v.onBad(v.line)
				}
			}
			out = append(out, "\uFFFD"...)
		} else {
			if b[0] == '\n' {
				v.line++
			}
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

// cutRune returns how many bytes at the end of b start a rune that is not
// complete yet (0 to 3).
func cutRune(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}
