package convert

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
	"github.com/urfave/cli/v2"
)

// `agentconv sessions` lists the session files on disk: those under the
// places that each dialect names for its agent (Dialect.Places), or under
// the directories given. Each file is read through its dialect's reader
// and the pipeline's run view, as a conversion reads it, so that what the
// list says of a session is what a conversion of it gets.

const sessionsUsage = `agentconv sessions [--since 7d] [--agent NAME] [--project PATH] [--by day|week|month|model|project] [--json | --paths] [DIR|FILE ...]`

const sessionsDescription = `Lists the sessions that the agents keep on disk, oldest first: for each its
agent, session id, project (the directory it ran in), start time, prompts,
tool calls, tokens (input, the cache reads and writes among them, output,
the reasoning among it), cost and size, and the totals. The cost is the
files' own where they give one (COST FROM source), else an estimate from
the price table kept with agentconv (COST FROM estimate). Without a DIR it
looks in the agents' own places: %s.
What each file gave is kept in a cache, and the next listing reads only
the files changed since (--no-cache reads every file).

Examples:
   agentconv sessions                          # every session found
   agentconv sessions --since 7d --agent claude
   agentconv sessions --by day --since 30d     # the counts and cost of each day
   agentconv sessions --project . --json       # this project's, as JSON lines
   agentconv sessions ~/backup/claude          # under a directory of copies
   agentconv sessions --since 7d --agent claude --paths | agentconv --to otlp --files-from -`

func sessionsCommand(sys Sys, later *func() int) *cli.Command {
	return &cli.Command{
		Flags:       namedFlags(sessionsFlags()),
		Name:        "sessions",
		Usage:       "list the agents' session files on disk, to convert or ship them",
		UsageText:   sessionsUsage,
		Description: fmt.Sprintf(sessionsDescription, orNone(strings.Join(placeNames(), ", "))),
		Action: func(c *cli.Context) error {
			*later = func() int { return sessionsCmd(c, sys) }
			return nil
		},
	}
}

func sessionsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "since", Usage: "only sessions active since `WHEN`: a time ago (7d, 24h, 90m, 2w) or a date (2026-11-24, or RFC 3339)"},
		&cli.StringFlag{Name: "agent", Usage: "only the sessions of agent `NAME`: the agent's name (claude-code, codex, gemini-cli), its first word (claude), or its dialect's name"},
		&cli.StringFlag{Name: "project", Usage: "only the sessions that ran in `PATH` or under it"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object per session (path, dialect and the fields), instead of the table"},
		&cli.StringFlag{Name: "by", Usage: "sum the sessions by `KEY`: day, week or month (of their start), model or project, with the totals"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "show no progress bar (it shows on a terminal for a long listing)"},
		&cli.BoolFlag{Name: "no-cache", Usage: "read every file, and neither read nor write the cache of what earlier listings read ($XDG_CACHE_HOME/agentconv/sessions.jsonl, else ~/.cache/agentconv/sessions.jsonl)"},
		&cli.BoolFlag{Name: "paths", Usage: "print only the session files' paths, one a line, for agentconv --files-from -"},
		&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile to `FILE`"},
		&cli.StringFlag{Name: "memprofile", Hidden: true, Usage: "write an allocation profile to `FILE`"},
		&cli.BoolFlag{Name: "null", Aliases: []string{"0"}, Usage: "with --paths, end each path with a NUL byte instead of a line break, for agentconv --files-from - --null (as find -print0 and xargs -0)"},
	}
}

// placeNames describes the default places, for --help (made once: the
// commands' help is made at every start). Callers do not change it.
var placeNames = sync.OnceValue(func() []string {
	env := func(k string) string { return "$" + k }
	var out []string
	for _, d := range Readable() {
		if d.Places == nil {
			continue
		}
		out = append(out, d.Places(env)...)
	}
	return out
})

