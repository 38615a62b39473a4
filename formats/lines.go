package formats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/goccy/go-json"
)

// MaxLine is the longest record a line reader accepts: tool outputs can run
// to megabytes, and a killed agent can leave a huge partial line. It is a
// variable only so that a test can lower it (before any reader runs).
var MaxLine = 256 << 20

// ErrLineTooLong is returned for a line longer than MaxLine.
var ErrLineTooLong = errors.New("line longer than 256 MiB")

// LineReader splits an input into lines for the NDJSON dialects. It drops a
// UTF-8 byte order mark, CR before LF, and blank lines, and counts lines so
// that errors can name them. Memory grows with the longest line only.
type LineReader struct {
	br    *bufio.Reader
	buf   []byte
	line  int
	eof   bool
	valid bool
	// pos counts the bytes read from the input; start is where the line
	// last returned begins.
	pos, start int64
}

// NewLineReader wraps r.
func NewLineReader(r io.Reader) *LineReader {
	br, ok := r.(*bufio.Reader)
	valid := ok && markedValid(br)
	if !ok || br.Size() < 64<<10 {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &LineReader{br: br, valid: valid}
}

// ValidUTF8 reports that every line is valid UTF-8: the input was marked
// so (MarkValidUTF8) when the line reader was made.
func (l *LineReader) ValidUTF8() bool { return l.valid }

// validInputs are the buffered inputs known to hold only valid UTF-8.
var validInputs sync.Map

// MarkValidUTF8 says that br holds only valid UTF-8 (the pipeline repairs
// its input before a reader sees it), so that the line readers made on it
// until unmark is called let their users skip checking it again.
func MarkValidUTF8(br *bufio.Reader) (unmark func()) {
	validInputs.Store(br, true)
	return func() { validInputs.Delete(br) }
}

func markedValid(br *bufio.Reader) bool {
	_, ok := validInputs.Load(br)
	return ok
}

// LineArena copies lines for the events that keep them (Source.Line, and
// fields kept as slices of it), carving the short ones from shared chunks
// instead of allocating each: a chunk is freed once no line in it is
// referenced. Each copy is capped, so that appending to it reallocates.
type LineArena struct {
	chunk []byte
}

const (
	arenaChunk = 32 << 10
	// arenaMax is the longest line carved from a chunk: a longer one gets
	// its own allocation, so that a chunk holds many lines and one kept
	// line never holds much more than itself.
	arenaMax = 2 << 10
)

// Copy returns a copy of b that the caller may keep.
func (a *LineArena) Copy(b []byte) []byte {
	if len(b) > arenaMax {
		return append([]byte(nil), b...)
	}
	if cap(a.chunk)-len(a.chunk) < len(b) {
		a.chunk = make([]byte, 0, arenaChunk)
	}
	n := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	return a.chunk[n:len(a.chunk):len(a.chunk)]
}

// Offset is where the line last returned begins in the input, in bytes
// (after a byte order mark it dropped): the line is the input's bytes from
// there, less a CR before its LF.
func (l *LineReader) Offset() int64 { return l.start }

// Line is the 1-based number of the line last returned.
func (l *LineReader) Line() int { return l.line }

// Buffered reports how many bytes are read ahead, so a caller can tell
// whether the next line is already here.
func (l *LineReader) Buffered() int { return l.br.Buffered() }

// Next returns the next non-blank line without its line ending. The slice is
// valid until the next call. It returns io.EOF at the end of the input.
func (l *LineReader) Next() ([]byte, error) {
	for {
		if l.eof {
			return nil, io.EOF
		}
		l.start = l.pos
		b, err := l.readLine()
		if err == io.EOF {
			l.eof = true
			if len(b) == 0 {
				return nil, io.EOF
			}
			err = nil
		}
		if err != nil {
			return nil, err
		}
		l.line++
		if l.line == 1 && bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) {
			b = b[3:]
			l.start += 3
		}
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
		if isBlank(b) {
			continue
		}
		return b, nil
	}
}

