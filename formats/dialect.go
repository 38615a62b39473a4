package formats

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Dialect is one row of the format table: a name, aliases, a description,
// and a reader and a writer constructor, nil where that direction is not
// supported. Each dialect package exports its Dialect values; the registry in
// package convert lists them.
type Dialect struct {
	Name        string
	Aliases     []string
	Description string
	// NewReader returns a reader of the dialect; nil if it cannot be read.
	NewReader func(r io.Reader, o ReadOptions) Reader
	// NewWriter returns a writer of the dialect; nil if it cannot be written.
	NewWriter func(w io.Writer, o WriteOptions) Writer
	// Detect scores how sure it is, from 0 (not this dialect) to 100, that an
	// input starting with head is in this dialect. head is the first bytes of
	// the input (up to DetectSize), cut anywhere. nil: never detected.
	Detect func(head []byte) int
	// Binary: the input is binary data (a database file), which the
	// reader takes as it is: the pipeline does not repair its UTF-8.
	Binary bool
	// Remote: the writer delivers its output elsewhere (a collector) rather
	// than to the output stream; golden tests leave it out.
	Remote bool
	// Carries declares what the writer can carry of the model. The pipeline
	// reports what an event needs (Needs) and the target does not carry,
	// before the writer sees the event; the writer reports only the losses
	// of its own encoding, which Quirks lists.
	Carries Feature
	// Quirks are the losses the writer reports itself (Report.Quirk):
	// what its encoding cannot keep of an event whose features it carries
	// (adal-json's output previews). The writer reports no other quirk;
	// the docs' loss table lists them.
	Quirks []Quirk
	// Bookkeeping names the reader's record types (Source.Type) that are
	// the agent's own bookkeeping, holding nothing of a run: the pipeline
	// marks their raw events Source.Known (copied by a writer of the same
	// dialect, neither warned about nor reported lost by others), as a
	// reader marks the records it knows by their content.
	Bookkeeping []string
	// Resends names the dialects whose records the writer passes on as
	// they are (otlp resends what otlp-json holds): nothing of them is lost.
	Resends []string
	// Check, if set, checks the writer's settings before any input is
	// read, so that a bad one is a usage error at start-up; inputs are the
	// files to be read ("-" is standard input).
	Check func(o WriteOptions, inputs []string) error
	// Params are the writer's settings, which the command line offers as
	// flags; WriteOptions.Params has their values by Key.
	Params []Param
	// RunFile, if set, says that the writer writes one whole document per
	// run, and names the file each document gets when -o names a
	// directory: DIR/<session id>/<RunFile> (run-N for the Nth run without
	// a session id). Empty: -o names a file, never a directory.
	RunFile string
	// DirFiles, if set, lets a directory be an input of the dialect: every
	// file under it whose name matches this pattern (path.Match), in path
	// order, is read as an input. Empty: a directory input is an error.
	DirFiles string
	// Files, if set, says that the writer writes files of its own when -o
	// names a directory (a session file and its subagents' files): it
	// makes each through WriteOptions.Create, by a path relative to that
	// directory, and names them itself. To an output stream, everything
	// goes to the stream.
	Files bool
	// Places, if set, names the directories where the agent keeps the
	// files of this dialect on this machine, given the environment (HOME
	// and the agent's own variables), for `agentconv sessions`. The
	// directories need not exist.
	Places func(getenv func(string) string) []string
	// Owner, if set, says that the file at path belongs to another file of
	// the dialect, whose reader reads it too (a subagent's file beside its
	// session's file): it returns that file's path, or "" for a file that
	// stands alone. A directory walk leaves out a file whose owner it
	// reads; a file whose owner is missing is read on its own.
	Owner func(path string) string
	// InProject, if set, says whether the session file at path ran in the
	// directory dir, for a file that names its project only by a digest
	// of its path (Gemini CLI's projectHash), which gives no project to
	// list but tells whether it is dir: `agentconv sessions --project`.
	InProject func(path, dir string) bool
	// KeepsNoEvents: the writer keeps no *Event, nor a pointer into one,
	// nor the bytes of its Source.Line or of an undecoded Call.Output,
	// once Write or Observe returns, so that the pipeline may hand the event back to a
	// reader that reuses its events (Recycler), and let one that lends its
	// lines (Lender) read over them.
	KeepsNoEvents bool
	// HoldsRun: the writer holds a whole run until it ends (one document
	// of the run, or a summary of every call at its end), so that its
	// memory grows with the run; the run view keeps the run's finished
	// calls for it (RunView.Calls.All). Every other writer's memory is
	// bounded by what stays live in a run (its open calls and subagents),
	// not by its number of calls: the view forgets a finished call once
	// the event after its result is observed (Calls.Get still finds it
	// with its result), and such a writer reads only Calls.Count and
	// Calls.Last of the calls that ended.
	HoldsRun bool
	// ReadAhead: the writer has about as much to do for an event as a
	// reader that scans its records in one pass, so that with a second
	// core a file of short records from such a reader (a Recycler) is read
	// ahead of it, in a goroutine of its own, for much less time at a
	// little more CPU (the pipeline decides, from the file's head).
	// Writers with less to do are faster alone: the events would cross
	// from one core to the other for nothing.
	ReadAhead bool
}