// SessionInfo is what `agentconv sessions` says of one session file.
type SessionInfo struct {
	Path    string `json:"path"`
	Dialect string `json:"dialect"`
	Agent   string `json:"agent"`
	Session string `json:"session_id"`
	Project string `json:"project,omitempty"`
	// Start and End are the session's first and last times; zero when
	// the file gives none.
	Start     time.Time `json:"-"`
	End       time.Time `json:"-"`
	Runs      int       `json:"runs"`
	Prompts   int       `json:"prompts"`
	ToolCalls int       `json:"tool_calls"`
	// Tokens are the input and output tokens of every run.
	Tokens int64 `json:"tokens"`
	// Bytes is the size of the session file and of the files it owns
	// (its subagents').
	Bytes int64 `json:"bytes"`
	// Models are the models the session used, in the order first seen.
	Models []string `json:"models,omitempty"`
	// Usage is the session's counts and cost: the sum of its runs'
	// totals (the run view's, as a conversion gives them), its cost the
	// source's where it gives one, else the price table's estimate.
	Usage Usage `json:"-"`

	// byModel splits Usage by model, for --by model, in the order first
	// seen: a slice, as a session has a model or two (a map for each of
	// 100,000 sessions was a fifth of the memory of the listing).
	byModel []modelUsage
	// from is the dialect of the place the file was found under, "" when
	// it must be detected.
	from     string
	modified time.Time
	// ownedModified is the latest modification time of the files it
	// owns, in nanoseconds since 1970; 0 when it owns none.
	ownedModified int64
	walked        bool // found under a directory
	// malformed: lines of the file could not be read; its counts leave
	// them out.
	malformed bool
}

// modelUsage is a session's usage of one model.
type modelUsage struct {
	model string
	Usage
}

// usageOf is the session's usage of model, nil if none.
func (s *SessionInfo) usageOf(model string) *Usage {
	for i := range s.byModel {
		if s.byModel[i].model == model {
			return &s.byModel[i].Usage
		}
	}
	return nil
}

// Usage is the token counts and cost of sessions, with the meanings of
// formats.UsageInfo: Input counts every input token, the cache reads and
// writes included.
type Usage struct {
	formats.UsageInfo
	// Estimated: some of the cost is the price table's estimate (the
	// source gave none for it).
	Estimated bool
	// Unpriced names the models whose tokens have no price: in the source
	// nor in the table; the cost leaves them out.
	Unpriced []string
}

// add sums o into u.
func (u *Usage) add(o Usage) {
	u.UsageInfo.Add(o.UsageInfo)
	u.Estimated = u.Estimated || o.Estimated
	for _, m := range o.Unpriced {
		if !slices.Contains(u.Unpriced, m) {
			u.Unpriced = append(u.Unpriced, m)
		}
	}
}

// costFrom says where the cost comes from: "source", "estimate" (wholly
// or in part from the price table), or "" when no cost is known.
func (u Usage) costFrom() string {
	switch {
	case !u.CostUSD.OK:
		return ""
	case u.Estimated:
		return "estimate"
	}
	return "source"
}

// usageJSON is the JSON of Usage: a count not known is left out.
type usageJSON struct {
	Input        *int64   `json:"input_tokens,omitempty"`
	CacheRead    *int64   `json:"cache_read_tokens,omitempty"`
	CacheWrite   *int64   `json:"cache_write_tokens,omitempty"`
	CacheWrite1h *int64   `json:"cache_write_1h_tokens,omitempty"`
	Output       *int64   `json:"output_tokens,omitempty"`
	Reasoning    *int64   `json:"reasoning_tokens,omitempty"`
	Cost         *float64 `json:"cost_usd,omitempty"`
	CostFrom     string   `json:"cost_from,omitempty"`
	Unpriced     []string `json:"unpriced_models,omitempty"`
}

func (u Usage) json() usageJSON {
	cost := u.CostUSD.Ptr()
	if cost != nil {
		*cost = math.Round(*cost*1e6) / 1e6
	}
	return usageJSON{u.InputTokens.Ptr(), u.CacheReadTokens.Ptr(), u.CacheWriteTokens.Ptr(), u.CacheWrite1hTokens.Ptr(),
		u.OutputTokens.Ptr(), u.ReasoningTokens.Ptr(), cost, u.costFrom(), u.Unpriced}
}

