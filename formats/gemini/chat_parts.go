package gemini

import (
	"path/filepath"
	"sort"
	"strings"
)

// A session's parts. Gemini CLI names a chat's file by the minute the chat
// started and the first 8 characters of the session's id
// (chats/session-<minute>-<id8>.json, .jsonl later), and every chat it
// starts under the session writes one: the session's own, a subagent's
// (Gemini CLI 0.20's codebase investigator), the session's again after its
// history is compressed. Chats started in the same minute share the file;
// a chat started in a later minute writes a file of its own, with the
// session's id. So a session may lie in several files: the earliest is the
// session's, and owns the later ones, its parts. A part whose prompt holds
// <objective>X</objective> that a call of the session with args.objective X
// made is that subagent's records; any other part goes on the session.

// partsOf are the later files of the session whose file is path, in the
// order they started (their names), or nil.
func partsOf(path, sid string) []string {
	sibs := siblings(path)
	if len(sibs) < 2 || sid == "" {
		return nil
	}
	base := filepath.Base(path)
	var out []string
	for _, s := range sibs {
		if filepath.Base(s) <= base {
			continue
		}
		if id, _ := sessionIDOf(s); id == sid {
			out = append(out, s)
		}
	}
	return out
}

// partOwner is the session's file that owns path, a part of it, or "".
func partOwner(path string) string {
	sibs := siblings(path)
	if len(sibs) < 2 {
		return ""
	}
	base := filepath.Base(path)
	var sid string
	for _, s := range sibs {
		if filepath.Base(s) >= base {
			break
		}
		if sid == "" {
			if sid, _ = sessionIDOf(path); sid == "" {
				return ""
			}
		}
		if id, _ := sessionIDOf(s); id == sid {
			return s
		}
	}
	return ""
}

// siblings are the files of path's directory, a chats directory, whose
// names say the same session's first 8 characters, path among them, sorted;
// nil when path's name is not a session file's.
func siblings(path string) []string {
	base := filepath.Base(path)
	ext := filepath.Ext(base)
	if ext != ".json" && ext != ".jsonl" || !strings.HasPrefix(base, "session-") ||
		filepath.Base(filepath.Dir(path)) != "chats" {
		return nil
	}
	stem := strings.TrimSuffix(base, ext)
	i := strings.LastIndexByte(stem, '-')
	if i < 0 || len(stem)-i-1 != 8 {
		return nil
	}
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "session-*-"+globQuote(stem[i+1:])+ext))
	sort.Strings(m)
	return m
}

// joinParts puts the parts' records in the session s: a subagent's under
// the call that started it, the rest after the session's own.
func joinParts(s *session, parts []*session) {
	for _, p := range parts {
		for _, seg := range promptSegments(p.entries) {
			if tc := objectiveCall(s.entries, seg); tc != nil {
				tc.AgentID, tc.inline = tc.ID, seg
				if tc.AgentID == "" {
					tc.AgentID = tc.Name
				}
				continue
			}
			s.entries = append(s.entries, seg...)
		}
		s.cut = s.cut || p.cut
	}
}

// promptSegments splits entries at each typed prompt.
func promptSegments(entries []*entry) [][]*entry {
	var out [][]*entry
	start := 0
	for i, en := range entries {
		if i > start && en.msg != nil && en.msg.Type == "user" && userKind(en.msg.Content) == userPrompt {
			out = append(out, entries[start:i])
			start = i
		}
	}
	if start < len(entries) {
		out = append(out, entries[start:])
	}
	return out
}

// objectiveCall is the call among entries, not yet given a subagent, whose
// objective is the one seg's prompt holds, or nil.
func objectiveCall(entries []*entry, seg []*entry) *toolCallRecord {
	objective, ok := promptObjective(seg[0])
	if !ok {
		return nil
	}
	for _, e := range entries {
		if e.msg == nil || e.msg.Type != "gemini" {
			continue
		}
		for j := range e.msg.ToolCalls {
			if tc := &e.msg.ToolCalls[j]; tc.AgentID == "" && tc.inline == nil && callObjective(tc) == objective {
				return tc
			}
		}
	}
	return nil
}
