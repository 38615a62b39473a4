package gemini

import (
	"regexp"
	"strings"

	"github.com/goccy/go-json"
)

// objectiveRe finds the objective that Gemini CLI 0.20 gives a subagent
// it runs (the codebase investigator) in the subagent's first message.
var objectiveRe = regexp.MustCompile(`(?s)<objective>\s*(.*?)\s*</objective>`)

// inlineSubagents moves the subagents that Gemini CLI 0.20 records in the
// session's own messages under the calls that started them. 0.20 writes a
// subagent's messages into the session as they come (its prompt, holding
// the call's objective, then its replies, without their tool calls), and
// attaches the parent's finished calls to the last model message at the
// time: the subagent's last. So a prompt holding <objective>X</objective>
// that a later model message's call with args.objective X answers is a
// subagent's: its records, up to that message, are the subagent's, and
// the calls on that message go back to the parent's model message before
// the prompt, which made them. The subagent gets the call's id as its
// own. Later versions write a subagent's file of its own (agentId).
func inlineSubagents(entries []*entry) []*entry {
	for i := 0; i < len(entries); i++ {
		objective, ok := promptObjective(entries[i])
		if !ok {
			continue
		}
		parent := lastModel(entries[:i])
		end, call := answeredBy(entries[i+1:], objective)
		if parent == nil || end < 0 {
			continue
		}
		end += i + 1
		sub := make([]*entry, 0, end-i+1)
		sub = append(sub, entries[i:end]...)
		last := *entries[end]
		lastMsg := *last.msg
		lastMsg.ToolCalls = nil
		last.msg = &lastMsg
		sub = append(sub, &last)
		moved := *parent.msg
		moved.ToolCalls = append(append([]toolCallRecord(nil), parent.msg.ToolCalls...), entries[end].msg.ToolCalls...)
		tc := &moved.ToolCalls[len(parent.msg.ToolCalls)+call]
		tc.AgentID, tc.inline = tc.ID, sub
		if tc.AgentID == "" {
			tc.AgentID = tc.Name
		}
		parent.msg = &moved
		entries = append(entries[:i:i], entries[end+1:]...)
		i--
	}
	return entries
}

// lastModel is the last model message of entries since their last prompt.
func lastModel(entries []*entry) *entry {
	for i := len(entries) - 1; i >= 0; i-- {
		m := entries[i].msg
		if m == nil {
			continue
		}
		if m.Type == "gemini" {
			return entries[i]
		}
		if m.Type == "user" && userKind(m.Content) == userPrompt {
			return nil
		}
	}
	return nil
}

// answeredBy finds the model message among entries with a call whose
// objective is objective: its index and the call's, or -1.
func answeredBy(entries []*entry, objective string) (int, int) {
	for i, en := range entries {
		if en.msg == nil || en.msg.Type != "gemini" {
			continue
		}
		for j := range en.msg.ToolCalls {
			if tc := &en.msg.ToolCalls[j]; tc.AgentID == "" && callObjective(tc) == objective {
				return i, j
			}
		}
	}
	return -1, -1
}

// promptObjective is the objective a subagent's prompt (en) holds.
func promptObjective(en *entry) (string, bool) {
	if en.msg == nil || en.msg.Type != "user" || userKind(en.msg.Content) != userPrompt {
		return "", false
	}
	m := objectiveRe.FindStringSubmatch(partsText(en.msg.Content, false))
	if m == nil || m[1] == "" {
		return "", false
	}
	return m[1], true
}

// callObjective is the objective a call gave the subagent it starts
// (args.objective), or "".
func callObjective(tc *toolCallRecord) string {
	var a struct {
		Objective string `json:"objective"`
	}
	if json.Unmarshal(tc.Args, &a) != nil {
		return ""
	}
	return strings.TrimSpace(a.Objective)
}