// Param is one setting of a dialect's writer.
type Param struct {
	// Key is the name in WriteOptions.Params ("otlp.endpoint").
	Key string
	// Flag is the command-line flag, without dashes ("otlp-endpoint").
	Flag string
	// Kind says what the flag takes.
	Kind ParamKind
	// Usage is the flag's help; a word in backquotes names its value.
	Usage string
	// Default is the value when the flag is not given ("" for none).
	Default string
	// Choices, if set, are the values the flag accepts.
	Choices []string
	// Category groups the flag in --help.
	Category string
}

// ParamKind is what a Param's flag takes.
type ParamKind uint8

const (
	ParamString ParamKind = iota
	ParamBool
	ParamInt
	ParamDuration
	// ParamList: repeatable; the values are joined with NUL bytes, which
	// no command-line argument can hold (a value may hold commas and
	// line breaks).
	ParamList
)

// Recycler is a reader that reuses the events it gave: the pipeline hands
// one back, on the reader's goroutine, once the target's writer (one that
// KeepsNoEvents) and the run view are done with it. What the event's
// fields point to (its strings, its line) is not reused.
type Recycler interface {
	Recycle(e *Event)
}

// Lender is a Recycler that can lend its lines instead of copying them.
// The pipeline calls LendLines when it hands back every event before it
// asks for the next one: from then on an event's Source.Line and an
// undecoded Call.Output (JSONOutput) may be the reader's own buffer, valid only until the
// next call of Next. Everything else stays the caller's to keep (the run
// view keeps a call's Args).
type Lender interface {
	Recycler
	LendLines()
}

// EventPool is a Recycler's store of events handed back: New gives one
// of them, zeroed, or a new one.
type EventPool struct {
	free []*Event
}

// New returns a zeroed event.
func (p *EventPool) New() *Event {
	if n := len(p.free); n > 0 {
		e := p.free[n-1]
		p.free = p.free[:n-1]
		*e = Event{}
		return e
	}
	return &Event{}
}

// Put keeps e for a later New; a thousand at most (the pipeline hands
// back a batch of events at a time).
func (p *EventPool) Put(e *Event) {
	if len(p.free) < 1024 {
		p.free = append(p.free, e)
	}
}

// Observer is a writer that keeps state from the records the pipeline
// copies verbatim into its own dialect: the pipeline writes each such
// record itself and only shows the writer its events, with the run view
// as Write has it, so that the writer can close the run properly if the
// pipeline has to (a cut stream). A writer that is no Observer gets every
// event through Write, its own dialect's too.
type Observer interface {
	Observe(e *Event, v *RunView)
}

// InputEnder is a writer of Files told that one input of a conversion of
// many has ended, and the next one's events follow: what it wrote for the
// input is whole. Two inputs may hold sessions of one id, which a writer
// naming its files by session id must not merge.
type InputEnder interface {
	EndInput()
}

// DetectSize is how much of an input detection looks at.
const DetectSize = 64 << 10

// Reader yields the events of one input. Next returns io.EOF after the last
// event. Any other error is either a *LineError, after which Next may be
// called again to go on with the next record (--lenient), or fatal.
type Reader interface {
	Next() (*Event, error)
}

