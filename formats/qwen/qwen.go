// Package qwen reads what Qwen Code (`qwen`, a fork of Gemini CLI that
// prints copies of Claude Code's output) prints and keeps: qwen-code, its
// `-p --output-format stream-json`; qwen-json, its `--output-format json`;
// and qwen-session, its session files.
package qwen

import (
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/claude"
)

// AgentName is the agent of the runs read from Qwen Code.
const AgentName = "qwen-code"

// qwenCopy: Qwen Code's stdout is Claude Code's, by the OpenAI counts
// its models give (input_tokens include the cache; the result's usage
// counts every request, its subagents' included, and after a resume the
// session's running total).
// qwenCopy: Qwen Code's claude-stream. Its tool error for a call whose
// permission was declined (a deny rule, or no approval in -p) says
// "Qwen Code requires permission to use \"TOOL\", but that permission was
// declined", and its result lists the call in permission_denials.
var qwenCopy = claude.Copy{Agent: AgentName, OpenAICounts: true, Refusals: []string{"requires permission to use", "but that permission was declined"}}

// Stream is the qwen-code dialect: `qwen -p --output-format stream-json`,
// a copy of claude-stream whose init line names qwen_code_version.
var Stream = formats.Dialect{
	Name:        "qwen-code",
	Aliases:     []string{"qwen", "qwen-stream"},
	Description: "Qwen Code `-p --output-format stream-json`: a copy of claude-stream whose init line has qwen_code_version",
	Detect:      detectStream,
	NewReader:   qwenCopy.StreamReader,
	NewWriter:   qwenCopy.StreamWriter,
	Carries:     claude.StreamCarries,
	Quirks:      claude.StreamQuirks,
}

// JSON is the qwen-json dialect: `qwen -p --output-format json`, the JSON
// array of the messages its stream-json prints, as Claude Code's
// `--output-format json --verbose`, by Qwen Code's counts. It is written
// as claude-json (the result object of each run).
var JSON = formats.Dialect{
	Name:        "qwen-json",
	Description: "Qwen Code `-p --output-format json`: the array of its stream-json messages, as claude-json's --verbose (init with qwen_code_version)",
	Detect:      detectJSON,
	NewReader:   qwenCopy.JSONReader,
	NewWriter:   qwenCopy.JSONWriter,
	Carries:     claude.JSONCarries,
	Quirks:      claude.JSONQuirks,
}

// detectStream: claude-stream whose init line is Qwen Code's (Claude's
// detection gives it half); other claude-stream barely, so that --from
// qwen-code reads a Qwen Code stream whose init line says nothing of it.
func detectStream(head []byte) int {
	return above(claude.StreamShape(head), head)
}

// detectJSON: claude-json whose init message is Qwen Code's, likewise.
func detectJSON(head []byte) int {
	return above(claude.JSONShape(head), head)
}

func above(s int, head []byte) int {
	switch {
	case s == 0:
		return 0
	case claude.QwenInit(head):
		return min(s+1, 100)
	}
	return 1 // a copy, which --from may name
}
