package codex

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzWrapped holds wrapped, which scans the wrapper, to the decoder's
// reading of it (decodeWrapper), as wrapped read it before it scanned.
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
		want, wok := decodeWrapper(strings.TrimSpace(s))
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
