package convert

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// Exit statuses of agentconv itself. With --exit-status, a successful
// conversion exits with the last run's own exit code instead of ExitOK.
const (
	ExitOK          = 0
	ExitInput       = 1 // the input is malformed, unreadable or of an unknown dialect
	ExitUsage       = 2 // bad flags or arguments
	ExitLoss        = 3 // --strict met something the target cannot carry
	ExitOutput      = 4 // the output could not be written or delivered
	ExitInterrupted = 130
	ExitTerminated  = 143
)

// Version is set at build time with -ldflags "-X ...convert.Version=...".
var Version = "dev"

// Sys is what the command line touches of the outside world, so that tests
// can run it in memory.
type Sys struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; nil reads nothing.
	Getenv func(string) string
	// Signals delivers SIGINT and SIGTERM; nil for none.
	Signals <-chan os.Signal
	// Clock overrides time.Now, for tests.
	Clock func() time.Time
}

func (s Sys) getenv(k string) string {
	if s.Getenv == nil {
		return ""
	}
	return s.Getenv(k)
}

const usageText = `agentconv [--from DIALECT] --to DIALECT [-o FILE|DIR] [FILE|DIR ...]
agentconv sessions [--since 7d] [--agent NAME] [--project PATH] [--json | --paths] [DIR ...]
agentconv follow --to otlp | --to DIALECT -o DIR [--state FILE] [DIR ...]
agentconv formats [--losses]
agentconv generate --to DIALECT [--size 100MB]`

const description = `Converts the event streams that AI coding agents print from one dialect to
another, and exports runs as OpenTelemetry traces. Inputs are FILEs, or
standard input when there are none or a FILE is "-"; a DIR is walked for
the files of the dialects that read directories (session files, atif's
*.json), and files that none of them reads are skipped and counted. Many
files are converted at once, and written in path order. Without --from,
the dialect of each input is detected from its first events.

Whatever the target dialect cannot carry is counted and reported on stderr.

Examples:
   adal -q "fix the lint" -o stream-json | agentconv --to malac
   agentconv --from malac --to adal-json events.jsonl
   agentconv --to pretty testdata/adal/seed-stream.ndjson
   agentconv --to otlp run.ndjson        # send to OTEL_EXPORTER_OTLP_ENDPOINT
   agentconv sessions --since 7d --agent claude --paths | agentconv --to otlp --files-from -
   agentconv formats                     # list the dialects

Exit statuses:
   0    success (with --exit-status: the last run's own exit code)
   1    malformed, unreadable or unrecognised input (also: a file of an input
        directory could not be read; the rest was converted; not with --lenient)
   2    bad flags or arguments
   3    --strict met something the target cannot carry
   4    the output could not be written or delivered
   130  interrupted (SIGINT); 143 terminated (SIGTERM)`

// parseMu makes the parsing of command lines one at a time: urfave/cli
// keeps its help flag and help command in package variables, which
// parsing writes, and tests run many command lines at once in one process.
var parseMu sync.Mutex

