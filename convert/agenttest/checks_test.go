package agenttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/convert/converttest"
)

// A check is one property of a capture. Each failure is either a test
// failure, or a gap listed in testdata/agents/gaps.tsv with the issue that
// will close it; a listed gap that no longer fails is a failure too, so
// the list only shrinks.
type checker struct {
	t      *testing.T
	c      *Capture
	id     string          // agent/version/scenario/mode
	failed map[string]bool // by gap
	ran    map[string]bool // by check
	gapped map[string]bool // the checks that failed as known gaps
}

// Check runs every check on one capture.
func Check(t *testing.T, c *Capture) {
	t.Helper()
	k := &checker{t: t, c: c, id: path.Join(c.Meta.Agent, c.Meta.Version, c.Meta.Scenario, c.Meta.Mode), failed: map[string]bool{}, ran: map[string]bool{}, gapped: map[string]bool{}}
	k.served()
	for i, run := range c.Meta.Runs {
		file := filepath.Join(c.Dir, run.Stdout)
		k.input("stdout", file, c.Meta.Dialect, i)
	}
	if c.Meta.StoreDialect != "" {
		var main []string
		for _, f := range c.StoreFiles() {
			k.input("store", f, c.Meta.StoreDialect, -1)
			if k.mainSession(f) {
				main = append(main, f)
			}
		}
		if len(main) > 0 {
			k.storeOutcome(main, c.Meta.StoreDialect)
		}
		k.sessions()
	}
	k.gapsHeld()
}

// fail reports that check does not hold.
func (k *checker) fail(check, format string, args ...any) {
	k.t.Helper()
	msg := fmt.Sprintf(format, args...)
	if g, ok := gapFor(k.id, check); ok {
		k.failed[g.key()] = true
		k.gapped[check] = true
		k.t.Logf("known gap (%s): %s: %s", g.why, check, msg)
		return
	}
	k.t.Errorf("%s: %s: %s", k.id, check, msg)
}

// gapsHeld fails for each gap listed for this capture whose check held.
func (k *checker) gapsHeld() {
	k.t.Helper()
	k.t.Logf("summary %s: %d checks, %d known gaps", k.id, len(k.ran), len(k.gapped))
	for _, g := range gapsFor(k.id) {
		if !k.failed[g.key()] && k.ranAny(g.check) && !strings.HasPrefix(g.why, "flaky:") {
			k.t.Errorf("%s: %s now holds: remove its line from testdata/agents/gaps.tsv (%s)", k.id, g.check, g.why)
		}
	}
}

func (k *checker) ranAny(pattern string) bool {
	for c := range k.ran {
		if ok, _ := path.Match(pattern, c); ok {
			return true
		}
	}
	return false
}

// served: the agent talked to the scripted model, in its prompt's thread.
func (k *checker) served() {
	k.ran["served"] = true
	for _, r := range k.c.Log {
		if r.Thread == "main" {
			return
		}
	}
	k.fail("served", "the server received no request of the main thread (%d requests in all)", len(k.c.Log))
}

// input runs the checks of one file the agent wrote: its stdout (run is
// the process's index) or a session file (run -1).
func (k *checker) input(kind, file, dialect string, run int) {
	k.t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		k.t.Fatal(err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if run >= 0 && k.c.Meta.Runs[run].Exit != 0 {
			return // a failed agent may print nothing on stdout
		}
		if run < 0 {
			return // a session file the agent left empty (2.0's resume does)
		}
		k.fail(kind+"/empty", "%s is empty", filepath.Base(file))
		return
	}
	if run >= 0 && !k.c.Mode().Text && endsInsideJSON(data) {
		// The agent cut its own stdout (Node exits before a pipe takes a
		// large last write: Qwen Code's json of a large output, now and
		// then). agentconv must say that the input is cut, and nothing
		// else of it can be checked.
		check := kind + "/agent-cut"
		k.ran[check] = true
		code, _, errs := agentconv(data, "--from", dialect, "--to", dialect)
		if code != 1 || !strings.Contains(errs, "cut") && !strings.Contains(errs, "not valid JSON") {
			k.fail(check, "%s ends inside a JSON value (the agent cut it); agentconv exits %d: %s", filepath.Base(file), code, firstLine(errs))
		}
		k.t.Logf("%s: the agent cut its own stdout inside a JSON value (%d bytes); checked only that agentconv says so", filepath.Base(file), len(data))
		return
	}
	k.detect(kind, file, data, dialect)
	k.identity(kind, file, data, dialect)
	k.targets(kind, file, data, dialect)
	if run >= 0 {
		k.exitStatus(file, data, dialect, k.c.Meta.Runs[run].Exit)
		k.usage(file, data, dialect, run)
		k.calls(file, data, dialect, run)
	}
}

