package formats

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/goccy/go-json"
)

// readLines reads every line, and the line number of each.
func readLines(t *testing.T, r io.Reader) (lines []string, nums []int) {
	t.Helper()
	lr := NewLineReader(r)
	for {
		b, err := lr.Next()
		if err == io.EOF {
			return lines, nums
		}
		if err != nil {
			t.Fatalf("after %d lines: %v", len(lines), err)
		}
		lines = append(lines, string(b))
		nums = append(nums, lr.Line())
	}
}

func TestLineReader(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string
		nums     []int
	}{
		{"empty", "", nil, nil},
		{"only blank lines", "\n \n\t\r\n", nil, nil},
		{"no final newline", "a\nb", []string{"a", "b"}, []int{1, 2}},
		{"BOM", "\xef\xbb\xbf{\"a\":1}\n{}\n", []string{`{"a":1}`, "{}"}, []int{1, 2}},
		{"BOM only at the start", "a\n\xef\xbb\xbfb\n", []string{"a", "\xef\xbb\xbfb"}, []int{1, 2}},
		{"BOM before a blank line", "\xef\xbb\xbf\nx\n", []string{"x"}, []int{2}},
		{"CRLF", "a\r\nb\r\n\r\nc", []string{"a", "b", "c"}, []int{1, 2, 4}},
		{"CR inside a line stays", "a\rb\r\n", []string{"a\rb"}, []int{1}},
		{"blank lines are counted", "\n\na\n   \nb\n\n", []string{"a", "b"}, []int{3, 5}},
		{"leading spaces stay", "  a \n", []string{"  a "}, []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// One byte at a time too: a slow pipe must give the same lines.
			for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
				got, nums := readLines(t, r)
				if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
					t.Errorf("lines %q, want %q", got, c.want)
				}
				for i := range nums {
					if i < len(c.nums) && nums[i] != c.nums[i] {
						t.Errorf("line numbers %v, want %v", nums, c.nums)
						break
					}
				}
			}
		})
	}
}

// TestLongLines: lines longer than the 64 KiB buffer come back whole, with
// and without a final newline, and with a CRLF ending.
func TestLongLines(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	in := "short\n" + long + "\r\n" + "after\n" + long + "y"
	got, nums := readLines(t, strings.NewReader(in))
	want := []string{"short", long, "after", long + "y"}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %d bytes, want %d", i+1, len(got[i]), len(want[i]))
		}
	}
	if nums[3] != 4 {
		t.Errorf("line numbers %v", nums)
	}
	// A long first line loses its BOM too.
	got, _ = readLines(t, strings.NewReader("\xef\xbb\xbf"+long+"\n"))
	if len(got) != 1 || got[0] != long {
		t.Errorf("a long line after a BOM: %d lines", len(got))
	}
}

// genReader yields n bytes of 'x' without holding them, then the rest.
type genReader struct {
	n    int
	rest *strings.Reader
}

var xs = bytes.Repeat([]byte("x"), 64<<10)

func (g *genReader) Read(p []byte) (int, error) {
	if g.n > 0 {
		k := copy(p[:min(len(p), g.n)], xs)
		g.n -= k
		return k, nil
	}
	return g.rest.Read(p)
}

// TestLineTooLong: a line past MaxLine is reported with its number, as a
// malformed line, and skipped, and the next line reads as usual (what
// --lenient relies on).
func TestLineTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 256 MiB")
	}
	lr := NewLineReader(io.MultiReader(strings.NewReader("first\n"), &genReader{n: MaxLine + 10, rest: strings.NewReader("\r\n{\"next\":1}\n")}))
	if b, err := lr.Next(); err != nil || string(b) != "first" {
		t.Fatalf("first line: %q, %v", b, err)
	}
	_, err := lr.Next()
	var le *LineError
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "line 2") || !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("got %v, want ErrLineTooLong at line 2, a malformed line (LineError) that --lenient skips", err)
	}
	b, err := lr.Next()
	if err != nil || string(b) != `{"next":1}` || lr.Line() != 3 {
		t.Errorf("after the long line: %q, %v at line %d", b, err, lr.Line())
	}
	if _, err := lr.Next(); err != io.EOF {
		t.Errorf("want EOF, got %v", err)
	}
}