// Run is the whole command line: it parses args (args[0] is the program
// name) and returns the exit status. The command itself runs after the
// parsing, outside parseMu.
func Run(args []string, sys Sys) int {
	status := ExitOK
	var later func() int
	app := &cli.App{
		Name:            "agentconv",
		Usage:           "convert AI coding-agent event streams between dialects and to OpenTelemetry",
		UsageText:       usageText,
		Description:     description,
		Version:         Version,
		Reader:          sys.Stdin,
		Writer:          sys.Stdout,
		ErrWriter:       sys.Stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		Flags:           flags(),
		Action: func(c *cli.Context) error {
			later = func() int { return convertCmd(c, sys) }
			return nil
		},
		Commands: []*cli.Command{sessionsCommand(sys, &later), followCommand(sys, &later), {
			Name:  "formats",
			Usage: "list the dialects, and whether each can be read and written",
			Flags: []cli.Flag{&cli.BoolFlag{Name: "losses", Usage: "list instead what each dialect's writer cannot carry"}},
			Action: func(c *cli.Context) error {
				if c.Bool("losses") {
					PrintLosses(sys.Stdout)
					return nil
				}
				PrintFormats(sys.Stdout)
				return nil
			},
		}, {
			Name:      "generate",
			Usage:     "write a deterministic synthetic stream of runs, for benchmarks and tests",
			UsageText: "agentconv generate --to DIALECT [--size 100MB] [--seed N] > file",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "to", Aliases: []string{"t"}, Value: "adal-stream", Usage: "the `DIALECT` to write"},
				&cli.StringFlag{Name: "size", Value: "10MB", Usage: "write at least this much (100MB, 1GiB, …)"},
				&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "the same seed gives the same stream"},
				&cli.IntFlag{Name: "max-output", Value: 400 << 10, Usage: "the largest tool output, in `BYTES` (small ones make a stream dense in events)"},
				&cli.StringFlag{Name: "profile", Value: "default", Usage: "the `SHAPE` of the runs: " + strings.Join(ProfileNames(), ", ")},
			},
			Action: func(c *cli.Context) error {
				later = func() int { return generateCmd(c, sys) }
				return nil
			},
		}},
	}
	app.DisableSliceFlagSeparator = true // --otlp-header x=a,b is one header, whose value is a,b
	args = flagsFirst(args, app.Flags)
	if len(args) > 2 && args[1] == "sessions" {
		// Its flags may come after its directories too.
		args = append([]string{args[0]}, flagsFirst(args[1:], sessionsFlags())...)
	}
	if len(args) > 2 && args[1] == "follow" {
		args = append([]string{args[0]}, flagsFirst(args[1:], followFlags())...)
	}
	parseMu.Lock()
	err := app.Run(args)
	parseMu.Unlock()
	if err != nil {
		fmt.Fprintf(sys.Stderr, "agentconv: %s\n", formats.Visible(err.Error(), true))
		return ExitUsage
	}
	if later != nil {
		status = later()
	}
	return status
}

func flags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "from", Aliases: []string{"f"}, Usage: "input `DIALECT` (default: detect it from the first events)"},
		&cli.StringFlag{Name: "to", Aliases: []string{"t"}, Usage: "output `DIALECT` (required; see `agentconv formats`)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of standard output (a regular file is written whole, then renamed into place; anything else is written in place; for a dialect that writes a document per run (atif), a directory, or a name ending in /: one DIR/<session id>/FILE per run)"},
		&cli.BoolFlag{Name: "lenient", Usage: "skip malformed lines instead of stopping at the first; they are counted on stderr"},
		&cli.BoolFlag{Name: "strict", Usage: "fail (exit 3) at the first thing the target dialect cannot carry"},
		&cli.BoolFlag{Name: "exit-status", Aliases: []string{"e"}, Usage: "exit with the last run's own exit code, as the agent would"},
		&cli.StringFlag{Name: "files-from", Usage: "also read the inputs named in `FILE`, one path per line (\"-\": standard input), as `agentconv sessions --paths` prints them"},
		&cli.BoolFlag{Name: "null", Aliases: []string{"0"}, Usage: "--files-from names end with a NUL byte, not a line break (as agentconv sessions --paths --null and find -print0 write them): any file name reads back as it is"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "show no progress bar (it shows on a terminal for long work: many files, or more than a few seconds)"},
		&cli.IntFlag{Name: "workers", Hidden: true, Usage: "read at most `N` files at once (default: the number of cores)"},
		&cli.BoolFlag{Name: "deterministic", Usage: "use a fixed clock (2000-01-01T00:00:00Z, +1ms per event) where the source has no times, for reproducible output"},
		&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile to `FILE`"},
		&cli.StringFlag{Name: "memprofile", Hidden: true, Usage: "write an allocation profile to `FILE` at the end"},
	}, paramFlags()...)
}

