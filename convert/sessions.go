package convert

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/prices"
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
	walked   bool // found under a directory
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
	list, skipped, failed := readSessions(files, rep, prog.update)
	prog.finish()
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
	add := func(src Source, from string) {
		if seen[src.Path] {
			return
		}
		seen[src.Path] = true
		s := SessionInfo{Path: src.Path, Bytes: src.Size, walked: src.Dir != "", from: from}
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
			add(Source{Path: n, Size: st.Size()}, "")
		}
	}
	owned := map[string]int64{}
	for _, w := range walks {
		known := map[string]string{}
		srcs, err := dirInputsOwned(w.dir, w.from, unreadable, known)
		var none noFilesError
		if errors.As(err, &none) {
			continue // nothing there
		}
		if err != nil {
			return nil, 0, err
		}
		out = slices.Grow(out, len(srcs)) // no slice twice the list's size
		for _, s := range srcs {
			add(s, w.from.Name)
		}
		for f, size := range ownedFiles(w.dir, w.from, known) {
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
// known holds the owners already asked for (dirInputsOwned), "" for none.
func ownedFiles(dir string, from formats.Dialect, known map[string]string) map[string]int64 {
	owners := ownerDialects(from)
	out := map[string]int64{}
	if len(owners) == 0 {
		return out
	}
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		o, ok := known[p]
		if !ok {
			o = ownerOf(owners, p)
		}
		if o != "" {
			if info, err := e.Info(); err == nil {
				out[o] += info.Size()
			}
		}
		return nil
	})
	return out
}

// readSessions reads files at once on the machine's cores: the sessions,
// how many files no dialect reads, and how many could not be read whole.
func readSessions(files []SessionInfo, rep *formats.Report, progress func(ManyProgress)) (list []SessionInfo, skipped, failed int) {
	ok := make([]bool, len(files))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var done ManyProgress
	work := make(chan int, 64)
	for range max(1, min(runtime.GOMAXPROCS(0), len(files))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newSessionReader()
			for i := range work {
				ok[i] = r.read(&files[i], rep)
				mu.Lock()
				done.Files++
				done.Runs += files[i].Runs
				done.Bytes += files[i].Bytes
				progress(done)
				mu.Unlock()
			}
		}()
	}
	// The largest first, so that no core waits on one big file at the end.
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(files[b].Bytes, files[a].Bytes) })
	for _, i := range order {
		work <- i
	}
	close(work)
	wg.Wait()
	// The list in the files' place: a copy of a list of 100,000 would be
	// tens of MB more.
	list = files[:0]
	for i := range files {
		s := &files[i]
		if s.Dialect == "-" || s.malformed {
			failed++
		}
		if ok[i] {
			list = append(list, *s)
		} else if s.Dialect == "" {
			skipped++
		}
	}
	clear(files[len(list):])
	return list, skipped, failed
}

// sessionReader reads the session files of one worker, one after
// another, as ConvertMany's workers read a directory's files: one buffer
// for all of them, the head of each looked at once, and a file found
// under a directory that its own dialect is sure of (detector.dialect) read
// as that one without putting it to every other dialect. Detection, and a
// buffer of 64 KiB made and cleared for each file, were most of the work
// of a small file, and the garbage of the buffers made the collector run
// through the list read so far ever more often as it grew.
type sessionReader struct {
	br   *bufio.Reader
	dirs []formats.Dialect
}

func newSessionReader() *sessionReader {
	return &sessionReader{br: bufio.NewReaderSize(eofReader{}, formats.DetectSize), dirs: dirDialects()}
}

