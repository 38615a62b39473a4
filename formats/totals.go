package formats

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