// Writer consumes events one at a time, each with the run view.
//
// Write gets an event and v, the view of the run being written, which has
// already observed the event: at a RunEnd the view is final (its Status is
// never StatusUnknown and its ExitCode is set). v is the same view at every
// call of Write and Observe for the writer's whole life, so a writer may
// keep it for Close and its helpers; it reads it and never changes it. A
// writer reads the run's meaning (outcome, exit code, answer, errors,
// refusals, usage totals, models, agents and calls) from v rather than
// working it out again from the events.
//
// In a pipeline (package convert) a writer may assume:
//   - every event comes inside a run: a RunStart comes first (one the
//     pipeline made, marked Synthetic, when the source has none), and a new
//     RunStart only after the last run's RunEnd;
//   - every run ends before Close: the pipeline closes a run its source
//     left open with a cancelled ToolResult for each open call, an AgentEnd
//     for each open subagent and a RunEnd (Cut, Synthetic);
//   - Call.Output is decoded, unless the writer is a RawOutputWriter;
//   - what an event needs and the dialect's Carries lacks was reported
//     before the writer gets it; the writer reports only the losses of its
//     own encoding, each one of its Dialect.Quirks;
//   - an Observer is shown, rather than given, the events whose records
//     the pipeline copies verbatim into the writer's own dialect.
//
// A writer must not keep an event once Write returns if its dialect
// declares KeepsNoEvents. Close is called once, after the last event, and
// must write whatever a final-object writer still holds.
//
// Outside a pipeline, Standalone gives a writer a run view of its own.
type Writer interface {
	Write(e *Event, v *RunView) error
	Close() error
}

// ReadOptions are given to every reader.
type ReadOptions struct {
	// Dialect is the name the reader was chosen under; readers put it in
	// Event.Source.Dialect.
	Dialect string
	// Report receives warnings about the input.
	Report *Report
	// Path is the input's file name, "" for standard input: a reader
	// whose dialect keeps parts of one session in other files (subagents)
	// finds them beside it.
	Path string
	// Figures: the events are read for a run's figures alone (its runs,
	// prompts, calls and their statuses, times, models and counts, as
	// agentconv sessions lists them), not written: a reader may leave out
	// what it would decode only to give it: a successful call's output,
	// and a subagent's report taken from it.
	Figures bool
}

// WriteOptions are given to every writer.
type WriteOptions struct {
	// Dialect is the name the writer was chosen under.
	Dialect string
	// Report receives losses and warnings.
	Report *Report
	// Stderr is where a dialect that splits its output writes the part that
	// goes to standard error (adal-text's errors).
	Stderr io.Writer
	// Params holds settings for one writer, such as the OTLP endpoint, by
	// name ("otlp.endpoint").
	Params map[string]string
	// Getenv reads the environment; writers never call os.Getenv directly,
	// so that tests can set it.
	Getenv func(string) string
	// Terminal: the output is a terminal, for a writer that colours it.
	Terminal bool
	// Create, for a dialect that writes Files when -o names a directory,
	// makes a file under it by a slash-separated relative path; the file
	// is put in place, whole, when it is closed (one left open at the end
	// is put in place by the pipeline's close). nil: write to the output.
	// A writer closes each session's files once it has written another
	// session, so that they are in place as the conversion goes and a
	// conversion of many sessions holds few of them.
	Create func(name string) (io.WriteCloser, error)
	// Reopen, set with Create, continues a file that the conversion made
	// and closed (a session written again after another): what it holds
	// is kept and what is written follows, put in place, whole, when it is
	// closed again.
	Reopen func(name string) (io.WriteCloser, error)
}

// CopyTarget is a writer of a dialect that writes Files: a record that the
// pipeline copies verbatim goes to the file that the writer chose when it
// observed the record's event (Observe), not to the output stream.
type CopyTarget interface {
	Observer
	CopyTo() io.Writer
}

// Param returns a writer parameter, or def when unset.
func (o WriteOptions) Param(name, def string) string {
	if v, ok := o.Params[name]; ok && v != "" {
		return v
	}
	return def
}

// Env reads an environment variable through Getenv, if set.
func (o WriteOptions) Env(name string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(name)
}

