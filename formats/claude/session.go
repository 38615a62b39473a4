package claude

import (
	"bufio"
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Session is the claude-session dialect: the transcript Claude Code keeps
// of every interactive session, ~/.claude/projects/<project>/<session-id>.jsonl,
// with its subagents' transcripts in <session-id>/subagents/ beside it.
var Session = formats.Dialect{
	Name:        "claude-session",
	Aliases:     []string{"claude-code-session", "claude-transcript"},
	Description: "Claude Code's session files `~/.claude/projects/<project>/<session-id>.jsonl`: user, assistant, system records chained by uuid/parentUuid, subagents in `<session-id>/subagents/` (read and written)",
	NewReader:   newSessionReader,
	NewWriter:   newSessionWriter,
	Detect:      detectSession,
	Carries:     sessionCarries,
	Quirks:      sessionQuirks,
	// 2.x's records of its own state: the prompt queue, attachments it
	// adds, its API requests' shapes, costs, telemetry, titles, modes and
	// file snapshots.
	Bookkeeping: []string{"queue-operation", "attachment", "api-request-shape", "api-request-blob", "api-request",
		"system/ui_telemetry", "system/attribution_snapshot", "last-prompt", "cost-state", "atis-latch", "tools-used",
		"summary", "custom-title", "mode", "file-history-snapshot"},
	DirFiles: "*.jsonl",
	Files:    true,
	Places:   sessionPlaces,
	Owner:    fileOwner,
}

// What a session file carries: no durations, costs or outcomes but a
// cancellation (it has no result record), no turn boundaries, notices,
// permission prompts or refusals (a refused call is a failed one there).
const sessionCarries = formats.Timestamps | formats.WorkingDirs | formats.ModelNames | formats.UserPrompts |
	formats.AssistantText | formats.Thinking | formats.ToolCalls | formats.SubagentToolCalls | formats.Subagents | formats.SubagentCalls |
	formats.SubagentText | formats.SubagentReports | formats.TodoLists | formats.Compactions |
	formats.CompactionSummaries | formats.ModelChanges | formats.TokenUsage | formats.PerRequestUsage |
	formats.CacheWrites | formats.RunOutcomes | formats.RunDurations | formats.SubagentPrompts | formats.SubagentThinking |
	formats.SubagentTodos

var (
	lossFailedRuns       = formats.NewQuirk("outcomes of failed runs (a session file has no result record)")
	lossCutRuns          = formats.NewQuirk("cut runs that stopped after a response (a session file reads them as ended)")
	lossSessionIDs       = formats.NewQuirk("session ids that are not UUIDs (written as UUIDs derived from them)")
	lossPromptlessRuns   = formats.NewQuirk("boundaries of runs without a prompt (they join the run before)")
	lossRunUsage         = formats.NewQuirk("token usage of a run beyond what its responses carry")
	lossUnsignedThinking = formats.NewQuirk("thinking text without an Anthropic signature (left out: the API refuses it)")
)

var sessionQuirks = []formats.Quirk{lossFailedRuns, lossCutRuns, lossSessionIDs, lossPromptlessRuns, formats.MergedToolErrors,
	lossLooseTodos, formats.ExitCodesBeyond01, lossRunUsage, lossLateUsage, lossUnsignedThinking, formats.PromptsNeverGiven}

// sessionPlaces: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects.
func sessionPlaces(getenv func(string) string) []string {
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return []string{filepath.Join(d, "projects")}
	}
	if h := getenv("HOME"); h != "" {
		return []string{filepath.Join(h, ".claude", "projects")}
	}
	return nil
}

var subagentFile = regexp.MustCompile(`^agent-(.+)\.jsonl$`)

var subagentMeta = regexp.MustCompile(`^agent-(.+)\.meta\.json$`)

// fileOwner is the session file that reads p with it: a subagent's file
// (sessionOwner), or its agent-<id>.meta.json, from which the reader takes
// the subagent's type and spawning call.
func fileOwner(p string) string {
	if dir, name := filepath.Split(p); subagentMeta.MatchString(name) {
		m := subagentMeta.FindStringSubmatch(name)
		return sessionOwner(filepath.Join(dir, "agent-"+m[1]+".jsonl"))
	}
	return sessionOwner(p)
}

