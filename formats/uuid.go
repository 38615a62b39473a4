package formats

import (
	"crypto/sha1"
	"encoding/hex"
)

// IsUUID reports whether s is a UUID in its canonical text form: 8-4-4-4-12
// hexadecimal digits.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// NameUUID is the name-based UUID (version 5, RFC 9562: SHA-1) of data,
// its parts hashed in order (a namespace's 16 bytes, then the name), the
// same for the same data.
func NameUUID(data ...string) string {
	h := sha1.New()
	for _, d := range data {
		h.Write([]byte(d))
	}
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	s := hex.EncodeToString(u[:])
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}
