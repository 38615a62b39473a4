package convert

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/otel"
	"github.com/fsnotify/fsnotify"
	"github.com/goccy/go-json"
	"github.com/urfave/cli/v2"
)

// `agentconv follow` watches the agents' session files and converts each
// run as the agent writes it.
//
// The session readers read a whole file before they give its first event
// (a Claude Code session's conversation is the chain that ends at its
// last record), so a run is known to be whole only when the file says
// so. follow therefore works by runs: when a file changes, it is read up
// to its last whole line and its runs are counted (pass 1); the runs
// that are complete and not yet delivered are then converted and
// delivered (pass 2), through a pipeline that reads the file from its
// start, so that the reader has all the context it needs, and a gate in
// front of the writer that lets through only those runs. A run is
// complete when another run begins after it, or when the file has been
// quiet for --idle and the run has its end (a cut one after ten times
// --idle: its agent is gone). Nothing is kept open between changes: an
// idle file costs an entry in the state and nothing else, and memory is
// that of the one conversion under way.
//
// The state file holds, per session file, how many of its runs were
// delivered, the offset read up to, and, for -o DIR, the size of its
// output file then: a restart goes on from there, without a gap or a
// duplicate (a pass cut short by a signal or a kill is delivered again:
// its spans keep their ids, so a resend is harmless).

const followUsage = `agentconv follow --to otlp [--otlp-endpoint URL] [DIR|FILE ...]
agentconv follow --to DIALECT -o DIR [DIR|FILE ...]`

const followDescription = `Watches the agents' session files (under %s,
or under the directories given) and converts each run as the agent writes
it: with --to otlp, sends its spans to the collector; with --to DIALECT -o
DIR, appends it to DIR/<path of the session file>.<dialect>.

It is told of changes by the operating system's file notifications, and
polls every --poll where they are not to be had (a network file system, a
full inotify watch limit). A run goes out once it is complete: when the
next one begins, or when the file has been quiet for --idle and the run
has its end. Its place is kept in the --state file, so that a restart goes
on without a gap or a duplicate. SIGINT or SIGTERM ends it: the run being
delivered is delivered or spooled (within --otlp-timeout), the state is
saved, and it exits 130 or 143 (4 if spans were spooled).

Examples:
   agentconv follow --to otlp                       # OTEL_EXPORTER_OTLP_ENDPOINT, else localhost:4317
   agentconv follow --to otlp --otlp-endpoint http://collector:4318 --otlp-protocol http/protobuf
   agentconv follow --to otlp ~/.claude/projects    # only Claude Code's sessions
   agentconv follow --to pretty -o ~/agent-logs     # or any dialect, as files
   agentconv follow --to otlp-json -o out --idle 5s --poll 1s ./sessions`

func followCommand(sys Sys, later *func() int) *cli.Command {
	return &cli.Command{
		Name:        "follow",
		Usage:       "watch the agents' session files and convert each run as it is written (to a collector, or to files)",
		UsageText:   followUsage,
		Description: fmt.Sprintf(followDescription, orNone(strings.Join(placeNames(), ", "))),
		Flags:       namedFlags(followFlags()),
		Action: func(c *cli.Context) error {
			*later = func() int { return followCmd(c, sys) }
			return nil
		},
	}
}

func followFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "to", Aliases: []string{"t"}, Usage: "the `DIALECT` to convert to: otlp (sent as it comes), or any other with -o DIR"},
		&cli.StringFlag{Name: "from", Aliases: []string{"f"}, Usage: "read every file as `DIALECT` (default: detect each)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write under `DIR`: one file per session file, appended run by run"},
		&cli.StringFlag{Name: "state", Usage: "keep the place in `FILE` (default: $XDG_STATE_HOME/agentconv/follow.json, else ~/.local/state/agentconv/follow.json)"},
		&cli.DurationFlag{Name: "poll", Value: 2 * time.Second, Usage: "look for changes every `DURATION` where file notifications are not to be had"},
		&cli.BoolFlag{Name: "poll-only", Usage: "poll, without file notifications: for a network file system, where they miss what other machines write"},
		&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile to `FILE`"},
		&cli.DurationFlag{Name: "idle", Value: 30 * time.Second, Usage: "a file not written to for `DURATION` is quiet: its last run goes out if it has its end"},
	}, paramFlags()...)
}

// followState is the state file.
type followState struct {
	Version int                     `json:"version"`
	Files   map[string]*followEntry `json:"files"`
}

