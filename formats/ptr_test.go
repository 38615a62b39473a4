package formats

import "testing"

func TestDerefAndNilIfEmpty(t *testing.T) {
	s := "x"
	if Deref(&s) != "x" || Deref[string](nil) != "" || Deref[int](nil) != 0 {
		t.Error("Deref")
	}
	if NilIfEmpty("") != nil || *NilIfEmpty("y") != "y" {
		t.Error("NilIfEmpty")
	}
}