// LineError is a malformed record: the reader could not parse it.
type LineError struct {
	Line int
	Msg  string
	// Err is the cause, when it is one of the package's errors
	// (ErrLineTooLong).
	Err error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

func (e *LineError) Unwrap() error { return e.Err }

// Errorf makes a LineError.
func Errorf(line int, format string, args ...any) *LineError {
	return &LineError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Report collects what a conversion loses and warns about. Losses are
// counted by kind and summed up at the end; warnings are printed as they
// come, up to a limit. It is safe for concurrent use.
type Report struct {
	mu       sync.Mutex
	out      io.Writer
	losses   map[string]int
	order    []string
	nLosses  int
	warnings int
	// MaxWarnings caps the warnings printed; the rest are counted.
	MaxWarnings int
	// Prefix is printed before each warning, e.g. "agentconv: ".
	Prefix string
	// Where, if set, returns a "FILE:" prefix for a warning at a line.
	Where func(line int) string
}

// NewReport makes a Report that prints to out.
func NewReport(out io.Writer) *Report {
	return &Report{out: out, losses: map[string]int{}, MaxWarnings: 50, Prefix: "agentconv: "}
}

// Quirk counts one loss of a quirk of the target's encoding, which the
// target's row declares (Dialect.Quirks).
func (r *Report) Quirk(q Quirk) { r.lose(q.Name(), 1) }

// QuirkN counts n losses of one quirk.
func (r *Report) QuirkN(q Quirk, n int) { r.lose(q.Name(), n) }

// Feature counts one loss of feature f of the event e, which the target
// does not carry (named by LossName).
func (r *Report) Feature(f Feature, e *Event) { r.lose(LossName(f, e), 1) }

// Merge counts the losses that from counted, as they were named there.
func (r *Report) Merge(from *Report) {
	if r == nil || from == nil {
		return
	}
	t := from.LossTable()
	for _, k := range slices.Sorted(maps.Keys(t)) {
		r.lose(k, t[k])
	}
}

// lose counts n losses named what, a noun phrase: "thinking text".
func (r *Report) lose(what string, n int) {
	if r == nil || n <= 0 {
		return
	}
	r.mu.Lock()
	if _, ok := r.losses[what]; !ok {
		r.order = append(r.order, what)
	}
	r.losses[what] += n
	r.nLosses += n
	r.mu.Unlock()
}

// Losses returns how many losses were counted so far.
func (r *Report) Losses() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nLosses
}

// LastLoss names the kind most recently added to the table.
func (r *Report) LastLoss() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return ""
	}
	return r.order[len(r.order)-1]
}

// LossTable returns a copy of the losses counted so far, by kind.
func (r *Report) LossTable() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.losses))
	for k, v := range r.losses {
		m[k] = v
	}
	return m
}

// SetWhere sets the function that prefixes warnings with their place, and
// returns the one it replaces.
func (r *Report) SetWhere(where func(line int) string) (old func(line int) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, r.Where = r.Where, where
	return old
}

// Warn prints a warning about line (0: no line) at once.
func (r *Report) Warn(line int, format string, args ...any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings++
	if r.MaxWarnings > 0 && r.warnings > r.MaxWarnings {
		return
	}
	where := ""
	if line > 0 {
		if r.Where != nil {
			where = r.Where(line)
		} else {
			where = fmt.Sprintf("line %d: ", line)
		}
	}
	// One line, whatever the input put in the names and texts it quotes.
	fmt.Fprintf(r.out, "%swarning: %s\n", r.Prefix, Visible(where+fmt.Sprintf(format, args...), false))
}

// Summary prints one line per kind of loss, and the count of warnings that
// were not printed. target names the dialect written.
func (r *Report) Summary(target string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := append([]string(nil), r.order...)
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(r.out, "%slost: %d × %s (%s cannot carry them)\n", r.Prefix, r.losses[k], k, target)
	}
	if r.MaxWarnings > 0 && r.warnings > r.MaxWarnings {
		fmt.Fprintf(r.out, "%s%d more warnings not shown\n", r.Prefix, r.warnings-r.MaxWarnings)
	}
}

// FixedEpoch is the start of the clock that --deterministic uses.
var FixedEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Names joins dialect names for messages.
func Names(ds []Dialect) string {
	n := make([]string, len(ds))
	for i, d := range ds {
		n[i] = d.Name
	}
	return strings.Join(n, ", ")
}
