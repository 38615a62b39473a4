// Package transcript writes runs as transcripts a person reads: markdown
// that renders on GitHub, and one self-contained HTML page. They show the
// prompts and answers, thinking folded, each tool call with its arguments
// and output (long ones folded), subagents nested under the call that
// started them, errors and refusals marked, and per run its model,
// duration, tokens and cost, read from the run view (formats.RunView).
// They are written only; there is nothing to read back.
//
// A run is gathered as it comes (memory is bounded by one run) and written
// when it ends. To an output stream every run goes to one document; with
// -o DIR (WriteOptions.Create) each session gets a page of its own, and an
// index page links them.
package transcript

import (
	"io"
	"strconv"
	"strings"

	"github.com/agentconv/agentconv/formats"
)

// carries is what a transcript shows: everything of a run but other
// dialects' events, each request's usage (the run's totals and each
// subagent's are shown), and tool outputs that are JSON values, which it
// shows as their JSON text.
const carries = formats.AllFeatures &^ (formats.RawEvents | formats.PerRequestUsage | formats.ToolOutputValues)

// Markdown is the registry row of the markdown transcript.
var Markdown = formats.Dialect{
	Name:        "markdown",
	Aliases:     []string{"md"},
	Description: "a transcript to read, in markdown that renders on GitHub: prompts, answers, thinking and long outputs folded, tool calls with arguments and output, subagents nested, a table per run with model, duration, tokens and cost; -o DIR writes a page per session and index.md (write only)",
	NewWriter:   func(w io.Writer, o formats.WriteOptions) formats.Writer { return newWriter(w, o, markdown{}) },
	Carries:     carries,
	Files:       true,
	// A run's document is made whole at its end, from every call.
	HoldsRun: true,
}

// HTML is the registry row of the HTML transcript.
var HTML = formats.Dialect{
	Name:        "html",
	Description: "a transcript to read, as one self-contained HTML page (no network, no script, phone-sized, dark mode): as markdown's; -o DIR writes a page per session and index.html (write only)",
	NewWriter:   func(w io.Writer, o formats.WriteOptions) formats.Writer { return newWriter(w, o, htmlPage{}) },
	Carries:     carries,
	Files:       true,
	// A run's document is made whole at its end, from every call.
	HoldsRun: true,
}

// renderer writes a document of one of the two kinds.
type renderer interface {
	// ext is the pages' file extension, with its dot.
	ext() string
	// begin starts a page titled title; end ends it.
	begin(w io.Writer, title string) error
	end(w io.Writer) error
	// run writes one run.
	run(w io.Writer, r *runDoc) error
	// index writes the page that links the sessions' pages.
	index(w io.Writer, pages []*pageEntry) error
}

// pageEntry is one session's page, as the index lists it.
type pageEntry struct {
	File    string
	Session string
	Agent   string
	Project string
	Start   string
	Prompt  string // the first prompt, shortened
	Runs    int
	Calls   int
	Tokens  string
	Cost    string
	Status  string // the last run's outcome
	Failed  bool
	tokens  formats.Opt[int64]
	cost    formats.Opt[float64]
}

type writer struct {
	w    io.Writer
	opts formats.WriteOptions
	view *formats.RunView
	r    renderer
	err  error

	run  *gather // the run being gathered
	runs int

	// The page being written: to w (stream) or a file made by Create.
	page    io.Writer
	pageC   io.WriteCloser
	begun   bool
	current *pageEntry
	pages   []*pageEntry
	used    map[string]bool
}

func newWriter(w io.Writer, o formats.WriteOptions, r renderer) *writer {
	return &writer{w: w, opts: o, r: r, used: map[string]bool{"index": true}}
}

func (w *writer) Write(e *formats.Event, v *formats.RunView) error {
	w.view = v
	if w.err != nil {
		return w.err
	}
	if w.run == nil {
		w.run = newGather(e, v)
	}
	w.run.add(e, v)
	if e.Kind == formats.RunEnd {
		w.runs++
		doc := w.run.finish(e, v, w.runs)
		w.run = nil
		w.err = w.emit(doc)
	}
	return w.err
}

// Close writes a run left open (outside a pipeline, which closes every
// run), ends the page, and with -o DIR writes the index.
func (w *writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.run != nil {
		w.runs++
		doc := w.run.finish(nil, w.view, w.runs)
		w.run = nil
		if w.err = w.emit(doc); w.err != nil {
			return w.err
		}
	}
	if w.opts.Create == nil {
		if !w.begun {
			if w.err = w.r.begin(w.w, "Transcript"); w.err != nil {
				return w.err
			}
		}
		w.err = w.r.end(w.w)
		return w.err
	}
	if w.err = w.closePage(); w.err != nil {
		return w.err
	}
	c, err := w.opts.Create("index" + w.r.ext())
	if err != nil {
		w.err = err
		return err
	}
	w.err = w.r.index(c, w.pages)
	if cerr := c.Close(); w.err == nil {
		w.err = cerr
	}
	return w.err
}

// emit writes a finished run to its page.
func (w *writer) emit(doc *runDoc) error {
	if w.opts.Create == nil {
		if !w.begun {
			w.begun = true
			if err := w.r.begin(w.w, title(doc)); err != nil {
				return err
			}
		}
		return w.r.run(w.w, doc)
	}
	if w.current == nil || w.current.Session != doc.Session || doc.Session == "" {
		if err := w.closePage(); err != nil {
			return err
		}
		p := &pageEntry{File: w.pageName(doc.Session) + w.r.ext(), Session: doc.Session, Agent: doc.Agent,
			Project: doc.Cwd, Start: doc.Started, Prompt: doc.firstPrompt()}
		c, err := w.opts.Create(p.File)
		if err != nil {
			return err
		}
		w.pageC, w.page, w.current = c, c, p
		w.pages = append(w.pages, p)
		if err := w.r.begin(c, title(doc)); err != nil {
			return err
		}
	}
	p := w.current
	p.Runs++
	p.Calls += doc.callCount
	p.tokens = p.tokens.Plus(doc.usage.Total())
	p.cost = p.cost.Plus(doc.usage.CostUSD)
	if p.tokens.OK {
		p.Tokens = count(p.tokens.V)
	}
	if p.cost.OK {
		p.Cost = cost(p.cost.V)
	}
	p.Status, p.Failed = doc.Outcome, doc.Failed
	if p.Prompt == "" {
		p.Prompt = doc.firstPrompt()
	}
	return w.r.run(w.page, doc)
}

// closePage ends the page being written, if any.
func (w *writer) closePage() error {
	if w.pageC == nil {
		return nil
	}
	c := w.pageC
	w.pageC, w.page, w.current = nil, nil, nil
	err := w.r.end(c)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return err
}

// pageName names a session's page: its id made safe for a file name, or
// run-N without one; a name given already gets -2, -3, ….
func (w *writer) pageName(session string) string {
	base := safeName(session)
	if base == "" {
		base = "run-" + strconv.Itoa(w.runs)
	}
	name := base
	for i := 2; w.used[strings.ToLower(name)]; i++ {
		name = base + "-" + strconv.Itoa(i)
	}
	w.used[strings.ToLower(name)] = true
	return name
}

// safeName keeps a letter, digit, '.', '_' or '-' and makes anything else
// '_'; leading dots go; at most 100 bytes.
func safeName(id string) string {
	var b strings.Builder
	for _, r := range id {
		if b.Len() >= 100 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return strings.TrimLeft(b.String(), ".")
}

// title is a page's title, from its first run.
func title(doc *runDoc) string {
	t := "Transcript"
	if doc.Session != "" {
		t += " · " + doc.Session
	}
	return t
}
