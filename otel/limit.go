package otel

import (
	"bytes"
	"maps"
	"slices"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
	"go.opentelemetry.io/otel/attribute"
)

// limitAttrs cuts the string values of a span's attributes to the
// attribute length limit (--otlp-attribute-limit, else
// OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else
// OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT), in bytes, so that a backend that
// cuts them itself (Tempo, at 2048 bytes by default) has nothing to cut in
// the middle of a character or of a JSON value: a JSON value (the
// messages, tool arguments and results) stays valid JSON, its longest
// strings shortened; other text keeps whole characters. Each cut is
// reported as a loss.
func (b *builder) limitAttrs(kvs []attribute.KeyValue) []attribute.KeyValue {
	limit := b.cfg.attrLimit
	if limit <= 0 {
		return kvs
	}
	for i, kv := range kvs {
		switch kv.Value.Type() {
		case attribute.STRING:
			if v := kv.Value.AsString(); len(v) > limit {
				kvs[i] = attribute.String(string(kv.Key), cutValue(v, limit))
				b.rep.Quirk(lostAttrPast)
			}
		case attribute.STRINGSLICE:
			vs := kv.Value.AsStringSlice()
			cut := false
			for j, v := range vs {
				if len(v) > limit {
					vs[j], cut = cutValue(v, limit), true
				}
			}
			if cut {
				kvs[i] = attribute.StringSlice(string(kv.Key), vs)
				b.rep.Quirk(lostAttrPast)
			}
		}
	}
	return kvs
}

// cutValue keeps at most limit bytes of an attribute's value: a JSON
// array or object stays one, else whole characters are kept.
func cutValue(v string, limit int) string {
	t := bytes.TrimSpace([]byte(v))
	if len(t) > 0 && (t[0] == '[' || t[0] == '{') && json.Valid(t) {
		if j, ok := cutJSON(t, limit); ok {
			return j
		}
		if t[0] == '[' && limit >= 2 {
			return "[]"
		}
		if limit >= 2 {
			return "{}"
		}
	}
	return cutString(v, limit)
}

// cutJSON shortens the longest strings of a JSON value, whole characters
// only, until it is at most limit bytes; false when even with every string
// emptied it is longer.
func cutJSON(j []byte, limit int) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return "", false
	}
	for range 256 {
		out, err := formats.Marshal(v)
		if err != nil {
			return "", false
		}
		if len(out) <= limit {
			return string(out), true
		}
		longest := 0
		walkStrings(&v, "", func(s *string) {
			longest = max(longest, len(*s))
		})
		if longest == 0 {
			return "", false
		}
		excess, done := len(out)-limit, false
		walkStrings(&v, "", func(s *string) {
			if !done && len(*s) == longest {
				*s = cutString(*s, longest-excess)
				done = true
			}
		})
	}
	return "", false
}

// walkStrings calls f with each string of a decoded JSON value that is
// content, which f may change: not the keys of its objects, nor the values
// that give a message's structure (a part's type, a role, an id, a name),
// which a cut would make invalid.
func walkStrings(v *any, key string, f func(*string)) {
	switch x := (*v).(type) {
	case string:
		if !structural[key] {
			f(&x)
			*v = x
		}
	case []any:
		for i := range x {
			walkStrings(&x[i], key, f)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) { // in one order, for stable output
			e := x[k]
			walkStrings(&e, k, f)
			x[k] = e
		}
	}
}

// structural are the keys of the message schema whose values are not
// content.
var structural = map[string]bool{"type": true, "role": true, "id": true, "name": true, "finish_reason": true,
	"mime_type": true, "modality": true, "generic_type": true}
