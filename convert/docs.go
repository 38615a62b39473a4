package convert

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agentconv/agentconv/formats"
)

// The tables of dialects: `agentconv formats` and the README's.

// DialectTable is the README's table of dialects, made from the registry.
func DialectTable() string {
	var b strings.Builder
	b.WriteString("| dialect | read | write | what it is |\n|---|---|---|---|\n")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "-"
	}
	for _, d := range Dialects {
		name := "`" + d.Name + "`"
		if len(d.Aliases) > 0 {
			name += " (`" + strings.Join(d.Aliases, "`, `") + "`)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, yes(d.NewReader != nil), yes(d.NewWriter != nil), d.Description)
	}
	return b.String()
}

// Cannot lists what a writable dialect cannot carry: the features it does
// not declare, less those whose loss another's always says (as on stderr:
// a target without prompts reports the prompts, not also the later prompts
// of a run), then the losses of its own encoding.
func Cannot(d formats.Dialect) []string {
	unnamed := formats.Unnamed(d.Carries)
	var out []string
	for _, f := range formats.Features() {
		if d.Carries&f == 0 && unnamed&f == 0 {
			out = append(out, formats.LossName(f, nil))
		}
	}
	return append(out, formats.QuirkNames(d.Quirks)...)
}

// LossTable is the README's table of what each target cannot carry, made
// from the registry's declared features and quirks.
func LossTable() string {
	var b strings.Builder
	b.WriteString("| target | what it cannot carry (the WHAT on stderr) |\n|---|---|\n")
	for _, d := range Writable() {
		cannot := Cannot(d)
		if len(cannot) == 0 {
			cannot = []string{"nothing"}
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", d.Name, strings.Join(cannot, "; "))
	}
	return b.String()
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
