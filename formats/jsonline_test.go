package formats

import (
	"bytes"
	"testing"

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
