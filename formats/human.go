package formats

import (
	"strconv"
	"strings"
)

// Count prints an integer with thousands separators (12,345), as the
// human views (pretty, the transcripts) print counts.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Dollars prints a cost in US dollars with enough digits to tell small
// runs apart: four below a dollar, two above.
func Dollars(usd float64) string {
	if usd != 0 && usd < 1 && usd > -1 {
		return "$" + strconv.FormatFloat(usd, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(usd, 'f', 2, 64)
}