// eofReader is an empty input: the buffer's before its first file.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// read reads one file through a pipeline whose writer only counts;
// false: the file is not a session (no dialect reads it, or it failed).
func (r *sessionReader) read(s *SessionInfo, rep *formats.Report) bool {
	plain := *s
	f, err := openInput(s.Path)
	if err != nil {
		rep.Warn(0, "%s: cannot read it: %v; skipped", s.Path, unwrapPath(err))
		s.Dialect = "-"
		return false
	}
	defer f.Close()
	// A file of an agent's place is of its dialect: read as such, without
	// detection, unless that fails.
	p, w, err := r.readAs(s, f, s.from)
	if s.from != "" && (err != nil || s.Runs == 0 || len(p.Result().Skipped) > 0) {
		if _, serr := f.Seek(0, io.SeekStart); serr == nil {
			*s = plain
			p, w, err = r.readAs(s, f, "")
		}
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

// readAs reads a session file of dialect from, or of the dialect detected
// when from is "". A regular file is read through the worker's buffer,
// its head looked at once; anything else (a FIFO named on the command
// line), and a binary dialect, whose reader wants the bytes as they are,
// through Pipeline.Convert.
func (r *sessionReader) readAs(s *SessionInfo, f *os.File, from string) (*Pipeline, *sessionStats, error) {
	view := &formats.RunView{}
	w := &sessionStats{s: s, view: view, prices: prices.Default()}
	quiet := formats.NewReport(io.Discard)
	o := Options{Lenient: true, Report: quiet, View: view}
	if from != "" {
		o.From, _ = Lookup(from)
	}
	p := NewPipeline(w, formats.Dialect{Name: "sessions"}, o)
	w.p = p
	in := Input{Name: s.Path, R: f, Path: s.Path}
	err := p.convertFile(in, r, s.walked)
	if err == nil {
		err = p.Close()
	}
	return p, w, err
}

// convertFile reads a file into the pipeline through the reader's buffer.
func (p *Pipeline) convertFile(in Input, r *sessionReader, walked bool) error {
	f := in.R.(*os.File)
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return p.Convert(context.Background(), in)
	}
	rep := p.opts.Report
	old := rep.SetWhere(func(line int) string { return fmt.Sprintf("%s:%d: ", in.Name, line) })
	defer func() { rep.SetWhere(old) }()
	src := newValidUTF8Reader(f, func(line int) {
		rep.Warn(line, "invalid UTF-8; each bad byte is replaced with U+FFFD (reported once per input)")
	})
	src.detecting = true
	br := r.br
	br.Reset(src)
	src0 := Source{Path: in.Path}
	if walked {
		src0.Dir = filepath.Dir(in.Path)
	}
	p.detect.dirs = r.dirs
	d, err := p.detect.dialect(in, br, src0, rep)
	if err != nil {
		src.detected(false)
		return err
	}
	if d.Binary {
		// Its reader takes the input's bytes as they are, from the start.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return &InputError{File: in.Name, Msg: err.Error()}
		}
		return p.Convert(context.Background(), in)
	}
	src.detected(false)
	unmark := formats.MarkValidUTF8(br)
	rd := d.NewReader(br, formats.ReadOptions{Dialect: d.Name, Report: rep, Path: in.Path, Figures: true})
	unmark()
	return p.convertInline(context.Background(), in, rd, br, nil)
}

// sessionStats is the writer of readSession: it counts what the run view
// and the events say.
type sessionStats struct {
	s       *SessionInfo
	view    *formats.RunView
	p       *Pipeline
	dialect string
	prices  *prices.Table
	// The run's requests by model: their counts, and the estimate of
	// their cost from the price table.
	reqs     map[string]*formats.UsageInfo
	estimate map[string]float64
	order    []string
}

func (w *sessionStats) Write(e *formats.Event, _ *formats.RunView) error {
	s, v := w.s, w.view
	if w.dialect == "" && e.Source.Dialect != "" {
		w.dialect = e.Source.Dialect
	}
	switch e.Kind {
	case formats.RunStart:
		clear(w.reqs)
		clear(w.estimate)
		w.order = w.order[:0]
	case formats.ToolCall:
		s.ToolCalls++
	case formats.Usage:
		w.request(e)
	case formats.RunEnd:
		s.Runs++
		s.Prompts += v.Prompts
		s.Tokens = formats.Some(s.Tokens).Plus(v.Usage.InputTokens).Plus(v.Usage.OutputTokens).V
		w.runUsage()
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
		clear(w.reqs)
		clear(w.estimate)
		w.order = w.order[:0]
	}
	return nil
}

