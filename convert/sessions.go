package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
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

const sessionsUsage = `agentconv sessions [--since 7d] [--agent NAME] [--project PATH] [--json | --paths] [DIR|FILE ...]`

const sessionsDescription = `Lists the sessions that the agents keep on disk, oldest first: for each its
agent, session id, project (the directory it ran in), start time, prompts,
tool calls, tokens (input and output) and size. Without a DIR it looks in
the agents' own places: %s.

Examples:
   agentconv sessions                          # every session found
   agentconv sessions --since 7d --agent claude
   agentconv sessions --project . --json       # this project's, as JSON lines
   agentconv sessions ~/backup/claude          # under a directory of copies
   agentconv sessions --since 7d --agent claude --paths | agentconv --to otlp --files-from -`

func sessionsCommand(sys Sys, later *func() int) *cli.Command {
	return &cli.Command{
		Flags:       sessionsFlags(),
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
		&cli.BoolFlag{Name: "paths", Usage: "print only the session files' paths, one a line, for agentconv --files-from -"},
		&cli.BoolFlag{Name: "null", Aliases: []string{"0"}, Usage: "with --paths, end each path with a NUL byte instead of a line break, for agentconv --files-from - --null (as find -print0 and xargs -0)"},
	}
}

// placeNames describes the default places, for --help.
func placeNames() []string {
	env := func(k string) string { return "$" + k }
	var out []string
	for _, d := range Readable() {
		if d.Places == nil {
			continue
		}
		out = append(out, d.Places(env)...)
	}
	return out
}

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

	modified time.Time
	walked   bool // found under a directory
	// malformed: lines of the file could not be read; its counts leave
	// them out.
	malformed bool
}

// MarshalJSON writes the times in RFC 3339, left out when unknown.
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
	}{plain(s), stamp(s.Start), stamp(s.End)})
}

func sessionsCmd(c *cli.Context, sys Sys) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(sys.Stderr, "agentconv sessions: %s\n", formats.Visible(fmt.Sprintf(format, args...), true))
		return code
	}
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

	rep := formats.NewReport(sys.Stderr)
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
	list, skipped, failed := readSessions(files, rep)
	unread += failed
	if skipped > 0 {
		fmt.Fprintf(sys.Stderr, "agentconv sessions: skipped %d %s that no dialect reads\n", skipped, plural(skipped, "file", "files"))
	}
	agent := strings.ToLower(c.String("agent"))
	var out []SessionInfo
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
	case c.Bool("paths"):
		var b strings.Builder
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
		_, werr = io.WriteString(sys.Stdout, b.String())
	case c.Bool("json"):
		var b []byte
		for _, s := range out {
			line, err := json.Marshal(s)
			if err != nil {
				return fail(ExitOutput, "%v", err)
			}
			b = append(append(b, line...), '\n')
		}
		_, werr = sys.Stdout.Write(b)
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

// homeEnv is the environment of a user whose home is dir, and nothing
// else: the places the agents keep there by default.
func homeEnv(dir string) func(string) string {
	return func(k string) string {
		if k == "HOME" || k == "USERPROFILE" {
			return dir
		}
		return ""
	}
}

// inProject says whether a session whose file gives no project ran in dir,
// as its dialect tells (Dialect.InProject); if so, dir is its project.
func inProject(s *SessionInfo, dir string) bool {
	d, ok := Lookup(s.Dialect)
	if s.Project != "" || !ok || d.InProject == nil || !d.InProject(s.Path, dir) {
		return false
	}
	s.Project = dir
	return true
}

