package formats

import (
	"bufio"
	"bytes"
	"io"
)

// ValueReader splits an input into top-level JSON values, for the dialects
// that print whole objects rather than one per line: pretty-printed objects,
// objects one after another, or (with Elements) the elements of a top-level
// array. It does not parse the values, only finds where each ends, so that a
// reader can decode just the fields it needs. Memory grows with the largest
// value only.
type ValueReader struct {
	br *bufio.Reader
	// Elements: a top-level array yields its elements one by one.
	Elements bool
	line     int // current line, 1-based
	inArray  bool
	buf      []byte
	started  bool
	// ref, when set, reads each value in place of value: the reference
	// that FuzzValueReader holds value to.
	ref func(*ValueReader) ([]byte, error)
}

// NewValueReader wraps r. A reader of bytes in memory gets a buffer no
// larger than they are: detection reads the first value of a small head
// many times over.
func NewValueReader(r io.Reader) *ValueReader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		size := 64 << 10
		if b, ok := r.(*bytes.Reader); ok {
			size = min(size, max(16, b.Len()))
		}
		br = bufio.NewReaderSize(r, size)
	}
	return &ValueReader{br: br, line: 1}
}

// Next returns the next value and the line it starts on. The slice is valid
// until the next call. It returns io.EOF at the end.
func (v *ValueReader) Next() ([]byte, int, error) {
	if !v.started {
		v.started = true
		if b, err := v.br.Peek(3); err == nil && string(b) == "\xef\xbb\xbf" {
			v.br.Discard(3)
		}
	}
	c, err := v.skipSpace()
	if err != nil {
		if err == io.EOF && v.inArray {
			return nil, v.line, Errorf(v.line, "the JSON array is not closed: the input ends inside it (cut?)")
		}
		return nil, v.line, err
	}
	if v.Elements && !v.inArray && c == '[' {
		v.br.ReadByte()
		v.inArray = true
		return v.Next()
	}
	if v.inArray {
		if c == ',' {
			v.br.ReadByte()
			if c, err = v.skipSpace(); err != nil {
				return nil, v.line, Errorf(v.line, "the JSON array is not closed: the input ends inside it (cut?)")
			}
		}
		if c == ']' {
			v.br.ReadByte()
			v.inArray = false
			return v.Next()
		}
	}
	start := v.line
	if v.ref != nil {
		b, err := v.ref(v)
		return b, start, err
	}
	b, err := v.value()
	return b, start, err
}

func (v *ValueReader) skipSpace() (byte, error) {
	for {
		c, err := v.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case '\n':
			v.line++
		case ' ', '\t', '\r':
		default:
			v.br.UnreadByte()
			return c, nil
		}
	}
}

// value reads one JSON value: an object or array by bracket depth, or a
// scalar up to the next delimiter.
func (v *ValueReader) value() ([]byte, error) {
	v.buf = v.buf[:0]
	start := v.line
	if c, err := v.br.ReadByte(); err == nil {
		if c != '"' && c != '{' && c != '[' && !isScalarStart(c) {
			// Not a value: skip the rest of the line, so that the next call
			// goes on after it.
			if c != '\n' {
				v.br.ReadSlice('\n')
			}
			v.line++
			return nil, Errorf(start, "unexpected %q where a JSON value should start", c)
		}
		v.br.UnreadByte()
	}
	// The value is scanned in the buffer's chunks, not a byte per call.
	depth, inStr, esc := 0, false, false
	for {
		if v.br.Buffered() == 0 {
			if _, err := v.br.Peek(1); err != nil {
				if err == io.EOF {
					if len(v.buf) > 0 && depth == 0 && !inStr {
						return v.buf, nil
					}
					return nil, Errorf(start, "the JSON value starting here is not complete: the input ends inside it (cut?)")
				}
				return nil, err
			}
		}
		room := MaxLine - len(v.buf)
		if room <= 0 {
			return nil, Errorf(start, "a JSON value longer than 256 MiB")
		}
		chunk, _ := v.br.Peek(min(v.br.Buffered(), room))
		for i := 0; i < len(chunk); i++ {
			if inStr && !esc {
				// Inside a string, jump to its closing quote: most of a
				// record is strings.
				rest := chunk[i:]
				q := closingQuote(rest)
				if q < 0 {
					v.line += bytes.Count(rest, newline)
					esc = trailingBackslashes(rest)%2 == 1
					break
				}
				v.line += bytes.Count(rest[:q], newline)
				inStr = false
				i += q
				if depth == 0 {
					return v.take(chunk, i+1, i+1), nil
				}
				continue
			}
			c := chunk[i]
			if inStr {
				// The character a backslash at the end of the last chunk
				// escapes.
				if c == '\n' {
					v.line++
				}
				esc = false
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '{', '[':
				depth++
			case '}', ']':
				if depth == 0 {
					return v.take(chunk, i, i), nil
				}
				depth--
				if depth == 0 {
					return v.take(chunk, i+1, i+1), nil
				}
			case '\n':
				v.line++
				if depth == 0 {
					return v.take(chunk, i, i+1), nil
				}
			case ' ', '\t', '\r':
				if depth == 0 {
					return v.take(chunk, i, i+1), nil
				}
			case ',':
				if depth == 0 {
					return v.take(chunk, i, i), nil
				}
			}
		}
		v.buf = append(v.buf, chunk...)
		v.br.Discard(len(chunk))
	}
}

var newline = []byte{'\n'}

// closingQuote is the index in b of the quote that closes a string that b
// is the rest of (no escape pending at its start): the first quote not
// escaped by an odd run of backslashes; -1 if b has none.
func closingQuote(b []byte) int {
	from := 0
	for {
		q := bytes.IndexByte(b[from:], '"')
		if q < 0 {
			return -1
		}
		q += from
		if trailingBackslashes(b[:q])%2 == 0 {
			return q
		}
		from = q + 1
	}
}

// trailingBackslashes counts the backslashes that end b.
func trailingBackslashes(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n
}

// take ends a value in chunk, the buffer's: its first n bytes are the
// value's last, and the first used of them are read.
func (v *ValueReader) take(chunk []byte, n, used int) []byte {
	v.buf = append(v.buf, chunk[:n]...)
	v.br.Discard(used)
	return v.buf
}

func isScalarStart(c byte) bool {
	return c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n'
}

// Interner gives one string for each short text it is asked for again
// (tool names, statuses), so that a reader does not allocate the same name
// on every line. It keeps at most internMax texts of internLen bytes or
// less; others are copied each time.
type Interner struct {
	m map[string]string
}

const (
	internMax = 1024
	internLen = 64
)

// String returns b as a string, the same one as for an earlier equal b.
func (in *Interner) String(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(b) <= internLen && len(in.m) < internMax {
		if in.m == nil {
			in.m = map[string]string{}
		}
		in.m[s] = s
	}
	return s
}
