package formats

import (
	"bytes"
	"unicode/utf8"
)

// Binary reports whether data is binary rather than text: it holds a NUL
// byte, or more than a third of its characters are invalid UTF-8 (or the
// U+FFFD that replaced it) or control characters that text does not use.
// line is the 1-based line of the NUL byte, or 1.
func Binary(data []byte) (line int, binary bool) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return 1 + bytes.Count(data[:i], []byte{'\n'}), true
	}
	chars, bad := 0, 0
	for b := data; len(b) > 0; {
		if c := b[0]; c >= 0x20 && c < utf8.RuneSelf {
			b = b[1:]
			chars++
			continue
		}
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		chars++
		switch {
		case r == utf8.RuneError:
			bad++
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f' && r != '\v' && r != '\b' && r != 0x1b:
			// ESC stays text: terminals' colour codes.
			bad++
		}
	}
	return 1, chars > 0 && bad*3 > chars
}
