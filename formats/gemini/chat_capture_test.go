package gemini

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

var geminiVersions = []string{"0.61.0", "0.20.2"}

func readCapture(t *testing.T, d formats.Dialect, file string) ([]*formats.Event, string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return formatstest.ReadWarnings(t, d, data)
}

// A resumed session whose answers think (issue 24 #10, "thinking appears
// twice after a resume"): Gemini CLI 0.61's resume restates the first
// answer in a checkpoint with its thought as a content part (beside the
// record's own thoughts); 0.20 rewrites its JSON document. Each thought
// is read once, in its own run, and each run's tokens are what the server
// sent: 1,200 in and 30 + 11 out of which 11 reasoning, then 1,348 in and
// 37 + 12 out of which 12 reasoning.
func TestChatResumeThinking(t *testing.T) {
	agents := filepath.Join("..", "..", "testdata", "agents", "gemini-cli")
	for _, v := range geminiVersions {
		for _, mode := range []string{"stream-json", "json"} {
			dir := filepath.Join(agents, v, "resume-thinking", mode)
			evs, warn := readCapture(t, Chat, chatFile(t, dir))
			var thoughts []string
			var usage [][3]int64
			runs := 0
			for _, e := range evs {
				switch e.Kind {
				case formats.ThinkingDelta:
					thoughts = append(thoughts, e.Text)
				case formats.Usage:
					usage = append(usage, [3]int64{e.Usage.InputTokens.V, e.Usage.OutputTokens.V, e.Usage.ReasoningTokens.V})
				case formats.RunEnd:
					runs++
					if e.Status != formats.Completed {
						t.Errorf("%s %s: run %d ends %v", v, mode, runs, e.Status)
					}
				}
			}
			want := []string{"First thought: the user wants a short answer.", "Second thought: the session was resumed."}
			if strings.Join(thoughts, "|") != strings.Join(want, "|") {
				t.Errorf("%s %s: thoughts %q, want each once: %q", v, mode, thoughts, want)
			}
			if wantU := [][3]int64{{1200, 41, 11}, {1348, 49, 12}}; len(usage) != 2 || usage[0] != wantU[0] || usage[1] != wantU[1] {
				t.Errorf("%s %s: usage %v, want %v", v, mode, usage, wantU)
			}
			if runs != 2 || warn != "" {
				t.Errorf("%s %s: %d runs, warnings %q", v, mode, runs, warn)
			}
		}
	}
}

// A run Gemini CLI stops on a loop (issue 24 #10, "a finished session
// that ends on tool results is read as cut"). The model asked for the same
// call again and again; Gemini CLI ran four, and at the fifth identical
// call stopped reading the response, recorded none of it, and exited 0:
// 0.20 stops there, so its file ends on the fourth call's results; 0.61
// first tells the model of the loop (a user message "System: Potential
// loop detected. …"), stops at the next identical call and takes that
// message back with a checkpoint. The file is read as one run, completed,
// with the four calls and a warning that the loop stopped it; 0.61's
// notice to the model is a notice, not a prompt or a failed run.
func TestChatLoop(t *testing.T) {
	agents := filepath.Join("..", "..", "testdata", "agents", "gemini-cli")
	for _, v := range geminiVersions {
		for _, mode := range []string{"stream-json", "json"} {
			dir := filepath.Join(agents, v, "loop", mode)
			evs, warn := readCapture(t, Chat, chatFile(t, dir))
			ends := formatstest.OfKind(evs, formats.RunEnd)
			prompts := formatstest.OfKind(evs, formats.UserMessage)
			if len(ends) != 1 || ends[0].Status != formats.Completed || ends[0].Cut || len(prompts) != 1 || warn != "" {
				t.Errorf("%s %s: %d runs %+v, %d prompts, warnings %q", v, mode, len(ends), ends, len(prompts), warn)
			}
			if n := len(formatstest.OfKind(evs, formats.ToolResult)); n != 4 {
				t.Errorf("%s %s: %d call results, want 4", v, mode, n)
			}
			var notices []string
			for _, e := range formatstest.OfKind(evs, formats.Notice) {
				notices = append(notices, e.Text)
			}
			last := len(notices) - 1
			if last < 0 || notices[last] != loopText || (v == "0.61.0") != (last == 1 && strings.HasPrefix(notices[0], loopNotice)) {
				t.Errorf("%s %s: notices %q", v, mode, notices)
			}
			// What Gemini CLI printed says the same: a success, with the
			// loop's warning.
			d, file := Stream, filepath.Join(dir, "stdout.jsonl")
			if mode == "json" {
				d, file = JSON, filepath.Join(dir, "stdout.json")
			}
			evs, _ = readCapture(t, d, file)
			ends = formatstest.OfKind(evs, formats.RunEnd)
			if len(ends) != 1 || ends[0].Status != formats.Completed || ends[0].Cut {
				t.Errorf("%s %s stdout: %+v", v, mode, ends)
			}
		}
	}
}

