package agenttest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// resumeScenarios are the captures whose sessions the agents resume: one
// of each shape of conversation, of the newest pin of each agent.
var resumeScenarios = []string{"parallel", "subagent", "refused", "thinking", "resume"}

// resumers are the pins that resume every source: the newest Claude Code
// and Codex, and the versions before them that users still run.
var resumers = []string{"claude-code@2.1.332", "claude-code@2.0.77", "codex@0.171.0", "codex@0.45.0", "adal@1.8.6", "copilot@1.0.102", "pi@0.73.1", "opencode@1.18.33"}

// fewSources are the scenarios of the sources that resumers listed here
// resume (with the fixtures), to keep the matrix short: AdaL resumes the
// newest pins' parallel and resume captures and the fixtures; the Copilot
// CLI, pi and OpenCode their thinking captures too.
var fewSources = map[string][]string{"adal": {"parallel", "resume"}, "copilot": {"parallel", "resume", "thinking"},
	"pi": {"parallel", "resume", "thinking"}, "opencode": {"parallel", "resume", "thinking"}}

// resumeFixtures are sources of other tools, with no server log: what they
// say is read through their ATIF conversion.
var resumeFixtures = []struct{ file, dialect string }{
	{"atif/rfc-0001-example.json", "atif"},
	{"malac/subagents.jsonl", "malac"},
	{"malac/denied.jsonl", "malac"},
	{"adal/seed-stream.ndjson", "adal-stream"},
	{"adal/refused-stream.ndjson", "adal-stream"},
}

// source is a file to convert into a session and resume.
type source struct {
	name    string // a test name
	file    string
	dialect string
	truth   *Capture // the capture it came from, nil for a fixture
	stream  bool     // an agent's stdout, which never prints the prompt
}

func resumeSources(t *testing.T) []source {
	var out []source
	dirs, err := Captures()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(Root(), "testdata")
	newest := map[string]string{} // agent → its first pin, the newest
	pins, err := Pins()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pins {
		if _, ok := newest[p.Agent]; !ok {
			newest[p.Agent] = p.Version
		}
	}
	for _, dir := range dirs {
		c, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(resumeScenarios, c.Meta.Scenario) || newest[c.Meta.Agent] != c.Meta.Version ||
			len(c.Meta.Runs) == 0 || c.Meta.Runs[len(c.Meta.Runs)-1].Exit != 0 {
			continue
		}
		rel, _ := filepath.Rel(filepath.Join(root, "agents"), dir)
		fam, ok := Families[c.Meta.Agent]
		if !ok || fam.Modes(Pin{Agent: c.Meta.Agent, Version: c.Meta.Version})[0].Name != c.Meta.Mode {
			continue // one mode of each: the first, the agent's stream
		}
		if c.Scenario.Resume == "" {
			out = append(out, source{rel + "/stdout", filepath.Join(dir, c.Meta.Runs[0].Stdout), c.Meta.Dialect, c, true})
		}
		if c.Meta.StoreDialect != "" {
			k := &checker{c: c}
			for _, f := range c.StoreFiles() {
				if k.mainSession(f) {
					out = append(out, source{rel + "/session", f, c.Meta.StoreDialect, c, false})
				}
			}
		}
	}
	for _, f := range resumeFixtures {
		out = append(out, source{"fixtures/" + f.file, filepath.Join(root, f.file), f.dialect, nil, false})
	}
	return out
}

