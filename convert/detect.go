package convert

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentconv/agentconv/formats"
)

// Detection: which dialect an input is. There is one way, for every input:
// a detector decides (detector.dialect), from the input's head as sniff
// reads it. sniff scores the head with every readable dialect's Detect,
// past the lines before the stream that are not JSON (the banners Gemini
// CLI prints, the # comments of saved captures, npm's warnings); the
// detector adds what concerns the input: --from, an empty input, binary
// data, a directory's files, and the lines it skips.

// Detect returns the readable dialect most sure of the head, and its score
// (0 when none recognises it). It looks past lines that are not JSON before
// a stream of a known dialect, as a conversion skips them (see sniff).
func Detect(head []byte) (formats.Dialect, int) {
	s := sniff(head)
	return s.d, s.score
}

// A detector decides the dialect of each input of a conversion: standard
// input and a file converted alone (Pipeline.Convert, which `sessions` and
// `follow` read their files with too), and the files of a conversion of
// many (ConvertMany: files named, a directory's, --files-from's).
type detector struct {
	// from is --from: the dialect every input is, checked against what
	// detection sees; the zero Dialect detects each input.
	from formats.Dialect
	// dirs are the readable dialects that read directories (dirDialects),
	// for a directory's files; nil puts every file to every dialect.
	dirs []formats.Dialect
	// last is the head that peeking sniffed last (dialect's own copy).
	last lastSniff
}

func newDetector(from formats.Dialect) detector { return detector{from: from} }

// dirDialects lists the readable dialects that read directories, for
// detector.dirs: a caller that reads many files sets it once.
func dirDialects() []formats.Dialect {
	var out []formats.Dialect
	for _, d := range Readable() {
		if d.DirFiles != "" && d.Detect != nil {
			out = append(out, d)
		}
	}
	return out
}

// dialect decides the dialect of the input br gives, warning on rep, and
// returns the dialect to read it with: lines that are not JSON before the
// stream are skipped (see sniff), and its reader reads the input after
// them. An input that no dialect reads is a *detectError.
//
// src is the input's file in a conversion of many (ConvertMany), or the
// zero Source. Such a file is read at once, so its head is what one read
// of the buffer gives; any other input may be a live pipe, whose head is
// looked at as it comes (see peekHead). A directory's file (src.Dir) that
// a dialect reading directories, whose pattern matches its name, is sure
// of (100) is read as that one without asking every dialect (detection is
// most of the work of a small file). Whether a directory's file of another
// dialect is kept is the caller's choice.
func (dt detector) dialect(in Input, br *bufio.Reader, src Source, rep *formats.Report) (formats.Dialect, error) {
	var head []byte
	var err error
	if src.Path != "" {
		head, err = br.Peek(formats.DetectSize)
		if err == io.EOF || err == bufio.ErrBufferFull {
			err = nil
		}
	} else {
		head, err = peekHead(br, func(head []byte) bool { return enoughHead(head, dt.from, &dt.last) })
	}
	if err != nil {
		return formats.Dialect{}, &InputError{File: in.Name, Msg: err.Error()}
	}
	if src.Dir != "" {
		if d, sure := dt.sureDir(head, src.Path); sure {
			return d, nil
		}
	}
	return dt.ofHead(in, br, head, rep)
}

// ofHead is dialect once the head is peeked.
func (dt detector) ofHead(in Input, br *bufio.Reader, head []byte, rep *formats.Report) (formats.Dialect, error) {
	from := dt.from
	if from.Name != "" {
		s := skipText(head, from)
		rest := head[s.skip:]
		if from.Detect != nil && len(formats.HeadLines(rest, 1)) > 0 && from.Detect(rest) == 0 {
			if d, sc := Detect(rest); sc >= 50 && d.Name != from.Name {
				return formats.Dialect{}, &detectError{&InputError{File: in.Name, Line: s.lines + 1, Msg: fmt.Sprintf(
					"none of the first events is %s, as --from says; it looks like %s (try --from %s, or leave --from out)",
					from.Name, d.Name, d.Name)}}
			}
		}
		return skipping(s, br, rep, head)
	}
	if len(formats.HeadLines(head, 1)) == 0 {
		// Nothing to detect from: an empty input converts to nothing.
		return emptyDialect, nil
	}
	s, ok := dt.last.of(head)
	if !ok {
		s = sniff(head)
	}
	if s.score == 0 {
		if err := binaryError(in, head); err != nil {
			var ie *InputError
			if errors.As(err, &ie) {
				return formats.Dialect{}, &detectError{ie}
			}
			return formats.Dialect{}, err
		}
		return formats.Dialect{}, &detectError{&InputError{File: in.Name, Line: 1, Msg: fmt.Sprintf(
			"cannot tell which dialect this is; name it with --from (one of: %s)", formats.Names(Readable()))}}
	}
	return skipping(s, br, rep, head)
}

