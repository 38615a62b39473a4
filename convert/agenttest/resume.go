package agenttest

import (
	"path/filepath"
	"regexp"
	"strings"
)

// Resumer is a Family whose agent resumes a session that another tool
// wrote into its store.
type Resumer interface {
	// Place is the folder under home where a session goes for the agent,
	// run in work, to resume it by id, and the dialect agentconv writes
	// there.
	Place(pin Pin, home, work string) (dir, dialect string)
	// Flags are what agentconv needs to write a session this agent, as
	// Setup configured it, resumes.
	Flags(pin Pin) []string
}

// WorkFlagger is a Resumer that needs agentconv to name the folder the
// agent resumes the session in (pi refuses a session whose working folder
// does not exist).
type WorkFlagger interface {
	WorkFlags(pin Pin, work string) []string
}

// Flags implements Resumer.
func (claudeFamily) Flags(Pin) []string { return nil }

// Flags implements Resumer: Codex resumes a thread only under the
// provider that started it, and Setup names its own.
func (codexFamily) Flags(Pin) []string { return []string{"--codex-model-provider", "agentconv"} }

// Place implements Resumer: Claude Code keeps a folder's sessions in
// ~/.claude/projects/<the folder, each character not a letter or a digit
// a dash>/.
func (claudeFamily) Place(_ Pin, home, work string) (string, string) {
	return filepath.Join(home, ".claude", "projects", nonAlnum.ReplaceAllString(work, "-")), "claude-session"
}

var nonAlnum = regexp.MustCompile(`[^a-zA-Z0-9]`)

// Place implements Resumer: Codex finds a rollout by its thread id under
// ~/.codex/sessions/YYYY/MM/DD/.
func (codexFamily) Place(_ Pin, home, _ string) (string, string) {
	return filepath.Join(home, ".codex", "sessions"), "codex-rollout"
}

// Flags implements Resumer.
func (adal) Flags(Pin) []string { return nil }

// Place implements Resumer: AdaL resumes ~/.adal/sessions/conversation_<id>.jsonl
// by its id from any folder; it needs nothing else (it writes the session's
// <id>_metadata.json and its ~/.adal/settings.json entry itself).
func (adal) Place(_ Pin, home, _ string) (string, string) {
	return filepath.Join(home, ".adal", "sessions"), "adal-session"
}

// Importer is a Resumer whose agent takes a session in by a command of
// its own (OpenCode's `opencode import FILE`), run in work with the
// family's environment, for each file agentconv wrote, before it resumes.
type Importer interface {
	ImportArgs(pin Pin, file string) []string
}

// Flags implements Resumer.
func (openCode) Flags(Pin) []string { return nil }

// Place implements Resumer: OpenCode keeps its sessions in a SQLite
// database; `opencode import FILE` takes an export document in, as a
// session of the folder it runs in.
func (openCode) Place(_ Pin, home, _ string) (string, string) {
	return filepath.Join(home, "agentconv-export"), "opencode-export"
}

// ImportArgs implements Importer.
func (openCode) ImportArgs(_ Pin, file string) []string { return []string{"import", file} }

// OpaqueWire is a Family whose requests are not the conversation as its
// sessions keep it (AdaL folds a response's calls into one adal_tool_reply
// call and sends the history as marked text): its sessions are compared
// with what agentconv reads of them, as a fixture's are.
type OpaqueWire interface {
	OpaqueWire()
}

// OpaqueWire implements OpaqueWire.
func (adal) OpaqueWire() {}

// WireItems is an OpaqueWire family that reduces its own requests'
// history to items: its prompts, texts, and as many calls and results as
// it sent, without ids (a resumed history's ids are the agent's own).
type WireItems interface {
	WireItems(h []Msg) []Item
}

// adalQuery is where AdaL's history text gives a turn's prompt.
var adalQuery = regexp.MustCompile(`(?s)User Query: (.*?)(?:\n*Turn \d+: |$)`)

// adalResultHead opens each call's part of an adal_tool_reply result.
var adalResultHead = regexp.MustCompile(`(?m)^\[\d+/\d+\] \S+ \[[a-z]+\]:`)