// followEntry is the state of one session file.
type followEntry struct {
	// Runs is how many of its runs were delivered, in order.
	Runs int `json:"runs"`
	// Offset is how far it was read, to the end of its last whole line.
	Offset int64 `json:"offset"`
	// Size and MTime (unix nanoseconds) are its own at that read, and of
	// the files it owns (its subagents'): a file unchanged since is not
	// read again.
	Size  int64 `json:"size"`
	MTime int64 `json:"mtime"`
	// Cut: its last run delivered went out cut, its agent gone (quiet for
	// ten times --idle without its end): if the file goes on, it goes
	// again.
	Cut bool `json:"cut,omitempty"`
	// CutOut is the size of its -o output file before that cut run.
	CutOut int64 `json:"cut_out,omitempty"`
	// Settled: every run it held was delivered.
	Settled bool `json:"settled,omitempty"`
	// Skip: no dialect reads it as a session file.
	Skip bool `json:"skip,omitempty"`
	// OutSize is the size of its -o output file after the last delivery:
	// what a pass cut short appended after it is taken back.
	OutSize int64 `json:"out_size,omitempty"`
}

// followRoot is one directory watched, for one dialect (a place) or for
// any that reads directories (a directory given).
type followRoot struct {
	dir      string
	from     formats.Dialect // zero: any
	patterns []string
	owners   []formats.Dialect
	named    bool // a file given by name: read whatever its dialect
	present  bool // it exists and was walked
	polled   bool // notifications failed under it: polled
}

// follower is one `agentconv follow`.
type follower struct {
	sys     Sys
	to      formats.Dialect
	from    formats.Dialect
	outDir  string
	params  map[string]string
	state   followState
	path    string // the state file
	idle    time.Duration
	roots   []*followRoot
	watcher *fsnotify.Watcher
	// live: the files changed and not yet settled; bounded by the
	// sessions being written.
	live map[string]*liveFile
	// seen: size and time of every file under the roots, to poll them.
	seen  map[string][2]int64
	dirty bool // the state changed since it was saved
	saved time.Time
	now   func() time.Time

	spooled   bool
	delivered int // runs delivered in this process
	stderr    io.Writer
	// sig is the signal that ends the watch, once it came.
	sig os.Signal
}

// liveFile is a session file being written.
type liveFile struct {
	last   time.Time // its last change
	readAt time.Time // the change it was last read after
	// quietRead, abandonRead: it was read once quiet, once abandoned.
	quietRead, abandonRead bool
	// readTime and cost: when it was last read, and how long that took;
	// a change is read no sooner than four times that after, so that a
	// large session written for long takes a fifth of a core at most.
	readTime time.Time
	cost     time.Duration
}

// touch: session file s changed at t.
func (f *follower) touch(s string, t time.Time) {
	lf := f.live[s]
	if lf == nil {
		lf = &liveFile{}
		f.live[s] = lf
	}
	if t.After(lf.last) {
		lf.last, lf.quietRead, lf.abandonRead = t, false, false
	}
}

