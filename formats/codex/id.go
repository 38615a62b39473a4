package codex

import "github.com/goccy/go-json"

// firstID returns the value of the first "id" key of a JSON object. Newer
// web_search items carry two: the item's own id first, then the search's;
// JSON decoders keep the last, so the item id is read here by hand. It
// returns "" when the object has no string id.
func firstID(obj []byte) string {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return ""
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return ""
		}
		end := skipString(obj, i)
		if end < 0 {
			return ""
		}
		key := obj[i:end]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return ""
		}
		i = skipSpace(obj, i+1)
		vend := skipValue(obj, i)
		if vend < 0 {
			return ""
		}
		if string(key) == `"id"` {
			var id string
			if json.Unmarshal(obj[i:vend], &id) != nil {
				return ""
			}
			return id
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return ""
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i], or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value that starts at b[i], or
// -1 if it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	if b[i] == '"' {
		return skipString(b, i)
	}
	depth := 0
	for j := i; j < len(b); j++ {
		switch c := b[j]; c {
		case '"':
			if j = skipString(b, j); j < 0 {
				return -1
			}
			j--
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j
			}
		}
	}
	if depth == 0 {
		return len(b)
	}
	return -1
}
