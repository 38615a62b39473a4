// Package convert holds the table of dialects, detection, the pipeline that
// streams events from a reader to a writer, and the command line. Its
// files, by job:
//
//   - registry.go: the table of dialects; detect.go: which dialect an input is
//   - pipeline.go, emit.go, cancel.go, options.go: the pipeline (reading;
//     writing an event; a signal while reading; its options and results);
//     bounds.go, utf8.go: what it repairs
//   - many.go: many files at once; dirinput.go: the files of a directory named
//   - output.go, runfiles.go, dirfiles.go: the -o file or directory
//   - cli.go, flags.go, convertcmd.go, errors.go: the command line, its
//     flags, the main command, the exit statuses
//   - sessions.go (sessions_files.go, sessions_stats.go, sessions_print.go),
//     follow.go (follow_watch.go, follow_deliver.go, follow_state.go),
//     generate.go, docs.go: the other commands
//   - progress.go, gc.go: the progress bar, the collector's tuning
package convert

import (
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/acp"
	"github.com/agentconv/agentconv/formats/adal"
	"github.com/agentconv/agentconv/formats/atif"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/cliagents"
	"github.com/agentconv/agentconv/formats/codex"
	"github.com/agentconv/agentconv/formats/copilot"
	"github.com/agentconv/agentconv/formats/cursor"
	"github.com/agentconv/agentconv/formats/gemini"
	"github.com/agentconv/agentconv/formats/malac"
	"github.com/agentconv/agentconv/formats/opencode"
	"github.com/agentconv/agentconv/formats/pi"
	"github.com/agentconv/agentconv/formats/pretty"
	"github.com/agentconv/agentconv/formats/qwen"
	"github.com/agentconv/agentconv/formats/transcript"
	"github.com/agentconv/agentconv/otel"
)

// Dialects is the table of every dialect agentconv knows, in the order that
// `agentconv formats` lists them and detection breaks ties. Adding a dialect
// means adding its package and one line here.
var Dialects = []formats.Dialect{
	adal.Stream,
	adal.JSON,
	adal.Text,
	adal.Session,
	cursor.Stream,
	claude.Stream,
	claude.JSON,
	claude.Session,
	qwen.Stream,
	qwen.JSON,
	qwen.Session,
	claude.Amp,
	malac.Dialect,
	cliagents.Dialect,
	pretty.Dialect,
	transcript.Markdown,
	transcript.HTML,
	codex.Dialect,
	codex.Rollout,
	gemini.Stream,
	gemini.JSON,
	gemini.Chat,
	pi.Stream,
	pi.Session,
	otel.OTLP,
	otel.OTLPJSON,
	atif.Dialect,
	acp.Dialect,
	opencode.Stream,
	opencode.DB,
	opencode.Export,
	copilot.Stream,
	copilot.Events,
}

// Lookup finds a dialect by name or alias.
func Lookup(name string) (formats.Dialect, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, d := range Dialects {
		if d.Name == name {
			return d, true
		}
		for _, a := range d.Aliases {
			if a == name {
				return d, true
			}
		}
	}
	return formats.Dialect{}, false
}

// Readable and Writable list the dialects that can be read or written.
func Readable() []formats.Dialect {
	return filter(func(d formats.Dialect) bool { return d.NewReader != nil })
}

// Writable lists the dialects that can be written.
func Writable() []formats.Dialect {
	return filter(func(d formats.Dialect) bool { return d.NewWriter != nil })
}

func filter(keep func(formats.Dialect) bool) []formats.Dialect {
	var out []formats.Dialect
	for _, d := range Dialects {
		if keep(d) {
			out = append(out, d)
		}
	}
	return out
}
