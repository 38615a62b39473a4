package formats

import (
	"bytes"
	stdjson "encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-json"
)

func TestAppendJSONStringMatchesTheEncoder(t *testing.T) {
	for _, s := range []string{"", "plain", `quo"te`, `back\slash`, "new\nline\r\ttab", "\x00\x01\x1f", "<html>&", "ünï 日本 🙂", "bad \xff utf8 \xc3", "\u2028"} {
		got := AppendJSONString(nil, s)
		want, _ := Marshal(s)
		if !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%q: %s does not decode: %v", s, got, err)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain text, long enough", "a \"quote\" and a \\ tab\there", "ünï 日本 🙂 \u2028\u2029 x", "bad \xff utf8 \xc3", "\x00\x01\x1f\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendJSONString(nil, s)
		want, err := Marshal(s)
		if err != nil {
			t.Skip()
		}
		// The one known difference: \b and \f are written \u0008 and
		// \u000c, where the encoder writes \b and \f.
		if !strings.ContainsAny(s, "\b\f") && !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil || utf8.ValidString(s) && back != s {
			t.Fatalf("%q: %s decodes to %q (%v)", s, got, back, err)
		}
	})
}

func TestJSONLine(t *testing.T) {
	var j JSONLine
	var out bytes.Buffer
	j.Begin().Str("a", "x\"y").Int("n", -3).Bool("b", true).Null("z").Raw("r", []byte(`{"k":[1]}`)).Raw("e", nil)
	if _, err := j.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"x\"y","n":-3,"b":true,"z":null,"r":{"k":[1]},"e":null}` + "\n"; out.String() != want {
		t.Errorf("got %s want %s", out.String(), want)
	}
}

// scanCases are JSON texts, valid and not, for the scanner's tests and
// the seeds of its fuzz target.
var scanCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `1E+2`, `true`, `false`, `null`, ` { "a" : [ 1 , 2 , { } ] } `,
	`{"type":"tool_call","id":"c1","name":"bash","args":{"command":"ls \"a b\"\tc"}}`,
	`"tab\there \"q\" back\\slash \u00e9 \u2028 ü 🙂"`, `"\ud83d\ude42"`, `"\ud800"`, `"\/"`,
	`01`, `1.`, `.5`, `-`, `1e`, `tru`, `nul`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{,}`, `{"a":1 "b":2}`,
	"\"ctl \x01\"", "\"bad \xff utf8\"", `"\x"`, `"\u12"`, `"open`, `{"a":1`, `[`, `{"k\u0065y":1}`, `{"\xff":1}`,
}

// The scanner accepts exactly the valid JSON texts.
func TestJSONScannerAgreesWithTheDecoder(t *testing.T) {
	for _, c := range scanCases {
		checkScan(t, []byte(c))
	}
}

func FuzzJSONScanner(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkScan(t, b) })
}

func checkScan(t *testing.T, b []byte) {
	t.Helper()
	s := JSONScanner{B: b}
	ok := s.Skip() && s.End()
	if valid := stdjson.Valid(b) && utf8.Valid(b); ok != valid {
		t.Fatalf("%q: the scanner says valid=%v, encoding/json %v", b, ok, valid)
	}
	if got, ok := AppendCompact(nil, b); ok {
		var want bytes.Buffer
		stdjson.Compact(&want, b)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%q: compacted to %s, want %s", b, got, want.Bytes())
		}
	}
	// Decode reads an output as the decoder does, or keeps its text.
	e := Event{Call: Call{Output: JSONOutput(b)}}
	e.Call.Output.Decode()
	var want string
	if err := json.Unmarshal(b, &want); err != nil {
		want = string(b)
	}
	if len(b) > 0 && (e.Call.Output.Text() != want || e.Call.Output.Undecoded()) {
		t.Fatalf("%q: Decode gives %q, want %q", b, e.Call.Output.Text(), want)
	}
	s = JSONScanner{B: b}
	if content, esc, high, ok := s.String(); ok && s.End() {
		if want := bytes.ContainsFunc(content, func(r rune) bool { return r >= utf8.RuneSelf }); high != want {
			t.Fatalf("%q: the scanner says high=%v, want %v", b, high, want)
		}
		got, ok := Unquote(content, esc, high)
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: the scanner takes a string that the decoder does not: %v", b, err)
		}
		if ok && got != want {
			t.Fatalf("%q: unquoted to %q, the decoder to %q", b, got, want)
		}
		// A literal its reader checked decodes as the decoder does.
		if !high || utf8.Valid(content) {
			if got := CheckedJSONOutput(bytes.TrimSpace(b), esc).Decoded(); got != want {
				t.Fatalf("%q: checked, decoded to %q, the decoder to %q", b, got, want)
			}
		}
	}
}