// TestLineAtMaxLine: a line of exactly MaxLine bytes is still read.
func TestLineAtMaxLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 256 MiB")
	}
	lr := NewLineReader(&genReader{n: MaxLine, rest: strings.NewReader("\nok\n")})
	b, err := lr.Next()
	if err != nil || len(b) != MaxLine {
		t.Fatalf("%d bytes, %v; want %d", len(b), err, MaxLine)
	}
	if b, err := lr.Next(); err != nil || string(b) != "ok" {
		t.Errorf("next: %q, %v", b, err)
	}
}

func TestHeadLines(t *testing.T) {
	head := []byte("\xef\xbb\xbf{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":")
	got := HeadLines(head, 8)
	if len(got) != 2 || string(got[0]) != `{"a":1}` || string(got[1]) != `{"b":2}` {
		t.Errorf("HeadLines = %q; the cut last line is left out", got)
	}
	if got := HeadLines([]byte(`{"only":"cut`), 8); len(got) != 1 {
		t.Errorf("a lone cut line is kept: %q", got)
	}
	if got := HeadLines(head, 1); len(got) != 1 {
		t.Errorf("n=1: %q", got)
	}
	if got := HeadLines(nil, 3); len(got) != 0 {
		t.Errorf("empty: %q", got)
	}
}

func TestTypeOfAndDetect(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"answer","content":"x"}`: "answer",
		`{"content":"x"}`:                 "",
		`{"type":3}`:                      "",
		`[1]`:                             "",
		`not json`:                        "",
	} {
		if got := TypeOf([]byte(in)); got != want {
			t.Errorf("TypeOf(%s) = %q, want %q", in, got, want)
		}
	}
	known := func(_ []byte, typ string) bool { return typ == "a" || typ == "b" }
	for in, want := range map[string]int{
		"{\"type\":\"a\"}\n{\"type\":\"b\"}\n": 100,
		"{\"type\":\"a\"}\n{\"type\":\"z\"}\n": 50,
		"{\"type\":\"a\"}\nplain text\n":       0,
		"":                                     0,
	} {
		if got := DetectByTypes([]byte(in), known); got != want {
			t.Errorf("DetectByTypes(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestUnmarshalError(t *testing.T) {
	var v struct{ A int }
	err := Unmarshal(7, []byte(`{"A": "x", "pad": "`+strings.Repeat("é", 40)+`"}`), &v)
	if err == nil || err.Line != 7 || !strings.HasPrefix(err.Error(), "line 7: not valid JSON") {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "…") {
		t.Errorf("a long record is quoted cut: %v", err)
	}
	if Unmarshal(1, []byte(`{"A":1}`), &v) != nil || v.A != 1 {
		t.Errorf("valid JSON: %+v", v)
	}
}

func TestSnippetKeepsRunesWhole(t *testing.T) {
	s := Snippet([]byte(strings.Repeat("a", 59) + "é and more"))
	if strings.Contains(s, `\x`) || !strings.HasSuffix(s, "…") {
		t.Errorf("Snippet cut a rune: %s", s)
	}
}

func TestWriteJSONLine(t *testing.T) {
	var b bytes.Buffer
	v := struct {
		Z string `json:"z"`
		A string `json:"a"`
	}{"<b>&", "x"}
	if err := WriteJSONLine(&b, v); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != `{"z":"<b>&","a":"x"}`+"\n" {
		t.Errorf("got %q: fields in order, no HTML escaping, one line", got)
	}
	b.Reset()
	WriteRawLine(&b, []byte(`{"raw" : 1}`))
	if b.String() != "{\"raw\" : 1}\n" {
		t.Errorf("WriteRawLine: %q", b.String())
	}
}

func TestUnmarshalObject(t *testing.T) {
	var v struct{ A int }
	for in, want := range map[string]string{`{"A":1}`: "", `null`: "not a JSON object", `[1]`: "not valid JSON", `{`: "not valid JSON"} {
		err := UnmarshalObject(3, []byte(in), &v)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want) || err.Line != 3) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func TestLineArenaCopies(t *testing.T) {
	var a LineArena
	src := []byte("one line")
	first := a.Copy(src)
	src[0] = 'X'
	second := a.Copy([]byte("two"))
	if string(first) != "one line" || string(second) != "two" {
		t.Fatalf("copies %q %q", first, second)
	}
	// A copy is capped: appending to one does not write over the next.
	_ = append(first, "!!!"...)
	if string(second) != "two" {
		t.Fatalf("appending to a copy changed the next: %q", second)
	}
	long := bytes.Repeat([]byte("x"), arenaMax+1)
	if c := a.Copy(long); !bytes.Equal(c, long) || cap(c) >= arenaChunk {
		t.Fatalf("a long line: len %d cap %d", len(c), cap(c))
	}
	// Many lines fill several chunks, each copy still intact.
	var kept [][]byte
	for i := 0; i < 3*arenaChunk/100; i++ {
		kept = append(kept, a.Copy(bytes.Repeat([]byte{byte('a' + i%26)}, 100)))
	}
	for i, c := range kept {
		if len(c) != 100 || c[0] != byte('a'+i%26) || c[99] != byte('a'+i%26) {
			t.Fatalf("copy %d changed: %q", i, c)
		}
	}
}

func TestMarkValidUTF8(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("{}\n"), 64<<10)
	if NewLineReader(br).ValidUTF8() {
		t.Fatal("an input not marked is taken as valid UTF-8")
	}
	unmark := MarkValidUTF8(br)
	if !NewLineReader(br).ValidUTF8() {
		t.Fatal("a marked input is not taken as valid UTF-8")
	}
	other := bufio.NewReaderSize(strings.NewReader("{}\n"), 64<<10)
	if NewLineReader(other).ValidUTF8() {
		t.Fatal("another input is taken as valid UTF-8")
	}
	unmark()
	if NewLineReader(br).ValidUTF8() {
		t.Fatal("an unmarked input is still taken as valid UTF-8")
	}
}

// oddUsage has a type of its own decoding, as readers' messages do: the
// decoder's offsets are then in its part of the record.
type oddUsage struct{ U struct{ In, Out *int64 } }

func (o *oddUsage) UnmarshalJSON(b []byte) error {
	var v struct {
		In  *int64 `json:"in"`
		Out *int64 `json:"out"`
	}
	err := json.Unmarshal(b, &v)
	o.U.In, o.U.Out = v.In, v.Out
	return err
}

// TestUnmarshalOddNumbers: a number that is not what its field holds is
// read as not given with a warning, or as the whole number it writes
// another way; the record is not lost.
func TestUnmarshalOddNumbers(t *testing.T) {
	for _, c := range []struct {
		in      string
		in1     *int64
		out     *int64
		warning string
	}{
		{`{"m":{"in":1.5,"out":7}}`, nil, ptr(7), "in 1.5"},
		{`{"m":{"in":12.0,"out":1e3}}`, ptr(12), ptr(1000), ""},
		{`{"m":{"in":1e400, "out" : 99999999999999999999}}`, nil, nil, "in 1e400, out 99999999999999999999"},
		{`{"m":{"in":-2.5,"out":-3}}`, nil, ptr(-3), "in -2.5"},
	} {
		var v struct {
			M oddUsage `json:"m"`
		}
		var w bytes.Buffer
		if err := NewReport(&w).Unmarshal(1, []byte(c.in), &v); err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if !same(v.M.U.In, c.in1) || !same(v.M.U.Out, c.out) {
			t.Errorf("%s: in %v, out %v", c.in, v.M.U.In, v.M.U.Out)
		}
		if got := w.String(); c.warning == "" && got != "" || !strings.Contains(got, c.warning) {
			t.Errorf("%s: warning %q, want one naming %q", c.in, got, c.warning)
		}
	}
	var v struct{ N int64 }
	if err := NewReport(io.Discard).Unmarshal(1, []byte(`{"N":"a string"}`), &v); err == nil {
		t.Error("a string for a number is not a number of the wrong kind")
	}
}

func ptr(n int64) *int64 { return &n }

func same(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
