// Package convert holds the table of dialects, detection, the pipeline that
// streams events from a reader to a writer, and the command line.
package convert

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/acp"
	"github.com/agentconv/agentconv/formats/adal"
	"github.com/agentconv/agentconv/formats/atif"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/cliagents"
	"github.com/agentconv/agentconv/formats/codex"
	"github.com/agentconv/agentconv/formats/copilot"
	"github.com/agentconv/agentconv/formats/cursor"
	"github.com/agentconv/agentconv/formats/gemini"
	"github.com/agentconv/agentconv/formats/malac"
	"github.com/agentconv/agentconv/formats/opencode"
	"github.com/agentconv/agentconv/formats/pi"
	"github.com/agentconv/agentconv/formats/pretty"
	"github.com/agentconv/agentconv/formats/qwen"
	"github.com/agentconv/agentconv/formats/transcript"
	"github.com/agentconv/agentconv/otel"
)

// Dialects is the table of every dialect agentconv knows, in the order that
// `agentconv formats` lists them and detection breaks ties. Adding a dialect
// means adding its package and one line here.
var Dialects = []formats.Dialect{
	adal.Stream,
	adal.JSON,
	adal.Text,
	adal.Session,
	cursor.Stream,
	claude.Stream,
	claude.JSON,
	claude.Session,
	qwen.Stream,
	qwen.JSON,
	qwen.Session,
	claude.Amp,
	malac.Dialect,
	cliagents.Dialect,
	pretty.Dialect,
	transcript.Markdown,
	transcript.HTML,
	codex.Dialect,
	codex.Rollout,
	gemini.Stream,
	gemini.JSON,
	gemini.Chat,
	pi.Stream,
	pi.Session,
	otel.OTLP,
	otel.OTLPJSON,
	atif.Dialect,
	acp.Dialect,
	opencode.Stream,
	opencode.DB,
	opencode.Export,
	copilot.Stream,
	copilot.Events,
}

// Lookup finds a dialect by name or alias.
func Lookup(name string) (formats.Dialect, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, d := range Dialects {
		if d.Name == name {
			return d, true
		}
		for _, a := range d.Aliases {
			if a == name {
				return d, true
			}
		}
	}
	return formats.Dialect{}, false
}

// Readable and Writable list the dialects that can be read or written.
func Readable() []formats.Dialect {
	return filter(func(d formats.Dialect) bool { return d.NewReader != nil })
}

// Writable lists the dialects that can be written.
func Writable() []formats.Dialect {
	return filter(func(d formats.Dialect) bool { return d.NewWriter != nil })
}

func filter(keep func(formats.Dialect) bool) []formats.Dialect {
	var out []formats.Dialect
	for _, d := range Dialects {
		if keep(d) {
			out = append(out, d)
		}
	}
	return out
}

// Detect returns the readable dialect most sure of the head, and its score
// (0 when none recognises it). It looks past lines that are not JSON before
// a stream of a known dialect, as a conversion skips them (see sniff).
func Detect(head []byte) (formats.Dialect, int) {
	s := sniff(head)
	return s.d, s.score
}

// detectHead is Detect of the head as it is.
func detectHead(head []byte) (formats.Dialect, int) {
	var best formats.Dialect
	score := 0
	for _, d := range Readable() {
		if d.Detect == nil {
			continue
		}
		if s := d.Detect(head); s > score {
			best, score = d, s
		}
	}
	return best, score
}

// dialectFor decides the dialect of an input: --from if given (checked
// against what detection sees), else detection. Lines that are not JSON
// before the stream are skipped (see sniff); the dialect it returns reads
// the input after them.
func (p *Pipeline) dialectFor(in Input, br *bufio.Reader) (formats.Dialect, error) {
	return dialectOf(in, br, p.opts.From, p.opts.Report)
}

// dialectOf detects the dialect of an input (with from set, checks it),
// warning on rep; an input that no dialect reads is a *detectError.
func dialectOf(in Input, br *bufio.Reader, from formats.Dialect, rep *formats.Report) (formats.Dialect, error) {
	head, err := peekHead(br, func(head []byte) bool { return enoughHead(head, from) })
	if err != nil {
		return formats.Dialect{}, &InputError{File: in.Name, Msg: err.Error()}
	}
	return dialectOfHead(in, br, head, from, rep)
}

// dialectOfHead is dialectOf once the head is peeked.
func dialectOfHead(in Input, br *bufio.Reader, head []byte, from formats.Dialect, rep *formats.Report) (formats.Dialect, error) {
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
	s := sniff(head)
	if s.score == 0 {
		if err := binaryError(in, head); err != nil {
			if ie, ok := err.(*InputError); ok {
				return formats.Dialect{}, &detectError{ie}
			}
			return formats.Dialect{}, err
		}
		return formats.Dialect{}, &detectError{&InputError{File: in.Name, Line: 1, Msg: fmt.Sprintf(
			"cannot tell which dialect this is; name it with --from (one of: %s)", formats.Names(Readable()))}}
	}
	return skipping(s, br, rep, head)
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