// detect: the dialect is found without --from.
func (k *checker) detect(kind, file string, data []byte, dialect string) {
	check := kind + "/detect"
	k.ran[check] = true
	head := data
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	d, score := convert.Detect(head)
	if d.Name != dialect {
		k.fail(check, "%s is detected as %q (score %d), not %s", filepath.Base(file), d.Name, score, dialect)
	}
}

// identity: the same dialect gives back the same JSON.
func (k *checker) identity(kind, file string, data []byte, dialect string) {
	if d, ok := convert.Lookup(dialect); !ok || d.NewWriter == nil {
		return // read only
	}
	check := kind + "/identity"
	k.ran[check] = true
	code, out, errs := agentconv(data, "--from", dialect, "--to", dialect)
	if code != 0 {
		k.fail(check, "--from %s --to %s exits %d: %s", dialect, dialect, code, firstLine(errs))
		return
	}
	if k.c.Mode().Text {
		if out != string(data) {
			k.fail(check, "%s → %s differs from its input:\n  in:  %.300q\n  out: %.300q", dialect, dialect, data, out)
		}
		return
	}
	if out == string(data) {
		return // the same bytes: the same JSON
	}
	want, err1 := jsonValues(data)
	got, err2 := jsonValues([]byte(out))
	if err1 != nil || err2 != nil {
		k.fail(check, "not JSON: %v %v", err1, err2)
		return
	}
	if !reflect.DeepEqual(want, got) {
		k.fail(check, "%s → %s differs from its input: %s", dialect, dialect, firstDiff(want, got))
	}
}

// targets: every writable dialect converts the file without a panic or a
// negative count.
func (k *checker) targets(kind, file string, data []byte, dialect string) {
	for _, to := range convert.Writable() {
		if to.Remote {
			continue // a collector's; otlp-json is the same spans
		}
		check := kind + "/to-" + to.Name
		k.ran[check] = true
		// Through the library: what is checked is the writer's output,
		// not the command line, which the other checks go through.
		out, err := converttest.Library(data, dialect, to.Name)
		switch {
		case err != nil && strings.HasPrefix(err.Error(), "panic: "):
			k.fail(check, "panics: %s", firstLine(err.Error()))
		case err != nil:
			k.fail(check, "fails: %s", firstLine(err.Error()))
		case negativeCount(string(out)):
			k.fail(check, "writes a negative count")
		}
	}
}

// exitStatus: --exit-status gives the agent's own exit code, and the run's
// outcome is the agent's.
func (k *checker) exitStatus(file string, data []byte, dialect string, exit int) {
	check := "stdout/exit-status"
	k.ran[check] = true
	code, _, errs := agentconv(data, "--from", dialect, "--to", "adal-json", "--exit-status")
	if code != exit {
		k.fail(check, "%s: --exit-status gives %d, the agent exited %d (%s)", filepath.Base(file), code, exit, firstLine(errs))
	}
	check = "stdout/outcome"
	k.ran[check] = true
	_, out, _ := agentconv(data, "--from", dialect, "--to", "adal-json")
	vals, err := jsonValues([]byte(out))
	if err != nil || len(vals) == 0 {
		k.fail(check, "%s: adal-json is not JSON: %v", filepath.Base(file), err)
		return
	}
	last, _ := vals[len(vals)-1].(map[string]any)
	if ok, _ := last["success"].(bool); ok != (exit == 0) {
		k.fail(check, "%s: the run's success is %v, the agent exited %d", filepath.Base(file), last["success"], exit)
	}
	if len(vals) != 1 {
		k.fail(check, "%s: %d runs, the agent made one", filepath.Base(file), len(vals))
	}
}

