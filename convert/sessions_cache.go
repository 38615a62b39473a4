package convert

// sessions' cache: what a listing read of each file, kept for the next
// listing, so that a history of thousands of sessions, most of them
// finished, is read again only where it changed.
//
// An entry is used when its file has the size and modification time it
// had when it was read (and the files it owns, its subagents', too), it
// was found the same way (under the same dialect's place, or not), and
// the agentconv that reads it is the one that wrote it: the executable's
// size and time are in the cache's stamp, so a new build (a new reader, a
// new price table) reads every file again. A file whose reading warned
// (malformed lines, unreadable) is not kept, so that its warning and the
// exit status come again, nor a binary dialect's (a database). Entries are
// kept under the files' absolute paths.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// sessionsCacheVersion is raised when the entries' meaning changes.
const sessionsCacheVersion = 1

// sessionsCacheMax: a cache file larger than this (over a million
// sessions) is not read, but written anew.
const sessionsCacheMax = 1 << 30

// sessionsCacheFile is where the cache is kept: under $XDG_CACHE_HOME,
// else ~/.cache; "" when neither is set.
func sessionsCacheFile(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentconv", "sessions.jsonl")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "agentconv", "sessions.jsonl")
	}
	return ""
}

// sessionsCache holds the entries read from the cache file, and those of
// this listing.
type sessionsCache struct {
	file  string
	stamp string
	mu    sync.Mutex
	old   map[string]*cacheEntry
	new   map[string]*cacheEntry
	// changed: the file must be written again.
	changed bool
}

// cacheHead is the cache file's first line.
type cacheHead struct {
	Version int    `json:"version"`
	Stamp   string `json:"stamp"`
}

// cacheEntry is what was read of one file, with what it was read from.
type cacheEntry struct {
	Path   string `json:"path"`
	From   string `json:"from,omitempty"`
	Walked bool   `json:"walked,omitempty"`
	// Bytes is the file's size with its owned files'; MTime and
	// OwnedMTime the file's modification time and the latest of its
	// owned files', in nanoseconds since 1970.
	Bytes      int64 `json:"bytes"`
	MTime      int64 `json:"mtime"`
	OwnedMTime int64 `json:"owned_mtime,omitempty"`
	// OK is readSessions's verdict: a session to list.
	OK   bool        `json:"ok"`
	Info *cachedInfo `json:"info,omitempty"`
}

// cachedInfo is a SessionInfo as read, every field kept.
type cachedInfo struct {
	Dialect   string        `json:"dialect,omitempty"`
	Agent     string        `json:"agent,omitempty"`
	Session   string        `json:"session_id,omitempty"`
	Project   string        `json:"project,omitempty"`
	Start     *int64        `json:"start,omitempty"`
	End       *int64        `json:"end,omitempty"`
	Runs      int           `json:"runs,omitempty"`
	Prompts   int           `json:"prompts,omitempty"`
	ToolCalls int           `json:"tool_calls,omitempty"`
	Tokens    int64         `json:"tokens,omitempty"`
	Models    []string      `json:"models,omitempty"`
	Usage     cachedUsage   `json:"usage"`
	ByModel   []cachedModel `json:"by_model,omitempty"`
}

type cachedModel struct {
	Model string      `json:"model"`
	Usage cachedUsage `json:"usage"`
}

// cachedUsage is a Usage, a count not known left out.
type cachedUsage struct {
	Input        *int64   `json:"in,omitempty"`
	Output       *int64   `json:"out,omitempty"`
	CacheRead    *int64   `json:"cr,omitempty"`
	CacheWrite   *int64   `json:"cw,omitempty"`
	CacheWrite1h *int64   `json:"cw1h,omitempty"`
	Reasoning    *int64   `json:"reason,omitempty"`
	Total        *int64   `json:"total,omitempty"`
	Cost         *float64 `json:"cost,omitempty"`
	Context      *int64   `json:"ctx,omitempty"`
	Estimated    bool     `json:"est,omitempty"`
	Unpriced     []string `json:"unpriced,omitempty"`
}

func cacheUsage(u Usage) cachedUsage {
	return cachedUsage{u.InputTokens.Ptr(), u.OutputTokens.Ptr(), u.CacheReadTokens.Ptr(), u.CacheWriteTokens.Ptr(),
		u.CacheWrite1hTokens.Ptr(), u.ReasoningTokens.Ptr(), u.TotalTokens.Ptr(), u.CostUSD.Ptr(), u.ContextTokens.Ptr(),
		u.Estimated, u.Unpriced}
}

func (c cachedUsage) usage() Usage {
	return Usage{UsageInfo: formats.UsageInfo{InputTokens: formats.OptFrom(c.Input), OutputTokens: formats.OptFrom(c.Output),
		CacheReadTokens: formats.OptFrom(c.CacheRead), CacheWriteTokens: formats.OptFrom(c.CacheWrite), CacheWrite1hTokens: formats.OptFrom(c.CacheWrite1h),
		ReasoningTokens: formats.OptFrom(c.Reasoning), TotalTokens: formats.OptFrom(c.Total), CostUSD: formats.OptFrom(c.Cost), ContextTokens: formats.OptFrom(c.Context)},
		Estimated: c.Estimated, Unpriced: c.Unpriced}
}