func followCmd(c *cli.Context, sys Sys) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(sys.Stderr, "agentconv follow: %s\n", formats.Visible(fmt.Sprintf(format, args...), true))
		return code
	}
	if stop, err := startProfiles(c.String("cpuprofile"), ""); err != nil {
		return fail(ExitUsage, "%v", err)
	} else {
		defer stop()
	}
	to, ok := Lookup(c.String("to"))
	switch {
	case c.String("to") == "":
		return fail(ExitUsage, "--to is required: otlp, or a dialect to write under -o DIR (one of: %s)", formats.Names(Writable()))
	case !ok || to.NewWriter == nil:
		return fail(ExitUsage, "cannot write %q: --to takes one of: %s", c.String("to"), formats.Names(Writable()))
	case to.Remote && c.String("output") != "":
		return fail(ExitUsage, "--to %s sends to a collector: -o has no place; drop it, or pick a dialect that writes files", to.Name)
	case !to.Remote && c.String("output") == "":
		return fail(ExitUsage, "--to %s writes files: give -o DIR, where each session file gets its own", to.Name)
	case !to.Remote && (to.RunFile != "" || to.Files):
		return fail(ExitUsage, "--to %s writes a document per run or files of its own, which follow cannot append to; pick a dialect that writes a stream (e.g. %s-jsonl if there is one, otlp-json), or convert the sessions once with agentconv --to %s -o DIR", to.Name, to.Name, to.Name)
	}
	f := &follower{sys: sys, to: to, outDir: c.String("output"), idle: c.Duration("idle"), live: map[string]*liveFile{}, seen: map[string][2]int64{}, now: time.Now, stderr: sys.Stderr}
	if sys.Clock != nil {
		f.now = sys.Clock
	}
	if name := c.String("from"); name != "" {
		if f.from, ok = Lookup(name); !ok || f.from.NewReader == nil {
			return fail(ExitUsage, "cannot read %q: --from takes one of: %s", name, formats.Names(Readable()))
		}
	}
	if f.idle <= 0 || c.Duration("poll") <= 0 {
		return fail(ExitUsage, "--idle and --poll take a positive duration (30s, 2s)")
	}
	var err error
	if f.params, err = paramValues(c); err != nil {
		return fail(ExitUsage, "%v", err)
	}
	f.path = c.String("state")
	if f.path == "" {
		dir := otel.StateDir(sys.getenv)
		if dir == "" {
			return fail(ExitUsage, "no state directory (neither XDG_STATE_HOME nor HOME is set): give --state FILE")
		}
		f.path = filepath.Join(dir, "follow.json")
	}
	if to.Remote && f.params["otlp.spool"] == "" {
		// One spool for the whole watch, next to the state, rather than a
		// new file per delivery.
		f.params["otlp.spool"] = strings.TrimSuffix(f.path, ".json") + "-undelivered.otlp.jsonl"
	}
	if to.Check != nil {
		if err := to.Check(f.wopts(formats.NewReport(io.Discard)), []string{f.path}); err != nil {
			return fail(ExitUsage, "%v", err)
		}
	}
	if f.outDir != "" {
		if err := os.MkdirAll(f.outDir, 0o777); err != nil {
			return fail(ExitOutput, "cannot write %s: %v", f.outDir, unwrapPath(err))
		}
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fail(ExitUsage, "--state %s: cannot make its directory: %v", f.path, unwrapPath(err))
	}
	release, ok, err := lockState(f.path)
	switch {
	case err != nil:
		return fail(ExitUsage, "--state %s: cannot lock it: %v", f.path, unwrapPath(err))
	case !ok:
		return fail(ExitUsage, "--state %s: another agentconv follow uses it (it holds %s.lock); stop it, or give this one its own --state", f.path, f.path)
	}
	defer release()
	if err := f.load(); err != nil {
		return fail(ExitInput, "%v", err)
	}
	if err := f.setRoots(c.Args().Slice()); err != nil {
		return fail(ExitInput, "%v", err)
	}
	return f.run(c.Duration("poll"), c.Bool("poll-only"))
}

func (f *follower) warn(format string, args ...any) {
	fmt.Fprintf(f.stderr, "agentconv follow: %s\n", formats.Visible(fmt.Sprintf(format, args...), true))
}

// load reads the state file; a missing one is an empty state.
func (f *follower) load() error {
	f.state = followState{Version: 1, Files: map[string]*followEntry{}}
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--state %s: cannot read it: %v", f.path, unwrapPath(err))
	}
	if err := json.Unmarshal(data, &f.state); err != nil {
		return fmt.Errorf("--state %s: not a state file of agentconv follow (%v); move it away to start afresh", f.path, err)
	}
	if f.state.Files == nil {
		f.state.Files = map[string]*followEntry{}
	}
	return nil
}

// save writes the state file whole, then renames it into place: a kill
// leaves the old state or the new one, never half of one.
func (f *follower) save() error {
	data, err := json.Marshal(f.state)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("cannot save the state in %s: %v", f.path, unwrapPath(err))
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), filepath.Base(f.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("cannot save the state in %s: %v", f.path, unwrapPath(err))
	}
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cannot save the state in %s: %v", f.path, unwrapPath(err))
	}
	f.dirty, f.saved = false, f.now()
	return nil
}