// params lists the settings the dialects' writers declare, each once, in
// the order of the table.
func params() []formats.Param {
	var out []formats.Param
	seen := map[string]bool{}
	for _, d := range Dialects {
		for _, p := range d.Params {
			if !seen[p.Flag] {
				seen[p.Flag] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// paramFlags makes a flag of each writer setting.
func paramFlags() []cli.Flag {
	var out []cli.Flag
	for _, p := range params() {
		switch p.Kind {
		case formats.ParamBool:
			out = append(out, &cli.BoolFlag{Name: p.Flag, Usage: p.Usage, Category: p.Category})
		case formats.ParamInt:
			n, _ := strconv.Atoi(p.Default)
			out = append(out, &cli.IntFlag{Name: p.Flag, Usage: p.Usage, Category: p.Category, Value: n})
		case formats.ParamDuration:
			d, _ := time.ParseDuration(p.Default)
			out = append(out, &cli.DurationFlag{Name: p.Flag, Usage: p.Usage, Category: p.Category, Value: d})
		case formats.ParamList:
			out = append(out, &cli.StringSliceFlag{Name: p.Flag, Usage: p.Usage, Category: p.Category})
		default:
			out = append(out, &cli.StringFlag{Name: p.Flag, Usage: p.Usage, Category: p.Category, Value: p.Default})
		}
	}
	return out
}

// paramValues gives the writer the settings given as flags, by key; a
// setting not given is left out, so that the writer's own default (or an
// environment variable) applies. A value outside a setting's choices is
// an error.
func paramValues(c *cli.Context) (map[string]string, error) {
	vals := map[string]string{}
	for _, p := range params() {
		if !c.IsSet(p.Flag) {
			continue
		}
		var v string
		switch p.Kind {
		case formats.ParamBool:
			v = strconv.FormatBool(c.Bool(p.Flag))
		case formats.ParamInt:
			v = strconv.Itoa(c.Int(p.Flag))
		case formats.ParamDuration:
			v = c.Duration(p.Flag).String()
		case formats.ParamList:
			v = strings.Join(c.StringSlice(p.Flag), "\x00")
		default:
			v = c.String(p.Flag)
		}
		if len(p.Choices) > 0 && !slices.Contains(p.Choices, v) {
			return nil, fmt.Errorf("--%s takes %s, not %q", p.Flag, strings.Join(p.Choices, ", "), v)
		}
		vals[p.Key] = v
	}
	return vals, nil
}

// flagsFirst moves the flags of the main command before its file names, so
// that `agentconv run.ndjson --to malac` works as users expect (urfave/cli
// stops reading flags at the first argument). A subcommand, or "--", stops it.
func flagsFirst(args []string, flags []cli.Flag) []string {
	if len(args) < 2 {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var opts, files []string
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			files = append(files, rest[i:]...)
			i = len(rest)
		case len(a) > 1 && a[0] == '-':
			opts = append(opts, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
				i++
				opts = append(opts, rest[i])
			}
		case len(files) == 0 && len(opts) == 0 && (a == "formats" || a == "generate" || a == "sessions" || a == "follow" || a == "help"):
			return args // a subcommand parses its own flags
		default:
			files = append(files, a)
		}
	}
	out := append([]string{args[0]}, opts...)
	if len(files) > 0 && files[0] != "--" {
		out = append(out, "--")
	}
	return append(out, files...)
}

// PrintLosses writes what each writable dialect cannot carry, from the
// table: what `--to` it would report as lost.
func PrintLosses(w io.Writer) {
	for _, d := range Writable() {
		fmt.Fprintf(w, "%s:\n", d.Name)
		for _, what := range Cannot(d) {
			fmt.Fprintf(w, "  %s\n", what)
		}
	}
}

// PrintFormats writes the table of dialects.
func PrintFormats(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DIALECT\tREAD\tWRITE\tDESCRIPTION")
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "-"
	}
	for _, d := range Dialects {
		name := d.Name
		if len(d.Aliases) > 0 {
			name += " (" + strings.Join(d.Aliases, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, yes(d.NewReader != nil), yes(d.NewWriter != nil), d.Description)
	}
	tw.Flush()
}

func convertCmd(c *cli.Context, sys Sys) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(sys.Stderr, "agentconv: %s\n", formats.Visible(fmt.Sprintf(format, args...), true))
		return code
	}
	if stop, err := startProfiles(c.String("cpuprofile"), c.String("memprofile")); err != nil {
		return fail(ExitUsage, "%v", err)
	} else {
		defer stop()
	}
	if c.String("to") == "" {
		if c.NArg() == 0 && !c.IsSet("from") {
			cli.ShowAppHelp(c)
			return ExitUsage
		}
		return fail(ExitUsage, "--to is required: name the output dialect (one of: %s)", formats.Names(Writable()))
	}
	to, ok := Lookup(c.String("to"))
	if !ok || to.NewWriter == nil {
		return fail(ExitUsage, "cannot write %q: --to takes one of: %s", c.String("to"), formats.Names(Writable()))
	}
	var from formats.Dialect
	if name := c.String("from"); name != "" {
		if from, ok = Lookup(name); !ok || from.NewReader == nil {
			return fail(ExitUsage, "cannot read %q: --from takes one of: %s", name, formats.Names(Readable()))
		}
	}
	if c.Bool("lenient") && c.Bool("strict") {
		return fail(ExitUsage, "--lenient and --strict contradict each other; pick one")
	}
	params, err := paramValues(c)
	if err != nil {
		return fail(ExitUsage, "%v", err)
	}

	names := c.Args().Slice()
	if list := c.String("files-from"); list != "" {
		more, err := readList(list, sys.Stdin, c.Bool("null"))
		if err != nil {
			return fail(ExitInput, "%v", err)
		}
		if list == "-" && slices.Contains(names, "-") {
			return fail(ExitUsage, "--files-from - reads the names from standard input, which cannot then be an input too")
		}
		if len(more) == 0 && len(names) == 0 {
			return fail(ExitInput, "%s: names no input; nothing to convert", listName(list))
		}
		names = append(names, more...)
	}
	if len(names) == 0 {
		names = []string{"-"}
	}

	// Progress on a terminal (progress.go); the report and the warnings
	// below write through it, so that a warning never lands on the bar.
	prog := newProgress(sys.Stderr, !c.Bool("quiet") && stderrIsTerminal(sys.Stderr), sys.getenv("NO_COLOR") != "")
	stderr := io.Writer(sys.Stderr)
	if prog != nil {
		stderr = prog
		defer prog.finish()
	}
	rep := formats.NewReport(stderr)

	// The inputs: each directory is walked for the files of the dialects
	// that read one (dirinput.go).
	var srcs []Source
	unread := 0
	fromDirs := false
	for _, n := range names {
		if n == "-" {
			srcs = append(srcs, Source{Path: n})
			continue
		}
		st, err := os.Stat(n)
		if err != nil {
			return fail(ExitInput, "%s: cannot read it: %v", n, errors.Unwrap(err))
		}
		if !st.IsDir() {
			srcs = append(srcs, Source{Path: n, Size: st.Size()})
			continue
		}
		files, err := dirInputs(n, from, func(path string, err error) {
			unread++
			rep.Warn(0, "%s: cannot read it: %v; skipped", path, err)
		})
		if err != nil {
			return fail(ExitInput, "%v", err)
		}
		fromDirs = true
		srcs = append(srcs, files...)
	}
	names = names[:0]
	stdin := false
	for _, s := range srcs {
		names = append(names, s.Path)
		stdin = stdin || s.Path == "-"
	}

	// The output: standard output, or the -o file (output.go), or for a
	// dialect that writes one document per run, the -o directory, one file
	// per run (runfiles.go).
	var out io.Writer = sys.Stdout
	var tmp *outputFile
	outDir := ""
	if outPath := c.String("output"); outPath != "" && outPath != "-" {
		isDir, err := outputDir(outPath, to)
		switch {
		case err != nil:
			return fail(ExitOutput, "%v", err)
		case isDir:
			outDir = outPath
		default:
			if tmp, err = openOutput(outPath); err != nil {
				return fail(ExitOutput, "%v", err)
			}
			out = tmp
		}
	}
	toFile := tmp != nil || outDir != ""
	bw := bufio.NewWriterSize(out, 64<<10)

	clock := sys.Clock
	if clock == nil {
		clock = time.Now
	}
	if c.Bool("deterministic") {
		n := 0
		clock = func() time.Time { n++; return formats.FixedEpoch.Add(time.Duration(n) * time.Millisecond) }
	}
	wopts := formats.WriteOptions{
		Dialect:  to.Name,
		Report:   rep,
		Stderr:   stderr,
		Params:   params,
		Getenv:   sys.Getenv,
		Terminal: !toFile && isTerminal(sys.Stdout),
	}
	if to.Check != nil {
		if err := to.Check(wopts, names); err != nil {
			if tmp != nil {
				tmp.discard()
			}
			return fail(ExitUsage, "%v", err)
		}
	}
	opts := Options{From: from, Lenient: c.Bool("lenient"), Strict: c.Bool("strict"), Clock: clock, Report: rep}
	if !toFile && isLive(sys.Stdout) {
		opts.Flush = bw.Flush
	}
	var p *Pipeline
	var runs *runFiles
	var files *dirFiles
	switch {
	case outDir != "" && to.Files:
		// The writer names its own files under the directory.
		files = newDirFiles(outDir)
		wopts.Create, wopts.Reopen = files.create, files.reopen
		p = New(to, bw, wopts, opts)
	case outDir != "":
		p, runs = newRunFilesPipeline(to, outDir, wopts, opts)
	default:
		p = New(to, bw, wopts, opts)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sig os.Signal
	sigSeen := make(chan struct{})
	if sys.Signals != nil {
		go func() {
			select {
			case sig = <-sys.Signals:
				close(sigSeen)
				cancel()
			case <-ctx.Done():
			}
		}()
	}

	var runErr error
	var many ManyResult
	if stdin || len(srcs) == 1 && !fromDirs {
		// One input, or standard input among them: each streamed in turn,
		// as it comes.
		for _, src := range srcs {
			in := Input{Name: src.Path, R: sys.Stdin}
			if src.Path == "-" {
				in.Name = "<stdin>"
				if runErr = p.Convert(ctx, in); runErr != nil {
					break
				}
				continue
			}
			f, err := os.Open(src.Path)
			if err != nil {
				runErr = &InputError{File: src.Path, Msg: err.Error()}
				break
			}
			in.R, in.Path = prog.reading(f, src.Size), src.Path
			runErr = p.Convert(ctx, in)
			f.Close()
			if runErr != nil {
				break
			}
		}
	} else {
		// Many files: read at once on the cores, written in order (many.go).
		prog.start(len(srcs), srcs)
		many, runErr = p.ConvertMany(ctx, srcs, ManyOptions{Workers: c.Int("workers"), Progress: prog.update})
		unread += many.Unread
	}
	prog.finish()

	// Close the writer whatever happened: what was converted is kept.
	var closeErr error
	if errors.Is(runErr, ErrInterrupted) {
		closeErr = p.Interrupt()
	} else {
		closeErr = p.Close()
	}
	if err := bw.Flush(); err != nil && closeErr == nil {
		closeErr = &OutputError{err}
	}
	rep.Summary(to.Name)
	res := p.Result()
	if len(res.Skipped) > 0 {
		fmt.Fprintf(sys.Stderr, "agentconv: skipped %d malformed line(s): %s\n", len(res.Skipped), strings.Join(limit(res.Skipped, 20), ", "))
	}

	if tmp != nil {
		var oe *OutputError
		failed := errors.As(closeErr, &oe) || errors.As(runErr, &oe)
		if err := tmp.finish(failed); err != nil && closeErr == nil {
			closeErr = &OutputError{err}
		}
	}
	if runs != nil {
		// The runs put in place are whole; a run not put in place is not.
		runs.abort()
	}
	if files != nil {
		var oe *OutputError
		failed := errors.As(closeErr, &oe) || errors.As(runErr, &oe)
		if err := files.finish(failed); err != nil && closeErr == nil {
			closeErr = &OutputError{err}
		}
	}

	for _, dir := range many.SkippedDirs {
		n := many.Skipped[dir]
		fmt.Fprintf(sys.Stderr, "agentconv: skipped %d %s under %s that no dialect reads\n", n, plural(n, "file", "files"), formats.Visible(dir, false))
	}

	code := exitFor(runErr, sys.Stderr)
	if left := many.Unread; code == ExitOK && fromDirs && len(srcs) > 0 {
		for _, n := range many.Skipped {
			left += n
		}
		if left == len(srcs) {
			fmt.Fprintf(sys.Stderr, "agentconv: nothing under the input directories was read (each file was skipped, see above)\n")
			code = ExitInput
		}
	}
	if code == ExitOK && unread > 0 && !opts.Lenient {
		fmt.Fprintf(sys.Stderr, "agentconv: %d %s under the input directories could not be read (see the warnings); the rest was converted (--lenient: exit 0 all the same)\n",
			unread, plural(unread, "file", "files"))
		code = ExitInput
	}
	if code == ExitOK || code == ExitInterrupted {
		if c2 := exitFor(closeErr, sys.Stderr); c2 != ExitOK {
			code = c2
		}
	}
	if code == ExitOK {
		select {
		case <-sigSeen: // after the input was read, while delivering
			code = ExitInterrupted
		default:
		}
	}
	if code == ExitInterrupted {
		select {
		case <-sigSeen:
			if sig == syscall.SIGTERM {
				code = ExitTerminated
			}
		default:
		}
	}
	if code == ExitOK && c.Bool("exit-status") && res.ExitCode.OK {
		code = res.ExitCode.V
	}
	return code
}

func generateCmd(c *cli.Context, sys Sys) int {
	d, ok := Lookup(c.String("to"))
	if !ok || d.NewWriter == nil || d.Remote {
		fmt.Fprintf(sys.Stderr, "agentconv: cannot generate %q: --to takes one of: %s\n", c.String("to"), formats.Names(Writable()))
		return ExitUsage
	}
	size, err := parseSize(c.String("size"))
	if err != nil {
		fmt.Fprintf(sys.Stderr, "agentconv: --size: %v\n", err)
		return ExitUsage
	}
	bw := bufio.NewWriterSize(sys.Stdout, 256<<10)
	if !knownProfile(c.String("profile")) {
		fmt.Fprintf(sys.Stderr, "agentconv: --profile %q: the profiles are %s\n", c.String("profile"), strings.Join(ProfileNames(), ", "))
		return ExitUsage
	}
	if err := GenerateProfile(bw, d, size, c.Uint64("seed"), c.Int("max-output"), c.String("profile")); err != nil {
		return exitFor(&OutputError{err}, sys.Stderr)
	}
	if err := bw.Flush(); err != nil {
		return exitFor(&OutputError{err}, sys.Stderr)
	}
	return ExitOK
}

// startProfiles starts the profiles that --cpuprofile and --memprofile ask
// for; the returned function writes them.
func startProfiles(cpu, mem string) (func(), error) {
	var cpuFile *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		cpuFile = f
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			cpuFile.Close()
		}
		if mem != "" {
			if f, err := os.Create(mem); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}
	}, nil
}

