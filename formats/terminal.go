package formats

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Unsafe says whether r, printed as it is, could drive a terminal or
// change how the text around it reads: the C0 controls (tab and line
// break included; a caller that keeps them says so), DEL, the C1 controls,
// and Unicode's bidirectional embeddings, overrides, isolates and marks.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// Visible is s as a terminal may show it, for strings from the input that
// reach a table, a warning or an error: each unsafe character, and each
// byte of invalid UTF-8, is written as an escape (\x1b, \u202e, \n), so
// that it shows what it is and does nothing. With keepLines, line breaks
// and tabs stay as they are.
func Visible(s string, keepLines bool) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || Unsafe(r) && !(keepLines && (r == '\n' || r == '\t')) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && Unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case Unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