func (l *LineReader) readLine() ([]byte, error) {
	b, err := l.br.ReadSlice('\n')
	l.pos += int64(len(b))
	if err == nil {
		return b[:len(b)-1], nil
	}
	if err != bufio.ErrBufferFull {
		return b, err
	}
	// A line longer than the buffer: gather it.
	l.buf = append(l.buf[:0], b...)
	for {
		b, err = l.br.ReadSlice('\n')
		l.pos += int64(len(b))
		if len(l.buf)+len(b) > MaxLine+1 {
			// Skip the rest of the line so that --lenient can go on.
			for err == bufio.ErrBufferFull {
				b, err = l.br.ReadSlice('\n')
				l.pos += int64(len(b))
			}
			l.line++
			// A malformed line, which --lenient skips.
			return nil, &LineError{Line: l.line, Msg: ErrLineTooLong.Error(), Err: ErrLineTooLong}
		}
		l.buf = appendDoubling(l.buf, b)
		switch err {
		case nil:
			return l.buf[:len(l.buf)-1], nil
		case bufio.ErrBufferFull:
			continue
		default:
			return l.buf, err
		}
	}
}

// appendDoubling appends b to buf, doubling buf when it is full: append
// grows a large slice by a quarter, and gathering a 200 MB line that way
// allocated 1.1 GB; doubling allocates at most twice the line.
func appendDoubling(buf, b []byte) []byte {
	if n := len(buf) + len(b); n > cap(buf) {
		grown := make([]byte, len(buf), max(n, 2*cap(buf)))
		copy(grown, buf)
		buf = grown
	}
	return append(buf, b...)
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// Unmarshal decodes one JSON record into v and turns a decoding error into
// a LineError that says what is wrong in words a user can act on. It is
// Report.Unmarshal without a report: numbers that do not fit their fields
// are read as not given, unsaid.
func Unmarshal(line int, data []byte, v any) *LineError {
	return (*Report)(nil).Unmarshal(line, data, v)
}

// maxOdd is the most numbers of one record that Report.Unmarshal reads
// again; it reads a record again for each, so fewer in a large one.
const maxOdd = 1000

// Unmarshal decodes one JSON record into v and turns a decoding error into
// a LineError that says what is wrong in words a user can act on. A number
// that is not what the field it goes into holds is read again: a whole
// number written as a fraction or with an exponent (12.0, 1e18) is that
// whole number; one that is not whole or does not fit (a token count of
// 1.5, 1e400, a whole number beyond int64) is read as not given, with a
// warning naming the field and the number. One odd number costs that
// number, not the record and not the run.
func (r *Report) Unmarshal(line int, data []byte, v any) *LineError {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var odd []string
	fixed := data
	for tries := 0; tries < maxOdd && tries*len(data) < 1<<30; tries++ {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || !strings.HasPrefix(te.Value, "number ") {
			break
		}
		start, end, ok := numberBefore(fixed, te.Offset)
		if !ok || "number "+string(fixed[start:end]) != te.Value {
			// A type's own UnmarshalJSON gives offsets in its part of
			// the record: find the member by its name and number.
			if start, end, ok = member(fixed, te.Field, strings.TrimPrefix(te.Value, "number ")); !ok {
				break
			}
		}
		num := string(fixed[start:end])
		with := "null"
		if f, err := strconv.ParseFloat(num, 64); err == nil && f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 &&
			strings.ContainsAny(num, ".eE") {
			with = strconv.FormatInt(int64(f), 10)
		} else {
			odd = append(odd, te.Field+" "+num)
		}
		fixed = append(append(append(make([]byte, 0, len(fixed)+len(with)), fixed[:start]...), with...), fixed[end:]...)
		if err = json.Unmarshal(fixed, v); err == nil {
			if len(odd) > 0 {
				more := ""
				if len(odd) > 3 {
					odd, more = odd[:3], fmt.Sprintf(" and %d more", len(odd)-3)
				}
				r.Warn(line, "numbers that are not what their fields hold (%s%s): read as not given", strings.Join(odd, ", "), more)
			}
			return nil
		}
	}
	return Errorf(line, "not valid JSON (%s): %s", shorten(err.Error(), 120), Snippet(data))
}

// numberBefore finds the JSON number that ends at end, where the decoder
// stopped at a number of the wrong type, and checks that it is a value: an
// object's member or an array's element.
func numberBefore(data []byte, end int64) (int, int, bool) {
	if end <= 0 || end > int64(len(data)) {
		return 0, 0, false
	}
	e := int(end)
	s := e
	for s > 0 && strings.IndexByte("0123456789+-.eE", data[s-1]) >= 0 {
		s--
	}
	if s == e || data[s] != '-' && (data[s] < '0' || data[s] > '9') {
		return 0, 0, false
	}
	if e < len(data) && strings.IndexByte(",}] \t\r\n", data[e]) < 0 {
		return 0, 0, false
	}
	p := s
	for p > 0 && strings.IndexByte(" \t\r\n", data[p-1]) >= 0 {
		p--
	}
	if p == 0 || strings.IndexByte(":,[", data[p-1]) < 0 {
		return 0, 0, false
	}
	return s, e, true
}

// member finds the first member of data named as the last part of field
// (usage.output_tokens) whose value is the number num.
func member(data []byte, field, num string) (int, int, bool) {
	key := []byte(strconv.Quote(field[strings.LastIndexByte(field, '.')+1:]))
	for from := 0; ; {
		i := bytes.Index(data[from:], key)
		if i < 0 {
			return 0, 0, false
		}
		p := from + i + len(key)
		from = p
		for p < len(data) && strings.IndexByte(" \t\r\n", data[p]) >= 0 {
			p++
		}
		if p == len(data) || data[p] != ':' {
			continue
		}
		p++
		for p < len(data) && strings.IndexByte(" \t\r\n", data[p]) >= 0 {
			p++
		}
		if bytes.HasPrefix(data[p:], []byte(num)) {
			if s, e, ok := numberBefore(data, int64(p+len(num))); ok && s == p {
				return s, e, true
			}
		}
	}
}

// UnmarshalObject is Unmarshal for a record that must be a JSON object (a
// struct decodes null, or nothing at all, without an error).
func UnmarshalObject(line int, data []byte, v any) *LineError {
	return (*Report)(nil).UnmarshalObject(line, data, v)
}

// UnmarshalObject is Report.Unmarshal for a record that must be a JSON
// object (a struct decodes null, or nothing at all, without an error).
func (r *Report) UnmarshalObject(line int, data []byte, v any) *LineError {
	if err := r.Unmarshal(line, data, v); err != nil {
		return err
	}
	if len(data) == 0 || data[0] != '{' {
		return Errorf(line, "not a JSON object: %s", Snippet(data))
	}
	return nil
}

// Snippet quotes the start of a record for an error message.
func Snippet(b []byte) string {
	const max = 60
	if len(b) > max {
		b = b[:max]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
		return fmt.Sprintf("%q…", b)
	}
	return fmt.Sprintf("%q", b)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// HeadLines returns up to n complete non-blank lines from the start of a
// detection head, with a BOM and CRs removed. A last line cut by the head's
// end is left out unless it is the only one.
func HeadLines(head []byte, n int) [][]byte {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	var out [][]byte
	for len(head) > 0 && len(out) < n {
		i := bytes.IndexByte(head, '\n')
		var line []byte
		if i < 0 {
			if len(out) > 0 {
				break
			}
			line, head = head, nil
		} else {
			line, head = head[:i], head[i+1:]
		}
		line = bytes.TrimRight(line, "\r \t")
		if len(line) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// TypeOf returns the string field "type" of a JSON object record, or "" if
// the record is not a JSON object or has none. It decodes only that field.
func TypeOf(line []byte) string {
	var v struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(line, &v) != nil {
		return ""
	}
	return v.Type
}

// DetectByTypes scores a head of NDJSON by how many of its first lines have
// a "type" that the dialect knows, and all of a set of keys the dialect's
// records carry. Detectors of NDJSON dialects build on it.
func DetectByTypes(head []byte, known func(line []byte, typ string) bool) int {
	lines := HeadLines(head, 8)
	if len(lines) == 0 {
		return 0
	}
	hits := 0
	for _, l := range lines {
		if len(l) == 0 || l[0] != '{' {
			return 0
		}
		if known(l, TypeOf(l)) {
			hits++
		}
	}
	return hits * 100 / len(lines)
}

// Marshal encodes v as JSON without HTML escaping: agents print code, and
// "<" must stay "<".
func Marshal(v any) ([]byte, error) { return json.MarshalWithOption(v, noHTMLEscape) }

var noHTMLEscape = json.DisableHTMLEscape()

// WriteJSONLine writes v as one JSON line.
func WriteJSONLine(w io.Writer, v any) error {
	b, err := json.MarshalWithOption(v, noHTMLEscape)
	if err != nil {
		return err
	}
	if bw, ok := w.(io.ByteWriter); ok {
		// A buffered writer: the line break is written apart, where
		// appending it would copy the line.
		if _, err = w.Write(b); err == nil {
			err = bw.WriteByte('\n')
		}
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// WriteRawLine writes a record verbatim, with a newline.
func WriteRawLine(w io.Writer, line []byte) error {
	if _, err := w.Write(line); err != nil {
		return err
	}
	_, err := w.Write([]byte{'\n'})
	return err
}