// WireItems implements WireItems: AdaL sends each turn's prompt after
// "User Query:" in a user message's text, each response's calls in one
// adal_tool_reply call, and their results in one result, a part each.
func (adal) WireItems(h []Msg) []Item {
	var out []Item
	for _, m := range h {
		switch m.Role {
		case "user":
			for _, q := range adalQuery.FindAllStringSubmatch(m.Text, -1) {
				if t := userText(q[1]); t != "" {
					out = append(out, Item{"prompt", t})
				}
			}
		case "assistant":
			if t := strings.TrimSpace(m.Text); t != "" {
				out = append(out, Item{"text", t})
			}
			for _, c := range m.Calls {
				n := 1
				if calls, ok := c.Args["calls"].([]any); ok && c.Name == "adal_tool_reply" {
					n = len(calls)
				}
				for range n {
					out = append(out, Item{"call", ""})
				}
			}
		}
		for _, r := range m.Results {
			for range max(1, len(adalResultHead.FindAllString(r.Output, -1))) {
				out = append(out, Item{"result", ""})
			}
		}
	}
	return out
}

// Item is one element of a conversation as the model sees it, reduced to
// what every agent and dialect keeps: a prompt, an answer's text, a call
// or a call's result, by id.
type Item struct {
	Kind string // prompt, text, call, result
	Text string // a prompt's or a text's words; a call's or a result's id
}

func (i Item) String() string { return i.Kind + " " + i.Text }

// reminder matches the context blocks agents add to a user message:
// Claude's system reminders, Gemini's session context, Codex's
// environment and instructions, the Copilot CLI's current date.
var reminder = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>|<session_context>.*?</session_context>|` +
	`<environment_context>.*?</environment_context>|<user_instructions>.*?</user_instructions>|` +
	`<current_datetime>.*?</current_datetime>`)

// Conversation reduces a request's history to its items. The context an
// agent adds of its own (a message that is one tag, such as Codex's
// <environment_context>; Claude's <system-reminder> blocks) is left out,
// and so is reasoning, which a target may drop and report.
func Conversation(h []Msg) []Item {
	var out []Item
	for _, m := range h {
		switch m.Role {
		case "user":
			if t := userText(m.Text); t != "" {
				out = append(out, Item{"prompt", t})
			}
		case "assistant":
			if t := strings.TrimSpace(m.Text); t != "" {
				out = append(out, Item{"text", t})
			}
			for _, c := range m.Calls {
				out = append(out, Item{"call", c.ID})
			}
		}
		for _, r := range m.Results {
			out = append(out, Item{"result", r.ID})
		}
	}
	return out
}

// userText is a user message's words without the context the agent adds.
// OpenCode sends a prompt of several words given on its command line in
// double quotes ("agentconv-task: …"), which are not the prompt's.
func userText(s string) string {
	s = strings.TrimSpace(reminder.ReplaceAllString(s, ""))
	if strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">") {
		return "" // one tag: context, a command, a task notification
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && !strings.Contains(s[1:len(s)-1], `"`) {
		s = s[1 : len(s)-1]
	}
	return s
}

// Paired checks that each call of a history has exactly one result after
// it, and each result a call before it; it returns what is wrong.
func Paired(h []Msg) []string {
	var bad []string
	called := map[string]int{}
	answered := map[string]int{}
	for _, m := range h {
		for _, c := range m.Calls {
			called[c.ID]++
		}
		for _, r := range m.Results {
			if called[r.ID] == 0 {
				bad = append(bad, "result "+r.ID+" has no call before it")
			}
			answered[r.ID]++
		}
	}
	for id, n := range called {
		switch {
		case n > 1:
			bad = append(bad, "call "+id+" is sent more than once")
		case answered[id] == 0:
			bad = append(bad, "call "+id+" has no result")
		case answered[id] > 1:
			bad = append(bad, "call "+id+" has more than one result")
		}
	}
	return bad
}

// Flags implements Resumer.
func (copilotCLI) Flags(Pin) []string { return nil }

// Place implements Resumer: the Copilot CLI resumes
// ~/.copilot/session-state/<id>/events.jsonl by its folder's name, from
// any folder; it needs neither the folder's other files nor its SQLite
// session store (~/.copilot/session-store.db), which it fills itself.
func (copilotCLI) Place(_ Pin, home, _ string) (string, string) {
	return filepath.Join(home, ".copilot", "session-state"), "copilot-events"
}
