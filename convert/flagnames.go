package convert

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// namedFlags gives each flag its names once. urfave/cli works a flag's
// names out anew (a regular expression over each name) whenever it asks
// for them, and as a command starts it asks, for every flag, for the names
// of every flag before it: with this many flags that took longer than
// most conversions (3 ms a run, 30 % of the CPU of a test that converts
// many small inputs). Each wrapper keeps every method of its flag but
// Names, and String, which asks for them.
func namedFlags(fs []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(fs))
	for i, f := range fs {
		switch f := f.(type) {
		case *cli.BoolFlag:
			out[i] = &boolFlag{f, names(f, f.Name, f.Aliases)}
		case *cli.StringFlag:
			out[i] = &stringFlag{f, names(f, f.Name, f.Aliases)}
		case *cli.IntFlag:
			out[i] = &intFlag{f, names(f, f.Name, f.Aliases)}
		case *cli.DurationFlag:
			out[i] = &durationFlag{f, names(f, f.Name, f.Aliases)}
		case *cli.StringSliceFlag:
			out[i] = &stringSliceFlag{f, names(f, f.Name, f.Aliases)}
		case *cli.Uint64Flag:
			out[i] = &uint64Flag{f, names(f, f.Name, f.Aliases)}
		default:
			out[i] = f
		}
	}
	return out
}

// helpLines are the flags' help lines by what makes them. urfave/cli asks
// for every flag's help line as each command starts (to sort the flags
// into categories), and a line costs a regular expression and a Sprintf:
// 20 % of a small conversion. The flags are made anew for each run, the
// same each time, so each line is worked out once.
var helpLines sync.Map // helpKey → string

type helpKey struct {
	kind                   reflect.Type
	names, usage, def, env string
}

// helpLine is cli.FlagStringer(f), worked out once for each flag of the
// same kind, names, usage, default and variables.
func helpLine(f cli.DocGenerationFlag, names []string) string {
	k := helpKey{reflect.TypeOf(f), strings.Join(names, "\x00"), f.GetUsage(), f.GetDefaultText(), strings.Join(f.GetEnvVars(), "\x00")}
	if s, ok := helpLines.Load(k); ok {
		return s.(string)
	}
	s := cli.FlagStringer(f)
	helpLines.Store(k, s)
	return s
}

// names are the flag's name and aliases, as urfave/cli gives them: each up
// to its first comma or space (its v1 form), which ours have not.
func names(f cli.Flag, name string, aliases []string) []string {
	if strings.ContainsAny(name, ", ") || slices.ContainsFunc(aliases, func(a string) bool { return strings.ContainsAny(a, ", ") }) {
		return f.Names()
	}
	return append([]string{name}, aliases...)
}

type boolFlag struct {
	*cli.BoolFlag
	names []string
}

func (f *boolFlag) Names() []string { return f.names }
func (f *boolFlag) String() string  { return helpLine(f, f.names) }

type stringFlag struct {
	*cli.StringFlag
	names []string
}

func (f *stringFlag) Names() []string { return f.names }
func (f *stringFlag) String() string  { return helpLine(f, f.names) }

type intFlag struct {
	*cli.IntFlag
	names []string
}

func (f *intFlag) Names() []string { return f.names }
func (f *intFlag) String() string  { return helpLine(f, f.names) }

type durationFlag struct {
	*cli.DurationFlag
	names []string
}

func (f *durationFlag) Names() []string { return f.names }
func (f *durationFlag) String() string  { return helpLine(f, f.names) }

type stringSliceFlag struct {
	*cli.StringSliceFlag
	names []string
}

func (f *stringSliceFlag) Names() []string { return f.names }
func (f *stringSliceFlag) String() string  { return helpLine(f, f.names) }

type uint64Flag struct {
	*cli.Uint64Flag
	names []string
}

func (f *uint64Flag) Names() []string { return f.names }
func (f *uint64Flag) String() string  { return helpLine(f, f.names) }

// isBoolFlag: the flag takes no value.
func isBoolFlag(f cli.Flag) bool {
	switch f.(type) {
	case *cli.BoolFlag, *boolFlag:
		return true
	}
	return false
}
