package convert

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/otel"
	"github.com/fsnotify/fsnotify"
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
