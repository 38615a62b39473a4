package agenttest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Pin is one line of testdata/agents/pins.tsv: an agent at a version.
type Pin struct {
	Agent   string // claude-code, codex, gemini-cli, qwen-code, adal
	Package string // its npm package
	Version string
	Bin     string // the command the package installs
}

func (p Pin) String() string { return p.Agent + "@" + p.Version }

// Root is the repository's top folder, found from this source file.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// Pins reads testdata/agents/pins.tsv.
func Pins() ([]Pin, error) {
	name := filepath.Join(Root(), "testdata", "agents", "pins.tsv")
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pins []Pin
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: want 4 tab-separated fields (agent, package, version, bin), have %d", name, n, len(f))
		}
		pins = append(pins, Pin{f[0], f[1], f[2], f[3]})
	}
	return pins, sc.Err()
}

// Cache is where .ci/agents installs the agents.
func Cache() string {
	if d := os.Getenv("AGENTCONV_AGENTS"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "agentconv", "agents")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "agentconv", "agents")
}

// Path is the installed command, or "" when .ci/agents has not installed it.
func (p Pin) Path() string {
	bin := filepath.Join(Cache(), p.Agent+"-"+p.Version, "node_modules", ".bin", p.Bin)
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		return ""
	}
	return bin
}

// Family is what the tests know of one agent, for all its versions: how to
// point it at the server, how to run it headless in each machine-readable
// output mode, how to resume, and where it keeps its sessions. Each
// agent's file registers its family in init.
type Family interface {
	// Setup writes the agent's configuration under home and returns the
	// environment to run it with (HOME and the endpoint included).
	Setup(pin Pin, home, work, serverURL string) ([]string, error)
	// Modes are the machine-readable output modes, and the dialect
	// agentconv reads each as.
	Modes(pin Pin) []Mode
	// Args runs the scenario's prompt (without permission for tools when
	// sc.Refuses()); ResumeArgs continues session id with another prompt.
	Args(pin Pin, mode Mode, sc Scenario) []string
	ResumeArgs(pin Pin, mode Mode, id, prompt string) []string
	// SessionID is the id of the session a run wrote.
	SessionID(pin Pin, home string, stdout []byte) string
	// Store is the folder under home where the agent keeps its sessions
	// ("" if it keeps none), and Dialect the dialect of its files.
	Store(pin Pin) (dir, dialect string)
	// Tools makes calls of the agent's own tools.
	Tools(pin Pin) Toolset
}

// Platform is a Family whose agent asks the server for more than model
// calls (a model catalog, a user): its handler answers the paths no API
// claims, as the server's Other.
type Platform interface {
	Platform(pin Pin) http.Handler
}

// Mode is one output mode of an agent.
type Mode struct {
	Name    string // stream-json, json, …: a folder name of the captures
	Dialect string // what agentconv reads it as
	Ext     string // the file name of the capture's stdout: stdout.<Ext>
	// Totals: the output is one final object with the run's totals, and
	// no tool calls or model calls of its own (Claude's json).
	Totals bool
	// Unmarked: the output marks no model request, giving usage per turn
	// (Codex's exec --json) or per run (Gemini CLI's stream-json), so no
	// chat span may claim one.
	Unmarked bool
	// NoUsage: the agent prints no token counts in this mode (AdaL), so
	// none may be claimed.
	NoUsage bool
	// Text: the output is text, not JSON (AdaL's -o text): it gives the
	// answer, errors and refusals, and no calls.
	Text bool
}

// SideCounter is a Family whose agent counts its side requests (a model
// router's, a title's) in the totals it prints, as billed model calls.
type SideCounter interface {
	CountsSide(pin Pin) bool
}

// Families are the registered families, by agent name.
var Families = map[string]Family{}

// Outcome is what one run of an agent left.
type Outcome struct {
	Args   []string
	Stdout []byte
	Stderr []byte
	Exit   int
	CPU    time.Duration // the process's CPU time, its children's included
}

// Exec runs the agent with args in work, with env, for at most limit.
func Exec(ctx context.Context, bin string, args, env []string, work string, limit time.Duration) (Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = work
	cmd.Env = env
	cmd.Stdin = nil
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := Outcome{Args: args, Stdout: out.Bytes(), Stderr: errb.Bytes()}
	if ps := cmd.ProcessState; ps != nil {
		r.CPU = ps.UserTime() + ps.SystemTime()
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return r, fmt.Errorf("%s did not end within %s; stderr: %s", filepath.Base(bin), limit, tail(errb.Bytes()))
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	case err != nil:
		return r, err
	}
	return r, nil
}

// BaseEnv is the environment every agent runs with: a PATH with node, a
// HOME of its own, and no telemetry, update check or color.
func BaseEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"USER=agentconv",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"CI=true",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"DO_NOT_TRACK=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
	}
}

// Files lists the regular files under dir, relative to it, sorted.
func Files(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error { //nolint:errcheck // a missing dir has no files
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