// sureDir returns the first dialect reading directories whose pattern
// matches the file's name and that is sure (100) the head is its own; only
// without --from, and for a head that starts with its JSON (no lines to
// skip, see sniff).
func (dt detector) sureDir(head []byte, path string) (formats.Dialect, bool) {
	if dt.from.Name != "" {
		return formats.Dialect{}, false
	}
	if n, _ := leadingText(head); n > 0 {
		return formats.Dialect{}, false
	}
	for _, d := range dt.dirs {
		if readsDir(d, path) && d.Detect(head) >= 100 {
			return d, true
		}
	}
	return formats.Dialect{}, false
}

// detectError: no dialect reads the input (or not the one --from names).
type detectError struct{ err *InputError }

func (e *detectError) Error() string { return e.err.Error() }
func (e *detectError) Unwrap() error { return e.err }

// peekHead returns the start of an input for detection without consuming
// it. On a live pipe it must not wait for more than it needs: it returns as
// soon as enough(head) holds, or at the end of the input, or when
// DetectSize bytes are buffered.
func peekHead(br *bufio.Reader, enough func([]byte) bool) ([]byte, error) {
	want := max(1, br.Buffered())
	for {
		head, err := br.Peek(min(want, formats.DetectSize))
		switch {
		case err == io.EOF || err == bufio.ErrBufferFull || len(head) >= formats.DetectSize:
			return head, nil
		case err != nil:
			return nil, err
		case enough(head):
			return head, nil
		}
		// Wait for at least one more byte, and take whatever came with it.
		want = max(len(head)+1, br.Buffered())
	}
}

// emptyDialect reads an input with no records.
var emptyDialect = formats.Dialect{Name: "empty", NewReader: func(io.Reader, formats.ReadOptions) formats.Reader { return emptyReader{} }}

type emptyReader struct{}

func (emptyReader) Next() (*formats.Event, error) { return nil, io.EOF }

// sniffed is what the head of an input says.
type sniffed struct {
	d     formats.Dialect
	score int
	// skip is how many bytes of lines that are not JSON come before the
	// stream; lines is how many lines they are.
	skip, lines int
}

// sniff detects the dialect of a head. Lines that are not JSON before the
// first JSON line are skipped when what follows is a known dialect, or when
// some line of the head is a JSON event of a known dialect; only a head
// with no such line is left to the dialects that read text.
func sniff(head []byte) sniffed {
	readable := Readable()
	detectHead := func(head []byte) (formats.Dialect, int) {
		var best formats.Dialect
		score := 0
		for _, d := range readable {
			if d.Detect == nil {
				continue
			}
			if s := d.Detect(head); s > score {
				best, score = d, s
			}
		}
		return best, score
	}
	n, lines := leadingText(head)
	if n == 0 {
		d, s := detectHead(head)
		return sniffed{d: d, score: s}
	}
	rest := head[n:]
	if d, s := detectHead(rest); s > 0 {
		return sniffed{d, s, n, lines}
	}
	// Lines that are not JSON among the events too: the reader will say
	// where, once it knows the dialect.
	var events [][]byte
	for _, l := range formats.HeadLines(rest, 1<<30) {
		if startsJSON(l) {
			if _, s := detectHead(append(l[:len(l):len(l)], '\n')); s > 0 {
				events = append(events, l)
			}
		}
	}
	if len(events) > 0 {
		d, s := detectHead(append(bytes.Join(events, []byte{'\n'}), '\n'))
		if s > 0 {
			return sniffed{d, s, n, lines}
		}
	}
	d, s := detectHead(head)
	return sniffed{d: d, score: s}
}