// TestResume is the resume matrix: each source is written with -o into the
// store of each agent that resumes sessions, and the agent resumes it with a
// new prompt; the first request it sends must hold the source's
// conversation: its prompts, texts and calls, each call paired with its
// result, in order, and nothing else.
func TestResume(t *testing.T) {
	needTime(t)
	t.Parallel() // with TestAgents
	pins, err := Pins()
	if err != nil {
		t.Fatal(err)
	}
	sources := resumeSources(t)
	var times timings
	start := time.Now()
	t.Cleanup(func() { times.report(t, start) })
	for _, pin := range pins {
		fam, ok := Families[pin.Agent]
		res, resumes := fam.(Resumer)
		if !ok || !resumes || !slices.Contains(resumers, pin.String()) || (*only != "" && pin.Agent != *only) {
			continue
		}
		if pin.Path() == "" {
			t.Run(pin.String(), func(t *testing.T) {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed in %s: .ci/agents must install every pin", pin, Cache())
				}
				t.Skipf("%s is not installed: run .ci/agents", pin)
			})
			continue
		}
		for _, src := range sources {
			if few, ok := fewSources[pin.Agent]; ok && src.truth != nil && !slices.Contains(few, src.truth.Meta.Scenario) {
				continue
			}
			t.Run(pin.String()+"/"+src.name, func(t *testing.T) {
				tk := agents.ticket(pin.Agent, resumeSeconds(pin))
				defer tk.release()
				t.Parallel()
				queued := time.Now()
				tk.wait()
				began := time.Now()
				cpu := resume(t, pin, fam, res, src, tk)
				times.add(t, timing{pin.String() + " " + src.name, began.Sub(queued), time.Since(began), cpu, 0})
			})
		}
	}
}

// resumeScenario answers whatever history the agent sends.
var resumeScenario = Scenario{Name: "resume-matrix", Threads: []Thread{{Name: "main", Match: resumePrompt, Last: true, Repeat: true,
	Replies: []Reply{{Text: "Resumed.", Usage: Usage{Input: 10, Output: 2}}}}}, Side: Reply{Text: "agentconv side answer"}}

const resumePrompt = MainMark + ": go on from where you stopped"