// sessionOwner: a subagent's file <dir>/<session-id>/subagents/agent-<id>.jsonl
// belongs to <dir>/<session-id>.jsonl.
func sessionOwner(p string) string {
	sub, name := filepath.Split(p)
	if !subagentFile.MatchString(name) {
		return ""
	}
	sub = filepath.Clean(sub)
	if filepath.Base(sub) != "subagents" {
		return flatOwner(p)
	}
	sess := filepath.Dir(sub)
	if filepath.Base(sess) == "." || filepath.Base(sess) == string(filepath.Separator) {
		return ""
	}
	return sess + ".jsonl"
}

// sessionProbe is what detection looks at in a record.
type sessionProbe struct {
	Type      string           `json:"type"`
	SessionID *json.RawMessage `json:"sessionId"`
	UUID      *json.RawMessage `json:"uuid"`
	Message   *struct {
		Content *json.RawMessage `json:"content"`
		Parts   *json.RawMessage `json:"parts"`
	} `json:"message"`
	MessageID *json.RawMessage `json:"messageId"`
	Snapshot  *json.RawMessage `json:"snapshot"`
	Summary   *json.RawMessage `json:"summary"`
	LeafUUID  *json.RawMessage `json:"leafUuid"`
	// Claude Code's stream envelope is snake_case.
	StreamSession *json.RawMessage `json:"session_id"`
	// Qwen Code's look-alike records (qwen-session) hold a systemPayload
	// or Gemini parts.
	SystemPayload *json.RawMessage `json:"systemPayload"`
}

// sessionRecordLine reports whether a line is a record of a session file:
// the camelCase envelope (sessionId, and uuid/parentUuid on messages), or
// one of the records without it (file-history-snapshot, summary).
func sessionRecordLine(b []byte) bool {
	var p sessionProbe
	if json.Unmarshal(b, &p) != nil || p.StreamSession != nil || p.SystemPayload != nil || p.Type == "" ||
		p.Message != nil && p.Message.Parts != nil {
		return false
	}
	switch p.Type {
	case "file-history-snapshot":
		return p.MessageID != nil && p.Snapshot != nil
	case "summary":
		return p.Summary != nil && p.LeafUUID != nil
	case "user", "assistant":
		// Anthropic content (Qwen Code's look-alike holds Gemini parts).
		return p.SessionID != nil && p.UUID != nil && p.Message != nil && p.Message.Content != nil
	}
	return p.SessionID != nil && (p.UUID != nil || p.Type == "queue-operation" || p.Type == "ai-title")
}

func detectSession(head []byte) int {
	return formats.DetectByTypes(head, func(line []byte, _ string) bool { return sessionRecordLine(line) })
}

// SessionUUID is the session id a written session file gets: the source's
// when it is a UUID (as `claude --resume` wants), else a name-based
// (version 5 style, SHA-1) UUID derived from it, the same for the same id.
func SessionUUID(id string) string {
	if formats.IsUUID(id) {
		return strings.ToLower(id)
	}
	return formats.NameUUID("agentconv claude-session\x00" + id)
}

// safeName is a session id as a file name, or "" when it cannot be one.
func safeName(id string) string {
	if id == "" || len(id) > 128 || strings.Trim(id, ".") == "" {
		return ""
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return ""
		}
	}
	return id
}

// subagentPath is where a subagent's transcript goes under -o DIR.
func subagentPath(session, fileID, ext string) string {
	return path.Join(session, "subagents", "agent-"+fileID+ext)
}

// agentFileID makes an agent id safe as a part of a file name.
func agentFileID(id string) string {
	if s := safeName(id); s != "" {
		return s
	}
	h := sha1.Sum([]byte(id))
	return fmt.Sprintf("%x", h[:8])
}

// flatOwner: a 2.0 version's agent-<id>.jsonl in the project directory
// belongs to the session file its records name, when that is beside it.
func flatOwner(p string) string {
	f, err := formats.OpenFound(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 1<<20)).ReadBytes('\n')
	var r struct {
		SessionID   string `json:"sessionId"`
		IsSidechain bool   `json:"isSidechain"`
	}
	if json.Unmarshal(line, &r) != nil || !r.IsSidechain || safeName(r.SessionID) == "" {
		return ""
	}
	owner := filepath.Join(filepath.Dir(p), r.SessionID+".jsonl")
	if _, err := os.Stat(owner); err != nil {
		return ""
	}
	return owner
}
