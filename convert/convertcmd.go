package convert

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/urfave/cli/v2"
)

// convertCmd is the main command: it converts its inputs into the output
// and returns the exit status. Its steps are the methods of a convertJob.
func convertCmd(c *cli.Context, sys Sys) int {
	cv := &convertJob{c: c, sys: sys}
	stop, err := startProfiles(c.String("cpuprofile"), c.String("memprofile"))
	if err != nil {
		return cv.exit(usage("%v", err))
	}
	defer stop()
	if err := cv.parse(); err != nil {
		return cv.exit(err)
	}
	// Progress on a terminal (progress.go); the report and the warnings
	// write through it, so that a warning never lands on the bar.
	cv.prog = newProgress(sys.Stderr, !c.Bool("quiet") && stderrIsTerminal(sys.Stderr), sys.getenv("NO_COLOR") != "")
	cv.stderr = sys.Stderr
	if cv.prog != nil {
		cv.stderr = cv.prog
		defer cv.prog.finish()
	}
	cv.rep = formats.NewReport(cv.stderr)
	if err := cv.openInputs(); err != nil {
		return cv.exit(err)
	}
	if err := cv.openOutput(); err != nil {
		return cv.exit(err)
	}
	if err := cv.newPipeline(); err != nil {
		return cv.exit(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cv.watchSignals(ctx, cancel)
	if cv.oneByOne() {
		cv.runErr = cv.convertEach(ctx)
	} else {
		cv.runErr = cv.convertMany(ctx)
	}
	cv.prog.finish()
	cv.closeErr = cv.close()
	return cv.status()
}

// convertJob is what the main command works with, step by step.
type convertJob struct {
	c   *cli.Context
	sys Sys

	// From the flags (parse):
	to, from formats.Dialect
	params   map[string]string
	names    []string
	opts     Options

	prog   *progress
	stderr io.Writer // standard error, through the progress bar
	rep    *formats.Report

	// The inputs (openInputs): each directory named is walked for its files.
	srcs     []Source
	unread   int // a directory's files that could not be read
	fromDirs bool
	stdin    bool // "-" is among the inputs

	// The output (openOutput): standard output, or the -o file, or the -o
	// directory with one file per run (runs) or the writer's own files.
	bw     *bufio.Writer
	tmp    *outputFile
	outDir string
	runs   *runFiles
	files  *dirFiles
	p      *Pipeline

	// A signal, once sigSeen is closed.
	sig     os.Signal
	sigSeen chan struct{}

	many             ManyResult
	runErr, closeErr error
}

// parse reads the flags: the dialects, the writer's settings, the inputs'
// names.
func (cv *convertJob) parse() error {
	c := cv.c
	if c.String("to") == "" {
		if c.NArg() == 0 && !c.IsSet("from") {
			cli.ShowAppHelp(c)
			return &exitError{code: ExitUsage}
		}
		return usage("--to is required: name the output dialect (one of: %s)", formats.Names(Writable()))
	}
	to, ok := Lookup(c.String("to"))
	if !ok || to.NewWriter == nil {
		return usage("cannot write %q: --to takes one of: %s", c.String("to"), formats.Names(Writable()))
	}
	cv.to = to
	if name := c.String("from"); name != "" {
		if cv.from, ok = Lookup(name); !ok || cv.from.NewReader == nil {
			return usage("cannot read %q: --from takes one of: %s", name, formats.Names(Readable()))
		}
	}
	if c.Bool("lenient") && c.Bool("strict") {
		return usage("--lenient and --strict contradict each other; pick one")
	}
	var err error
	if cv.params, err = paramValues(c); err != nil {
		return usage("%v", err)
	}
	cv.names, err = inputNames(c, cv.sys.Stdin)
	return err
}

// inputNames lists the inputs named as arguments and by --files-from;
// none is standard input.
func inputNames(c *cli.Context, stdin io.Reader) ([]string, error) {
	names := c.Args().Slice()
	if list := c.String("files-from"); list != "" {
		more, err := readList(list, stdin, c.Bool("null"))
		if err != nil {
			return nil, failure(ExitInput, "%v", err)
		}
		if list == "-" && slices.Contains(names, "-") {
			return nil, usage("--files-from - reads the names from standard input, which cannot then be an input too")
		}
		if len(more) == 0 && len(names) == 0 {
			return nil, failure(ExitInput, "%s: names no input; nothing to convert", listName(list))
		}
		names = append(names, more...)
	}
	if len(names) == 0 {
		names = []string{"-"}
	}
	return names, nil
}

// openInputs makes the inputs of the names: each directory is walked for
// the files of the dialects that read one (dirinput.go).
func (cv *convertJob) openInputs() error {
	for _, n := range cv.names {
		if n == "-" {
			cv.srcs = append(cv.srcs, Source{Path: n})
			continue
		}
		st, err := os.Stat(n)
		if err != nil {
			return failure(ExitInput, "%s: cannot read it: %v", n, errors.Unwrap(err))
		}
		if !st.IsDir() {
			cv.srcs = append(cv.srcs, Source{Path: n, Size: st.Size()})
			continue
		}
		files, err := dirInputs(n, cv.from, func(path string, err error) {
			cv.unread++
			cv.rep.Warn(0, "%s: cannot read it: %v; skipped", path, err)
		})
		if err != nil {
			return failure(ExitInput, "%v", err)
		}
		cv.fromDirs = true
		cv.srcs = append(cv.srcs, files...)
	}
	cv.names = cv.names[:0]
	for _, s := range cv.srcs {
		cv.names = append(cv.names, s.Path)
		cv.stdin = cv.stdin || s.Path == "-"
	}
	return nil
}

// openOutput opens standard output, or the -o file (output.go), or for a
// dialect that writes one document per run, the -o directory, one file
// per run (runfiles.go).
func (cv *convertJob) openOutput() error {
	var out io.Writer = cv.sys.Stdout
	if name := cv.c.String("output"); name != "" && name != "-" {
		isDir, err := outputDir(name, cv.to)
		switch {
		case err != nil:
			return failure(ExitOutput, "%v", err)
		case isDir:
			cv.outDir = name
		default:
			if cv.tmp, err = openOutput(name); err != nil {
				return failure(ExitOutput, "%v", err)
			}
			out = cv.tmp
		}
	}
	cv.bw = bufio.NewWriterSize(out, 64<<10)
	return nil
}

func (cv *convertJob) toFile() bool { return cv.tmp != nil || cv.outDir != "" }

// newPipeline makes the writer, checked against the inputs, and the
// pipeline that feeds it.
func (cv *convertJob) newPipeline() error {
	c, sys := cv.c, cv.sys
	wopts := formats.WriteOptions{
		Dialect:  cv.to.Name,
		Report:   cv.rep,
		Stderr:   cv.stderr,
		Params:   cv.params,
		Getenv:   sys.Getenv,
		Terminal: !cv.toFile() && isTerminal(sys.Stdout),
	}
	if cv.to.Check != nil {
		if err := cv.to.Check(wopts, cv.names); err != nil {
			if cv.tmp != nil {
				cv.tmp.discard()
			}
			return usage("%v", err)
		}
	}
	cv.opts = Options{From: cv.from, Lenient: c.Bool("lenient"), Strict: c.Bool("strict"), Clock: cv.clock(), Report: cv.rep}
	if !cv.toFile() && isLive(sys.Stdout) {
		cv.opts.Flush = cv.bw.Flush
	}
	switch {
	case cv.outDir != "" && cv.to.Files:
		// The writer names its own files under the directory.
		cv.files = newDirFiles(cv.outDir)
		wopts.Create, wopts.Reopen = cv.files.create, cv.files.reopen
		cv.p = New(cv.to, cv.bw, wopts, cv.opts)
	case cv.outDir != "":
		cv.p, cv.runs = newRunFilesPipeline(cv.to, cv.outDir, wopts, cv.opts)
	default:
		cv.p = New(cv.to, cv.bw, wopts, cv.opts)
	}
	return nil
}

// clock is the time of events whose source has none: the Sys's clock, or
// with --deterministic a fixed one.
func (cv *convertJob) clock() func() time.Time {
	if cv.c.Bool("deterministic") {
		return DeterministicClock()
	}
	if cv.sys.Clock != nil {
		return cv.sys.Clock
	}
	return time.Now
}

// watchSignals cancels the conversion at the first signal.
func (cv *convertJob) watchSignals(ctx context.Context, cancel func()) {
	cv.sigSeen = make(chan struct{})
	if cv.sys.Signals == nil {
		return
	}
	go func() {
		select {
		case cv.sig = <-cv.sys.Signals:
			close(cv.sigSeen)
			cancel()
		case <-ctx.Done():
		}
	}()
}

// oneByOne: one input, or standard input among them, is streamed in turn,
// as it comes; else the files are converted at once (many.go).
func (cv *convertJob) oneByOne() bool {
	return cv.stdin || len(cv.srcs) == 1 && !cv.fromDirs
}

// convertEach converts the inputs one after the other.
func (cv *convertJob) convertEach(ctx context.Context) error {
	for _, src := range cv.srcs {
		in := Input{Name: src.Path, R: cv.sys.Stdin}
		if src.Path == "-" {
			in.Name = "<stdin>"
			if err := cv.p.Convert(ctx, in); err != nil {
				return err
			}
			continue
		}
		f, err := os.Open(src.Path)
		if err != nil {
			return &InputError{File: src.Path, Msg: err.Error()}
		}
		in.R, in.Path = cv.prog.reading(f, src.Size), src.Path
		err = cv.p.Convert(ctx, in)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// convertMany converts the files read at once on the cores, written in
// order (many.go).
func (cv *convertJob) convertMany(ctx context.Context) error {
	cv.prog.start(len(cv.srcs), cv.srcs)
	var err error
	cv.many, err = cv.p.ConvertMany(ctx, cv.srcs, ManyOptions{Workers: cv.c.Int("workers"), Progress: cv.prog.update})
	cv.unread += cv.many.Unread
	return err
}

// close closes the writer whatever happened (what was converted is kept),
// reports, and puts the output in place; it returns the first error of
// the output.
func (cv *convertJob) close() error {
	var err error
	if errors.Is(cv.runErr, ErrInterrupted) {
		err = cv.p.Interrupt()
	} else {
		err = cv.p.Close()
	}
	keep := func(e error) {
		if e != nil && err == nil {
			err = &OutputError{e}
		}
	}
	keep(cv.bw.Flush())
	cv.rep.Summary(cv.to.Name)
	if skipped := cv.p.Result().Skipped; len(skipped) > 0 {
		fmt.Fprintf(cv.sys.Stderr, "agentconv: skipped %d malformed line(s): %s\n", len(skipped), strings.Join(limit(skipped, 20), ", "))
	}
	var oe *OutputError
	failed := errors.As(err, &oe) || errors.As(cv.runErr, &oe)
	if cv.tmp != nil {
		keep(cv.tmp.finish(failed))
	}
	if cv.runs != nil {
		// The runs put in place are whole; a run not put in place is not.
		cv.runs.abort()
	}
	if cv.files != nil {
		keep(cv.files.finish(failed))
	}
	for _, dir := range cv.many.SkippedDirs {
		n := cv.many.Skipped[dir]
		fmt.Fprintf(cv.sys.Stderr, "agentconv: skipped %d %s under %s that no dialect reads\n", n, plural(n, "file", "files"), formats.Visible(dir, false))
	}
	return err
}