// resume runs the resume of src by pin, in tk's slot, which it releases
// when the agent is done; it returns the agent's CPU time.
func resume(t *testing.T, pin Pin, fam Family, res Resumer, src source, tk *ticket) (cpu time.Duration) {
	tmp := t.TempDir()
	home, work := filepath.Join(tmp, "home"), filepath.Join(tmp, "work")
	for _, d := range []string{home, work, filepath.Join(home, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var other http.Handler
	if p, ok := fam.(Platform); ok {
		other = p.Platform(pin)
	}
	srv, err := StartWith(resumeScenario, other)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env, err := fam.Setup(pin, home, work, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	k := &checker{t: t, id: "resume/" + pin.Agent + "/" + pin.Version + "/" + src.name, failed: map[string]bool{}, ran: map[string]bool{}, gapped: map[string]bool{}}
	defer k.gapsHeld()
	dir, dialect := res.Place(pin, home, work)
	flags := res.Flags(pin)
	if wf, ok := res.(WorkFlagger); ok {
		flags = append(flags, wf.WorkFlags(pin, work)...)
	}
	code, _, errs := agentconv(nil, append(append([]string{"--from", src.dialect, "--to", dialect}, flags...), "-o", dir+"/", src.file)...)
	if code != 0 {
		t.Fatalf("--from %s --to %s -o %s/ exits %d: %s", src.dialect, dialect, dir, code, errs)
	}
	t.Logf("conversion's report:\n%s", errs)
	if imp, ok := fam.(Importer); ok {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			out, err := srv.Exec(context.Background(), pin.Path(), imp.ImportArgs(pin, f), env, work, Limit)
			if err != nil {
				t.Fatal(err)
			}
			cpu += out.CPU
			if out.Exit != 0 {
				t.Fatalf("%s import %s exits %d: %s%s", pin, f, out.Exit, tail(out.Stdout), tail(out.Stderr))
			}
		}
	}
	id := convertedSession(t, dir)
	out, err := srv.Exec(context.Background(), pin.Path(), fam.ResumeArgs(pin, fam.Modes(pin)[0], id, resumePrompt), env, work, Limit)
	tk.release()
	if err != nil {
		t.Fatal(err)
	}
	cpu += out.CPU
	var first *Request
	for _, r := range srv.Log() {
		if r.Thread == "main" {
			first = &r
			break
		}
	}
	k.ran["resume/runs"] = true
	if out.Exit != 0 || first == nil {
		k.fail("resume/runs", "%s resuming %s exits %d after %d requests; stdout: %s\nstderr: %s", pin, id, out.Exit, len(srv.Log()), tail(out.Stdout), tail(out.Stderr))
		return
	}
	got := Conversation(first.History)
	wire, opaque := fam.(WireItems)
	if opaque {
		got = wire.WireItems(first.History)
	}
	k.ran["resume/new-prompt"] = true
	if len(got) == 0 || got[len(got)-1] != (Item{"prompt", resumePrompt}) {
		k.fail("resume/new-prompt", "the request does not end with the new prompt: %v", got)
	} else {
		got = got[:len(got)-1]
	}
	k.ran["resume/paired"] = true
	if bad := Paired(first.History); len(bad) > 0 {
		k.fail("resume/paired", "%s", strings.Join(bad, "; "))
	}
	got, want := canonical(got), canonical(expected(t, src))
	// A source that never printed its prompt (Claude's and Codex's
	// streams) gives a session without it, which the conversion must say.
	if !slices.ContainsFunc(got, func(i Item) bool { return i.Kind == "prompt" }) && slices.ContainsFunc(want, func(i Item) bool { return i.Kind == "prompt" }) {
		k.ran["resume/prompt-reported"] = true
		if !strings.Contains(errs, "user prompts the source never gave") {
			k.fail("resume/prompt-reported", "the session has no prompt, and the conversion does not say so:\n%s", errs)
		}
		want = slices.DeleteFunc(want, func(i Item) bool { return i.Kind == "prompt" })
	}
	if src.stream {
		// A stream names calls by its own ids (Codex's item_N) and prints
		// each with its result: its words, and how many calls, are what
		// it keeps of the conversation.
		got, want = streamKept(got), streamKept(want)
	} else if opaque {
		// The agent's wire has no call ids of the session: the calls and
		// results, in order, without them.
		want = noIDs(want)
	}
	k.ran["resume/history"] = true
	if !slices.Equal(got, want) {
		k.fail("resume/history", "the resumed history is\n  %v\nthe source's is\n  %v", got, want)
	}
	return cpu
}

// convertedSession is the id of the session agentconv wrote under dir.
func convertedSession(t *testing.T, dir string) string {
	code, out, errs := agentconv(nil, "sessions", "--json", dir)
	vals, err := jsonValues([]byte(out))
	if code != 0 || err != nil || len(vals) == 0 {
		t.Fatalf("sessions --json %s: exit %d, %d sessions, %v: %s", dir, code, len(vals), err, errs)
	}
	m, _ := vals[0].(map[string]any)
	id, _ := m["session_id"].(string)
	path, _ := m["path"].(string)
	if u := uuidIn.FindString(filepath.Base(path)); u != "" && (id == "" || !strings.Contains(path, id)) {
		// The listing gives the source's session id, kept in the file;
		// the agent finds the session by the id in the file's name.
		t.Logf("sessions lists %q for %s; the agent resumes it as %s", id, path, u)
		id = u
	}
	if id == "" {
		t.Fatalf("sessions --json %s lists no session id: %s", dir, out)
	}
	return id
}

func agentOf(src source) string {
	if src.truth == nil {
		return ""
	}
	return src.truth.Meta.Agent
}

var uuidIn = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// expected is the source's conversation: for a session file, the last
// request the agent sent and the server's answer to it; for a stream,
// which prints only part of it, and for a fixture, what agentconv reads of
// it, as its ATIF trajectory's steps.
func expected(t *testing.T, src source) []Item {
	_, opaque := Families[agentOf(src)].(OpaqueWire)
	if c := src.truth; c != nil && !src.stream && !opaque {
		var last *Request
		for i := range c.Log {
			if r := &c.Log[i]; r.Thread == "main" && r.Status == 200 {
				last = r
			}
		}
		if last == nil {
			t.Fatalf("%s: no request of the main thread", src.name)
		}
		items := Conversation(last.History)
		th := (&checker{c: c}).thread("main")
		if last.Turn < len(th.Replies) {
			rep := th.Replies[last.Turn]
			items = append(items, Conversation([]Msg{{Role: "assistant", Text: rep.Text, Calls: rep.Calls}})...)
		}
		return items
	}
	code, out, errs := agentconv(nil, "--from", src.dialect, "--to", "atif", src.file)
	if code != 0 {
		t.Fatalf("%s → atif exits %d: %s", src.file, code, errs)
	}
	// One trajectory a run, each with its steps and its answer kept
	// apart from them.
	type trajectory struct {
		Steps []struct {
			Source    string `json:"source"`
			Message   any    `json:"message"`
			ToolCalls []struct {
				ID string `json:"tool_call_id"`
			} `json:"tool_calls"`
			Observation *struct {
				Results []struct {
					ID string `json:"source_call_id"`
				} `json:"results"`
			} `json:"observation"`
		} `json:"steps"`
		Extra struct {
			Answer string `json:"agentconv_answer"`
		} `json:"extra"`
	}
	var items []Item
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var doc trajectory
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s → atif: %v", src.file, err)
		}
		for _, s := range doc.Steps {
			text, _ := s.Message.(string)
			switch s.Source {
			case "user":
				if t := userText(text); t != "" {
					items = append(items, Item{"prompt", t})
				}
			case "agent":
				if t := strings.TrimSpace(text); t != "" {
					items = append(items, Item{"text", t})
				}
				for _, c := range s.ToolCalls {
					items = append(items, Item{"call", c.ID})
				}
			}
			if s.Observation != nil {
				for _, r := range s.Observation.Results {
					items = append(items, Item{"result", r.ID})
				}
			}
		}
		if a := strings.TrimSpace(doc.Extra.Answer); a != "" && (len(items) == 0 || items[len(items)-1] != Item{"text", a}) {
			items = append(items, Item{"text", a})
		}
	}
	return items
}

