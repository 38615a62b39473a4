package formats

import "math"

// CountOf is a token count that a source gave as the JSON number f: a
// whole number that fits int64 is that count, and ok; one that is not
// whole or does not fit (1.5, 1e400) is not a count, read as not given.
func CountOf(f float64) (c Opt[int64], ok bool) {
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return Opt[int64]{}, false
	}
	return Some(int64(f)), true
}

// SinceTotal makes a running total of token counts (an agent that prints
// its session's total after each run) the counts since an earlier total:
// each pair is a count of the newer total and the same count of the
// earlier one, either nil when not given. When every count is at least the
// earlier one, it takes the earlier off each and says so; else (a total of
// another session, or not a running total) it changes nothing.
func SinceTotal(pairs ...[2]**int64) bool {
	for _, p := range pairs {
		if *p[0] != nil && *p[1] != nil && **p[0] < **p[1] {
			return false
		}
	}
	for _, p := range pairs {
		if *p[0] != nil && *p[1] != nil {
			d := **p[0] - **p[1]
			*p[0] = &d
		}
	}
	return true
}