// sessionFiles lists the files to read: under the places of the dialects
// that name some (each walked for its own dialect's files), or under the
// directories named, and the files named. Each path comes once.
// places counts the agents' places found.
func sessionFiles(names []string, getenv func(string) string, unreadable func(string, error)) (_ []SessionInfo, places int, _ error) {
	type walk struct {
		dir  string
		from formats.Dialect
	}
	var walks []walk
	var out []SessionInfo
	seen := map[string]bool{}
	add := func(src Source) {
		if seen[src.Path] {
			return
		}
		seen[src.Path] = true
		s := SessionInfo{Path: src.Path, Bytes: src.Size, walked: src.Dir != ""}
		if st, err := os.Stat(src.Path); err == nil {
			s.modified = st.ModTime()
		}
		out = append(out, s)
	}
	if len(names) == 0 {
		for _, d := range Readable() {
			if d.Places == nil {
				continue
			}
			for _, dir := range d.Places(getenv) {
				if st, err := os.Stat(dir); err == nil && st.IsDir() {
					walks = append(walks, walk{dir, d})
					places++
				}
			}
		}
	}
	for _, n := range names {
		st, err := os.Stat(n)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: cannot read it: %v", n, unwrapPath(err))
		}
		if st.IsDir() {
			walks = append(walks, walk{dir: n})
			// A home directory: the agents' places under it, which the
			// walk leaves out as hidden (~/.gemini/tmp).
			for _, d := range Readable() {
				if d.Places == nil {
					continue
				}
				for _, dir := range d.Places(homeEnv(n)) {
					if st, err := os.Stat(dir); err == nil && st.IsDir() && dir != n {
						walks = append(walks, walk{dir, d})
					}
				}
			}
		} else {
			add(Source{Path: n, Size: st.Size()})
		}
	}
	owned := map[string]int64{}
	for _, w := range walks {
		srcs, err := dirInputs(w.dir, w.from, unreadable)
		var none noFilesError
		if errors.As(err, &none) {
			continue // nothing there
		}
		if err != nil {
			return nil, 0, err
		}
		for _, s := range srcs {
			add(s)
		}
		for f, size := range ownedFiles(w.dir, w.from) {
			owned[f] += size
		}
	}
	for i := range out {
		out[i].Bytes += owned[out[i].Path]
	}
	return out, places, nil
}

// ownedFiles sums, by owner, the sizes of the files under dir that another
// file reads (Dialect.Owner): a session's size includes its subagents'.
func ownedFiles(dir string, from formats.Dialect) map[string]int64 {
	var owners []formats.Dialect
	for _, d := range Readable() {
		if d.Owner != nil && (from.Name == "" || d.Name == from.Name) {
			owners = append(owners, d)
		}
	}
	out := map[string]int64{}
	if len(owners) == 0 {
		return out
	}
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		for _, d := range owners {
			if o := d.Owner(p); o != "" && o != p {
				if info, err := e.Info(); err == nil {
					out[o] += info.Size()
				}
				break
			}
		}
		return nil
	})
	return out
}

// readSessions reads files at once on the machine's cores: the sessions,
// how many files no dialect reads, and how many could not be read whole.
func readSessions(files []SessionInfo, rep *formats.Report) (list []SessionInfo, skipped, failed int) {
	ok := make([]bool, len(files))
	var wg sync.WaitGroup
	work := make(chan int)
	for range max(1, min(runtime.GOMAXPROCS(0), len(files))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				ok[i] = readSession(&files[i], rep)
			}
		}()
	}
	for i := range files {
		work <- i
	}
	close(work)
	wg.Wait()
	for i, s := range files {
		if s.Dialect == "-" || s.malformed {
			failed++
		}
		if ok[i] {
			list = append(list, s)
		} else if s.Dialect == "" {
			skipped++
		}
	}
	return list, skipped, failed
}

// readSession reads one file through a pipeline whose writer only counts;
// false: the file is not a session (no dialect reads it, or it failed).
func readSession(s *SessionInfo, rep *formats.Report) bool {
	f, err := os.Open(s.Path)
	if err != nil {
		rep.Warn(0, "%s: cannot read it: %v; skipped", s.Path, unwrapPath(err))
		s.Dialect = "-"
		return false
	}
	defer f.Close()
	view := &formats.RunView{}
	w := &sessionStats{s: s, view: view}
	quiet := formats.NewReport(io.Discard)
	p := NewPipeline(w, formats.Dialect{Name: "sessions"}, Options{Lenient: true, Report: quiet, View: view})
	w.p = p
	err = p.Convert(context.Background(), Input{Name: s.Path, R: f, Path: s.Path})
	if err == nil {
		err = p.Close()
	}
	var de *detectError
	switch {
	case errors.As(err, &de):
		return false
	case err != nil:
		rep.Warn(0, "%s: %v; left out of the list", s.Path, err)
		s.Dialect = "-"
		return false
	}
	if bad := p.Result().Skipped; len(bad) > 0 {
		// Listed with what could be read; the exit status says the rest.
		rep.Warn(0, "%d malformed %s (%s) left out of its counts", len(bad), plural(len(bad), "line", "lines"), strings.Join(limit(bad, 3), ", "))
		s.malformed = true
	}
	if s.walked {
		if d, ok := Lookup(w.dialect); !ok || !readsDir(d, s.Path) {
			return false
		}
	}
	if s.Dialect == "" {
		s.Dialect = w.dialect
	}
	if s.Agent == "" {
		s.Agent = s.Dialect
	}
	return s.Runs > 0 || s.Dialect != ""
}

