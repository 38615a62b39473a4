package gemini

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentconv/agentconv/formats"
)

// Gemini CLI names a session's project (the directory it ran in, its
// project root) by a digest: projectHash is the sha256 of the path, in hex
// (getProjectHash in utils/paths.ts). 0.2x keeps the sessions under
// ~/.gemini/tmp/<projectHash>/chats/, and records the path nowhere; later
// versions name the directory after the project (~/.gemini/tmp/<name>/),
// write the path into its .project_root, and put the workspace directories
// in the <session_context> message that opens the session. The project is
// the first of these paths whose digest is the projectHash.

// projectOf is the project of a session read from path ("" for standard
// input): .project_root beside its chats/ directory, else the directories
// its <session_context> names; the one whose sha256 is the session's
// projectHash, else .project_root as it is. "" when none is known.
func projectOf(s *session, path string) string {
	root := projectRoot(path)
	cands := append([]string{root}, contextDirs(s)...)
	for _, c := range cands {
		if c != "" && ProjectHash(c) == s.hash {
			return c
		}
	}
	if root == "" && s.hash == "" && len(cands) > 1 {
		return cands[1] // nothing to check it by
	}
	return root
}

var projectHashRe = regexp.MustCompile(`"projectHash"\s*:\s*"([0-9a-fA-F]{64})"`)

// chatInProject says whether the session file at path ran in dir, by its
// projectHash: for a session whose file names its project only so (0.2x).
func chatInProject(path, dir string) bool {
	f, err := formats.OpenFound(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	m := projectHashRe.FindSubmatch(head[:n])
	return m != nil && strings.EqualFold(string(m[1]), ProjectHash(dir))
}

// ProjectHash is Gemini CLI's digest of a project's path.
func ProjectHash(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(h[:])
}

// projectRoot reads the .project_root of the project's temporary
// directory that holds the session file at path
// (<tmp>/<name>/chats/[<session>/]file).
func projectRoot(path string) string {
	if path == "" {
		return ""
	}
	dir := filepath.Dir(path)
	for range 2 {
		if filepath.Base(dir) == "chats" {
			b, err := formats.ReadFound(filepath.Join(filepath.Dir(dir), ".project_root"), 64<<10)
			if err != nil || len(b) > 64<<10 {
				return ""
			}
			return string(bytes.TrimSpace(b))
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

// contextDirs are the directories the session's <session_context> names:
// its workspace directories ("- **Workspace Directories:**" then one
// "  - <dir>" a line), or the one it works in ("I'm currently working in
// the directory: <dir>", in older versions).
func contextDirs(s *session) []string {
	for _, en := range s.entries {
		if en.msg == nil || en.msg.Type != "user" {
			continue
		}
		text := partsText(en.msg.Content, false)
		if !strings.HasPrefix(strings.TrimSpace(text), "<session_context>") {
			continue
		}
		var out []string
		inList := false
		for _, line := range strings.Split(text, "\n") {
			t := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(t, "I'm currently working in the directory:"):
				out = append(out, strings.TrimSpace(strings.TrimPrefix(t, "I'm currently working in the directory:")))
			case strings.Contains(t, "Workspace Directories:"):
				inList = true
			case inList && strings.HasPrefix(t, "- ") && strings.HasPrefix(line, "  "):
				out = append(out, strings.TrimSpace(t[2:]))
			default:
				inList = false
			}
		}
		return out
	}
	return nil
}
