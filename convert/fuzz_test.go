package convert

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDetect: detection and a whole conversion of any input never panic or
// hang, fail only as an input error with FILE:LINE, and write valid UTF-8.
func FuzzDetect(f *testing.F) {
	for _, in := range fixtures(f) {
		if b, err := os.ReadFile(in); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, score := Detect(data)
		if score < 0 || score > 100 {
			t.Fatalf("%s scored %d", d.Name, score)
		}
		code, out, stderr := runCLI(string(data), "--deterministic", "--to", "adal-json")
		switch code {
		case ExitOK:
		case ExitInput:
			if !placeRE.MatchString(stderr) {
				t.Fatalf("failed without FILE:LINE: %q", stderr)
			}
		default:
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if strings.Contains(stderr, "internal error") {
			t.Fatal(stderr)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out: %q", out)
		}
	})
}
