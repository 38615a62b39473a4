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
	Description: "AdaL `-o text`: the answer on stdout; the last error or the refusal on stderr",
	NewReader:   newTextReader,
	NewWriter:   newTextWriter,
	Detect:      detectText,
	// It prints the refusal a run stopped at, and reports the others.
	Carries: formats.AssistantText | formats.Refusals,
	Quirks:  []formats.Quirk{formats.ExtraMessages, lossErrors, lossTextRefusals},
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
		b, err := io.ReadAll(io.LimitReader(t.r, int64(formats.MaxLine)+1))
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

// textWriter prints each run's answer on the output, and on stderr the
// error the run failed with, or the refusal it stopped at, as `adal -o
// text` does: AdaL prints only its last error.
type textWriter struct {
	w    io.Writer
	opts formats.WriteOptions
}

func newTextWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	return &textWriter{w: w, opts: o}
}

// Observe follows an event without printing it. The text reader's events
// have no record to copy, so the pipeline gives them all to Write.
func (t *textWriter) Observe(*formats.Event, *formats.RunView) {}

func (t *textWriter) Write(e *formats.Event, v *formats.RunView) error {
	if e.Kind == formats.RunEnd {
		return t.end(v)
	}
	return nil
}

func (t *textWriter) end(v *formats.RunView) error {
	stopped := v.Status == formats.Denied && len(v.Refusals) > 0
	if n := len(v.Refusals); stopped {
		t.opts.Report.QuirkN(lossTextRefusals, n-1)
	} else {
		t.opts.Report.QuirkN(lossTextRefusals, n)
	}
	if stopped {
		r := v.Refusals[len(v.Refusals)-1]
		var a []byte
		if c := v.Calls.Get(r.CallID); c != nil {
			a = c.Args
		}
		t.opts.Report.QuirkN(formats.ExtraMessages, messagesLost(v, false))
		t.opts.Report.QuirkN(lossErrors, errorsBesides(v.Errors, r.Reason))
		_, err := fmt.Fprintf(t.opts.Stderr, "Stopped: %s\nRefused call: %s %s\n", r.Reason, r.Name, args(a))
		return err
	}
	// The error the run failed with, else the last error of a run that
	// succeeded all the same.
	last := ""
	switch {
	case !v.Success():
		last = v.Failure
	case len(v.Errors) > 0:
		last = v.Errors[len(v.Errors)-1]
	}
	t.opts.Report.QuirkN(lossErrors, errorsBesides(v.Errors, last))
	if last != "" {
		if _, err := fmt.Fprintln(t.opts.Stderr, last); err != nil {
			return err
		}
	}
	a := v.Answer()
	if a == "" || !v.Success() && !v.Answered() {
		t.opts.Report.QuirkN(formats.ExtraMessages, messagesLost(v, false))
		return nil
	}
	t.opts.Report.QuirkN(formats.ExtraMessages, messagesLost(v, true))
	// One newline ends the answer, as the reader expects: an answer that
	// ends in a newline itself keeps it.
	_, err := io.WriteString(t.w, a+"\n")
	return err
}

func (t *textWriter) Close() error { return nil }
