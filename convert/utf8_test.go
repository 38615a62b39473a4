package convert

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func TestValidUTF8Reader(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		badLine        int
	}{
		{"valid", "héllo\nwörld ✓\n", "héllo\nwörld ✓\n", 0},
		{"bad byte", "a\nb\xffc\n", "a\nb\uFFFDc\n", 2},
		{"cut sequence at the end", "ok\n\xe2\x9c", "ok\n\uFFFD\uFFFD", 2},
		{"bad in every line", "\xfe\n\xff\n", "\uFFFD\n\uFFFD\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time, so that runes are cut across reads.
			for _, src := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				calls, line := 0, 0
				r := newValidUTF8Reader(src, func(l int) { calls++; line = l })
				var out bytes.Buffer
				if _, err := io.Copy(&out, r); err != nil {
					t.Fatal(err)
				}
				if out.String() != tc.want || !utf8.Valid(out.Bytes()) {
					t.Errorf("got %q, want %q", out.String(), tc.want)
				}
				if wantCalls := map[bool]int{true: 1, false: 0}[tc.badLine > 0]; calls != wantCalls || line != tc.badLine {
					t.Errorf("reported %d times at line %d, want %d at %d", calls, line, wantCalls, tc.badLine)
				}
			}
		})
	}
}

func TestInvalidUTF8IsReplacedAndReportedOnce(t *testing.T) {
	in := "{\"type\":\"answer\",\"content\":\"caf\xe9 \xff\"}\n{\"type\":\"error\",\"message\":\"\xfe\"}\n{\"type\":\"complete\",\"exit_code\":1}\n"
	for _, to := range []string{"adal-stream", "adal-json"} {
		code, out, stderr := runCLI(in, "--from", "adal-stream", "--to", to)
		if code != 0 || !utf8.ValidString(out) || !strings.Contains(out, "caf\uFFFD \uFFFD") {
			t.Errorf("%s: exit %d, output %q", to, code, out)
		}
		if strings.Count(stderr, "invalid UTF-8") != 1 || !strings.Contains(stderr, "<stdin>:1: invalid UTF-8") {
			t.Errorf("%s: stderr %q", to, stderr)
		}
	}
}