// setRoots sets what is watched: the directories and files given, else
// the agents' places.
func (f *follower) setRoots(names []string) error {
	var patterns []string
	var owners []formats.Dialect
	for _, d := range Readable() {
		if f.from.Name != "" && d.Name != f.from.Name {
			continue
		}
		if d.DirFiles != "" && !slices.Contains(patterns, d.DirFiles) {
			patterns = append(patterns, d.DirFiles)
		}
		if d.Owner != nil {
			owners = append(owners, d)
		}
	}
	for _, n := range names {
		abs, err := filepath.Abs(expandHome(n, f.sys.getenv("HOME")))
		if err != nil {
			return fmt.Errorf("%s: %v", n, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return fmt.Errorf("%s: cannot read it: %v", n, unwrapPath(err))
		}
		if st.IsDir() {
			f.roots = append(f.roots, &followRoot{dir: abs, from: f.from, patterns: patterns, owners: owners})
			continue
		}
		// A file: its directory is watched for it alone.
		f.roots = append(f.roots, &followRoot{dir: filepath.Dir(abs), from: f.from, patterns: []string{filepath.Base(abs)}, owners: owners, named: true})
	}
	if len(names) > 0 {
		return nil
	}
	for _, d := range Readable() {
		if d.Places == nil || d.DirFiles == "" || f.from.Name != "" && d.Name != f.from.Name {
			continue
		}
		var own []formats.Dialect
		if d.Owner != nil {
			own = []formats.Dialect{d}
		}
		for _, dir := range d.Places(f.sys.getenv) {
			f.roots = append(f.roots, &followRoot{dir: dir, from: d, patterns: []string{d.DirFiles}, owners: own})
		}
	}
	if len(f.roots) == 0 {
		return errors.New("no dialect names its agent's places; name a directory")
	}
	return nil
}

// rootOf is the root a path is under, nil if none.
func (f *follower) rootOf(p string) *followRoot {
	for _, r := range f.roots {
		if p == r.dir || strings.HasPrefix(p, r.dir+string(filepath.Separator)) {
			return r
		}
	}
	return nil
}

// hiddenUnder: a name under root starts with a dot (a directory walk
// leaves those out).
func hiddenUnder(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return true
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if strings.HasPrefix(part, ".") && part != "." {
			return true
		}
	}
	return false
}

// sessionOf is the session file that a change to p concerns: p itself,
// or its owner (a subagent's file), or "" for a file of no interest.
func (f *follower) sessionOf(p string) string {
	r := f.rootOf(p)
	if r == nil || hiddenUnder(r.dir, p) || p == f.path {
		return ""
	}
	for _, d := range r.owners {
		if o := d.Owner(p); o != "" && o != p {
			if _, err := os.Stat(o); err == nil {
				return o
			}
			// Its owner is missing: it is read on its own, if its name
			// is one the walk reads.
			break
		}
	}
	if !matchAny(r.patterns, filepath.Base(p)) {
		return ""
	}
	return p
}

// run is the watch loop, until a signal.
func (f *follower) run(poll time.Duration, pollOnly bool) int {
	var w *fsnotify.Watcher
	if !pollOnly {
		var err error
		if w, err = fsnotify.NewWatcher(); err != nil {
			f.warn("no file notifications (%v): polling every %s", err, poll)
		}
	}
	f.watcher = w
	if w != nil {
		defer w.Close()
	}
	var events chan fsnotify.Event
	var errs chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	// Files left pending by the last run, and every file changed since.
	for p, e := range f.state.Files {
		if !e.Settled && !e.Skip {
			f.touch(p, time.Unix(0, e.MTime))
		}
	}
	f.scanRoots()

	ticker := time.NewTicker(min(poll, f.debounce()))
	defer ticker.Stop()
	lastPoll := f.now()
	for f.sig == nil {
		f.work()
		if f.sig != nil {
			break
		}
		select {
		case f.sig = <-f.sys.Signals:
		case ev := <-events:
			f.notified(ev)
		case err := <-errs:
			// Notifications were lost (an overflow): look at everything.
			f.warn("file notifications failed (%v); looking at every file again", err)
			f.scanRoots()
		case <-ticker.C:
			if f.now().Sub(lastPoll) >= poll {
				lastPoll = f.now()
				f.pollRoots()
			}
		}
	}
	code := ExitInterrupted
	if f.sig == syscall.SIGTERM {
		code = ExitTerminated
	}
	if err := f.save(); err != nil {
		f.warn("%v", err)
		code = ExitOutput
	}
	if f.spooled {
		code = ExitOutput
	}
	return code
}

// debounce is how long a change is given to end before the file is read.
func (f *follower) debounce() time.Duration { return min(f.idle/4, 250*time.Millisecond) }

