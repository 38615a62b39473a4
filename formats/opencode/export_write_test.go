package opencode_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/opencode"
)

// summary is what a round trip through opencode-export must keep of a
// conversion's events: each run's prompts, texts, thinking and outcome,
// each call with its agent (main or a subagent), name, status and output,
// and each request's tokens and cost.
func summary(evs []*formats.Event) []string {
	var out []string
	who := func(a string) string {
		if a == "" {
			return "main"
		}
		return "sub"
	}
	for _, e := range evs {
		switch e.Kind {
		case formats.RunStart:
			out = append(out, fmt.Sprintf("run %s %s", e.Run.Model, e.Run.Cwd))
		case formats.UserMessage:
			out = append(out, fmt.Sprintf("%s prompt %q", who(e.Agent), e.Text))
		case formats.Message:
			out = append(out, fmt.Sprintf("%s text %q thinking %q", who(e.Agent), e.Text, e.Thinking))
		case formats.ToolCall:
			var args bytes.Buffer
			_ = json.Compact(&args, e.Call.Args)
			out = append(out, fmt.Sprintf("%s call %s %s %s", who(e.Agent), e.Call.ID, e.Call.Name, args.String()))
		case formats.ToolResult:
			out = append(out, fmt.Sprintf("%s result %s %s %x %q exit %v %v", who(e.Agent), e.Call.ID, e.Call.Status, sha256.Sum256([]byte(e.Call.Output.Text())), e.Call.Error, e.Call.ExitCode, e.Duration))
		case formats.AgentStart:
			out = append(out, fmt.Sprintf("agent %s %s", e.AgentInfo.Label, e.AgentInfo.ParentCall))
		case formats.Usage:
			u := e.Usage
			out = append(out, fmt.Sprintf("%s usage in %v out %v cache %v/%v reasoning %v total %v cost %v", who(e.Agent),
				u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.TotalTokens, u.CostUSD))
		case formats.RunEnd:
			out = append(out, fmt.Sprintf("end %s %q %v", e.Status, e.Text, e.Run.ExitCode))
		}
	}
	return out
}

// TestExportRoundTrip: every OpenCode capture's database written as
// opencode-export and read back gives the same runs, prompts, texts,
// calls, subagents, usage per request and outcomes; and every id the
// writer made is OpenCode's, each message's and part's greater than the
// one before it.
func TestExportRoundTrip(t *testing.T) {
	dirs, _ := filepath.Glob(capture("*"))
	if len(dirs) < 10 {
		t.Fatalf("%d captures", len(dirs))
	}
	for _, dir := range dirs {
		name := filepath.Join(dir, "home", ".local", "share", "opencode", "opencode.db")
		if _, err := os.Stat(name); err != nil {
			continue
		}
		t.Run(filepath.Base(filepath.Dir(dir)), func(t *testing.T) {
			evs := readDB(t, name)
			doc, err := formatstest.WriteAll(opencode.Export, evs, true)
			if err != nil {
				t.Fatal(err)
			}
			back := formatstest.Read(t, opencode.Export, doc)
			if a, b := summary(evs), summary(back); !slices.Equal(a, b) {
				t.Errorf("read back:\n  %s\nthe database:\n  %s", strings.Join(b, "\n  "), strings.Join(a, "\n  "))
			}
			ids(t, doc)
		})
	}
}

// ids checks a document's ids: OpenCode's shape, messages and parts in
// increasing order.
func ids(t *testing.T, doc []byte) {
	t.Helper()
	vals, err := jsonDocs(doc)
	if err != nil {
		t.Fatal(err)
	}
	shape := func(id, prefix string) {
		if len(id) != len(prefix)+27 || !strings.HasPrefix(id, prefix+"_") {
			t.Errorf("id %q is not OpenCode's %s_ id", id, prefix)
		}
	}
	for _, d := range vals {
		shape(d.Info.ID, "ses")
		last := ""
		for _, m := range d.Messages {
			shape(m.Info.ID, "msg")
			if m.Info.ID <= last || m.Info.SessionID != d.Info.ID {
				t.Errorf("message %s after %s, of session %s", m.Info.ID, last, m.Info.SessionID)
			}
			last = m.Info.ID
			lastPart := ""
			for _, p := range m.Parts {
				shape(p.ID, "prt")
				if p.ID <= lastPart || p.MessageID != m.Info.ID {
					t.Errorf("part %s after %s, of message %s", p.ID, lastPart, p.MessageID)
				}
				lastPart = p.ID
			}
		}
	}
}

type idDoc struct {
	Info struct {
		ID string `json:"id"`
	} `json:"info"`
	Messages []struct {
		Info struct {
			ID        string `json:"id"`
			SessionID string `json:"sessionID"`
		} `json:"info"`
		Parts []struct {
			ID        string `json:"id"`
			MessageID string `json:"messageID"`
		} `json:"parts"`
	} `json:"messages"`
}

func jsonDocs(b []byte) ([]idDoc, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []idDoc
	for dec.More() {
		var d idDoc
		if err := dec.Decode(&d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// TestExportRequestPerMessage: a turn whose model called, read the result
// and called again is two requests, which OpenCode keeps as two assistant
// messages, each with its own tokens.
func TestExportRequestPerMessage(t *testing.T) {
	u := func(in int64) formats.UsageInfo {
		return formats.UsageInfo{InputTokens: formats.Some(in), OutputTokens: formats.Some(int64(1))}
	}
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: "s"}},
		{Kind: formats.UserMessage, Text: "go"},
		{Kind: formats.TurnStart},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}},
		{Kind: formats.Usage, Usage: u(100)},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Status: formats.Completed, Output: formats.TextOutput("a")}},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c2", Name: "bash", Args: json.RawMessage(`{"command":"cat a"}`)}},
		{Kind: formats.Usage, Usage: u(200)},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c2", Status: formats.Completed, Output: formats.TextOutput("b")}},
		{Kind: formats.Message, Text: "done"},
		{Kind: formats.Usage, Usage: u(300)},
		{Kind: formats.TurnEnd, Status: formats.Completed},
		{Kind: formats.RunEnd, Status: formats.Completed},
	}
	out, err := formatstest.WriteAll(opencode.Export, evs, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range formatstest.Read(t, opencode.Export, out) {
		switch e.Kind {
		case formats.TurnStart, formats.ToolCall, formats.ToolResult:
			got = append(got, e.Kind.String()+":"+e.Call.ID)
		case formats.Usage:
			got = append(got, fmt.Sprintf("usage:%d", e.Usage.InputTokens.V))
		}
	}
	want := "turn_start: tool_call:c1 usage:100 tool_result:c1 turn_start: tool_call:c2 usage:200 tool_result:c2 turn_start: usage:300"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("read back\n got %s\nwant %s", s, want)
	}
}
