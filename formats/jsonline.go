package formats

import (
	"io"
	"strconv"
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
