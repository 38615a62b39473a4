package convert

import (
	"fmt"
	"strings"

	"github.com/agentconv/agentconv/formats"
)

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
