package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Meta is a capture's meta.json: what ran, and how it ended.
type Meta struct {
	Agent        string    `json:"agent"`
	Version      string    `json:"version"`
	Scenario     string    `json:"scenario"`
	Mode         string    `json:"mode"`
	Dialect      string    `json:"dialect"` // the stdout's
	Store        string    `json:"store,omitempty"`
	StoreDialect string    `json:"store_dialect,omitempty"`
	Runs         []RunMeta `json:"runs"`
	Session      string    `json:"session,omitempty"`
	Work         string    `json:"work"` // the working folder the agent ran in
	Home         string    `json:"home"`
}

// RunMeta is one process of a capture: the first prompt, or the resume.
type RunMeta struct {
	Args   []string `json:"args"`
	Exit   int      `json:"exit"`
	Stdout string   `json:"stdout"` // the file of its stdout, in the capture
}

// Capture is one scenario run by one agent in one output mode: its files
// are in Dir.
type Capture struct {
	Dir      string
	Meta     Meta
	Scenario Scenario
	Log      []Request
	CPU      time.Duration // the agent's CPU time in this run (not kept)
}

// Limit is how long one agent process may take.
var Limit = 3 * time.Minute

// Run runs scenario sc by pin in mode against a server of its own, in a new
// home under tmp, and writes the capture to dir: stdout of each process,
// the session files under home/, the server's log (server.json) and
// meta.json.
func Run(ctx context.Context, pin Pin, fam Family, mode Mode, sc Scenario, tmp, dir string) (*Capture, error) {
	bin := pin.Path()
	if bin == "" {
		return nil, fmt.Errorf("%s is not installed: run .ci/agents", pin)
	}
	home := filepath.Join(tmp, "home")
	work := filepath.Join(tmp, "work")
	sc = sc.In(work)
	var other http.Handler
	if p, ok := fam.(Platform); ok {
		other = p.Platform(pin)
	}
	srv, err := StartWith(sc, other)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	for _, d := range []string{home, work, filepath.Join(home, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	env, err := fam.Setup(pin, home, work, srv.URL)
	if err != nil {
		return nil, fmt.Errorf("%s: setup: %w", pin, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	storeDir, storeDialect := fam.Store(pin)
	c := &Capture{Dir: dir, Scenario: sc, Meta: Meta{Agent: pin.Agent, Version: pin.Version, Scenario: sc.Name, Mode: mode.Name,
		Dialect: mode.Dialect, Store: storeDir, StoreDialect: storeDialect, Work: work, Home: home}}
	out, err := srv.Exec(ctx, bin, fam.Args(pin, mode, sc), env, work, Limit)
	if err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", pin, sc.Name, mode.Name, err)
	}
	if err := c.keep(out, "stdout."+mode.Ext); err != nil {
		return nil, err
	}
	c.Meta.Session = fam.SessionID(pin, home, out.Stdout)
	if sc.Resume != "" {
		if d, err := time.ParseDuration(os.Getenv("AGENTCONV_TEST_RESUME_DELAY")); err == nil {
			time.Sleep(d) // to make a resume start in a later minute, as it may by chance
		}
		if c.Meta.Session == "" {
			return nil, fmt.Errorf("%s %s %s: no session id to resume; stdout: %s stderr: %s", pin, sc.Name, mode.Name, tail(out.Stdout), tail(out.Stderr))
		}
		out, err := srv.Exec(ctx, bin, fam.ResumeArgs(pin, mode, c.Meta.Session, sc.Resume), env, work, Limit)
		if err != nil {
			return nil, fmt.Errorf("%s %s %s resume: %w", pin, sc.Name, mode.Name, err)
		}
		if err := c.keep(out, "stdout-2."+mode.Ext); err != nil {
			return nil, err
		}
	}
	if s, ok := fam.(Settler); ok {
		if err := s.Settle(pin, home); err != nil {
			return nil, fmt.Errorf("%s %s %s: settle the store: %w", pin, sc.Name, mode.Name, err)
		}
	}
	if storeDir != "" {
		if err := copyTree(filepath.Join(home, storeDir), filepath.Join(dir, "home", storeDir)); err != nil {
			return nil, err
		}
	}
	c.Log = srv.Log()
	if err := writeJSON(filepath.Join(dir, "server.json"), ServerFile{Scenario: sc, Requests: c.Log}); err != nil {
		return nil, err
	}
	return c, writeJSON(filepath.Join(dir, "meta.json"), c.Meta)
}

func (c *Capture) keep(out Outcome, name string) error {
	c.CPU += out.CPU
	c.Meta.Runs = append(c.Meta.Runs, RunMeta{Args: out.Args, Exit: out.Exit, Stdout: name})
	if err := os.WriteFile(filepath.Join(c.Dir, name), out.Stdout, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Dir, strings.TrimSuffix(name, filepath.Ext(name))+".stderr"), out.Stderr, 0o644)
}

// ServerFile is a capture's server.json: the scenario, and every request
// the server received with what it answered.
type ServerFile struct {
	Scenario Scenario  `json:"scenario"`
	Requests []Request `json:"requests"`
}

// Load reads a capture kept in dir.
func Load(dir string) (*Capture, error) {
	c := &Capture{Dir: dir}
	if err := readJSON(filepath.Join(dir, "meta.json"), &c.Meta); err != nil {
		return nil, err
	}
	var sf ServerFile
	if err := readJSON(filepath.Join(dir, "server.json"), &sf); err != nil {
		return nil, err
	}
	c.Scenario, c.Log = sf.Scenario, sf.Requests
	if fam, ok := Families[c.Meta.Agent]; ok && c.Meta.Store != "" && c.Meta.StoreDialect == "" {
		// A capture made before agentconv read its store: the dialect as
		// the family declares it now.
		_, c.Meta.StoreDialect = fam.Store(Pin{Agent: c.Meta.Agent, Version: c.Meta.Version})
	}
	// The stdout's dialect as the family declares it now (a capture made
	// before agentconv read Qwen Code's json as its own).
	c.Meta.Dialect = c.Mode().Dialect
	return c, nil
}

// Settler is a Family whose agent leaves its store unsettled when it
// exits (OpenCode's SQLite database keeps its writes in a write-ahead
// log): Settle, after the agent's last process, lets the store's own
// software settle it (SQLite's checkpoint), so that the capture keeps
// one file that holds everything.
type Settler interface {
	Settle(pin Pin, home string) error
}

// SessionFiler is a Family that tells its session files from the other
// files of its store (by default: .jsonl and .json files, but not a
// subagent's .meta.json).
type SessionFiler interface {
	SessionFile(rel string) bool
}

// SessionReader is a Family whose session files do not all carry the
// whole session id in their names (Gemini CLI names a session's file by
// the id's first eight characters): FileSession reads the id of the main
// session a file is of ("" for a subagent's).
type SessionReader interface {
	FileSession(file string) string
}

// StoreFiles lists the session files the capture kept, as paths.
func (c *Capture) StoreFiles() []string {
	if c.Meta.Store == "" {
		return nil
	}
	root := filepath.Join(c.Dir, "home", c.Meta.Store)
	is := func(rel string) bool {
		return (strings.HasSuffix(rel, ".jsonl") || strings.HasSuffix(rel, ".json")) && !strings.HasSuffix(rel, ".meta.json")
	}
	if f, ok := Families[c.Meta.Agent].(SessionFiler); ok {
		is = f.SessionFile
	}
	var out []string
	for _, f := range Files(root) {
		if is(f) {
			out = append(out, filepath.Join(root, f))
		}
	}
	return out
}

// Mode is the output mode the capture was made in, as its family declares
// it now.
func (c *Capture) Mode() Mode {
	if fam, ok := Families[c.Meta.Agent]; ok {
		for _, m := range fam.Modes(Pin{Agent: c.Meta.Agent, Version: c.Meta.Version}) {
			if m.Name == c.Meta.Mode {
				return m
			}
		}
	}
	return Mode{Name: c.Meta.Mode, Dialect: c.Meta.Dialect}
}

// Captures lists the capture folders kept under testdata/agents.
func Captures() ([]string, error) {
	var dirs []string
	root := filepath.Join(Root(), "testdata", "agents")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "meta.json" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	return dirs, err
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == from {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.Create(dst)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil
	})
}

func writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}

func readJSON(name string, v any) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
