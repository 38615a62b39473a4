package convert

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/agentconv/agentconv/formats"
)

// What detection makes of the start of an input before the dialects look at
// it: lines before the stream that are not JSON (the banners Gemini CLI
// prints, the # comments of saved captures, npm's warnings), and binary
// data.

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
func enoughHead(head []byte, from formats.Dialect) bool {
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
	return sniff(head).score >= 50
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