// notified takes one file notification.
func (f *follower) notified(ev fsnotify.Event) {
	p := ev.Name
	if ev.Has(fsnotify.Create) {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			if r := f.rootOf(p); r != nil && !hiddenUnder(r.dir, p) {
				// A new directory (a new project, a session's subagents):
				// watched, and what it already holds looked at.
				f.walk(r, p)
			}
			return
		}
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if _, err := os.Stat(p); err != nil {
			f.gone(p)
			return
		}
	}
	if s := f.sessionOf(p); s != "" {
		f.changed(s, p)
	}
}

// changed: the file p changed, which concerns session file s.
func (f *follower) changed(s, p string) {
	st, err := os.Stat(p)
	if err != nil {
		return
	}
	f.seen[p] = [2]int64{st.Size(), st.ModTime().UnixNano()}
	if e := f.state.Files[s]; e != nil && e.Skip && s == p && e.Size == st.Size() && e.MTime == st.ModTime().UnixNano() {
		return
	}
	f.touch(s, f.now())
}

// gone: the file p was deleted (or moved away).
func (f *follower) gone(p string) {
	delete(f.seen, p)
	if f.watcher != nil {
		f.watcher.Remove(p) // a directory's watch; nothing for a file
	}
	if _, ok := f.state.Files[p]; ok {
		delete(f.state.Files, p)
		f.dirty = true
	}
	delete(f.live, p)
	// A subagent's file gone: its session is read again as it is now.
	if s := f.sessionOf(p); s != "" && s != p {
		f.touch(s, f.now())
	}
	// A directory gone: everything under it.
	prefix := p + string(filepath.Separator)
	for q := range f.state.Files {
		if strings.HasPrefix(q, prefix) {
			delete(f.state.Files, q)
			delete(f.live, q)
			f.dirty = true
		}
	}
	for q := range f.seen {
		if strings.HasPrefix(q, prefix) {
			delete(f.seen, q)
		}
	}
}

// scanRoots walks every root that exists: watched, and each file compared
// with the state.
func (f *follower) scanRoots() {
	for _, r := range f.roots {
		if st, err := os.Stat(r.dir); err != nil || !st.IsDir() {
			r.present = false
			continue
		}
		r.present = true
		f.walk(r, r.dir)
	}
	// Files of the state that are gone.
	for p := range f.state.Files {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			f.gone(p)
		}
	}
}

// pollRoots looks for changes where notifications are missing, and for
// the places that have come into being since.
func (f *follower) pollRoots() {
	for _, r := range f.roots {
		if !r.present {
			if st, err := os.Stat(r.dir); err == nil && st.IsDir() {
				r.present = true
				f.walk(r, r.dir)
			}
			continue
		}
		if !r.polled {
			continue
		}
		if _, err := os.Stat(r.dir); err != nil {
			r.present = false
			continue
		}
		before := map[string]bool{}
		prefix := r.dir + string(filepath.Separator)
		for p := range f.seen {
			if strings.HasPrefix(p, prefix) {
				before[p] = true
			}
		}
		f.walkFiles(r, r.dir, func(p string) { delete(before, p) })
		for p := range before {
			f.gone(p)
		}
	}
}

// walk watches dir and the directories under it, and looks at their files.
func (f *follower) walk(r *followRoot, dir string) {
	f.walkFiles(r, dir, nil)
}

func (f *follower) walkFiles(r *followRoot, dir string, found func(string)) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p != r.dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if r.named && p != r.dir {
				return filepath.SkipDir // a file given: its directory alone
			}
			if f.watcher != nil && !r.polled {
				if err := f.watcher.Add(p); err != nil {
					r.polled = true
					f.warn("cannot watch %s (%v; the inotify watch limit, fs.inotify.max_user_watches?): polling %s instead", p, err, r.dir)
				}
			}
			return nil
		}
		if found != nil {
			found(p)
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		now := [2]int64{info.Size(), info.ModTime().UnixNano()}
		if old, ok := f.seen[p]; ok && old == now {
			return nil
		}
		f.seen[p] = now
		s := f.sessionOf(p)
		if s == "" {
			return nil
		}
		if e := f.state.Files[s]; e != nil && s == p && e.Size == now[0] && e.MTime == now[1] && (e.Settled || e.Skip) {
			return nil // as it was when last read
		}
		f.touch(s, info.ModTime())
		return nil
	})
	if f.watcher == nil {
		r.polled = true
	}
}

