package convert

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cacheRewrite rewrites the cache file's lines that name path with
// replace, as a test's mark: a listing that shows the mark used the
// entry, one that does not read the file again.
func cacheRewrite(t *testing.T, cache, path, old, repl string) {
	t.Helper()
	b, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	found := false
	for i, l := range lines {
		if strings.Contains(l, `"path":"`+path+`"`) {
			if !strings.Contains(l, old) {
				t.Fatalf("the entry of %s lacks %q: %s", path, old, l)
			}
			lines[i], found = strings.Replace(l, old, repl, 1), true
		}
	}
	if !found {
		t.Fatalf("no entry of %s in the cache:\n%s", path, b)
	}
	if err := os.WriteFile(cache, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSessionsCache: a listing keeps what it read of each file in the
// cache, and the next one uses an entry only while its file (and the
// files it owns) is as it was; its output is the listing's without the
// cache; a damaged cache, or one of another agentconv, is read again.
func TestSessionsCache(t *testing.T) {
	home, getenv0 := sessionsHome(t)
	claudeSession(t, home, "/work/p", "s-cached", time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC),
		[2]string{"claude-haiku-4-5", `{"input_tokens":10,"output_tokens":1}`},
		[2]string{"claude-opus-4-1", `{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":2}`})
	cacheHome := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_CACHE_HOME" {
			return cacheHome
		}
		return getenv0(k)
	}
	cache := filepath.Join(cacheHome, "agentconv", "sessions.jsonl")
	session := filepath.Join(home, ".claude", "projects", "-work-p", "s-cached.jsonl")

	for _, args := range [][]string{{"--json"}, {}, {"--by", "model"}, {"--by", "day", "--json"}} {
		os.Remove(cache)
		code, want, stderr := runSessions(getenv, time.Time{}, append([]string{"--no-cache"}, args...)...)
		if code != 0 {
			t.Fatalf("%v --no-cache: exit %d: %s", args, code, stderr)
		}
		if _, err := os.Stat(cache); err == nil {
			t.Fatalf("--no-cache wrote %s", cache)
		}
		for _, run := range []string{"the first listing (writes the cache)", "the second (reads it)"} {
			if code, got, stderr := runSessions(getenv, time.Time{}, args...); code != 0 || got != want {
				t.Errorf("%v, %s: exit %d, the output differs from --no-cache's:\n%s\nwant:\n%s\n%s", args, run, code, got, want, stderr)
			}
		}
	}

	// The entry is used: a mark put in it shows.
	cacheRewrite(t, cache, session, `"runs":1`, `"runs":77`)
	if _, out, _ := runSessions(getenv, time.Time{}, "--json"); !strings.Contains(out, `"runs":77`) {
		t.Fatalf("the cache's entry was not used:\n%s", out)
	}
	// A file written since is read again.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(session, later, later); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := runSessions(getenv, time.Time{}, "--json"); strings.Contains(out, `"runs":77`) || !strings.Contains(out, `"session_id":"s-cached"`) {
		t.Fatalf("a file modified since was not read again:\n%s", out)
	}

	// A file owned by a session (a subagent's), modified: the session is
	// read again.
	owner := filepath.Join(home, ".traj", "p1", "s1.json")
	sub := filepath.Join(home, ".traj", "p1", "s1", "subagents", "agent-a.json")
	cacheRewrite(t, cache, owner, `"runs":1`, `"runs":78`)
	if _, out, _ := runSessions(getenv, time.Time{}, "--json"); !strings.Contains(out, `"runs":78`) {
		t.Fatalf("the cache's entry was not used:\n%s", out)
	}
	if err := os.Chtimes(sub, later, later); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := runSessions(getenv, time.Time{}, "--json"); strings.Contains(out, `"runs":78`) {
		t.Fatalf("a session whose subagent's file was modified was not read again:\n%s", out)
	}

	// A damaged cache, or one another build of agentconv wrote: every
	// file is read again, and the cache written anew.
	_, want, _ := runSessions(getenv, time.Time{}, "--json", "--no-cache")
	for name, damage := range map[string]func(b []byte) []byte{
		"a cut line":    func(b []byte) []byte { return b[:len(b)-20] },
		"not JSON":      func([]byte) []byte { return []byte("\x00\xff garbage\n{") },
		"another stamp": func(b []byte) []byte { return []byte(strings.Replace(string(b), `"stamp":"`, `"stamp":"x`, 1)) },
	} {
		runSessions(getenv, time.Time{}, "--json")
		cacheRewrite(t, cache, session, `"runs":1`, `"runs":79`)
		b, _ := os.ReadFile(cache)
		os.WriteFile(cache, damage(b), 0o600)
		if code, out, stderr := runSessions(getenv, time.Time{}, "--json"); code != 0 || out != want {
			t.Errorf("%s: exit %d, the output differs from --no-cache's:\n%s\nwant:\n%s\n%s", name, code, out, want, stderr)
		}
		if _, out, _ := runSessions(getenv, time.Time{}, "--json"); out != want {
			t.Errorf("%s: the cache written anew gives:\n%s\nwant:\n%s", name, out, want)
		}
	}

	// A FIFO in the cache's place: the listing does not wait on it.
	os.Remove(cache)
	if err := syscall.Mkfifo(cache, 0o600); err == nil {
		done := make(chan string, 1)
		go func() { _, out, _ := runSessions(getenv, time.Time{}, "--json", "--no-cache"); done <- out }()
		wantNow := <-done
		go func() { _, out, _ := runSessions(getenv, time.Time{}, "--json"); done <- out }()
		select {
		case out := <-done:
			if out != wantNow {
				t.Errorf("with a FIFO for a cache the listing differs:\n%s\nwant:\n%s", out, wantNow)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the listing waits on a FIFO in the cache's place")
		}
		os.Remove(cache)
	}

	// A file gone leaves the cache.
	os.Remove(session)
	runSessions(getenv, time.Time{}, "--json")
	if b, _ := os.ReadFile(cache); strings.Contains(string(b), session) {
		t.Errorf("the cache keeps a file that is gone:\n%s", b)
	}
}

