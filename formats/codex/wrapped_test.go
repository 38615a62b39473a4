package codex

import (
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-json"
)

// wrappedByMap is wrapped as it was: the object's keys decoded as a map,
// then the wrapper decoded, white space around it trimmed.
func wrappedByMap(s string) (outputWrapper, bool) {
	s = strings.TrimSpace(s)
	var w outputWrapper
	var keys map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &keys) != nil {
		return w, false
	}
	for k := range keys {
		if wrapperKey(k) < 0 {
			return w, false
		}
	}
	if json.Unmarshal([]byte(s), &w) != nil || w.Output == nil {
		return w, false
	}
	return w, true
}

// FuzzWrapped holds wrapped, which scans the wrapper's keys, to the
// decode of them as a map.
func FuzzWrapped(f *testing.F) {
	for _, s := range []string{
		`{"output":"ok","metadata":{"exit_code":0,"duration_seconds":0.5}}`,
		`{"output":"x","success":false,"error":"no"}`,
		`{"output":"x","other":1}`,
		`{"output":"x","Output":"y"}`,
		`{"output":"x","metad\u0061ta":{"exit_code":2}}`,
		`{"output":"x"} trailing`,
		`{"output":"x",}`,
		`{"output":null}`,
		`{"output":"\ud800"}`,
		`{"output":"x","metadata":{"exit_code":"2"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) < 9 || s[:9] != `{"output"` {
			s = `{"output"` + s
		}
		want, wok := wrappedByMap(s)
		got, gok := wrapped(s, false)
		got.text, got.escaped, got.high = nil, false, false
		if gok != wok || gok && !reflect.DeepEqual(got, want) {
			t.Fatalf("wrapped(%q) = %+v, %v; by a map: %+v, %v", s, got, gok, want, wok)
		}
		// For the figures, the same but for a successful call's text.
		fig, fok := wrapped(s, true)
		fig.text, fig.escaped, fig.high = nil, false, false
		if fok && !want.failed() && fig.Output != nil && *fig.Output == "" {
			fig.Output = want.Output
		}
		if fok != wok || fok && !reflect.DeepEqual(fig, want) {
			t.Fatalf("wrapped(%q) for the figures = %+v, %v; by a map: %+v, %v", s, fig, fok, want, wok)
		}
	})
}