// sessionStats is the writer of readSession: it counts what the run view
// and the events say.
type sessionStats struct {
	s       *SessionInfo
	view    *formats.RunView
	p       *Pipeline
	dialect string
}

func (w *sessionStats) Write(e *formats.Event) error {
	s, v := w.s, w.view
	if w.dialect == "" && e.Source.Dialect != "" {
		w.dialect = e.Source.Dialect
	}
	switch e.Kind {
	case formats.ToolCall:
		s.ToolCalls++
	case formats.RunEnd:
		s.Runs++
		s.Prompts += v.Prompts
		s.Tokens = formats.Some(s.Tokens).Plus(v.Usage.InputTokens).Plus(v.Usage.OutputTokens).V
		if s.Session == "" {
			s.Session = v.Info.SessionID
		}
		if s.Agent == "" {
			s.Agent = v.Info.AgentName
		}
		if s.Project == "" {
			s.Project = v.Info.Cwd
		}
		if s.Start.IsZero() || !v.Start.IsZero() && v.Start.Before(s.Start) {
			s.Start = v.Start
		}
		if v.Last.After(s.End) {
			s.End = v.Last
		}
	}
	return nil
}

func (w *sessionStats) Close() error { return nil }

// printSessions writes the table.
func printSessions(out io.Writer, list []SessionInfo, home string) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSESSION\tPROJECT\tSTART\tPROMPTS\tTOOL CALLS\tTOKENS\tSIZE")
	for _, s := range list {
		start := "-"
		if !s.Start.IsZero() {
			start = s.Start.Local().Format("2006-01-02 15:04")
		}
		// The id and the project are the input's words: shown, not obeyed.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", formats.Visible(s.Agent, false), orDash(formats.Visible(s.Session, false)),
			orDash(formats.Visible(tildeHome(s.Project, home), false)),
			start, s.Prompts, s.ToolCalls, s.Tokens, humanBytes(s.Bytes))
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "(none yet: no dialect names one)"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tildeHome(p, home string) string {
	if home != "" && (p == home || strings.HasPrefix(p, home+string(filepath.Separator))) {
		return "~" + p[len(home):]
	}
	return p
}

func expandHome(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return home + p[1:]
	}
	return p
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// agentMatches: the agent's name, or its first word, or the dialect's
// name or its first word, is name.
func agentMatches(name string, s SessionInfo) bool {
	for _, have := range []string{strings.ToLower(s.Agent), s.Dialect} {
		if have == name || strings.HasPrefix(have, name) && strings.ContainsRune("-_. ", rune(have[len(name)])) {
			return true
		}
	}
	return false
}

// underDir: path is dir or under it.
func underDir(path, dir string) bool {
	if path == "" {
		return false
	}
	path = filepath.Clean(path)
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// parseSince reads --since: a time ago (a Go duration, or Nd / Nw) or a
// date or time.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'w') {
		if v, err := strconv.ParseFloat(s[:n-1], 64); err == nil && v >= 0 && v <= 100000 {
			day := 24 * time.Hour
			if s[n-1] == 'w' {
				day *= 7
			}
			return now.Add(-time.Duration(v * float64(day))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("give a time ago (7d, 24h, 90m, 2w) or a date (2026-11-24, 2026-11-24T09:00:00Z)")
}
