package formats

// Deref is *p, or the zero value when p is nil: a JSON field that may be
// null or absent.
func Deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// NilIfEmpty is &s, or nil for "": a string field written as null when
// unknown.
func NilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