// Only Gemini CLI's loop ends a run on calls: four calls in a row that
// differ, or a file whose last call is not the fourth of a kind, is a run
// the file leaves open (cut), as before.
func TestChatLoopOnly(t *testing.T) {
	call := func(n int, args string) string {
		id := string(rune('0' + n))
		return `{"id":"g` + id + `","timestamp":"2026-06-10T10:00:0` + id + `.000Z","type":"gemini","content":"again","model":"m","toolCalls":[{"id":"c` + id +
			`","name":"run_shell_command","args":` + args + `,"status":"success","timestamp":"2026-06-10T10:00:0` + id + `.500Z"}]}` + "\n"
	}
	same := `{"command":"echo x"}`
	head := `{"sessionId":"sess-1","projectHash":"h","startTime":"2026-06-10T10:00:00.000Z","lastUpdated":"2026-06-10T10:00:00.000Z","kind":"main"}` + "\n" +
		`{"id":"u1","timestamp":"2026-06-10T10:00:00.500Z","type":"user","content":"go"}` + "\n"
	for _, tc := range []struct {
		name string
		in   string
		want formats.Status
		cut  bool
	}{
		{"four the same", head + call(1, same) + call(2, same) + call(3, same) + call(4, same), formats.Completed, false},
		{"three the same", head + call(1, same) + call(2, same) + call(3, same), formats.Failed, true},
		{"four, one differs", head + call(1, `{"command":"echo y"}`) + call(2, same) + call(3, same) + call(4, same) + call(5, `{"command":"echo z"}`), formats.Failed, true},
	} {
		evs := formatstest.Read(t, Chat, tc.in)
		ends := formatstest.OfKind(evs, formats.RunEnd)
		switch {
		case tc.cut && len(ends) != 0:
			t.Errorf("%s: the file leaves the run open, read as %+v", tc.name, ends)
		case !tc.cut && (len(ends) != 1 || ends[0].Status != tc.want):
			t.Errorf("%s: %+v", tc.name, ends)
		}
	}
}

// Gemini CLI 0.20's subagent. Its chat writes the file named by the minute
// it starts, with the session's id. Started in the session's minute
// (stream-json here), it shares the session's file: the codebase
// investigator's prompt (<objective>) and its replies sit between the
// parent's first answer and its last, and the parent's call is on the
// subagent's last reply. Started in a later minute (json here: the server
// held its first reply past the minute), it writes a file of its own, and
// the parent's call stays on the parent's answer. Either is read, from the
// session's file, as one run with one prompt: the call codebase_investigator
// starts in the parent's first answer, the subagent (named by the call's id)
// holds its prompt and its two replies with their tokens, and the call's
// result comes after the subagent ends. The later file read on its own says
// whose part it is.
func TestChatInlineSubagent(t *testing.T) {
	for _, mode := range []string{"stream-json", "json"} {
		dir := filepath.Join("..", "..", "testdata", "agents", "gemini-cli", "0.20.2", "subagent", mode)
		files, _ := filepath.Glob(filepath.Join(dir, "home", ".gemini", "tmp", "*", "chats", "session-*"))
		if want := map[string]int{"stream-json": 1, "json": 2}[mode]; len(files) != want {
			t.Fatalf("%s: %d session files, want %d: %v", mode, len(files), want, files)
		}
		evs, warn := readWarned(t, files[0])
		var seq []string
		var subOut, mainOut int64
		for _, e := range evs {
			switch e.Kind {
			case formats.RunStart, formats.RunEnd:
				seq = append(seq, e.Kind.String())
			case formats.UserMessage, formats.AgentStart, formats.AgentEnd:
				seq = append(seq, e.Kind.String()+"@"+e.Agent)
			case formats.ToolCall, formats.ToolResult:
				seq = append(seq, e.Kind.String()+":"+e.Call.Name+"@"+e.Agent)
			case formats.Usage:
				if e.Agent == "" {
					mainOut += e.Usage.OutputTokens.V
				} else {
					subOut += e.Usage.OutputTokens.V
				}
			}
		}
		want := []string{"run_start", "user_message@", "tool_call:codebase_investigator@", "agent_start@call_sub_1",
			"user_message@call_sub_1", "agent_end@call_sub_1", "tool_result:codebase_investigator@", "run_end"}
		if strings.Join(seq, " ") != strings.Join(want, " ") {
			t.Errorf("%s: events\n %v\nwant\n %v", mode, seq, want)
		}
		// The server sent 30 and 51 output tokens to the parent, 37 and
		// 44 to the subagent.
		if mainOut != 30+51 || subOut != 37+44 || warn != "" {
			t.Errorf("%s: output tokens %d (parent), %d (subagent), want 81 and 81; warnings %q", mode, mainOut, subOut, warn)
		}
		if len(files) > 1 {
			if _, warn := readWarned(t, files[1]); !strings.Contains(warn, "later part of session") || !strings.Contains(warn, filepath.Base(files[0])) {
				t.Errorf("%s: the later file read alone warns %q, want that it is a part of %s", mode, warn, files[0])
			}
		}
	}
}

// readWarned reads the file at path, named, as gemini-chat: its events and
// warnings.
func readWarned(t *testing.T, path string) ([]*formats.Event, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var w strings.Builder
	r := Chat.NewReader(f, formats.ReadOptions{Dialect: Chat.Name, Report: formats.NewReport(&w), Path: path})
	var evs []*formats.Event
	for {
		e, err := r.Next()
		if err == io.EOF {
			return evs, w.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
}