// request counts a model request under its model: the one that answered,
// else its agent's, else the run's.
func (w *sessionStats) request(e *formats.Event) {
	model := e.Response.Model
	if a := w.view.Agent(e.Agent); model == "" && a != nil {
		model = a.Model
	}
	if model == "" {
		model = w.view.Info.Model
	}
	if w.reqs == nil {
		w.reqs, w.estimate = map[string]*formats.UsageInfo{}, map[string]float64{}
	}
	u := w.reqs[model]
	if u == nil {
		u = &formats.UsageInfo{}
		w.reqs[model] = u
		w.order = append(w.order, model)
	}
	u.Add(e.Usage)
	if p, ok := w.prices.Lookup(model); ok {
		w.estimate[model] += p.Cost(e.Usage)
	}
}

// runUsage adds the run's totals to the session's, split by model: the
// requests' where the run's totals are their sums, else the run's model's.
// The cost is the source's where it gives one, else the estimate.
func (w *sessionStats) runUsage() {
	v, s := w.view, w.s
	for _, m := range v.Models {
		if !slices.Contains(s.Models, m) {
			s.Models = append(s.Models, m)
		}
	}
	add := func(model string, u Usage) {
		t := s.usageOf(model)
		if t == nil {
			s.byModel = append(s.byModel, modelUsage{model: model})
			t = &s.byModel[len(s.byModel)-1].Usage
		}
		t.add(u)
		s.Usage.add(u)
	}
	main := v.Info.Model
	if main == "" && len(v.Models) > 0 {
		main = v.Models[0]
	}
	total := v.Usage
	if total.Empty() {
		return
	}
	sourceCost := total.CostUSD.OK
	if !sameCounts(total, v.RequestUsage()) || len(w.order) == 0 {
		// The source's run totals, which its requests do not add up to.
		u := Usage{UsageInfo: total}
		if !sourceCost {
			u.CostUSD = formats.Opt[float64]{}
			if p, ok := w.prices.Lookup(main); ok {
				u.CostUSD, u.Estimated = formats.Some(p.CostOfTotals(total)), true
			} else if counted(total) {
				u.Unpriced = []string{orUnnamed(main)}
			}
		}
		add(main, u)
		return
	}
	for i, m := range w.order {
		u := Usage{UsageInfo: *w.reqs[m]}
		switch {
		case sourceCost && !u.CostUSD.OK:
			// The source's cost of the run, not split by request: the
			// run's first model carries it.
			u.CostUSD = formats.Opt[float64]{}
			if i == 0 {
				u.CostUSD = total.CostUSD
			}
		case sourceCost:
		default:
			u.CostUSD = formats.Opt[float64]{}
			if _, ok := w.prices.Lookup(m); ok {
				u.CostUSD, u.Estimated = formats.Some(w.estimate[m]), true
			} else if counted(u.UsageInfo) {
				u.Unpriced = []string{orUnnamed(m)}
			}
		}
		add(m, u)
	}
}

// sameCounts: a and b give the same token counts.
func sameCounts(a, b formats.UsageInfo) bool {
	return a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && a.CacheReadTokens == b.CacheReadTokens &&
		a.CacheWriteTokens == b.CacheWriteTokens && a.ReasoningTokens == b.ReasoningTokens
}

// counted: some token was counted.
func counted(u formats.UsageInfo) bool {
	return u.InputTokens.V > 0 || u.OutputTokens.V > 0 || u.CacheReadTokens.V > 0 || u.CacheWriteTokens.V > 0
}

func orUnnamed(model string) string {
	if model == "" {
		return "(unnamed)"
	}
	return model
}

func (w *sessionStats) Close() error { return nil }

// printSessions writes the table, and the totals under it.
func printSessions(out io.Writer, list []SessionInfo, home string) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSESSION\tPROJECT\tSTART\tPROMPTS\tTOOL CALLS\t"+usageHeader+"\tSIZE")
	var total Usage
	var bytes int64
	for _, s := range list {
		start := "-"
		if !s.Start.IsZero() {
			start = s.Start.Local().Format("2006-01-02 15:04")
		}
		// The id and the project are the input's words: shown, not obeyed.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", formats.Visible(s.Agent, false), orDash(formats.Visible(s.Session, false)),
			orDash(formats.Visible(tildeHome(s.Project, home), false)),
			start, s.Prompts, s.ToolCalls, usageCells(s.Usage), humanBytes(s.Bytes))
		total.add(s.Usage)
		bytes += s.Bytes
	}
	fmt.Fprintf(tw, "TOTAL\t%d %s\t\t\t\t\t%s\t%s\n", len(list), plural(len(list), "session", "sessions"), usageCells(total), humanBytes(bytes))
	if err := tw.Flush(); err != nil {
		return err
	}
	return costNote(out, total)
}