// work reads the live files that are due: those whose change has had a
// moment to end, those that have become quiet, and those abandoned. A
// signal stops it between two files, or cuts a delivery short.
func (f *follower) work() {
	now := f.now()
	var due []string
	for p, lf := range f.live {
		since := now.Sub(lf.last)
		switch {
		case !lf.readAt.Equal(lf.last) && since >= f.debounce() && now.Sub(lf.readTime) >= 4*lf.cost,
			since >= f.idle && !lf.quietRead,
			since >= abandonAfter*f.idle && !lf.abandonRead:
			due = append(due, p)
		}
	}
	sort.Strings(due)
	for _, p := range due {
		if f.sig == nil {
			select {
			case f.sig = <-f.sys.Signals:
			default:
			}
		}
		if f.sig != nil {
			return
		}
		lf := f.live[p]
		since := now.Sub(lf.last)
		quiet, abandoned := since >= f.idle, since >= abandonAfter*f.idle
		began := time.Now()
		settled := f.process(p, quiet, abandoned)
		lf.readAt, lf.quietRead, lf.abandonRead = lf.last, quiet, abandoned
		lf.readTime, lf.cost = time.Now(), time.Since(began)
		if settled || abandoned {
			delete(f.live, p)
		}
		f.saveSoon()
	}
	f.saveSoon()
}

// saveSoon saves the state if it changed, at most once a second: a kill
// (not a signal, which saves it) between a delivery and its save makes the
// delivery again at the next start; its spans keep their ids, and an -o
// file is cut back to its size at the last save first.
func (f *follower) saveSoon() {
	if f.dirty && f.now().Sub(f.saved) >= time.Second {
		if err := f.save(); err != nil {
			f.warn("%v", err)
		}
	}
}

// abandonAfter: a file quiet for this many times --idle whose last run
// has no end is taken as abandoned (its agent is gone), and the run goes
// out cut.
const abandonAfter = 10

// runMark is what the first pass learns of a run.
type runMark struct {
	ended bool // the source ended it (not the pipeline, at the input's end)
}

// runCounter is the writer of the first pass: it marks the runs.
type runCounter struct {
	runs    []runMark
	dialect string
}

func (w *runCounter) Write(e *formats.Event, _ *formats.RunView) error {
	if w.dialect == "" && e.Source.Dialect != "" {
		w.dialect = e.Source.Dialect
	}
	switch e.Kind {
	case formats.RunStart:
		w.runs = append(w.runs, runMark{})
	case formats.RunEnd:
		if n := len(w.runs); n > 0 {
			w.runs[n-1].ended = !e.Synthetic && !e.Cut
		}
	}
	return nil
}

func (w *runCounter) Close() error { return nil }

// gate passes the writer the events of the runs numbered from..to-1 (in
// the order of the file), and nothing of the others: those were
// delivered before, or are not complete yet.
type gate struct {
	w        formats.Writer
	from, to int
	run      int // the current run's number; -1 before the first
	shut     bool
	passed   int // runs whose end went through
}

func (g *gate) Write(e *formats.Event, v *formats.RunView) error {
	if e.Kind == formats.RunStart {
		g.run++
	}
	if g.shut || g.run < g.from || g.run >= g.to {
		return nil
	}
	if e.Kind == formats.RunEnd {
		g.passed++
	}
	return g.w.Write(e, v)
}

func (g *gate) Close() error { return g.w.Close() }

// stats is a session file's size and time with those of the files it
// owns (a change to any is a change of the session).
func (f *follower) stats(p string) (size, mtime int64, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return 0, 0, err
	}
	size, mtime = st.Size(), st.ModTime().UnixNano()
	prefix := strings.TrimSuffix(p, filepath.Ext(p))
	for q, s := range f.seen {
		if q != p && strings.HasPrefix(q, prefix) && f.sessionOf(q) == p {
			size += s[0]
			mtime = max(mtime, s[1])
		}
	}
	return size, mtime, nil
}

