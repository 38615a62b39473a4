// Package acp reads and writes the Agent Client Protocol (ACP) as it goes
// over stdio: JSON-RPC 2.0, one message a line. Written, a run is what an
// ACP agent sends its client while it works: session/update notifications,
// permission requests with their answers, and the session/prompt response
// that ends the turn. Read, a captured transcript gives runs back, in
// either direction or both, raw or in Harbor's acp-events.jsonl envelope.
package acp

import (
	"strings"
	"unicode"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Dialect is acp: ACP v1 JSON-RPC messages, one a line.
var Dialect = formats.Dialect{
	Name:    "acp",
	Aliases: []string{"acp-jsonrpc", "agent-client-protocol"},
	Description: "Agent Client Protocol (v1) over stdio: JSON-RPC lines of session/update notifications " +
		"(message and thought chunks, tool calls and updates, plans, usage), permission requests and the session/prompt response",
	NewReader: newReader,
	NewWriter: newWriter,
	Detect:    detect,
	Carries: formats.UserPrompts | formats.FollowUpPrompts | formats.AssistantText | formats.Thinking | formats.ToolCalls | formats.SubagentToolCalls |
		formats.Subagents | formats.SubagentCalls | formats.SubagentText | formats.ModelNames | formats.WorkingDirs |
		formats.CancelledCalls | formats.Refusals | formats.ToolDurations | formats.PermissionRequests | formats.PermissionAnswers |
		formats.TodoLists | formats.TokenUsage | formats.PerRequestUsage | formats.CacheWrites |
		formats.ReasoningTokens | formats.Costs | formats.RunOutcomes | formats.SubagentThinking | formats.SubagentTodos,
	Quirks: []formats.Quirk{lostTodoStatuses},
}

var lostTodoStatuses = formats.NewQuirk("todo statuses besides pending, in_progress and completed")

// message is one JSON-RPC message, as written and as read.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// The methods the dialect knows.
const (
	methodUpdate     = "session/update"
	methodPrompt     = "session/prompt"
	methodPermission = "session/request_permission"
	methodNew        = "session/new"
	methodLoad       = "session/load"
	methodResume     = "session/resume"
	methodCancel     = "session/cancel"
)

// metaKey is the key under _meta where agentconv keeps what ACP v1 has no
// field for (a tool's own name, token counts, a run's outcome).
const metaKey = "agentconv"

// toolKind is ACP's kind of a tool, from the words of its name (Bash,
// run_shell_command, WebFetch, mcp__github__list_issues): shell → execute,
// edit and write → edit, search, grep and glob → search, fetch → fetch,
// read → read, else other.
func toolKind(name string) string {
	words := toolWords(name)
	has := func(set ...string) bool {
		for _, w := range words {
			for _, s := range set {
				if w == s {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("todo", "todos", "task", "agent", "plan"):
		// A task list, a subagent, a plan: not an action on the machine.
		return "other"
	case has("bash", "shell", "sh", "zsh", "powershell", "command", "cmd", "exec", "execute", "execution", "terminal", "run"):
		return "execute"
	case has("edit", "editor", "write", "patch", "replace", "change", "create", "insert", "apply"):
		return "edit"
	case has("grep", "glob", "search", "find", "rg", "ls", "list", "lookup"):
		return "search"
	case has("fetch", "web", "http", "https", "url", "browse", "browser", "curl", "download"):
		return "fetch"
	case has("read", "view", "cat", "open", "show"):
		return "read"
	case has("think", "thought", "reason"):
		return "think"
	}
	return "other"
}

// toolWords splits a tool's name into lower-case words at case changes,
// digits and any other character: WebFetch → web fetch, read_file → read
// file.
func toolWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case unicode.IsUpper(r):
			// A capital starts a word, unless it continues an acronym
			// (MCPTool → mcp tool).
			if len(cur) > 0 && (!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
				flush()
			}
			cur = append(cur, r)
		case unicode.IsLetter(r):
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	return words
}

// detect recognises JSON-RPC 2.0 lines with ACP's methods, or Harbor's
// envelope of them.
func detect(head []byte) int {
	return formats.DetectByTypes(head, func(line []byte, _ string) bool {
		var m struct {
			JSONRPC   string          `json:"jsonrpc"`
			Method    string          `json:"method"`
			Result    json.RawMessage `json:"result"`
			Error     json.RawMessage `json:"error"`
			EventType string          `json:"event_type"`
			Payload   json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(line, &m) != nil {
			return false
		}
		if m.EventType != "" && len(m.Payload) > 0 {
			return true
		}
		if m.JSONRPC != "2.0" {
			return false
		}
		switch {
		case m.Method == "":
			return len(m.Result) > 0 || len(m.Error) > 0
		case strings.HasPrefix(m.Method, "session/"), strings.HasPrefix(m.Method, "fs/"), strings.HasPrefix(m.Method, "terminal/"),
			m.Method == "initialize", m.Method == "authenticate", strings.HasPrefix(m.Method, "$/"), strings.HasPrefix(m.Method, "auth/"):
			return true
		}
		return false
	})
}
