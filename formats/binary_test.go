package formats

import "testing"

func TestBinary(t *testing.T) {
	for _, tc := range []struct {
		in     string
		line   int
		binary bool
	}{
		{"plain text\nand more\n", 1, false},
		{"", 1, false},
		{"caf\uFFFD au lait, \x1b[1mbold\x1b[0m\ttab\r\n", 1, false},
		{"a\nb\nc\x00d", 3, true},
		{"\uFFFD\uFFFD\x01 ab", 1, true},
		{"\x7fELF\x02\x01\x01", 1, true},
	} {
		line, bin := Binary([]byte(tc.in))
		if bin != tc.binary || bin && line != tc.line {
			t.Errorf("Binary(%q) = %d, %v; want %d, %v", tc.in, line, bin, tc.line, tc.binary)
		}
	}
}