// exitFor prints an error and maps it to an exit status.
func exitFor(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var (
		ie *InputError
		oe *OutputError
		le *LossError
	)
	switch {
	case errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	case errors.Is(err, syscall.EPIPE):
		// The reader of our output went away (| head): end quietly.
		return ExitOK
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "agentconv: %s\n", formats.Visible(ie.Error(), true))
		return ExitInput
	case errors.As(err, &le):
		fmt.Fprintf(stderr, "agentconv: %s\n", formats.Visible(le.Error(), true))
		return ExitLoss
	case errors.As(err, &oe):
		fmt.Fprintf(stderr, "agentconv: cannot write the output: %s\n", formats.Visible(oe.Err.Error(), true))
		return ExitOutput
	}
	fmt.Fprintf(stderr, "agentconv: %s\n", formats.Visible(err.Error(), true))
	return ExitInput
}

// readList reads the input names of --files-from: one path a line, blank
// lines left out; with null, each ended by a NUL byte, as it is.
func readList(name string, stdin io.Reader, null bool) ([]string, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--files-from %s: cannot read it: %v", name, unwrapPath(err))
		}
		defer f.Close()
		r = f
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if null {
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			if i := bytes.IndexByte(data, 0); i >= 0 {
				return i + 1, data[:i], nil
			}
			if atEOF && len(data) > 0 {
				return len(data), data, nil
			}
			return 0, nil, nil
		})
	}
	for sc.Scan() {
		l := sc.Text()
		if !null {
			l = strings.TrimRight(l, "\r")
		}
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--files-from %s: cannot read it: %v", listName(name), err)
	}
	return out, nil
}

func listName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return name
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func limit(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("… and %d more", len(s)-n))
}

// isLive: the output is a pipe or a terminal, where each event should show
// at once; a regular file is flushed only at the end.
func isLive(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeType != 0
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	// A terminal answers the terminal's own request: /dev/null, another
	// character device, does not.
	return ok && term.IsTerminal(int(f.Fd()))
}
