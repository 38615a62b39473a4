package convert

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats/formatstest"

	"github.com/goccy/go-json"
)

// acpValidate checks each line of each file against ACP's own JSON Schema
// (../shared/oracles/acp/schema.json) with Python's jsonschema: the whole
// message against the schema, and its params or result against the
// definition of its method. It returns the lines it rejects.
func acpValidate(t *testing.T, files []string) []string {
	t.Helper()
	schema := filepath.Join(oracles, "acp", "schema.json")
	if _, err := os.Stat(schema); err != nil {
		needOracle(t, "ACP's schema is not in ../shared/oracles", err)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		needOracle(t, "no python3 for ACP's schema", err)
	}
	if out, err := exec.Command(py, "-c", "import jsonschema").CombinedOutput(); err != nil {
		needOracle(t, "no jsonschema for ACP's schema", fmt.Errorf("%v: %s", err, out))
	}
	script := `import sys, json, jsonschema
schema = json.load(open(sys.argv[1]))
defs = schema["$defs"]
V = jsonschema.Draft202012Validator
root = V(schema)
def part(name):
    return V({"$ref": "#/$defs/" + name, "$defs": defs})
by_method = {"session/update": part("SessionNotification"),
             "session/request_permission": part("RequestPermissionRequest"),
             "session/prompt": part("PromptRequest"),
             # A transcript's handshake and cancellation, which a copied
             # ACP input keeps.
             "initialize": part("InitializeRequest"), "session/new": part("NewSessionRequest"),
             "session/cancel": part("CancelNotification")}
permission, prompt = part("RequestPermissionResponse"), part("PromptResponse")
results = {"initialize": part("InitializeResponse"), "session/new": part("NewSessionResponse"),
           "session/prompt": prompt, "session/request_permission": permission}
checked = 0
for path in sys.argv[2:]:
    asked = {}  # the method of each request, by id
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        if not line.strip():
            continue
        checked += 1
        where = "%s:%d" % (path, no)
        try:
            m = json.loads(line)
        except ValueError as e:
            print("%s: not JSON: %s" % (where, e)); continue
        errs = [e.message for e in root.iter_errors(m)]
        if "method" in m and "id" in m:
            asked[json.dumps(m["id"])] = m["method"]
        if "method" in m:
            v = by_method.get(m["method"])
            if v is None:
                errs.append("a method the writer does not send: " + m["method"])
            else:
                errs += [e.message for e in v.iter_errors(m.get("params"))]
        elif "result" in m:
            r = m["result"] or {}
            v = results.get(asked.pop(json.dumps(m.get("id")), None))
            if v is None:  # a response whose request the input lacks
                v = prompt if "stopReason" in r else results["initialize"] if "protocolVersion" in r else \
                    results["session/new"] if "sessionId" in r else permission
            errs += [e.message for e in v.iter_errors(m["result"])]
        elif "error" not in m:
            errs.append("neither a request, a notification nor a response")
        for e in errs:
            print("%s: %s" % (where, e[:300]))
print("checked", checked, file=sys.stderr)
`
	cmd := exec.Command(py, append([]string{"-c", script, schema}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the schema check failed to run: %v: %s", err, stderr.String())
	}
	t.Log(strings.TrimSpace(stderr.String()))
	var bad []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			bad = append(bad, l)
		}
	}
	return bad
}