// executableStamp names the running agentconv: its path, size and time.
// "" when it cannot be told, and then nothing is cached.
func executableStamp() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s %d %d", exe, st.Size(), st.ModTime().UnixNano())
}

// openSessionsCache reads the cache file; an absent, unreadable or
// foreign one gives an empty cache, which the listing writes anew. nil
// when no cache can be kept (no home, no executable).
func openSessionsCache(file string) *sessionsCache {
	stamp := executableStamp()
	if file == "" || stamp == "" {
		return nil
	}
	c := &sessionsCache{file: file, stamp: stamp, old: map[string]*cacheEntry{}, new: map[string]*cacheEntry{}}
	// anew: none of the file is used, and it is written again.
	anew := func() *sessionsCache {
		clear(c.old)
		c.changed = true
		return c
	}
	// Only a regular file: a FIFO put in its place never blocks.
	f, err := formats.OpenFound(file)
	if err != nil {
		return anew()
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() > sessionsCacheMax {
		return anew()
	}
	br := bufio.NewReaderSize(f, 1<<20)
	var head cacheHead
	line, err := br.ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &head) != nil || head.Version != sessionsCacheVersion || head.Stamp != stamp {
		return anew()
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			e := &cacheEntry{}
			if json.Unmarshal(line, e) != nil || e.Path == "" || (e.OK && e.Info == nil) {
				return anew() // damaged: every file is read again
			}
			c.old[e.Path] = e
		}
		switch {
		case err == io.EOF:
			return c
		case err != nil:
			return anew()
		}
	}
}

// lookup fills s from its entry when the entry is of the file as it is
// now; ok is readSessions's verdict. hit: an entry was used.
func (c *sessionsCache) lookup(s *SessionInfo) (ok, hit bool) {
	if c == nil {
		return false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := cacheKey(s.Path)
	e := c.old[key]
	if e == nil || e.From != s.from || e.Walked != s.walked || e.Bytes != s.Bytes ||
		e.MTime != s.modified.UnixNano() || e.OwnedMTime != s.ownedModified {
		return false, false
	}
	c.new[key] = e
	if e.Info != nil {
		e.Info.fill(s)
	}
	return e.OK, true
}

// store keeps what was read of s, unless its reading warned, or it is a
// binary dialect's: a database, whose changes may be in other files than
// the one listed (SQLite's write-ahead log).
func (c *sessionsCache) store(plain, s *SessionInfo, ok bool) {
	if c == nil || s.malformed || s.Dialect == "-" || s.modified.IsZero() {
		return
	}
	if d, found := Lookup(s.Dialect); found && d.Binary {
		return
	}
	e := &cacheEntry{Path: cacheKey(plain.Path), From: plain.from, Walked: plain.walked, Bytes: plain.Bytes,
		MTime: plain.modified.UnixNano(), OwnedMTime: plain.ownedModified, OK: ok, Info: infoOf(s)}
	c.mu.Lock()
	c.new[e.Path] = e
	c.changed = true
	c.mu.Unlock()
}

// save writes the cache: this listing's entries, and the earlier ones of
// files it did not look at that are still there (another place, --since).
func (c *sessionsCache) save() error {
	if c == nil {
		return nil
	}
	for p, e := range c.old {
		if _, ok := c.new[p]; ok {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			c.new[p] = e
		} else {
			c.changed = true
		}
	}
	if !c.changed {
		return nil
	}
	return replaceFile(c.file, false, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		head, _ := json.Marshal(cacheHead{Version: sessionsCacheVersion, Stamp: c.stamp})
		bw.Write(append(head, '\n'))
		for _, e := range c.new {
			line, err := json.Marshal(e)
			if err != nil {
				return err
			}
			bw.Write(append(line, '\n'))
		}
		return bw.Flush()
	})
}

// cacheKey is a file's absolute path: a relative one names another file
// from another directory.
func cacheKey(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func unixNano(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func fromUnixNano(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n)
}

func infoOf(s *SessionInfo) *cachedInfo {
	i := &cachedInfo{Dialect: s.Dialect, Agent: s.Agent, Session: s.Session, Project: s.Project,
		Start: unixNano(s.Start), End: unixNano(s.End), Runs: s.Runs, Prompts: s.Prompts,
		ToolCalls: s.ToolCalls, Tokens: s.Tokens, Models: s.Models, Usage: cacheUsage(s.Usage)}
	for _, m := range s.byModel {
		i.ByModel = append(i.ByModel, cachedModel{Model: m.model, Usage: cacheUsage(m.Usage)})
	}
	return i
}

// fill gives s what was read of its file.
func (i *cachedInfo) fill(s *SessionInfo) {
	s.Dialect, s.Agent, s.Session, s.Project = i.Dialect, i.Agent, i.Session, i.Project
	s.Start, s.End = fromUnixNano(i.Start), fromUnixNano(i.End)
	s.Runs, s.Prompts, s.ToolCalls, s.Tokens = i.Runs, i.Prompts, i.ToolCalls, i.Tokens
	s.Models, s.Usage = i.Models, i.Usage.usage()
	s.byModel = nil
	for _, m := range i.ByModel {
		s.byModel = append(s.byModel, modelUsage{model: m.Model, Usage: m.Usage.usage()})
	}
}