// TestSessionsCacheWarnings: a file whose reading warned is not kept, so
// the warning and the exit status come again; a cache that cannot be
// written is said, and the listing is whole.
func TestSessionsCacheWarnings(t *testing.T) {
	dir, f := malformedSession(t)
	cacheHome := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_CACHE_HOME" {
			return cacheHome
		}
		return ""
	}
	for i := range 2 {
		code, out, stderr := runSessions(getenv, time.Time{}, "--json", dir)
		if code != ExitInput || !strings.Contains(out, `"session_id":"06381696-0074-49f8-863e-6ad4fac507f9"`) || !strings.Contains(stderr, f+":4") {
			t.Errorf("listing %d: exit %d: %s\n%s", i+1, code, out, stderr)
		}
	}

	// The cache's place is a file: it cannot be made.
	blocked := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocked, nil, 0o644)
	getenv = func(k string) string {
		if k == "XDG_CACHE_HOME" {
			return blocked
		}
		return ""
	}
	good := filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl")
	code, out, stderr := runSessions(getenv, time.Time{}, "--json", good)
	if code != 0 || !strings.Contains(out, "06381696") || !strings.Contains(stderr, "cannot keep the cache") {
		t.Errorf("a cache that cannot be written: exit %d: %s\n%s", code, out, stderr)
	}
}

// TestSessionsCacheDatabase: an OpenCode database is read at every
// listing, never kept: what changed may be in its write-ahead log, beside
// it, with the database file as it was.
func TestSessionsCacheDatabase(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	cp(t, filepath.Join("..", "testdata", "agents", "opencode", "1.18.33", "edit", "json", "home", ".local", "share", "opencode", "opencode.db"), db)
	cacheHome := t.TempDir()
	getenv := func(k string) string {
		switch k {
		case "HOME":
			return home
		case "XDG_CACHE_HOME":
			return cacheHome
		}
		return ""
	}
	for i := range 2 {
		code, out, stderr := runSessions(getenv, time.Time{}, "--json")
		if code != 0 || !strings.Contains(out, db) {
			t.Fatalf("listing %d: exit %d, the database is not listed:\n%s\n%s", i+1, code, out, stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(cacheHome, "agentconv", "sessions.jsonl")); err == nil && strings.Contains(string(b), db) {
		t.Errorf("the cache keeps the database:\n%s", b)
	}
}

// TestSessionsCacheRelative: a file named by a relative path is kept
// under its absolute path, so that the same relative path from another
// directory, a file of the same size and time, is not taken for it.
func TestSessionsCacheRelative(t *testing.T) {
	src := filepath.Join("..", "testdata", "claude", "sessions", "agentcmd-claude-session-2.0.14.jsonl")
	abs, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	a, b := t.TempDir(), t.TempDir()
	when := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for _, d := range []string{a, b} {
		cp(t, abs, filepath.Join(d, "x", "s.jsonl"))
		os.Chtimes(filepath.Join(d, "x", "s.jsonl"), when, when)
	}
	cacheHome := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_CACHE_HOME" {
			return cacheHome
		}
		return ""
	}
	t.Chdir(a)
	if code, _, stderr := runSessions(getenv, time.Time{}, "--json", "x"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cacheRewrite(t, filepath.Join(cacheHome, "agentconv", "sessions.jsonl"), filepath.Join(a, "x", "s.jsonl"), `"runs":2`, `"runs":77`)
	t.Chdir(b)
	if _, out, _ := runSessions(getenv, time.Time{}, "--json", "x"); strings.Contains(out, `"runs":77`) || !strings.Contains(out, `"runs":2`) {
		t.Errorf("another directory's x/s.jsonl was taken from the cache:\n%s", out)
	}
}