// TestACPValidates: every line written as acp from every fixture is valid
// under ACP's own schema; an ACP fixture goes out as it came, handshake
// included, so its lines are checked too.
func TestACPValidates(t *testing.T) {
	formatstest.Long(t)
	t.Parallel()
	dir := t.TempDir()
	var files []string
	for _, in := range fixtures(t) {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata"), in)
		out, _ := convertTo(t, readFixture(t, in), "", "acp")
		f := filepath.Join(dir, strings.ReplaceAll(rel, string(filepath.Separator), "_")+".acp.jsonl")
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for _, b := range acpValidate(t, files) {
		t.Error(b)
	}
}

// TestACPSchemaRejects: the check can fail: a tool call without its
// title, and a plan entry with a status ACP does not have.
func TestACPSchemaRejects(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "bad.jsonl")
	bad := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c"}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"x","priority":"medium","status":"blocked"}]}}}
`
	if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	got := acpValidate(t, []string{f})
	lines := map[string]bool{}
	for _, b := range got {
		lines[strings.SplitN(b[len(f):], ":", 3)[1]] = true
	}
	if !lines["1"] || !lines["2"] {
		t.Errorf("the schema check did not reject both invalid lines: %v", got)
	}
}

// TestLiveBridge: `--from codex --to acp` on a live pipe writes each ACP
// message as soon as the codex line that makes it has arrived, before the
// input ends, so that an editor shows the run as it goes.
func TestLiveBridge(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	defer outR.Close()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run([]string{"agentconv", "--from", "codex", "--to", "acp"}, Sys{Stdin: inR, Stdout: outW, Stderr: &stderr,
			Getenv: func(string) string { return "" }})
		outW.Close()
	}()
	lines := bufio.NewReader(outR)
	// Each codex line, and the ACP update it must give before the next one
	// is sent.
	steps := []struct{ in, want string }{
		{`{"type":"thread.started","thread_id":"t1"}` + "\n" + `{"type":"turn.started"}` + "\n" +
			`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"","status":"in_progress"}}`,
			`"sessionUpdate":"tool_call"`},
		{`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"a.txt\n","exit_code":0,"status":"completed"}}`,
			`"sessionUpdate":"tool_call_update"`},
		{`{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"One file."}}`,
			`"sessionUpdate":"agent_message_chunk"`},
	}
	for _, s := range steps {
		if _, err := io.WriteString(inW, s.in+"\n"); err != nil {
			t.Fatal(err)
		}
		// A bridge that holds its output would block here; the deadline
		// turns that into a failure.
		if err := outR.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
			t.Skipf("no read deadline on a pipe here: %v", err)
		}
		for {
			l, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("waiting for %s after %s: %v (stderr %s)", s.want, s.in, err, stderr.String())
			}
			if strings.Contains(l, s.want) {
				break
			}
		}
	}
	io.WriteString(inW, `{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}`+"\n")
	inW.Close()
	rest, _ := io.ReadAll(lines)
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(string(rest), `"stopReason":"end_turn"`) {
		t.Errorf("the run did not end with its stop reason:\n%s", rest)
	}
}

// TestACPAnswerChunkCaptures: what the agents themselves printed, written
// as ACP, shows the run's last answer in agent_message_chunk updates (the
// only text an editor shows) exactly once, whether the agent gave it as
// streamed text, a whole message, or only in its result (Claude Code's
// and AdaL's json, Codex's last message).
func TestACPAnswerChunkCaptures(t *testing.T) {
	answers := map[string]string{
		"text-shell": "The command printed agentconv-shell-output.",
		"parallel":   "Both commands ran.",
		"edit":       "The file notes.txt is written.",
		"thinking":   "Thought, then answered.",
	}
	var files []string
	for sc := range answers {
		for _, ext := range []string{"json", "jsonl"} {
			m, _ := filepath.Glob(filepath.Join("..", "testdata", "agents", "*", "*", sc, "*", "stdout."+ext))
			files = append(files, m...)
		}
	}
	if len(files) < 20 {
		t.Fatalf("only %d captures", len(files))
	}
	for _, f := range files {
		rel, _ := filepath.Rel(filepath.Join("..", "testdata", "agents"), f)
		want := answers[strings.Split(filepath.ToSlash(rel), "/")[2]]
		out, _ := convertTo(t, readFixture(t, f), "", "acp")
		var shown strings.Builder
		for _, l := range strings.Split(out, "\n") {
			var m struct {
				Params struct {
					Update struct {
						SessionUpdate string `json:"sessionUpdate"`
						Content       struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"update"`
				} `json:"params"`
			}
			if json.Unmarshal([]byte(l), &m) == nil && m.Params.Update.SessionUpdate == "agent_message_chunk" {
				shown.WriteString(m.Params.Update.Content.Text)
			}
		}
		if n := strings.Count(shown.String(), want); n != 1 {
			t.Errorf("%s: the editor shows %q %d times in %q", rel, want, n, shown.String())
		}
	}
}

// TestACPHandshake: real ACP transcripts, Gemini CLI 0.61.0's (both
// sides) and ACPLazyBridge's (the agent's side), begin with initialize and
// session/new: they make no run of their own and no warning, in any
// target, and a copy to acp is the input.
func TestACPHandshake(t *testing.T) {
	for _, name := range []string{"gemini-cli-0.61.0-text-shell.jsonl", "gemini-cli-0.61.0-two-prompts.jsonl",
		"gemini-cli-0.61.0-cancel.jsonl", "acplazybridge-codex-hello.jsonl"} {
		in := readFixture(t, filepath.Join("..", "testdata", "acp", name))
		for _, to := range []string{"acp", "claude-stream", "adal-json", "otlp-json"} {
			out, stderr := convertTo(t, in, "", to)
			if strings.Contains(stderr, "warning") || strings.Contains(stderr, "unknown acp events") {
				t.Errorf("%s → %s: %s", name, to, stderr)
			}
			if to == "acp" && strings.TrimSpace(out) != strings.TrimSpace(in) {
				t.Errorf("%s → acp changed the input", name)
			}
		}
		runs := 1
		if strings.Contains(name, "two-prompts") {
			runs = 2
		}
		facts := readFacts(t, "", in)
		if len(facts) != runs {
			t.Errorf("%s: %d runs, want %d", name, len(facts), runs)
		}
		for _, f := range facts {
			if f.cut || !f.success && !strings.Contains(name, "cancel") {
				t.Errorf("%s: %+v", name, f)
			}
		}
	}
}