// The columns of the counts and the cost.
const usageHeader = "INPUT\tCACHE READ\tCACHE WRITE\tOUTPUT\tREASONING\tCOST USD\tCOST FROM"

func usageCells(u Usage) string {
	n := func(o formats.Opt[int64]) string {
		if !o.OK {
			return "-"
		}
		return strconv.FormatInt(o.V, 10)
	}
	cost := "-"
	if u.CostUSD.OK {
		cost = strconv.FormatFloat(u.CostUSD.V, 'f', 4, 64)
	}
	return strings.Join([]string{n(u.InputTokens), n(u.CacheReadTokens), n(u.CacheWriteTokens), n(u.OutputTokens),
		n(u.ReasoningTokens), cost, orDash(u.costFrom())}, "\t")
}

// costNote says under a table what an estimate is, and which models have
// no price.
func costNote(out io.Writer, total Usage) error {
	var b strings.Builder
	if total.Estimated {
		t := prices.Default()
		fmt.Fprintf(&b, "\nCOST FROM estimate: where the files give no cost, the tokens are priced with agentconv's table of %s; its source: %s\n", t.Date, t.Source)
	}
	if len(total.Unpriced) > 0 {
		fmt.Fprintf(&b, "No price for %s: the cost leaves out %s tokens.\n",
			formats.Visible(strings.Join(total.Unpriced, ", "), false), plural(len(total.Unpriced), "its", "their"))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

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

// startOf is the session's start in local time, or its file's time.
func startOf(s *SessionInfo) time.Time {
	if s.Start.IsZero() {
		return s.modified.Local()
	}
	return s.Start.Local()
}

// Group is one row of --by: the sessions of one day, week, month, model
// or project, and their counts and cost.
type Group struct {
	Key      string
	Sessions int
	Usage
}

// groupSessions sums the sessions by key; a session of several models
// counts in each model's group with that model's part. The last group is
// the totals, whose Key is "".
func groupSessions(list []SessionInfo, by string) []Group {
	keyOf := groupBy[by]
	byKey := map[string]*Group{}
	total := Group{}
	for i := range list {
		s := &list[i]
		total.Sessions++
		total.Usage.add(s.Usage)
		for _, k := range keyOf(s) {
			g := byKey[k]
			if g == nil {
				g = &Group{Key: k}
				byKey[k] = g
			}
			g.Sessions++
			if by == "model" {
				if u := s.usageOf(k); u != nil {
					g.Usage.add(*u)
				} else if u := s.usageOf(""); k == orUnnamed("") && u != nil {
					g.Usage.add(*u)
				}
				continue
			}
			g.Usage.add(s.Usage)
		}
	}
	out := make([]Group, 0, len(byKey)+1)
	for _, g := range byKey {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return append(out, total)
}

// printGroups writes the table of --by.
func printGroups(out io.Writer, groups []Group, by, home string) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	head := strings.ToUpper(by)
	if by == "week" {
		head = "WEEK OF"
	}
	fmt.Fprintf(tw, "%s\tSESSIONS\t%s\n", head, usageHeader)
	for _, g := range groups {
		key := formats.Visible(g.Key, false)
		if by == "project" {
			key = formats.Visible(tildeHome(g.Key, home), false)
		}
		if g.Key == "" {
			key = "TOTAL"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", key, g.Sessions, usageCells(g.Usage))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return costNote(out, groups[len(groups)-1].Usage)
}

// marshal writes a group as --by --json gives it: its key under the
// name of --by, or "total": true for the totals.
func (g Group) marshal(by string) ([]byte, error) {
	var b []byte
	if g.Key == "" {
		b = []byte(`{"total":true`)
	} else {
		k, err := json.Marshal(g.Key)
		if err != nil {
			return nil, err
		}
		b = append(append(append([]byte(`{"`), by...), `":`...), k...)
	}
	rest, err := json.Marshal(struct {
		Sessions int `json:"sessions"`
		usageJSON
	}{g.Sessions, g.Usage.json()})
	if err != nil {
		return nil, err
	}
	return append(append(b, ','), rest[1:]...), nil
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
