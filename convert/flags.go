package convert

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/urfave/cli/v2"
)

// flags are the main command's flags: its own, then a flag for each
// setting a dialect's writer declares (Dialect.Params).
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
		isBool := isBoolFlag(f)
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