// mainSession says whether a session file is the main agent's, by its
// name.
func (k *checker) mainSession(file string) bool {
	id := k.c.Meta.Session
	if id == "" {
		return false
	}
	if r, ok := Families[k.c.Meta.Agent].(SessionReader); ok {
		return r.FileSession(file) == id
	}
	return strings.Contains(filepath.Base(file), id)
}

// storeOutcome: the session's files (in name order: a resume may leave
// one of its own, as Gemini CLI does when it starts in a later minute)
// have a run for each process of the agent, each with the process's
// outcome. Each is read by its path, as a file of the store is; one that
// another of them owns (the dialect's Owner: a later part of a Gemini CLI
// session) is read with its owner.
func (k *checker) storeOutcome(files []string, dialect string) {
	check := "store/outcome"
	k.ran[check] = true
	var got, want, names []string
	d, _ := convert.Lookup(dialect)
	for _, file := range files {
		names = append(names, filepath.Base(file))
		if d.Owner != nil && slices.Contains(files, d.Owner(file)) {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			k.t.Fatal(err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue // a session file the agent left empty (2.0's resume does)
		}
		_, out, _ := agentconv(nil, "--from", dialect, "--to", "adal-json", file)
		vals, err := jsonValues([]byte(out))
		if err != nil {
			k.fail(check, "%s: adal-json is not JSON: %v", filepath.Base(file), err)
			return
		}
		for _, v := range vals {
			m, _ := v.(map[string]any)
			got = append(got, fmt.Sprintf("success=%v", m["success"]))
		}
	}
	for _, r := range k.c.Meta.Runs {
		want = append(want, fmt.Sprintf("success=%v", r.Exit == 0))
	}
	if !reflect.DeepEqual(got, want) {
		k.fail(check, "%s: runs %v; the agent's processes %v", strings.Join(names, ", "), got, want)
	}
}

// runRequests are the thread requests answered during process run (the
// resume's requests carry its prompt).
func (k *checker) runRequests(run int) []Request {
	var out []Request
	for _, r := range k.c.Log {
		u, ok := k.billed(r, true)
		if !ok {
			continue
		}
		r.Sent = &u
		resumed := k.c.Scenario.Resume != "" && hasText(r.History, k.c.Scenario.Resume)
		if resumed == (run == 1) {
			out = append(out, r)
		}
	}
	return out
}

// billed is the usage the server sent in answer to r, and whether the agent
// counts it: a thread's request answered, or, in what the agent prints
// (stdout), a side request of an agent that counts its side requests in
// its totals (SideCounter); its session files do not record them.
func (k *checker) billed(r Request, stdout bool) (Usage, bool) {
	switch {
	case r.Status != 200:
		return Usage{}, false
	case r.Thread != "side":
		return *r.Sent, r.Sent != nil
	case !stdout:
		return Usage{}, false
	}
	sc, ok := Families[k.c.Meta.Agent].(SideCounter)
	if ok && sc.CountsSide(Pin{Agent: k.c.Meta.Agent, Version: k.c.Meta.Version}) {
		return k.c.Scenario.Side.Usage, true
	}
	return Usage{}, false
}

// convention is the input tokens the API's reply counts by the OpenTelemetry
// GenAI rule (cached tokens included), as the agent received them.
func convention(api string, u Usage) (input, output int) {
	if api == "anthropic" {
		return u.Input + u.CacheRead + u.CacheWrite, u.Output
	}
	return u.Input + u.CacheRead, u.Output // OpenAI and Gemini have no cache writes
}

// usage: the run's totals, and each model call's, equal what the server sent.
func (k *checker) usage(file string, data []byte, dialect string, run int) {
	check := "stdout/usage"
	k.ran[check] = true
	var in, out int
	var perCall [][2]int
	for _, r := range k.runRequests(run) {
		i, o := convention(r.API, *r.Sent)
		in, out = in+i, out+o
		perCall = append(perCall, [2]int{i, o})
	}
	code, js, errs := agentconv(data, "--deterministic", "--from", dialect, "--to", "otlp-json")
	if code != 0 {
		k.fail(check, "otlp-json exits %d: %s", code, firstLine(errs))
		return
	}
	spans := spansOf(js)
	var gotIn, gotOut int
	var calls [][2]int
	for _, s := range spans {
		switch {
		case s.parent == "" || strings.HasPrefix(s.name, "invoke_agent") && s.attr["gen_ai.agent.id"] == "main":
			// The run's totals: agentconv.usage.* beside chat spans that
			// carry gen_ai.usage.*, else gen_ai.usage.* on the run itself.
			if _, ok := s.attr["agentconv.usage.input_tokens"]; ok {
				gotIn += s.num("agentconv.usage.input_tokens")
				gotOut += s.num("agentconv.usage.output_tokens")
			} else {
				gotIn += s.num("gen_ai.usage.input_tokens")
				gotOut += s.num("gen_ai.usage.output_tokens")
			}
		case s.attr["agentconv.chat.aggregate"] == true:
			// It stands for requests the output does not list one by one:
			// the run's totals count it, no call does.
		case strings.HasPrefix(s.name, "chat"):
			calls = append(calls, [2]int{s.num("gen_ai.usage.input_tokens"), s.num("gen_ai.usage.output_tokens")})
		}
	}
	if k.c.Mode().NoUsage {
		// The agent printed none: agentconv must claim none.
		in, out, perCall = 0, 0, nil
	}
	if gotIn != in || gotOut != out {
		k.fail(check, "%s: the run's tokens are %d in, %d out; the server sent %d in, %d out", filepath.Base(file), gotIn, gotOut, in, out)
	}
	check = "stdout/usage-per-call"
	if k.c.Mode().Totals {
		return
	}
	k.ran[check] = true
	if k.c.Mode().Unmarked {
		// The requests are not marked: a chat span would claim a turn's
		// requests for one.
		if len(calls) > 0 {
			k.fail(check, "%s: %d chat spans, where the output marks no model request (the server answered %d)", filepath.Base(file), len(calls), len(perCall))
		}
		return
	}
	if !sameMultiset(calls, perCall) && !(k.c.Mode().NoUsage && len(calls) == 0) {
		k.fail(check, "%s: the chat spans' tokens are %v; the server sent %v", filepath.Base(file), calls, perCall)
	}
}

// calls: the tool calls are those the server asked for, with their results.
func (k *checker) calls(file string, data []byte, dialect string, run int) {
	if k.c.Mode().Totals || k.c.Mode().Text {
		return // the output has none
	}
	check := "stdout/calls"
	k.ran[check] = true
	var want []string
	for _, r := range k.runRequests(run) {
		th := k.thread(r.Thread)
		if th == nil || r.Turn >= len(th.Replies) {
			continue
		}
		for _, c := range th.Replies[r.Turn].Calls {
			want = append(want, c.Name)
		}
	}
	code, js, errs := agentconv(data, "--deterministic", "--from", dialect, "--to", "otlp-json")
	if code != 0 {
		k.fail(check, "otlp-json exits %d: %s", code, firstLine(errs))
		return
	}
	var got []string
	for _, s := range spansOf(js) {
		if name, ok := strings.CutPrefix(s.name, "execute_tool "); ok {
			got = append(got, name)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if len(want) != len(got) || k.namesTools(got) && !reflect.DeepEqual(want, got) {
		k.fail(check, "%s: tool calls %v; the server asked for %v", filepath.Base(file), got, want)
	}
}

// namesTools says whether names are the tools' names, as the agent
// declared them to the model: a dialect that names calls by their kind
// (Codex's command_execution) does not carry them.
func (k *checker) namesTools(names []string) bool {
	declared := map[string]bool{}
	for _, r := range k.c.Log {
		for _, t := range r.Tools {
			declared[t] = true
			if _, last, ok := strings.Cut(t, "."); ok {
				declared[last] = true // a namespace's tool
			}
		}
	}
	for _, n := range names {
		if !declared[n] {
			return false
		}
	}
	return true
}

func (k *checker) thread(name string) *Thread {
	for i := range k.c.Scenario.Threads {
		if k.c.Scenario.Threads[i].Name == name {
			return &k.c.Scenario.Threads[i]
		}
	}
	return nil
}

// sessions: `agentconv sessions --json`, run as the user whose home the
// agent wrote, lists the session with its project, prompts, calls and
// tokens.
func (k *checker) sessions() {
	check := "store/sessions"
	k.ran[check] = true
	home := filepath.Join(k.c.Dir, "home")
	// The listings' cache goes to a directory of the test's, never into
	// the capture; the second listing is the cache's, the same.
	env := map[string]string{"HOME": home, "XDG_CACHE_HOME": k.t.TempDir()}
	code, out, errs := agentconvEnv(env, nil, "sessions", "--json")
	if code != 0 {
		k.fail(check, "exits %d: %s", code, firstLine(errs))
		return
	}
	if code, again, errs := agentconvEnv(env, nil, "sessions", "--json"); code != 0 || again != out {
		k.fail(check, "listed again, with the cache of the first listing: exit %d, %q, want %q; %s", code, again, out, firstLine(errs))
		return
	}
	vals, err := jsonValues([]byte(out))
	if err != nil {
		k.fail(check, "not JSON: %v", err)
		return
	}
	var found []map[string]any
	for _, v := range vals {
		m, _ := v.(map[string]any)
		if m != nil && (k.c.Meta.Session == "" || m["session_id"] == k.c.Meta.Session) {
			found = append(found, m)
		}
	}
	if len(found) == 0 {
		k.fail(check, "session %q is not listed (%d listed)", k.c.Meta.Session, len(vals))
		return
	}
	var in, out2, prompts int
	for _, r := range k.c.Log {
		if u, ok := k.billed(r, false); ok {
			i, o := convention(r.API, u)
			in, out2 = in+i, out2+o
		}
	}
	prompts = 1
	if k.c.Scenario.Resume != "" {
		prompts = 2
	}
	tokens, gotPrompts := 0, 0
	for _, m := range found {
		tokens += int(num(m["tokens"]))
		gotPrompts += int(num(m["prompts"]))
		if p, _ := m["project"].(string); p != k.c.Meta.Work {
			k.fail(check+"-project", "the project is %q, the agent ran in %q", p, k.c.Meta.Work)
		}
	}
	k.ran[check+"-project"] = true
	k.sessionsElsewhere()
	if gotPrompts != prompts {
		k.fail(check, "%d prompts listed, the agent was given %d", gotPrompts, prompts)
	}
	k.ran[check+"-tokens"] = true
	if tokens != in+out2 {
		k.fail(check+"-tokens", "%d tokens listed, the server sent %d (%d in, %d out)", tokens, in+out2, in, out2)
	}
}

// sessionsElsewhere: `agentconv sessions --project WORK` lists the session
// (a file may name its project by a digest only), and so does `agentconv
// sessions HOME`, the agent's home named as a directory, in an empty
// environment.
func (k *checker) sessionsElsewhere() {
	home := filepath.Join(k.c.Dir, "home")
	for _, c := range []struct {
		check string
		env   map[string]string
		args  []string
	}{
		{"store/sessions-in-project", map[string]string{"HOME": home, "XDG_CACHE_HOME": k.t.TempDir()}, []string{"--project", k.c.Meta.Work}},
		{"store/sessions-home", nil, []string{home}},
	} {
		k.ran[c.check] = true
		code, out, errs := agentconvEnv(c.env, nil, append([]string{"sessions", "--json"}, c.args...)...)
		if code != 0 {
			k.fail(c.check, "exits %d: %s", code, firstLine(errs))
			continue
		}
		vals, _ := jsonValues([]byte(out))
		found := false
		for _, v := range vals {
			m, _ := v.(map[string]any)
			found = found || m != nil && (k.c.Meta.Session == "" || m["session_id"] == k.c.Meta.Session)
		}
		if !found {
			k.fail(c.check, "sessions %s: session %q is not listed (%d listed; %s)", strings.Join(c.args, " "), k.c.Meta.Session, len(vals), firstLine(errs))
		}
	}
}

// agentconv runs the command line in memory, with an empty environment.
func agentconv(stdin []byte, args ...string) (code int, stdout, stderr string) {
	return agentconvEnv(nil, stdin, args...)
}

// agentconvEnv runs the command line in memory, in the environment env.
func agentconvEnv(env map[string]string, stdin []byte, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	defer func() {
		if r := recover(); r != nil {
			code, stderr = 99, fmt.Sprintf("panic: %v", r)
		}
	}()
	code = convert.Run(append([]string{"agentconv"}, args...), convert.Sys{
		Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

// endsInsideJSON says whether data's last JSON value is not complete.
func endsInsideJSON(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if err == nil {
			continue
		}
		return errors.Is(err, io.ErrUnexpectedEOF)
	}
}

// jsonValues reads a stream of JSON values (a document, or one a line).
func jsonValues(data []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				return out, nil
			}
			return out, err
		}
		out = append(out, v)
	}
}

func firstDiff(want, got []any) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d values, the input has %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			w, _ := json.Marshal(want[i])
			g, _ := json.Marshal(got[i])
			return fmt.Sprintf("value %d:\n  in:  %.300s\n  out: %.300s", i+1, w, g)
		}
	}
	return ""
}

func firstLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			return l
		}
	}
	return ""
}

// maybeNegative says whether out has a minus sign and a digit where a JSON
// value that is a negative number, or a string of one, can start: after a
// colon, a comma or a bracket.
func maybeNegative(out string) bool {
	for i := 0; ; i++ {
		j := strings.IndexByte(out[i:], '-')
		if j < 0 {
			return false
		}
		i += j
		if i+1 >= len(out) || out[i+1] < '0' || out[i+1] > '9' {
			continue
		}
		k := i - 1
		if k >= 0 && out[k] == '"' {
			k--
		}
		for k >= 0 && strings.IndexByte(" \t\r\n", out[k]) >= 0 {
			k--
		}
		if k >= 0 && strings.IndexByte(":,[", out[k]) >= 0 {
			return true
		}
	}
}

// negativeCount says whether a JSON output has a negative number under a
// key that names a count of tokens or calls.
func negativeCount(out string) bool {
	if !maybeNegative(out) {
		return false // no number, or string, starts with a minus sign
	}
	vals, err := jsonValues([]byte(out))
	if err != nil {
		return false
	}
	var walk func(key string, v any) bool
	walk = func(key string, v any) bool {
		switch v := v.(type) {
		case map[string]any:
			if k, _ := v["key"].(string); k != "" { // an OTLP attribute
				if iv, ok := v["value"].(map[string]any); ok {
					return walk(k, iv["intValue"])
				}
			}
			for k, x := range v {
				if walk(k, x) {
					return true
				}
			}
		case []any:
			for _, x := range v {
				if walk(key, x) {
					return true
				}
			}
		case json.Number, string:
			s := fmt.Sprint(v)
			if strings.Contains(key, "token") || strings.Contains(key, "count") {
				if n, err := strconv.ParseFloat(s, 64); err == nil && n < 0 {
					return true
				}
			}
		}
		return false
	}
	for _, v := range vals {
		if walk("", v) {
			return true
		}
	}
	return false
}

