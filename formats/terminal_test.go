package formats

import (
	"math"
	"testing"
)

func TestVisible(t *testing.T) {
	for _, c := range []struct {
		in        string
		keepLines bool
		want      string
	}{
		{"plain words, ünïcode", false, "plain words, ünïcode"},
		{"clear\x1b[2Jscreen", false, `clear\x1b[2Jscreen`},
		{"osc52\x1b]52;c;eA==\x07", false, `osc52\x1b]52;c;eA==\x07`},
		{"csi\u009b2J", false, `csi\u009b2J`},
		{"rtl\u202eoverride\u2066", false, `rtl\u202eoverride\u2066`},
		{"two\nlines\r\tx", false, `two\nlines\r\tx`},
		{"two\nlines\r\tx", true, "two\nlines\\r\tx"},
		{"bad\xffutf8", true, `bad\xffutf8`},
	} {
		if got := Visible(c.in, c.keepLines); got != c.want {
			t.Errorf("Visible(%q, %v) = %q, want %q", c.in, c.keepLines, got, c.want)
		}
	}
}

// Token counts: a sum saturates instead of wrapping, and a count below
// zero is cleared and named.
func TestCounts(t *testing.T) {
	if got := Some(int64(math.MaxInt64 - 1)).Plus(Some(int64(5))); got.V != math.MaxInt64 || !got.OK {
		t.Errorf("saturating sum: %+v", got)
	}
	if got := Some(int64(2)).Plus(Opt[int64]{}); got.V != 2 || !got.OK {
		t.Errorf("sum with an unknown: %+v", got)
	}
	u := UsageInfo{InputTokens: Some(int64(-10)), OutputTokens: Some(int64(5)), CostUSD: Some(math.NaN())}
	bad := u.Negative()
	if len(bad) != 2 || u.InputTokens.OK || !u.OutputTokens.OK || u.CostUSD.OK {
		t.Errorf("Negative: %v, %+v", bad, u)
	}
}
