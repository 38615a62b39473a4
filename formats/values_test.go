package formats

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/goccy/go-json"
)

type value struct {
	text string
	line int
}

// readValues reads every value; it stops at the first error and returns it.
func readValues(in string, elements, slow bool) ([]value, error) {
	var r io.Reader = strings.NewReader(in)
	if slow {
		r = iotest.OneByteReader(r)
	}
	vr := NewValueReader(r)
	vr.Elements = elements
	var out []value
	for n := 0; n < 1000; n++ {
		b, line, err := vr.Next()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		out = append(out, value{string(b), line})
	}
	return out, errors.New("the reader does not end")
}

func TestValueReader(t *testing.T) {
	pretty := "{\n  \"a\": 1,\n  \"b\": [\n    2,\n    3\n  ]\n}\n"
	for _, c := range []struct {
		name     string
		in       string
		elements bool
		want     []value
	}{
		{"one after another", `{"a":1}{"b":2}` + "\n" + `{"c":3}`, false,
			[]value{{`{"a":1}`, 1}, {`{"b":2}`, 1}, {`{"c":3}`, 2}}},
		{"pretty-printed", pretty + "\n" + pretty, false,
			[]value{{strings.TrimSpace(pretty), 1}, {strings.TrimSpace(pretty), 9}}},
		{"BOM and CRLF", "\xef\xbb\xbf{\r\n\"a\": 1\r\n}\r\n{}\r\n", false,
			[]value{{"{\r\n\"a\": 1\r\n}", 1}, {"{}", 4}}},
		{"strings with brackets", `{"s":"}{]["}` + `{"t":"a\"}b"}` + `{"u":"\\"}` + `{"v":"\\\"}"}`, false,
			[]value{{`{"s":"}{]["}`, 1}, {`{"t":"a\"}b"}`, 1}, {`{"u":"\\"}`, 1}, {`{"v":"\\\"}"}`, 1}}},
		{"scalars", `"s{" 12 -3.5e2 true` + "\nnull\n", false,
			[]value{{`"s{"`, 1}, {"12", 1}, {"-3.5e2", 1}, {"true", 1}, {"null", 2}}},
		{"an array is one value", `[{"a":1},{"b":2}]`, false,
			[]value{{`[{"a":1},{"b":2}]`, 1}}},
		{"array elements", `[{"a":1},{"b":[2,{"c":"]"}]}]`, true,
			[]value{{`{"a":1}`, 1}, {`{"b":[2,{"c":"]"}]}`, 1}}},
		{"array elements, pretty", "[\n  {\n    \"a\": 1\n  },\n  {\"b\": 2}\n]\n", true,
			[]value{{"{\n    \"a\": 1\n  }", 2}, {`{"b": 2}`, 5}}},
		{"scalar elements", `[1, "x,]", true ,null]`, true,
			[]value{{"1", 1}, {`"x,]"`, 1}, {"true", 1}, {"null", 1}}},
		{"empty array", "[ ]\n[]", true, nil},
		{"arrays one after another", `[{"a":1}]` + "\n" + `[{"b":2}]`, true,
			[]value{{`{"a":1}`, 1}, {`{"b":2}`, 2}}},
		{"objects beside arrays", `{"a":1}` + "\n" + `[{"b":2}]`, true,
			[]value{{`{"a":1}`, 1}, {`{"b":2}`, 2}}},
		{"empty", " \n\t\n", false, nil},
		{"BOM before an array", "\xef\xbb\xbf[{}]", true, []value{{"{}", 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, slow := range []bool{false, true} {
				got, err := readValues(c.in, c.elements, slow)
				if err != nil {
					t.Fatalf("slow=%v: %v (after %v)", slow, err, got)
				}
				if len(got) != len(c.want) {
					t.Fatalf("slow=%v: got %v, want %v", slow, got, c.want)
				}
				for i := range got {
					if got[i] != c.want[i] {
						t.Errorf("slow=%v: value %d = %q at line %d, want %q at line %d", slow, i, got[i].text, got[i].line, c.want[i].text, c.want[i].line)
					}
					if !json.Valid([]byte(got[i].text)) {
						t.Errorf("value %d is not valid JSON: %q", i, got[i].text)
					}
				}
			}
		})
	}
}

// TestValueReaderTruncated: input that ends inside a value is an error that
// names the line where the value began, never a value.
func TestValueReaderTruncated(t *testing.T) {
	for _, c := range []struct {
		name, in string
		elements bool
		line     int
		msg      string
		good     int // values read before the error
	}{
		{"object", "{\"a\":1}\n{\n\"b\":", false, 2, "not complete", 1},
		{"string", `{"a":1} "abc`, false, 1, "not complete", 1},
		{"escape at the end", `{"a":"x\`, false, 1, "not complete", 0},
		{"array not closed", "[{\"a\":1},\n{\"b\":2}", true, 2, "array is not closed", 2},
		{"array ends after a comma", "[{\"a\":1},\n", true, 2, "array is not closed", 1},
		{"element cut", "[{\"a\":1},\n{\"b\":", true, 2, "not complete", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readValues(c.in, c.elements, false)
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, %v; want a LineError", got, err)
			}
			if le.Line != c.line || !strings.Contains(le.Msg, c.msg) || len(got) != c.good {
				t.Errorf("got %v after %d values; want line %d, %q, after %d", err, len(got), c.line, c.msg, c.good)
			}
		})
	}
}

// TestValueReaderSkipsGarbage: a line that cannot start a value is an
// error, and reading goes on after it (--lenient).
func TestValueReaderSkipsGarbage(t *testing.T) {
	vr := NewValueReader(strings.NewReader("{\"a\":1}\n# not json at all\n{\"b\":2}\n"))
	var got []string
	var errs []int
	for {
		b, _, err := vr.Next()
		if err == io.EOF {
			break
		}
		var le *LineError
		if errors.As(err, &le) {
			errs = append(errs, le.Line)
			if len(errs) > 5 {
				t.Fatal("the same error again and again")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if strings.Join(got, " ") != `{"a":1} {"b":2}` || len(errs) != 1 || errs[0] != 2 {
		t.Errorf("values %q, errors at lines %v", got, errs)
	}
}

func TestInterner(t *testing.T) {
	var in Interner
	a := in.String([]byte("bash"))
	b := in.String([]byte("bash"))
	if a != "bash" || b != "bash" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("got %q %q, want one string", a, b)
	}
	for i := 0; i < 2*internMax; i++ {
		in.String([]byte(strconv.Itoa(i)))
	}
	if len(in.m) > internMax {
		t.Fatalf("%d texts kept, want at most %d", len(in.m), internMax)
	}
	long := strings.Repeat("n", internLen+1)
	if got := in.String([]byte(long)); got != long || in.m[long] != "" {
		t.Fatalf("a long text: %q, kept %v", got, in.m[long] != "")
	}
}

// FuzzValueReader: the values, their lines and the errors of an input
// split by value, which scans the buffer in chunks, are those of the
// reference that reads a byte at a time, whatever the buffer's size (a
// value across many chunks).
func FuzzValueReader(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "{\"a\":\"x\\\"}\"}\n[1, 2]\n", "  1 2 true\n\"s\"", "[{\"a\":[1,{}]},\n{\"b\":\"\\n\"}]", "{\"a\":\n1", "}{", "x\n{}", "\"a\nb\" 3,4"} {
		f.Add(s, uint8(16), false)
		f.Add(s, uint8(0), true)
	}
	f.Fuzz(func(t *testing.T, in string, size uint8, elements bool) {
		n := 16 + int(size)
		split := func(ref bool) []string {
			v := NewValueReader(bufio.NewReaderSize(strings.NewReader(in), n))
			v.Elements = elements
			if ref {
				v.ref = byteValue
			}
			var out []string
			for range 1000 {
				b, line, err := v.Next()
				if err != nil {
					out = append(out, fmt.Sprintf("%d: %v", line, err))
					if err == io.EOF || len(out) > 100 {
						break
					}
					continue
				}
				out = append(out, fmt.Sprintf("%d: %q", line, b))
			}
			return out
		}
		if got, want := split(false), split(true); !slices.Equal(got, want) {
			t.Errorf("buffer %d, elements %v: %q\n got %q\nwant %q", n, elements, in, got, want)
		}
	})
}

// byteValue is value as it was first written, a byte per call: the
// reference that FuzzValueReader holds value to.
func byteValue(v *ValueReader) ([]byte, error) {
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
	depth, inStr, esc := 0, false, false
	for {
		c, err := v.br.ReadByte()
		if err != nil {
			if err == io.EOF {
				if len(v.buf) > 0 && depth == 0 && !inStr {
					return v.buf, nil
				}
				return nil, Errorf(start, "the JSON value starting here is not complete: the input ends inside it (cut?)")
			}
			return nil, err
		}
		if len(v.buf) >= MaxLine {
			return nil, Errorf(start, "a JSON value longer than 256 MiB")
		}
		if c == '\n' {
			v.line++
		}
		if inStr {
			v.buf = append(v.buf, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
				if depth == 0 {
					return v.buf, nil
				}
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				v.br.UnreadByte()
				return v.buf, nil
			}
			depth--
			if depth == 0 {
				v.buf = append(v.buf, c)
				return v.buf, nil
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				if c == ',' {
					v.br.UnreadByte()
				}
				return v.buf, nil
			}
		}
		v.buf = append(v.buf, c)
	}
}
