package convert

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
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
		Flags:           namedFlags(flags()),
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
