package adal

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// carries is what every AdaL writer that lists tool calls can carry: the
// run's model, its answer, its tool calls with their statuses (refusals
// included) and its outcome with its exit code.
const carries = formats.ModelNames | formats.AssistantText | formats.ToolCalls | formats.SubagentToolCalls | formats.CancelledCalls |
	formats.Refusals | formats.RunOutcomes | formats.ToolOutputValues

// The losses of AdaL's own encodings, as the writers report them and the
// dialects' Quirks list them.
var (
	lossPreviews    = formats.NewQuirk("tool outputs past AdaL's preview size (kept as AdaL's preview: the first 2,000 and the last 1,000 characters)")
	lossErrors      = formats.NewQuirk("errors besides the run's failure")
	lossWentOn      = formats.NewQuirk("refusals in runs that went on after them (written as failed tool calls)")
	lossStopAnswers = formats.NewQuirk("answers after the refusal a run stopped at")
	// adal-text prints only the refusal a run stopped at.
	lossTextRefusals = formats.NewQuirk("refusals besides the one a run stopped at")
)

// messagesLost counts the main agent's assistant messages that an AdaL
// output has no place for: all of them but the last, when the answer
// written is that message's text (or no answer event said otherwise).
func messagesLost(v *formats.RunView, wroteAnswer bool) int {
	n := v.Messages
	if n > 0 && wroteAnswer && (!v.Answered() || v.Answer() == v.LastText) {
		n--
	}
	return n
}

// mergesError reports whether a result's error text is merged into its
// output, which AdaL has a single field for.
func mergesError(e *formats.Event) bool {
	return e.Call.Status != formats.Denied && e.Call.Error != "" && (e.Call.Output.Text() != "" || e.Call.Output.Undecoded())
}

func args(a json.RawMessage) json.RawMessage {
	if len(a) == 0 {
		return json.RawMessage("{}")
	}
	return a
}

// resultStatus maps a call's status to the words tool_result uses.
func resultStatus(s formats.Status) string {
	switch s {
	case formats.Completed:
		return "completed"
	case formats.Cancelled:
		return "cancelled"
	}
	return "failed"
}

// outputOf is what a call returned, with its error text when it has one:
// AdaL has a single output field.
func outputOf(c *formats.Call) string {
	switch {
	case c.Error == "":
		return c.Output.Text()
	case c.Output.Text() == "":
		return c.Error
	}
	return c.Output.Text() + "\n" + c.Error
}

// AdaL's preview rule: a tool output longer than 30,000 characters is kept
// as its first 2,000 and its last 1,000 characters, around a line that
// says how many were left out, in the stream and in the final object
// alike. AdaL counts characters as JavaScript does (UTF-16 code units).
// It ends the preview with the path of the file it saved the whole output
// to, which a conversion has not: the preview agentconv writes ends with
// the output's last characters.
const (
	// DefaultPreviewChars is the size, in characters, past which AdaL
	// keeps only a preview of a tool's output; the writer parameter
	// "adal.preview-chars" changes it, and 0 keeps every output whole.
	DefaultPreviewChars = 30000
	previewHead         = 2000
	previewTail         = 1000
)

// ParamPreviewChars is the writer parameter that sets the preview size.
const ParamPreviewChars = "adal.preview-chars"

var previewParam = formats.Param{Key: ParamPreviewChars, Flag: "adal-preview-chars", Kind: formats.ParamInt,
	Default: strconv.Itoa(DefaultPreviewChars),
	Usage:   "adal-stream and adal-json keep only AdaL's preview of a tool output longer than `CHARS` characters: its first 2,000 and last 1,000 (0: keep every output whole)"}

// previewLimit is the writer's preview size.
func previewLimit(o formats.WriteOptions) int {
	if v, err := strconv.Atoi(o.Param(ParamPreviewChars, "")); err == nil {
		return v
	}
	return DefaultPreviewChars
}

// units counts s in UTF-16 code units, as JavaScript's length does.
func units(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// cutPreview gives AdaL's preview of s when s is longer than limit
// characters (limit 0: never), and whether it cut.
func cutPreview(s string, limit int) (string, bool) {
	// A byte is at most one character: a short text is not counted.
	if limit <= 0 || len(s) <= limit {
		return s, false
	}
	n := units(s)
	if n <= limit || n <= previewHead+previewTail {
		return s, false
	}
	head, h := 0, 0
	for h < previewHead && head < len(s) {
		r, size := utf8.DecodeRuneInString(s[head:])
		if r >= 0x10000 {
			h++
		}
		h++
		head += size
	}
	tail, t := len(s), 0
	for t < previewTail && tail > head {
		r, size := utf8.DecodeLastRuneInString(s[:tail])
		if r >= 0x10000 {
			t++
		}
		t++
		tail -= size
	}
	return s[:head] + "\n... (" + strconv.Itoa(n-h-t) + " characters omitted) ...\n" + s[tail:], true
}

// omittedMark is the line of AdaL's preview that says what it left out,
// after its first 2,000 characters.
const omittedMark = " characters omitted) ...\n"

// isPreview reports whether s is AdaL's preview of a longer output.
func isPreview(s string) bool {
	i := strings.Index(s, "\n... (")
	if i < 0 || len(s) < previewHead+previewTail || units(s[:i]) != previewHead {
		return false
	}
	rest := s[i+len("\n... ("):]
	d := 0
	for d < len(rest) && rest[d] >= '0' && rest[d] <= '9' {
		d++
	}
	return d > 0 && strings.HasPrefix(rest[d:], omittedMark)
}

// rawIsPreview is isPreview of a JSON string literal, decoding it only
// when it holds the mark.
func rawIsPreview(lit []byte) bool {
	if len(lit) < previewHead+previewTail || !bytes.Contains(lit, []byte(" characters omitted) ...\\n")) {
		return false
	}
	var s string
	return json.Unmarshal(lit, &s) == nil && isPreview(s)
}

// appendJSString appends s as JSON.stringify writes a string: quotes,
// backslashes and control characters escaped (\b, \f, \n, \r, \t by their
// short names), everything else as it is; invalid UTF-8 becomes U+FFFD.
func appendJSString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, "\uFFFD"...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			} else {
				b = append(b, c)
			}
		}
		i++
	}
	return append(b, '"')
}
