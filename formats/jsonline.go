package formats

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSONLine builds one JSON object line by hand, for the records a writer
// emits for every tool call: it copies raw JSON (a kept tool output) as it
// is, where the encoder would scan it again. Keys are written as given;
// string values are escaped as encoding/json does, without HTML escaping.
type JSONLine struct {
	b []byte
}

// Begin starts a new object, reusing the buffer.
func (j *JSONLine) Begin() *JSONLine {
	j.b = append(j.b[:0], '{')
	return j
}

func (j *JSONLine) key(k string) {
	if len(j.b) > 1 {
		j.b = append(j.b, ',')
	}
	j.b = append(j.b, '"')
	j.b = append(j.b, k...)
	j.b = append(j.b, '"', ':')
}

// Str adds a string field.
func (j *JSONLine) Str(k, v string) *JSONLine {
	j.key(k)
	j.b = AppendJSONString(j.b, v)
	return j
}

// Output adds a tool output as a JSON string: the source's literal as it
// is while the output is undecoded, else its text encoded.
func (j *JSONLine) Output(k string, o Output) *JSONLine {
	if len(o.lit) > 0 {
		return j.Raw(k, o.lit)
	}
	return j.Str(k, o.text)
}

// Int adds a number field.
func (j *JSONLine) Int(k string, v int64) *JSONLine {
	j.key(k)
	j.b = strconv.AppendInt(j.b, v, 10)
	return j
}

// Bool adds a boolean field.
func (j *JSONLine) Bool(k string, v bool) *JSONLine {
	j.key(k)
	j.b = strconv.AppendBool(j.b, v)
	return j
}

// Null adds a null field.
func (j *JSONLine) Null(k string) *JSONLine {
	j.key(k)
	j.b = append(j.b, "null"...)
	return j
}

// Raw adds a field whose value is JSON already.
func (j *JSONLine) Raw(k string, v []byte) *JSONLine {
	j.key(k)
	if len(v) == 0 {
		v = []byte("null")
	}
	j.b = append(j.b, v...)
	return j
}

// Compact adds a field whose value is JSON already, without the white
// space between its tokens, as the encoder writes a json.RawMessage; it
// returns false if v is not one valid JSON value.
func (j *JSONLine) Compact(k string, v []byte) bool {
	j.key(k)
	var ok bool
	j.b, ok = AppendCompact(j.b, v)
	return ok
}

// CompactChecked is Compact, for a value whose reader checked that it is
// compact valid JSON (Call.ArgsCompact()): it is copied as it is.
func (j *JSONLine) CompactChecked(k string, v []byte, checked bool) bool {
	if !checked {
		return j.Compact(k, v)
	}
	j.key(k)
	j.b = append(j.b, v...)
	return true
}

// WriteTo ends the object and writes it as one line.
func (j *JSONLine) WriteTo(w io.Writer) (int64, error) {
	j.b = append(j.b, '}', '\n')
	n, err := w.Write(j.b)
	return int64(n), err
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string: quotes, backslashes and
// control characters, U+2028 and U+2029 escaped, invalid UTF-8 replaced
// with U+FFFD, as the go-json encoder writes them.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			// Eight bytes at a time while all are plain ASCII, then to
			// the first that is not.
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			m := hasZero(x^(lsb*'"')) | hasZero(x^(lsb*'\\')) | hasLess(x, 0x20) | x&msb
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				// Escaped as the encoder does: they end lines in JavaScript.
				b = append(b, s[start:i]...)
				b = append(b, `\u202`...)
				b = append(b, hexDigits[r&0xf])
			default:
				i += size
				continue
			}
			i += size
			start = i
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// JSONScanner walks a JSON text strictly (RFC 8259), for the readers that
// take each record's fields in one pass instead of decoding it into a
// struct. A reader that meets anything its fast path does not settle (a
// value of another type, an escaped key, a lone surrogate, invalid UTF-8,
// a nesting deeper than MaxScanDepth) decodes the record the ordinary way,
// so that both ways read every record alike.
type JSONScanner struct {
	B []byte
	I int
	// Spaced: white space was skipped between tokens.
	Spaced bool
	// ValidUTF8 says that B is known to be valid UTF-8: Skip does not
	// check its strings again.
	ValidUTF8 bool
}

// MaxScanDepth is the deepest nesting the scanner follows.
const MaxScanDepth = 1000

// Space skips white space and returns the next byte, or 0 at the end.
func (s *JSONScanner) Space() byte {
	for s.I < len(s.B) {
		switch c := s.B[s.I]; c {
		case ' ', '\t', '\n', '\r':
			s.I++
			s.Spaced = true
		default:
			return c
		}
	}
	return 0
}

// End reports whether only white space is left.
func (s *JSONScanner) End() bool {
	s.Space()
	return s.I >= len(s.B)
}

// Expect consumes the byte c after white space.
func (s *JSONScanner) Expect(c byte) bool {
	if s.Space() != c {
		return false
	}
	s.I++
	return true
}