// go test ./formats -run '^$' -bench AppendJSONString
func BenchmarkAppendJSONString(b *testing.B) {
	for _, s := range []struct{ name, s string }{
		{"ascii", strings.Repeat("plain text of a tool output, path/to/file.go:12: ok ", 20)},
		{"dense", strings.Repeat("naïve café back\\slash x\ty a \"quote\" — ", 20)},
	} {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(s.s)))
			var buf []byte
			for i := 0; i < b.N; i++ {
				buf = AppendJSONString(buf[:0], s.s)
			}
		})
	}
}

func TestOutputIsEmpty(t *testing.T) {
	for _, c := range []struct {
		out  Output
		want bool
	}{
		{Output{}, true},
		{JSONOutput([]byte(`""`)), true},
		{JSONOutput([]byte(`"x"`)), false},
		{JSONOutput([]byte(`"\n"`)), false},
		{TextOutput("x"), false},
		{ValueOutput([]byte(`{}`), "{}"), false},
	} {
		if got := c.out.IsEmpty(); got != c.want {
			t.Errorf("%+v: IsEmpty %v, want %v", c.out, got, c.want)
		}
	}
}

// Each encoding of an output gives the same text, JSON and value through
// the methods, so that no writer depends on the reader's choice.
func TestOutputEncodings(t *testing.T) {
	lit := []byte(`"a \"b\"\n\u00e9"`)
	for _, c := range []struct {
		name      string
		out       Output
		text      string // Text before Decode
		undecoded bool
		value     string
	}{
		{"text", TextOutput("a \"b\"\né"), "a \"b\"\né", false, ""},
		{"literal", JSONOutput(lit), "", true, ""},
		{"value", ValueOutput([]byte(`{"k":1}`), `{"k":1}`), `{"k":1}`, false, `{"k":1}`},
	} {
		o := c.out
		if o.Text() != c.text || o.Undecoded() != c.undecoded || string(o.Value()) != c.value {
			t.Errorf("%s: Text %q Undecoded %v Value %s", c.name, o.Text(), o.Undecoded(), o.Value())
		}
		want := c.text
		if c.undecoded {
			want = "a \"b\"\né"
		}
		if d := o.Decoded(); d != want || o.Undecoded() != c.undecoded {
			t.Errorf("%s: Decoded %q (want %q) changed the output", c.name, d, want)
		}
		if c.undecoded && (!bytes.Equal(o.AppendJSON([]byte("x")), append([]byte("x"), lit...)) || o.SizeBound() != len(lit)) {
			t.Errorf("%s: AppendJSON %s SizeBound %d, want the literal", c.name, o.AppendJSON(nil), o.SizeBound())
		}
		o.Decode()
		if o.Text() != want || o.Undecoded() || string(o.Value()) != c.value || o.SizeBound() != len(want) {
			t.Errorf("%s: after Decode Text %q Undecoded %v Value %s", c.name, o.Text(), o.Undecoded(), o.Value())
		}
		var back string
		if err := json.Unmarshal(o.AppendJSON(nil), &back); err != nil || back != want {
			t.Errorf("%s: AppendJSON %s reads back as %q, %v", c.name, o.AppendJSON(nil), back, err)
		}
	}
}

// FuzzAppendIndent holds AppendIndent to json.Indent on valid JSON.
func FuzzAppendIndent(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":"c\"d\\"}],"e":{},"f":[],"g":"x:y,z{}"}`,
		`[ {"a" : [ ] } , "\\\\" , null , true , -1.5e3 ]`,
		`"just a string"`,
		`{"steps":[{"tool_calls":[{"arguments":{"cmd":"ls -la"}}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !stdjson.Valid(v) {
			return
		}
		var want bytes.Buffer
		if err := stdjson.Indent(&want, bytes.TrimLeft(v, " \t\r\n"), "", "  "); err != nil {
			t.Fatal(err)
		}
		// json.Indent keeps white space after the value; AppendIndent drops it.
		w := bytes.TrimRight(want.Bytes(), " \t\r\n")
		if got := AppendIndent(nil, v, "  "); !bytes.Equal(got, w) {
			t.Fatalf("AppendIndent(%q) =\n%s\njson.Indent gives\n%s", v, got, w)
		}
	})
}
