package pretty

import (
	"bytes"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// SGR codes of the styles the view uses.
const (
	bold    = "1"
	dim     = "2"
	red     = "31"
	green   = "32"
	yellow  = "33"
	blue    = "34"
	magenta = "35"
	cyan    = "36"
	boldRed = "1;31"
)

// paint wraps s in a colour when colour is on. Every painted piece resets
// at its end, so that a line left open never leaks its colour.
func (w *writer) paint(code, s string) string {
	if !w.color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Limits of what one line shows.
const (
	summaryWidth = 72  // a call's argument summary
	nameWidth    = 40  // a tool or agent name
	inlineWidth  = 100 // a reason or report kept on its line
	detailWidth  = 160 // each line of a multi-line detail
	detailLines  = 4   // lines of a detail below a line
)

// shorten cuts s to n runes, marking the cut with an ellipsis.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}

// oneLine makes text fit on one line: line breaks and tabs become spaces,
// runs of spaces shrink to one, and control characters are neutralised.
func oneLine(s string) string {
	s = clean(s)
	return strings.Join(strings.Fields(s), " ")
}

// clean replaces the control characters of untrusted text, escape sequences
// above all, and the bidirectional overrides (formats.Unsafe), so that a
// tool's output cannot drive the terminal or reorder what it shows. Line
// breaks and tabs stay; carriage returns go.
func clean(s string) string {
	ok := utf8.ValidString(s)
	for _, r := range s {
		if ok && formats.Unsafe(r) && r != '\n' && r != '\t' {
			ok = false
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\r':
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case formats.Unsafe(r):
			b.WriteRune('�')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// firstLines splits text into at most max lines, each shortened, and says
// how many further lines were left out.
func firstLines(text string, max int) (lines []string, more int) {
	all := strings.Split(strings.TrimRight(clean(text), "\n"), "\n")
	for len(all) > 0 && strings.TrimSpace(all[0]) == "" {
		all = all[1:]
	}
	if len(all) > max {
		more = len(all) - max
		all = all[:max]
	}
	for _, l := range all {
		lines = append(lines, shorten(strings.TrimRight(strings.ReplaceAll(l, "\t", "    "), " "), detailWidth))
	}
	return lines, more
}

// fitsInline: text short enough to follow a status on its line.
func fitsInline(text string) bool {
	t := strings.TrimSpace(text)
	return !strings.Contains(t, "\n") && utf8.RuneCountInString(t) <= inlineWidth
}

// summarize is a short description of a call: the source's own summary, or
// the argument a person would recognise it by.
func summarize(c formats.Call) string {
	if c.Summary != "" {
		return shorten(oneLine(unwrapShell(c.Summary)), summaryWidth)
	}
	return shorten(oneLine(argSummary(c.Args)), summaryWidth)
}

// summaryKeys are the arguments that name what a call acts on, best first
// (Bash's command before its description, Task's description before its
// prompt, Grep's pattern before its path).
var summaryKeys = []string{"command", "cmd", "file_path", "filePath", "notebook_path", "path",
	"pattern", "query", "url", "description", "prompt", "content"}

// argSummary picks the best-known argument of a JSON object of arguments,
// else its first string argument; arguments that are not an object are
// shown as they are.
func argSummary(args json.RawMessage) string {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" || string(args) == "{}" {
		return ""
	}
	if args[0] != '{' {
		var s string
		if json.Unmarshal(args, &s) == nil {
			return s
		}
		return string(args)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if _, err := dec.Token(); err != nil {
		return string(args)
	}
	found := map[string]string{}
	first, list := "", ""
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := k.(string)
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			break
		}
		v := stringArg(key, raw)
		if v == "" {
			if n, ok := listLen(raw); ok && list == "" {
				list = key + ": " + strconv.Itoa(n) + " items"
			}
			continue
		}
		found[key] = v
		if first == "" {
			first = v
		}
	}
	for _, k := range summaryKeys {
		if v := found[k]; v != "" {
			return v
		}
	}
	if first == "" {
		return list // TodoWrite's todos: 3 items
	}
	return first
}

// listLen is the length of a JSON array that is not a command's argv.
func listLen(raw json.RawMessage) (int, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return 0, false
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return 0, false
	}
	return len(items), true
}

// stringArg is an argument as text: a string, or an array of strings
// joined (a command given as argv). Commands lose the shell that wraps them.
func stringArg(key string, raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if key == "command" || key == "cmd" {
			return unwrapShell(s)
		}
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) != nil || len(argv) == 0 {
		return ""
	}
	if len(argv) == 3 && isShell(argv[0]) && (argv[1] == "-c" || argv[1] == "-lc") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// unwrapShell turns `bash -lc 'ls -la'` into `ls -la`: agents wrap every
// command in a login shell, which says nothing to the reader.
func unwrapShell(s string) string {
	name, rest, ok := strings.Cut(s, " ")
	if !ok || !isShell(name) {
		return s
	}
	flag, cmd, ok := strings.Cut(rest, " ")
	if !ok || (flag != "-c" && flag != "-lc") {
		return s
	}
	if n := len(cmd); n >= 2 && (cmd[0] == '\'' || cmd[0] == '"') && cmd[n-1] == cmd[0] {
		cmd = cmd[1 : n-1]
	}
	return cmd
}

func isShell(p string) bool {
	switch path.Base(p) {
	case "sh", "bash", "zsh", "dash", "fish":
		return true
	}
	return false
}

// stamp is when an event happened, by the source's clock and by arrival.
type stamp struct{ time, arrived time.Time }

func stampOf(e *formats.Event) stamp { return stamp{e.Time, e.Arrived} }

// since is the time from s to e: by the source's clock when both have
// its times, else by arrival (mixing the two clocks would be meaningless).
// ok is false when neither is known, and for arrivals less than a
// millisecond apart: that is a finished file read at full speed, which
// says nothing of how long the call took.
func (s stamp) since(e *formats.Event) (d time.Duration, ok bool) {
	switch {
	case !s.time.IsZero() && !e.Time.IsZero():
		d = e.Time.Sub(s.time)
		return d, d >= 0
	case !s.arrived.IsZero() && !e.Arrived.IsZero():
		d = e.Arrived.Sub(s.arrived)
		return d, d >= time.Millisecond
	}
	return 0, false
}

// tokens describes a run's usage: the total, and its parts as known.
func tokens(u formats.UsageInfo) string {
	total := u.Total()
	if !total.OK && !u.CacheReadTokens.OK && !u.CacheWriteTokens.OK {
		return ""
	}
	var parts []string
	add := func(o formats.Opt[int64], what string) {
		if o.OK {
			parts = append(parts, count(o.V)+" "+what)
		}
	}
	add(u.InputTokens, "in")
	add(u.OutputTokens, "out")
	// Caches that were not used are not worth a mention.
	if u.CacheReadTokens.V != 0 {
		add(u.CacheReadTokens, "cache read")
	}
	if u.CacheWriteTokens.V != 0 {
		add(u.CacheWriteTokens, "cache write")
	}
	if u.ReasoningTokens.V != 0 {
		add(u.ReasoningTokens, "reasoning")
	}
	s := ""
	if total.OK {
		s = count(total.V) + " tokens"
	}
	// A total made of one part needs no breakdown.
	if len(parts) > 1 || (len(parts) == 1 && (u.TotalTokens.OK || !total.OK)) {
		if s == "" {
			return "tokens: " + strings.Join(parts, ", ")
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// count, cost and duration print as every human view of agentconv does
// (formats.Count, formats.Dollars, formats.Elapsed).
var count, cost, duration = formats.Count, formats.Dollars, formats.Elapsed
