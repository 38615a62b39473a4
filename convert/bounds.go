package convert

import (
	"bytes"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Bounds on what one field of the input can make a writer write. A
// writer that indents (atif, the transcripts) writes each level of a
// value's nesting on lines of their own, and a writer that repeats a
// field on every line (malac's session id) writes it once per event: an
// input of a few kilobytes would become hundreds of megabytes.
const (
	// maxArgsDepth is the deepest nesting of a call's arguments kept as
	// a JSON value; deeper arguments are kept whole as their JSON text.
	maxArgsDepth = 64
	// maxSessionID is the longest session id kept; a longer one is
	// replaced by a name-based UUID of it.
	maxSessionID = 1024
)

// bound applies the bounds to an event, and warns of what it changed.
func (p *Pipeline) bound(ev *formats.Event) {
	if a := ev.Call.Args; len(a) > maxArgsDepth*2 && jsonDepth(a, maxArgsDepth) > maxArgsDepth {
		var buf bytes.Buffer
		if json.Compact(&buf, a) == nil {
			a = buf.Bytes()
		}
		if s, err := json.Marshal(string(a)); err == nil {
			ev.Call.Args = s
			p.opts.Report.Warn(ev.Source.LineNo, "the arguments of call %s are nested more than %d deep: kept as their JSON text", formats.Visible(ev.Call.ID, true), maxArgsDepth)
		}
	}
	if id := ev.Run.SessionID; len(id) > maxSessionID {
		ev.Run.SessionID = formats.NameUUID(id)
		if ev.Kind == formats.RunStart {
			p.opts.Report.Warn(ev.Source.LineNo, "a session id of %d bytes (more than %d): written as %s, a UUID made from it", len(id), maxSessionID, ev.Run.SessionID)
		}
	}
}

// jsonDepth is how deeply the JSON value b nests arrays and objects,
// counted up to limit+1 at most.
func jsonDepth(b []byte, limit int) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