// String consumes a string at s.I (after white space) and returns what is
// between its quotes; escaped says it has an escape, high that it has bytes
// outside ASCII.
func (s *JSONScanner) String() (content []byte, escaped, high, ok bool) {
	if s.Space() != '"' {
		return nil, false, false, false
	}
	b := s.B
	start := s.I + 1
	for i := start; i < len(b); {
		if i+8 <= len(b) {
			// Eight bytes at a time while none ends the string, escapes
			// or is a control character.
			x := binary.LittleEndian.Uint64(b[i:])
			m := hasZero(x^(lsb*'"')) | hasZero(x^(lsb*'\\')) | hasLess(x, 0x20)
			if m == 0 {
				high = high || x&msb != 0
				i += 8
				continue
			}
			// The lowest flagged byte is the first that ends the string,
			// escapes or is a control character (the tests have no false
			// positive below the first true one): go to it at once.
			k := bits.TrailingZeros64(m) >> 3
			high = high || x&msb&(1<<(8*k)-1) != 0
			i += k
		}
		c := b[i]
		switch {
		case c == '"':
			s.I = i + 1
			return b[start:i], escaped, high, true
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return nil, false, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+5 >= len(b) || !isHex4(b[i+2:i+6]) {
					return nil, false, false, false
				}
				i += 6
			default:
				return nil, false, false, false
			}
		case c < 0x20:
			return nil, false, false, false
		default:
			high = high || c >= utf8.RuneSelf
			i++
		}
	}
	return nil, false, false, false
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZero is not 0 if a byte of x is 0; hasLess if a byte is below n
// (n <= 128).
func hasZero(x uint64) uint64         { return (x - lsb) & ^x & msb }
func hasLess(x uint64, n byte) uint64 { return (x - lsb*uint64(n)) & ^x & msb }

func isHex4(h []byte) bool {
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Unquote is the text of a string's content as String returned it. ok is
// false for what the fast path leaves to the decoder: invalid UTF-8 and
// surrogate escapes.
func Unquote(content []byte, escaped, high bool) (string, bool) {
	if high && !utf8.Valid(content) {
		return "", false
	}
	if !escaped {
		return string(content), true
	}
	var out strings.Builder
	out.Grow(len(content))
	for i := 0; i < len(content); i++ {
		j := bytes.IndexByte(content[i:], '\\')
		if j < 0 {
			out.Write(content[i:])
			break
		}
		out.Write(content[i : i+j])
		i += j + 1
		switch content[i] {
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			var r rune
			for _, h := range content[i+1 : i+5] {
				r <<= 4
				switch {
				case h <= '9':
					r |= rune(h - '0')
				case h >= 'a':
					r |= rune(h - 'a' + 10)
				default:
					r |= rune(h - 'A' + 10)
				}
			}
			if utf16.IsSurrogate(r) {
				return "", false
			}
			out.WriteRune(r)
			i += 4
		default: // " \ /
			out.WriteByte(content[i])
		}
	}
	return out.String(), true
}

// Skip consumes one value of any type, checking it.
func (s *JSONScanner) Skip() bool { return s.skip(0) }

func (s *JSONScanner) skip(depth int) bool {
	if depth > MaxScanDepth {
		return false
	}
	switch s.Space() {
	case '"':
		start := s.I
		_, _, high, ok := s.String()
		return ok && (!high || s.ValidUTF8 || utf8.Valid(s.B[start:s.I]))
	case '{':
		s.I++
		if s.Space() == '}' {
			s.I++
			return true
		}
		for {
			start := s.I
			if _, _, high, ok := s.String(); !ok || high && !s.ValidUTF8 && !utf8.Valid(s.B[start:s.I]) {
				return false
			}
			if !s.Expect(':') || !s.skip(depth+1) {
				return false
			}
			switch s.Space() {
			case ',':
				s.I++
			case '}':
				s.I++
				return true
			default:
				return false
			}
		}
	case '[':
		s.I++
		if s.Space() == ']' {
			s.I++
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			switch s.Space() {
			case ',':
				s.I++
			case ']':
				s.I++
				return true
			default:
				return false
			}
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	_, ok := s.Number()
	return ok
}

func (s *JSONScanner) literal(w string) bool {
	if len(s.B)-s.I < len(w) || string(s.B[s.I:s.I+len(w)]) != w {
		return false
	}
	s.I += len(w)
	return true
}

// Number consumes a number and returns its text.
func (s *JSONScanner) Number() ([]byte, bool) {
	b, i := s.B, s.I
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() bool {
		n := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	s.I = i
	return b[start:i], true
}

// AppendCompact appends a JSON value without the white space between its
// tokens, as the encoder writes a json.RawMessage; ok is false, and dst
// unchanged, if v is not one valid JSON value.
func AppendCompact(dst, v []byte) ([]byte, bool) {
	s := JSONScanner{B: v}
	if !s.Skip() || !s.End() {
		return dst, false
	}
	if !s.Spaced {
		return append(dst, v...), true
	}
	start, in := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			dst = append(dst, v[start:i]...)
			start = i + 1
		}
	}
	return append(dst, v[start:]...), true
}

// AppendIndent appends the JSON value v indented as json.Indent does (each
// element on a line of its own, prefix "", indent per level, a space after
// a colon, "{}" and "[]" for empty ones), stepping over strings with the
// scanner, eight bytes at a time: json.Indent reads a byte at a time. v is
// valid JSON, as an encoder made it; white space between its tokens is
// dropped.
func AppendIndent(dst, v []byte, indent string) []byte {
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, indent...)
		}
	}
	s := JSONScanner{B: v}
	for s.I < len(v) {
		c := v[s.I]
		switch c {
		case '"':
			start := s.I
			if _, _, _, ok := s.String(); !ok {
				return append(dst, v[start:]...) // not JSON: the rest as it is
			}
			dst = append(dst, v[start:s.I]...)
			continue
		case '{', '[':
			dst = append(dst, c)
			s.I++
			// An empty one stays on its line.
			if e := s.Space(); e == '}' || e == ']' {
				dst = append(dst, e)
				s.I++
				continue
			}
			depth++
			newline()
			continue
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, c, ' ')
		case ' ', '\t', '\n', '\r':
		default:
			dst = append(dst, c)
		}
		s.I++
	}
	return dst
}