// process reads session file p: it counts its runs, and delivers those
// that are complete and not delivered yet. settled: every run it holds
// was delivered.
func (f *follower) process(p string, quiet, abandoned bool) (settled bool) {
	e := f.state.Files[p]
	if e == nil {
		e = &followEntry{}
		f.state.Files[p] = e
	}
	size, mtime, err := f.stats(p)
	if err != nil {
		f.gone(p)
		return true
	}
	fh, err := os.Open(p)
	if err != nil {
		f.warn("%s: cannot read it: %v; it is tried again at its next change", p, unwrapPath(err))
		return true
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return true
	}
	// Up to its last whole line: a cut last line waits for the rest,
	// unless the file is quiet (a document without a last line break).
	end := st.Size()
	if !quiet {
		end = lastLineEnd(fh, end)
	}
	if end < e.Offset {
		f.warn("%s: the file is shorter than when it was last read (%d bytes, then %d): read again from its start; its first %d runs are taken as delivered", p, end, e.Offset, e.Runs)
	}

	// Pass 1: its runs.
	counter := &runCounter{}
	quietRep := formats.NewReport(io.Discard)
	p1 := NewPipeline(counter, formats.Dialect{Name: "follow"}, Options{From: f.from, Lenient: true, Report: quietRep})
	err = p1.Convert(context.Background(), Input{Name: p, R: io.NewSectionReader(fh, 0, end), Path: p})
	if err == nil {
		err = p1.Close()
	}
	var de *detectError
	switch {
	case errors.As(err, &de):
		if end > 0 {
			// No dialect reads it (yet: its head may still be coming).
			e.Skip = quiet
			e.Size, e.MTime = size, mtime
			f.dirty = true
		}
		return quiet
	case err != nil && !quiet:
		return false // a document rewritten whole: read once quiet
	case err != nil:
		f.warn("%s: %v; it is tried again at its next change", p, err)
		return true
	}
	if counter.dialect == "" && len(counter.runs) == 0 {
		return quiet // nothing in it yet
	}
	if d, ok := Lookup(counter.dialect); (!ok || !readsDir(d, p)) && !f.rootOf(p).named {
		// Not one of the directory's session files (a stream of the
		// same agent, a text).
		e.Skip, e.Size, e.MTime = true, size, mtime
		f.dirty = true
		return true
	}
	e.Skip = false

	n := len(counter.runs)
	complete := n - 1 // every run another follows
	if n > 0 && (quiet && counter.runs[n-1].ended || abandoned) {
		complete = n
	}
	complete = max(complete, 0)
	from := e.Runs
	if e.Cut && e.Runs > 0 && e.Runs <= n && (e.Runs < n || counter.runs[e.Runs-1].ended) {
		// The run that went out cut as abandoned went on after all: it
		// goes again, whole (its spans keep their ids).
		from = e.Runs - 1
	}
	if complete > from {
		cut := complete == n && n > 0 && !counter.runs[n-1].ended
		if cut && complete-1 > from {
			// The runs before it first, so that the output file's size
			// before the cut run is known.
			if !f.deliver(p, fh, end, e, from, complete-1) {
				return false
			}
			from = complete - 1
		}
		if from < e.Runs {
			e.OutSize = e.CutOut // the cut run's output is replaced
		}
		if cut {
			e.CutOut = e.OutSize
		}
		if !f.deliver(p, fh, end, e, from, complete) {
			return false
		}
		e.Cut = cut
	}
	e.Offset, e.Size, e.MTime = end, size, mtime
	e.Settled = quiet && e.Runs >= n
	f.dirty = true
	return e.Settled
}

// lastLineEnd is the offset just past the last line break of the file's
// first size bytes, 0 if none.
func lastLineEnd(fh *os.File, size int64) int64 {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := fh.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return 0
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1
		}
		end = start
	}
	return 0
}

