package convert

// follow's watching: the roots given or the agents' places, the
// operating system's notifications, and the poll where they are missing.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/fsnotify/fsnotify"
)

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
