package convert

import "github.com/urfave/cli/v2"

// namedFlags gives each flag its names once. urfave/cli works a flag's
// names out anew (a regular expression over each name) whenever it asks
// for them, and as a command starts it asks, for every flag, for the names
// of every flag before it: with this many flags that took longer than
// most conversions (3 ms a run, 30 % of the CPU of a test that converts
// many small inputs). Each wrapper keeps every method of its flag but
// Names.
func namedFlags(fs []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(fs))
	for i, f := range fs {
		names := f.Names()
		switch f := f.(type) {
		case *cli.BoolFlag:
			out[i] = &boolFlag{f, names}
		case *cli.StringFlag:
			out[i] = &stringFlag{f, names}
		case *cli.IntFlag:
			out[i] = &intFlag{f, names}
		case *cli.DurationFlag:
			out[i] = &durationFlag{f, names}
		case *cli.StringSliceFlag:
			out[i] = &stringSliceFlag{f, names}
		case *cli.Uint64Flag:
			out[i] = &uint64Flag{f, names}
		default:
			out[i] = f
		}
	}
	return out
}

type boolFlag struct {
	*cli.BoolFlag
	names []string
}

func (f *boolFlag) Names() []string { return f.names }

type stringFlag struct {
	*cli.StringFlag
	names []string
}

func (f *stringFlag) Names() []string { return f.names }

type intFlag struct {
	*cli.IntFlag
	names []string
}

func (f *intFlag) Names() []string { return f.names }

type durationFlag struct {
	*cli.DurationFlag
	names []string
}

func (f *durationFlag) Names() []string { return f.names }

type stringSliceFlag struct {
	*cli.StringSliceFlag
	names []string
}

func (f *stringSliceFlag) Names() []string { return f.names }

type uint64Flag struct {
	*cli.Uint64Flag
	names []string
}

func (f *uint64Flag) Names() []string { return f.names }

// isBoolFlag: the flag takes no value.
func isBoolFlag(f cli.Flag) bool {
	switch f.(type) {
	case *cli.BoolFlag, *boolFlag:
		return true
	}
	return false
}