// canonical orders each run of calls and results, which agents interleave
// differently (Codex 0.45 runs parallel calls one by one), as the calls in
// their order, then their results in the calls' order; and it joins texts
// that follow one another into one, as the server reads the Responses
// API's input (two responses' messages with nothing between them are
// items in a row, which no boundary tells apart from one response's).
// Anything else keeps its place.
func canonical(items []Item) []Item {
	out := make([]Item, 0, len(items))
	for i := 0; i < len(items); {
		if n := len(out); items[i].Kind == "text" && n > 0 && out[n-1].Kind == "text" {
			out[n-1].Text = joinText(out[n-1].Text, items[i].Text)
			i++
			continue
		}
		j := i
		for j < len(items) && (items[j].Kind == "call" || items[j].Kind == "result") {
			j++
		}
		if j == i {
			out = append(out, items[i])
			i++
			continue
		}
		run := items[i:j]
		order := map[string]int{}
		var calls, results []Item
		for _, it := range run {
			if it.Kind == "call" {
				order[it.Text] = len(calls)
				calls = append(calls, it)
			} else {
				results = append(results, it)
			}
		}
		slices.SortStableFunc(results, func(a, b Item) int { return rank(order, a.Text) - rank(order, b.Text) })
		out = append(append(out, calls...), results...)
		i = j
	}
	return out
}

func rank(order map[string]int, id string) int {
	if n, ok := order[id]; ok {
		return n
	}
	return len(order) // a result of no call in this run stays last
}

// noIDs is items without the ids of their calls and results.
func noIDs(items []Item) []Item {
	out := slices.Clone(items)
	for i := range out {
		if out[i].Kind == "call" || out[i].Kind == "result" {
			out[i].Text = ""
		}
	}
	return out
}

// streamKept is what a stream keeps of a conversation: its prompts and
// texts in order, then the number of calls and of results.
func streamKept(items []Item) []Item {
	var out []Item
	calls, results := 0, 0
	for _, i := range items {
		switch i.Kind {
		case "call":
			calls++
		case "result":
			results++
		default:
			out = append(out, i)
		}
	}
	return append(out, Item{"calls", strconv.Itoa(calls)}, Item{"results", strconv.Itoa(results)})
}
