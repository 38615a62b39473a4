package gemini

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Chat is the gemini-chat dialect: the session files that Gemini CLI keeps
// under ~/.gemini/tmp/<project>/chats/, both the older session-*.json (one
// pretty-printed ConversationRecord, rewritten whole) and the newer
// session-*.jsonl (a metadata line, message records appended as they
// change, $set patches and $rewindTo markers), with its subagents' files in
// chats/<parentSessionId>/<sessionId>.jsonl. It is read only.
var Chat = formats.Dialect{
	Name:        "gemini-chat",
	Aliases:     []string{"gemini-session"},
	Description: "Gemini CLI session files (~/.gemini/tmp/<project>/chats/session-*.json and .jsonl, with subagents' files beside them)",
	NewReader:   newChatReader,
	Detect:      detectChat,
	DirFiles:    "*.json*",
	Places:      chatPlaces,
	Owner:       chatOwner,
	InProject:   chatInProject,
}

// chatPlaces is where Gemini CLI keeps its projects' temporary directories,
// whose chats/ hold the session files (Storage.getProjectTempDir): under
// $GEMINI_CLI_HOME, else the home directory (utils/paths.ts homedir).
func chatPlaces(getenv func(string) string) []string {
	home := getenv("GEMINI_CLI_HOME")
	if home == "" {
		home = getenv("HOME")
	}
	if home == "" {
		home = getenv("USERPROFILE")
	}
	if home == "" {
		return nil
	}
	return []string{filepath.Join(home, ".gemini", "tmp")}
}

// chatOwner names the session file that reads a subagent's file: a
// subagent of session S writes chats/S/<its id>.jsonl (sanitized ids), and
// S writes chats/session-<time>-<first 8 of S>.jsonl (.json before).
// Among several such files, the one whose metadata names S. A later file
// of a session's own (see partsOf) is owned by the session's first.
func chatOwner(path string) string {
	dir := filepath.Dir(path)
	parent := filepath.Base(dir)
	chats := filepath.Dir(dir)
	if filepath.Base(chats) != "chats" || !strings.HasSuffix(path, ".jsonl") || len(parent) < 8 {
		return partOwner(path)
	}
	var found []string
	for _, ext := range []string{".jsonl", ".json"} {
		m, _ := filepath.Glob(filepath.Join(chats, "session-*-"+globQuote(parent[:8])+ext))
		found = append(found, m...)
	}
	for _, f := range found {
		if id, _ := sessionIDOf(f); sanitizeID(id) == parent {
			return f
		}
	}
	return ""
}

// globQuote escapes the characters filepath.Match treats specially.
func globQuote(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// sanitizeID is Gemini CLI's sanitizeFilenamePart: what a session id
// becomes in a file name.
func sanitizeID(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// sessionIDOf reads the session id of a session file from its start: the
// metadata line of a .jsonl, or the first key of a legacy document.
func sessionIDOf(path string) (string, error) {
	f, err := formats.OpenFound(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := bufio.NewReader(f).Read(head)
	head = head[:n]
	if line, _, _ := bytes.Cut(head, []byte("\n")); len(bytes.TrimSpace(line)) > 1 {
		var m struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(line, &m) == nil && m.SessionID != "" {
			return m.SessionID, nil
		}
	}
	if id, ok := firstKeyString(head, "sessionId"); ok {
		return id, nil
	}
	return "", nil
}

// firstKeyString reads `{ "key": "value"` at the start of a document that
// may be longer than head.
func firstKeyString(head []byte, key string) (string, bool) {
	t := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return "", false
	}
	t = bytes.TrimLeft(t[1:], " \t\r\n")
	k := []byte(`"` + key + `"`)
	if !bytes.HasPrefix(t, k) {
		return "", false
	}
	t = bytes.TrimLeft(t[len(k):], " \t\r\n")
	if len(t) == 0 || t[0] != ':' {
		return "", false
	}
	t = bytes.TrimLeft(t[1:], " \t\r\n")
	end := bytes.IndexByte(t, ',')
	if end < 0 {
		end = bytes.IndexByte(t, '\n')
	}
	if end < 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(bytes.TrimSpace(t[:end]), &s) != nil {
		return "", false
	}
	return s, true
}

// chatProbe is what detection looks at in a record.
type chatProbe struct {
	SessionID   *string          `json:"sessionId"`
	ProjectHash *string          `json:"projectHash"`
	ID          *string          `json:"id"`
	Type        *string          `json:"type"`
	Set         *json.RawMessage `json:"$set"`
	RewindTo    *string          `json:"$rewindTo"`
}

var messageTypes = map[string]bool{"user": true, "gemini": true, "info": true, "error": true, "warning": true}

// detectChat recognises a session file: a metadata line with sessionId and
// projectHash (Gemini CLI's own test of a session file) and no "type", then
// message records, $set and $rewindTo lines; or a legacy document whose
// first key is sessionId and that has a projectHash. A head of message
// records alone, without the metadata line, scores lower.
func detectChat(head []byte) int {
	if id, ok := firstKeyString(head, "sessionId"); ok && id != "" && bytes.Contains(head, []byte(`"projectHash"`)) {
		return 90
	}
	lines := formats.HeadLines(head, 20)
	if len(lines) == 0 {
		return 0
	}
	records := 0
	for i, l := range lines {
		var p chatProbe
		if json.Unmarshal(l, &p) != nil {
			if i == len(lines)-1 && i > 0 {
				break // cut by the head
			}
			return 0
		}
		switch {
		case p.RewindTo != nil || p.Set != nil:
		case p.ID != nil && p.Type != nil && messageTypes[*p.Type]:
			records++
		case i == 0 && p.SessionID != nil && p.ProjectHash != nil && p.Type == nil:
			return 90
		default:
			return 0
		}
	}
	if records > 0 {
		return 60
	}
	return 0
}