// MarshalJSON writes the times in RFC 3339, left out when unknown, and the
// counts and cost.
func (s SessionInfo) MarshalJSON() ([]byte, error) {
	type plain SessionInfo
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return json.Marshal(struct {
		plain
		Start string `json:"start,omitempty"`
		End   string `json:"end,omitempty"`
		usageJSON
	}{plain(s), stamp(s.Start), stamp(s.End), s.Usage.json()})
}

func sessionsCmd(c *cli.Context, sys Sys) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(sys.Stderr, "agentconv sessions: %s\n", formats.Visible(fmt.Sprintf(format, args...), true))
		return code
	}
	if stop, err := startProfiles(c.String("cpuprofile"), c.String("memprofile")); err != nil {
		return fail(ExitUsage, "%v", err)
	} else {
		defer stop()
	}
	// The list grows with the files: the collector's headroom grows with
	// it (gcFloor).
	old := gcFloor.Swap(100)
	defer gcFloor.Store(old)
	now := time.Now
	if sys.Clock != nil {
		now = sys.Clock
	}
	var since time.Time
	if s := c.String("since"); s != "" {
		t, err := parseSince(s, now())
		if err != nil {
			return fail(ExitUsage, "--since %q: %v", s, err)
		}
		since = t
	}
	project := c.String("project")
	if project != "" {
		abs, err := filepath.Abs(expandHome(project, sys.getenv("HOME")))
		if err != nil {
			return fail(ExitUsage, "--project %q: %v", project, err)
		}
		project = abs
	}
	if c.Bool("null") && !c.Bool("paths") {
		return fail(ExitUsage, "--null ends each path of --paths with a NUL byte: give --paths too")
	}
	if c.Bool("json") && c.Bool("paths") {
		return fail(ExitUsage, "--json and --paths are two ways to print the list; pick one")
	}
	by := c.String("by")
	if _, ok := groupBy[by]; by != "" && !ok {
		return fail(ExitUsage, "--by %q: give day, week, month, model or project", by)
	}
	if by != "" && c.Bool("paths") {
		return fail(ExitUsage, "--by sums the sessions, --paths lists their files; pick one")
	}

	// Progress on a terminal (progress.go); the warnings write through it.
	prog := newProgress(sys.Stderr, !c.Bool("quiet") && stderrIsTerminal(sys.Stderr), sys.getenv("NO_COLOR") != "")
	stderr := io.Writer(sys.Stderr)
	if prog != nil {
		stderr = prog
		defer prog.finish()
	}
	rep := formats.NewReport(stderr)
	unread := 0
	warn := func(path string, err error) {
		unread++
		rep.Warn(0, "%s: cannot read it: %v; skipped", path, err)
	}
	files, places, err := sessionFiles(c.Args().Slice(), sys.getenv, warn)
	if err != nil {
		return fail(ExitInput, "%v", err)
	}
	if c.NArg() == 0 && places == 0 {
		if p := placeNames(); len(p) > 0 {
			fmt.Fprintf(sys.Stderr, "agentconv sessions: none of the agents' places is here (%s); name a directory\n", strings.Join(p, ", "))
		} else {
			fmt.Fprintf(sys.Stderr, "agentconv sessions: no dialect names its agent's places; name a directory\n")
		}
	}
	// A file not written to since --since has no activity since.
	if !since.IsZero() {
		kept := files[:0]
		for _, f := range files {
			if !f.modified.Before(since) {
				kept = append(kept, f)
			}
		}
		files = kept
	}
	if prog != nil {
		srcs := make([]Source, len(files))
		for i, f := range files {
			srcs[i] = Source{Path: f.Path, Size: f.Bytes}
		}
		prog.start(len(files), srcs)
	}
	var cache *sessionsCache
	if !c.Bool("no-cache") {
		cache = openSessionsCache(sessionsCacheFile(sys.getenv))
	}
	list, skipped, failed := readSessions(files, rep, prog.update, cache)
	prog.finish()
	if err := cache.save(); err != nil {
		fmt.Fprintf(sys.Stderr, "agentconv sessions: cannot keep the cache of this listing (%v): the next one reads every file again; --no-cache stops trying\n", unwrapPath(err))
	}
	unread += failed
	if skipped > 0 {
		fmt.Fprintf(sys.Stderr, "agentconv sessions: skipped %d %s that no dialect reads\n", skipped, plural(skipped, "file", "files"))
	}
	agent := strings.ToLower(c.String("agent"))
	out := list[:0] // in place, as the list was made
	for _, s := range list {
		last := s.End
		if last.IsZero() {
			last = s.modified
		}
		switch {
		case !since.IsZero() && last.Before(since):
		case agent != "" && !agentMatches(agent, s):
		case project != "" && !underDir(s.Project, project) && !inProject(&s, project):
		default:
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Start, out[j].Start
		if a.IsZero() {
			a = out[i].modified
		}
		if b.IsZero() {
			b = out[j].modified
		}
		if !a.Equal(b) {
			return a.Before(b)
		}
		return out[i].Path < out[j].Path
	})

	var werr error
	switch {
	case by != "" && c.Bool("json"):
		var b []byte
		for _, g := range groupSessions(out, by) {
			line, err := g.marshal(by)
			if err != nil {
				return fail(ExitOutput, "%v", err)
			}
			b = append(append(b, line...), '\n')
		}
		_, werr = sys.Stdout.Write(b)
	case by != "" && len(out) > 0:
		werr = printGroups(sys.Stdout, groupSessions(out, by), by, sys.getenv("HOME"))
	case c.Bool("paths"):
		b := bufio.NewWriterSize(sys.Stdout, 64<<10)
		end := byte('\n')
		if c.Bool("null") {
			end = 0
		}
		for _, s := range out {
			if end == '\n' && strings.ContainsAny(s.Path, "\n\r") {
				// One path a line cannot say it: read back, it would name
				// other files.
				fmt.Fprintf(sys.Stderr, "agentconv sessions: %s: the name holds a line break, so --paths leaves it out; --paths --null lists it (read with --files-from - --null)\n", strconv.Quote(s.Path))
				unread++
				continue
			}
			b.WriteString(s.Path)
			b.WriteByte(end)
		}
		werr = b.Flush()
	case c.Bool("json"):
		// Written as made, not gathered first: a line for each of 100,000
		// sessions is tens of MB.
		bw := bufio.NewWriterSize(sys.Stdout, 64<<10)
		for _, s := range out {
			line, err := json.Marshal(s)
			if err != nil {
				return fail(ExitOutput, "%v", err)
			}
			bw.Write(line)
			bw.WriteByte('\n')
		}
		werr = bw.Flush()
	case len(out) == 0:
		fmt.Fprintf(sys.Stderr, "agentconv sessions: no session found\n")
	default:
		werr = printSessions(sys.Stdout, out, sys.getenv("HOME"))
	}
	if werr != nil {
		return exitFor(&OutputError{werr}, sys.Stderr)
	}
	if unread > 0 {
		return ExitInput
	}
	return ExitOK
}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// The columns of the counts and the cost.
const usageHeader = "INPUT\tCACHE READ\tCACHE WRITE\tOUTPUT\tREASONING\tCOST USD\tCOST FROM"

// groupBy are the keys of --by: a session's groups.
var groupBy = map[string]func(s *SessionInfo) []string{
	"day":   func(s *SessionInfo) []string { return []string{startOf(s).Format("2006-01-02")} },
	"month": func(s *SessionInfo) []string { return []string{startOf(s).Format("2006-01")} },
	// A week is named by its Monday (ISO 8601 weeks).
	"week": func(s *SessionInfo) []string {
		t := startOf(s)
		return []string{t.AddDate(0, 0, -(int(t.Weekday())+6)%7).Format("2006-01-02")}
	},
	"project": func(s *SessionInfo) []string { return []string{orDash(s.Project)} },
	"model": func(s *SessionInfo) []string {
		var out []string
		for _, m := range s.byModel {
			out = append(out, orUnnamed(m.model))
		}
		if len(out) == 0 {
			out = []string{"-"}
		}
		return out
	},
}