// deliver converts the runs from..upto-1 of session file p (its first
// end bytes) and delivers them; the state then counts them. false: a
// signal cut it short (what was sent stays sent; the state does not
// count the runs, which go again next time).
func (f *follower) deliver(p string, fh *os.File, end int64, e *followEntry, from, upto int) bool {
	rep := formats.NewReport(io.Discard)
	wo := f.wopts(rep)
	var out io.Writer = io.Discard
	var of *os.File
	var bw *bufio.Writer
	if f.outDir != "" {
		name := f.outName(p)
		if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
			f.warn("cannot write %s: %v; the runs of %s go out at its next change", name, unwrapPath(err), p)
			return true
		}
		var err error
		of, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o666)
		if err == nil {
			// What a delivery cut short (a kill) left after the last one.
			err = of.Truncate(e.OutSize)
		}
		if err == nil {
			_, err = of.Seek(e.OutSize, io.SeekStart)
		}
		if err != nil {
			if of != nil {
				of.Close()
			}
			f.warn("cannot write %s: %v; the runs of %s go out at its next change", name, unwrapPath(err), p)
			return true
		}
		defer of.Close()
		bw = bufio.NewWriterSize(of, 64<<10)
		out = bw
	}
	g := &gate{w: f.to.NewWriter(out, wo), from: from, to: upto, run: -1}
	// The gate is no Observer: every event reaches the writer through it.
	to := f.to
	to.KeepsNoEvents, to.ReadAhead = false, false
	pl := NewPipeline(g, to, Options{From: f.from, Lenient: true, Report: rep})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	stopped := make(chan os.Signal, 1)
	// watched ends with the watcher, so that a signal it took as the pass
	// ended is in stopped before stopped is looked at: else the signal was
	// lost, and follow went on watching (seen under load).
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case s := <-f.sys.Signals:
			stopped <- s
			cancel()
		case <-done:
		}
	}()
	err := pl.Convert(ctx, Input{Name: p, R: io.NewSectionReader(fh, 0, end), Path: p})
	interrupted := errors.Is(err, ErrInterrupted)
	// The runs the pipeline closes itself (cut at the end, or at a
	// signal) are not the source's: the gate lets nothing more through.
	g.shut = true
	var cerr error
	if interrupted {
		cerr = pl.Interrupt()
	} else {
		cerr = pl.Close()
	}
	close(done)
	<-watched
	select {
	case s := <-stopped:
		// A signal after the input was read (while delivering): the
		// pass is whole, delivered or spooled; the watch ends after it.
		f.sig = s
	default:
	}
	if err != nil && !interrupted {
		f.warn("%s: %v", p, err)
	}
	if bw != nil {
		if ferr := bw.Flush(); ferr != nil && cerr == nil {
			cerr = ferr
		}
	}
	if cerr != nil {
		var oe *OutputError
		msg := cerr.Error()
		if errors.As(cerr, &oe) {
			msg = oe.Err.Error()
		}
		if f.to.Remote {
			// Spooled: delivered + spooled = read; the runs are counted.
			f.spooled = true
			f.warn("%s: %s", p, msg)
		} else {
			f.warn("cannot write the runs of %s: %s; they go out at its next change", p, msg)
			return !interrupted
		}
	} else if f.to.Remote {
		f.resendSpool()
	}
	if interrupted {
		return false
	}
	if of != nil {
		if st, err := of.Stat(); err == nil {
			e.OutSize = st.Size()
		}
	}
	f.delivered += upto - from
	e.Runs = upto
	f.dirty = true
	return true
}

// wopts are the writer's options.
func (f *follower) wopts(rep *formats.Report) formats.WriteOptions {
	return formats.WriteOptions{Dialect: f.to.Name, Report: rep, Stderr: f.stderr, Params: f.params, Getenv: f.sys.Getenv}
}

// outName is where -o DIR puts the runs of session file p: its path
// under the home directory (else its absolute path), with the leading
// dots of its names taken off, and the dialect's name added.
func (f *follower) outName(p string) string {
	rel := p
	if home := f.sys.getenv("HOME"); home != "" {
		if r, err := filepath.Rel(home, p); err == nil && !strings.HasPrefix(r, "..") {
			rel = r
		}
	}
	parts := strings.Split(filepath.ToSlash(strings.TrimPrefix(rel, string(filepath.Separator))), "/")
	for i, part := range parts {
		if t := strings.TrimLeft(part, "."); t != "" {
			parts[i] = t
		}
	}
	return filepath.Join(f.outDir, filepath.FromSlash(strings.Join(parts, "/"))+"."+f.to.Name)
}

// resendSpool sends again what the spool holds, once the collector took
// a delivery whole: it is renamed aside, resent, and removed; what does
// not go through is spooled again.
func (f *follower) resendSpool() {
	spool := f.params["otlp.spool"]
	aside := spool + ".resending"
	if st, err := os.Stat(aside); err != nil || st.Size() == 0 {
		if st, err := os.Stat(spool); err != nil || st.Size() == 0 {
			return
		}
		if err := os.Rename(spool, aside); err != nil {
			return
		}
	}
	fh, err := os.Open(aside)
	if err != nil {
		return
	}
	defer fh.Close()
	rep := formats.NewReport(io.Discard)
	otlpJSON, _ := Lookup("otlp-json")
	pl := New(f.to, io.Discard, f.wopts(rep), Options{From: otlpJSON, Lenient: true, Report: rep})
	err = pl.Convert(context.Background(), Input{Name: aside, R: fh, Path: aside})
	cerr := pl.Close()
	if err != nil {
		f.warn("resending %s: %v; it is kept", aside, err)
		return
	}
	if cerr != nil {
		f.spooled = true
		f.warn("resending %s: %v", aside, cerr)
	}
	os.Remove(aside)
}