type span struct {
	name, id, parent string
	attr             map[string]any
}

func (s span) num(key string) int { return int(num(s.attr[key])) }

func num(v any) float64 {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case float64:
		return v
	case string:
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return 0
}

// spansOf reads the spans of otlp-json output.
func spansOf(js string) []span {
	var out []span
	vals, _ := jsonValues([]byte(js))
	for _, v := range vals {
		var doc struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						Name       string `json:"name"`
						SpanID     string `json:"spanId"`
						Parent     string `json:"parentSpanId"`
						Attributes []struct {
							Key   string         `json:"key"`
							Value map[string]any `json:"value"`
						} `json:"attributes"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		b, _ := json.Marshal(v)
		if json.Unmarshal(b, &doc) != nil {
			continue
		}
		for _, rs := range doc.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := span{name: s.Name, id: s.SpanID, parent: s.Parent, attr: map[string]any{}}
					for _, a := range s.Attributes {
						for _, x := range a.Value {
							sp.attr[a.Key] = x
						}
					}
					out = append(out, sp)
				}
			}
		}
	}
	return out
}

func sameMultiset(a, b [][2]int) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(s [][2]int) []string {
		var out []string
		for _, x := range s {
			out = append(out, fmt.Sprint(x))
		}
		sort.Strings(out)
		return out
	}
	return reflect.DeepEqual(key(a), key(b))
}

func hasText(h []Msg, s string) bool {
	for _, m := range h {
		if strings.Contains(m.Text, s) {
			return true
		}
	}
	return false
}

// gap is a line of testdata/agents/gaps.tsv: a check that does not hold
// yet on the captures that match a pattern, and why.
type gap struct {
	pattern, check, why string
}

func (g gap) key() string { return g.pattern + "\t" + g.check }

var (
	gapsOnce sync.Once
	gapList  []gap
)

func gaps() []gap {
	gapsOnce.Do(func() {
		f, err := os.Open(filepath.Join(Root(), "testdata", "agents", "gaps.tsv"))
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			f := strings.SplitN(line, "\t", 3)
			if len(f) == 3 {
				gapList = append(gapList, gap{f[0], f[1], f[2]})
			}
		}
	})
	return gapList
}

// gapFor finds the gap listed for a capture and a check.
func gapFor(id, check string) (gap, bool) {
	for _, g := range gapsFor(id) {
		if ok, _ := path.Match(g.check, check); ok {
			return g, true
		}
	}
	return gap{}, false
}

func gapsFor(id string) []gap {
	var out []gap
	for _, g := range gaps() {
		if ok, _ := path.Match(g.pattern, id); ok {
			out = append(out, g)
		}
	}
	return out
}

func TestEndsInsideJSON(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":1}` + "\n":             false,
		`{"a":1}` + "\n" + `{"b":"x`: true,
		`{"result":"` + "\n" + `"}`:  false, // a line cut inside, the stream going on
		"":                           false,
	} {
		if got := endsInsideJSON([]byte(in)); got != want {
			t.Errorf("endsInsideJSON(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestNegativeCount(t *testing.T) {
	for in, want := range map[string]bool{
		`{"input_tokens": -1}`:                                          true,
		`{"usage":{"output_tokens":[1, -2]}}`:                           true,
		`{"key":"gen_ai.usage.input_tokens","value":{"intValue":"-3"}}`: true,
		`{"key":"gen_ai.usage.input_tokens","value":{"intValue":"3"}}`:  false,
		`{"input_tokens":1,"start":"2026-12-03","delta":-4}`:            false,
		"{\"tool_count\":\n-7}":                                         true,
		`{"text":"tokens: -1 left","count":2}`:                          false,
	} {
		if got := negativeCount(in); got != want {
			t.Errorf("negativeCount(%s) = %v, want %v", in, got, want)
		}
	}
}