// leadingText returns the bytes and the number of the complete lines at the
// start of head that are not JSON, up to the first that is: nothing if no
// line of the head is JSON, since then there is no stream to skip to.
func leadingText(head []byte) (n, lines int) {
	for rest := head; ; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return 0, 0
		}
		line := rest[:i]
		if lines == 0 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if startsJSON(line) {
			return n, lines
		}
		n += i + 1
		lines++
		rest = rest[i+1:]
	}
}

// startsJSON reports whether a line starts a JSON object or array (a blank
// line starts nothing, and is skipped along with the text around it). A
// line such as "[INFO] …" is text.
func startsJSON(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r")
	if len(t) == 0 {
		return false
	}
	switch t[0] {
	case '{':
		return true
	case '[':
		t = bytes.TrimLeft(t[1:], " \t\r")
		return len(t) == 0 || strings.IndexByte(`{["]`, t[0]) >= 0
	}
	return false
}

// enoughHead reports whether head is enough to decide the dialect, so that
// detection on a live pipe waits no longer than it must: a complete JSON
// line once the lines before it are there, and with --from nothing more.
func enoughHead(head []byte, from formats.Dialect, last *lastSniff) bool {
	if bytes.IndexByte(head, '\n') < 0 {
		return false
	}
	if from.Name != "" {
		if from.Detect != nil && from.Detect(head) > 0 {
			return true
		}
		n, _ := leadingText(head)
		return bytes.IndexByte(head[n:], '\n') >= 0 && startsJSON(head[n:])
	}
	s := sniff(head)
	*last = lastSniff{head, s}
	return s.score >= 50
}

// lastSniff is the last head sniffed while it was peeked, and what it
// gave: the head peeked last is the one detected, whose sniff is not done
// twice.
type lastSniff struct {
	head []byte
	s    sniffed
}

// of is what head gave, if it was the head sniffed last.
func (l *lastSniff) of(head []byte) (sniffed, bool) {
	if len(head) == 0 || len(l.head) != len(head) || &l.head[0] != &head[0] {
		return sniffed{}, false
	}
	return l.s, true
}

// skipText decides, with --from, which lines before the stream to skip:
// the lines that are not JSON before the first JSON line, unless the
// dialect named reads them (a text dialect claims the head as it is).
func skipText(head []byte, from formats.Dialect) sniffed {
	if from.Detect != nil && from.Detect(head) > 0 {
		return sniffed{d: from}
	}
	n, lines := leadingText(head)
	return sniffed{d: from, skip: n, lines: lines}
}

// skipping returns the dialect sniffed, whose reader gets the input after
// the skipped lines, with a blank line in place of each, so that the line
// numbers it gives stay those of the input.
func skipping(s sniffed, br *bufio.Reader, rep *formats.Report, head []byte) (formats.Dialect, error) {
	d := s.d
	if s.skip == 0 {
		return d, nil
	}
	first, _, _ := bytes.Cut(head, []byte{'\n'})
	what := "1 line that is not JSON"
	if s.lines > 1 {
		what = fmt.Sprintf("%d lines that are not JSON", s.lines)
	}
	rep.Warn(1, "skipped %s before the %s events, which start at line %d (banners, comments, warnings; the first: %s)",
		what, d.Name, s.lines+1, formats.Snippet(bytes.TrimRight(first, "\r")))
	if _, err := br.Discard(s.skip); err != nil {
		return d, err
	}
	blank := strings.Repeat("\n", s.lines)
	newReader := d.NewReader
	d.NewReader = func(r io.Reader, o formats.ReadOptions) formats.Reader {
		return newReader(bufio.NewReaderSize(io.MultiReader(strings.NewReader(blank), r), 64<<10), o)
	}
	return d, nil
}

// binaryError is the error for an input that no dialect reads because it is
// binary data, or nil.
func binaryError(in Input, head []byte) error {
	line, bin := formats.Binary(head)
	if !bin {
		return nil
	}
	return &InputError{File: in.Name, Line: line, Msg: "binary data, not an event stream of any dialect " +
		"(a NUL byte, or mostly invalid UTF-8 and control characters); name the dialect with --from if it is one"}
}
