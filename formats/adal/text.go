package adal

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/agentconv/agentconv/formats"
)

// Text is the adal-text dialect: `adal -o text`, the answer on stdout and
// errors on stderr.
var Text = formats.Dialect{
	Name:        "adal-text",
	Aliases:     []string{"text"},
	Description: "AdaL `-o text`: the answer on stdout; errors and refusals on stderr",
	NewReader:   newTextReader,
	NewWriter:   newTextWriter,
	Detect:      detectText,
}

// detectText claims any input that is not JSON, weakly: plain text is what
// is left when nothing else matches. Binary data is not text.
func detectText(head []byte) int {
	t := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(t) == 0 || t[0] == '{' || t[0] == '[' {
		return 0
	}
	if _, bin := formats.Binary(head); bin {
		return 0
	}
	return 5
}

// textReader reads the whole input as the answer of one run: that is all
// that `adal -o text` prints on stdout.
type textReader struct {
	r    io.Reader
	opts formats.ReadOptions
	evs  []*formats.Event
	done bool
}

func newTextReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &textReader{r: r, opts: o}
}

func (t *textReader) Next() (*formats.Event, error) {
	if !t.done {
		t.done = true
		b, err := io.ReadAll(io.LimitReader(t.r, formats.MaxLine+1))
		if err != nil {
			return nil, err
		}
		if len(b) > formats.MaxLine {
			return nil, formats.Errorf(1, "the answer is longer than 256 MiB")
		}
		if line, bin := formats.Binary(b); bin {
			return nil, formats.Errorf(line, "binary data, not the text of an answer (a NUL byte, or mostly invalid UTF-8 and control characters)")
		}
		b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		answer := strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
		if strings.TrimSpace(answer) == "" {
			return nil, io.EOF
		}
		src := formats.Source{Dialect: t.opts.Dialect, Type: "text", LineNo: 1}
		t.evs = []*formats.Event{
			{Kind: formats.Answer, Text: answer, Source: src},
			{Kind: formats.RunEnd, Status: formats.Completed, Run: formats.RunInfo{ExitCode: formats.Some(0)}, Source: src},
		}
	}
	if len(t.evs) == 0 {
		return nil, io.EOF
	}
	ev := t.evs[0]
	t.evs = t.evs[1:]
	return ev, nil
}

// textWriter prints each run's answer on the output, and its errors and
// refusals on stderr, as `adal -o text` does.
type textWriter struct {
	w      io.Writer
	opts   formats.WriteOptions
	calls  formats.CallTracker
	text   formats.TextTracker
	run    runSummary
	nCalls int
}

func newTextWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	t := &textWriter{w: w, opts: o}
	t.calls.DropOutputs = true
	return t
}

func (t *textWriter) Write(e *formats.Event) error {
	t.run.observe(e, &t.calls, &t.text, t.opts.Report)
	switch e.Kind {
	case formats.ToolCall:
		t.nCalls++
	case formats.Notice:
		if e.Severity == formats.Error {
			_, err := fmt.Fprintln(t.opts.Stderr, e.Text)
			return err
		}
	case formats.RunEnd:
		return t.end(e)
	}
	return nil
}

func (t *textWriter) end(e *formats.Event) error {
	r := &t.run
	defer func() {
		t.calls.Reset()
		t.text.Reset()
		t.run = runSummary{}
		t.nCalls = 0
	}()
	if !e.Source.From(t.opts.Dialect) {
		t.opts.Report.LoseN("tool calls", t.nCalls)
	}
	code := r.exitCode(e)
	if code == 2 && r.denied != nil {
		_, err := fmt.Fprintf(t.opts.Stderr, "Stopped: %s\nRefused call: %s %s\n", r.denied.Error, r.denied.Name, args(r.denied.Args))
		return err
	}
	if code != 0 {
		if !r.errored {
			if _, err := fmt.Fprintln(t.opts.Stderr, r.failure(e)); err != nil {
				return err
			}
		}
		if !r.answered {
			return nil
		}
	}
	a := r.answerText()
	if a == "" {
		return nil
	}
	// One newline ends the answer, as the reader expects: an answer that
	// ends in a newline itself keeps it.
	_, err := io.WriteString(t.w, a+"\n")
	return err
}

func (t *textWriter) Close() error { return nil }
