// Package codex reads and writes the stream that `codex exec --json` prints:
// thread.started, turn.started/completed/failed, item.started/updated/
// completed carrying the thread items, and a fatal error.
package codex

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Dialect is the codex dialect: `codex exec --json`.
var Dialect = formats.Dialect{
	Name:        "codex",
	Aliases:     []string{"codex-exec", "codex-json"},
	Description: "Codex `exec --json`: NDJSON thread.started, turn.*, item.* (commands, file changes, MCP calls, web searches, messages, reasoning, todo lists), error",
	NewReader:   newReader,
	NewWriter:   newWriter,
	Detect:      detect,
	// A thread holds the main agent's text, reasoning, turns, tool calls
	// (declined ones too), todo lists, notices, per-turn token counts and
	// whether the run failed; a subagent's calls, notices and usage are
	// flattened into it.
	Carries: formats.AssistantText | formats.Thinking | formats.Turns | formats.TurnStatuses |
		formats.ToolCalls | formats.SubagentToolCalls | formats.Refusals | formats.SubagentNotices | formats.TodoLists |
		formats.InfoNotices | formats.WarningNotices | formats.TokenUsage | formats.ReasoningTokens | formats.RunOutcomes,
	Quirks: []formats.Quirk{formats.MergedToolErrors, lossErrorTexts, lossLateResults, lossTodoStatuses, lossLateUsage,
		formats.LateSessionIDs, formats.ExitCodesBeyond01},
	// The item of every call of the run is kept until it ends, so that
	// no two items of a thread share an id.
	HoldsRun: true,
}

// The losses of the stream's own encoding.
var (
	lossErrorTexts   = formats.NewQuirk("tool error texts")
	lossLateResults  = formats.NewQuirk("later results of tool calls that had already ended")
	lossTodoStatuses = formats.NewQuirk("todo statuses besides pending and completed")
	lossLateUsage    = formats.NewQuirk("token usage given after the last turn ended")
)

// Provider and agent name of the runs codex prints.
const (
	Provider  = "openai"
	AgentName = "codex"
)

// Item types that are tool calls.
const (
	typeCommand = "command_execution"
	typeFile    = "file_change"
	typeMCP     = "mcp_tool_call"
	typeSearch  = "web_search"
	typeCollab  = "collab_tool_call"
)

func isToolItem(t string) bool {
	switch t {
	case typeCommand, typeFile, typeMCP, typeSearch, typeCollab:
		return true
	}
	return false
}

// detect wants every head line to be a codex event and at least one of them
// to be specific to codex: a bare {"type":"error","message"} is AdaL too.
// Lines of the protocol before 0.44 count, and its config summary and
// prompt lines too.
func detect(head []byte) int {
	lines := formats.HeadLines(head, 8)
	if len(lines) == 0 {
		return 0
	}
	hits, specific := 0, false
	for _, l := range lines {
		if l[0] != '{' {
			return 0
		}
		var probe struct {
			Type string `json:"type"`
			// Codex before 0.44.
			Msg    *struct{ Type string } `json:"msg"`
			Prompt *json.RawMessage       `json:"prompt"`
			Model  *json.RawMessage       `json:"model"`
		}
		json.Unmarshal(l, &probe)
		t := probe.Type
		switch {
		case strings.HasPrefix(t, "thread.") || strings.HasPrefix(t, "turn.") || strings.HasPrefix(t, "item."),
			t == "" && probe.Msg != nil && probe.Msg.Type != "":
			hits++
			specific = true
		case t == "error", t == "" && (probe.Prompt != nil || probe.Model != nil):
			hits++
		}
	}
	if !specific {
		return 0
	}
	return hits * 100 / len(lines)
}

// line is every top-level field a codex event has.
type line struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Usage    *usage          `json:"usage"`
	Error    *message        `json:"error"`
	Message  string          `json:"message"`
	Item     json.RawMessage `json:"item"`
	// Codex before 0.44: {"id":…,"msg":{…}}, after a config summary and a
	// {"prompt":…} line.
	Msg    json.RawMessage `json:"msg"`
	Prompt *string         `json:"prompt"`
	Model  *string         `json:"model"`
}

// usage is codex's token count. Its convention is the model's: input_tokens
// include cached_input_tokens, and output_tokens include
// reasoning_output_tokens (which newer Codex and the protocol before 0.44
// print).
type usage struct {
	InputTokens           *int64 `json:"input_tokens"`
	CachedInputTokens     *int64 `json:"cached_input_tokens"`
	OutputTokens          *int64 `json:"output_tokens"`
	ReasoningOutputTokens *int64 `json:"reasoning_output_tokens"`
	// CacheWriteInputTokens marks the usage of newer Codex (0.171), whose
	// turn.completed is the thread's running total, not the turn's.
	CacheWriteInputTokens *int64 `json:"cache_write_input_tokens"`
}

// since is u less an earlier running total of its thread, where every count
// of u is at least the earlier one's; else u as it is.
func (u usage) since(prev usage) usage {
	formats.SinceTotal([2]**int64{&u.InputTokens, &prev.InputTokens}, [2]**int64{&u.CachedInputTokens, &prev.CachedInputTokens},
		[2]**int64{&u.OutputTokens, &prev.OutputTokens}, [2]**int64{&u.ReasoningOutputTokens, &prev.ReasoningOutputTokens})
	return u
}

// info is the usage in the model's terms, which are codex's own.
func (u *usage) info() formats.UsageInfo {
	return formats.UsageInfo{InputTokens: formats.OptFrom(u.InputTokens), CacheReadTokens: formats.OptFrom(u.CachedInputTokens),
		OutputTokens: formats.OptFrom(u.OutputTokens), ReasoningTokens: formats.OptFrom(u.ReasoningOutputTokens)}
}

type message struct {
	Message string `json:"message"`
}

// item is every field of the thread items this package reads. Its id is
// read apart (see firstID).
type item struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// command_execution
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	Status           string `json:"status"`
	// file_change
	Changes json.RawMessage `json:"changes"`
	// mcp_tool_call
	Server    string          `json:"server"`
	Tool      json.RawMessage `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    *mcpResult      `json:"result"`
	Error     *message        `json:"error"`
	// web_search: the query, and in newer Codex the action (search,
	// open_page, find_in_page, other, with their details) and the results
	Query   string          `json:"query"`
	Action  json.RawMessage `json:"action"`
	Results json.RawMessage `json:"results"`
	// collab_tool_call
	SenderThreadID    string          `json:"sender_thread_id"`
	ReceiverThreadIDs json.RawMessage `json:"receiver_thread_ids"`
	Prompt            *string         `json:"prompt"`
	AgentsStates      json.RawMessage `json:"agents_states"`
	Items             []todoItem      `json:"items"`
	Message           string          `json:"message"`
}

type mcpResult struct {
	Content           []mcpContent    `json:"content"`
	StructuredContent json.RawMessage `json:"structured_content"`
}

type mcpContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type todoItem struct {
	Text      string `json:"text"`
	Completed bool   `json:"completed"`
}

type reader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	queue formats.EventQueue
	// held: the config summary and prompt of a run of Codex before 0.44,
	// kept until session_configured names the session of its RunStart.
	held []*formats.Event
	// search is the call of a web_search that started without saying
	// what it does (an empty query): held for one line, so that its
	// completion, which comes next, gives it its query and action.
	search     []*formats.Event
	holdSearch bool
	run        runState
	end        formats.EndAtEOF
	// totals are the running totals newer Codex printed last for each
	// thread of the input: a thread resumed in the same input (its stdouts
	// one after the other) counts from there.
	totals map[string]usage
}

// runState follows one run (one thread): a codex stream has no end event, so
// the reader decides when the run ended.
type runState struct {
	open      bool
	sessionID string
	turnOpen  bool
	turns     int    // turns that ended
	failed    bool   // the last turn failed, or a fatal error came after it
	fatal     string // the last fatal error's message
	fatalSeen bool
	lastLine  int
	answer    string
	answered  bool
	usage     formats.UsageInfo
	started   map[string]string // tool items that item.started announced: their names
}

func newReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &reader{lines: formats.NewLineReader(r), opts: o}
}

func (r *reader) Next() (*formats.Event, error) {
	for r.queue.Len() == 0 {
		if r.end.Done() {
			return nil, io.EOF
		}
		b, err := r.lines.Next()
		if err == io.EOF {
			r.releaseSearch()
			r.release("")
			r.queue.Push(r.end.End(r.opts.Dialect, r.run.lastLine, r.finished(), r.endEvents)...)
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := r.record(b, r.lines.Line()); err != nil {
			r.releaseSearch()
			return nil, err
		}
		r.releaseSearch()
		if r.holdSearch {
			r.holdSearch = false
			r.search = r.queue.Take()
		}
		if e := r.queue.Peek(); len(r.held) > 0 || e != nil && e.Kind == formats.RunStart && e.Source.Type == "" {
			r.hold(b) // only lines of Codex before 0.44 have no type
		}
	}
	return r.queue.Pop(), nil
}

// hold keeps the events of a legacy config summary or prompt line back
// until the next line says the session; any other line releases them.
func (r *reader) hold(b []byte) {
	var l struct {
		Type   string          `json:"type"`
		Msg    json.RawMessage `json:"msg"`
		Prompt *string         `json:"prompt"`
		Model  *string         `json:"model"`
	}
	json.Unmarshal(b, &l)
	e := r.queue.Peek()
	opening := e != nil && e.Kind == formats.RunStart
	if l.Type == "" && len(l.Msg) == 0 && (l.Model != nil || l.Prompt != nil) && (opening || len(r.held) > 0) {
		r.held = append(r.held, r.queue.Take()...)
		return
	}
	var m struct {
		Type      string `json:"type"`
		SessionID string `json:"session_id"`
	}
	if l.Type == "" && json.Unmarshal(l.Msg, &m) == nil && m.Type == "session_configured" {
		r.release(m.SessionID)
		return
	}
	r.release("")
}

// release queues the held events before the current ones, with the
// session id when one came.
func (r *reader) release(sessionID string) {
	if len(r.held) == 0 {
		return
	}
	if sessionID != "" && r.held[0].Kind == formats.RunStart {
		r.held[0].Run.SessionID, r.run.sessionID = sessionID, sessionID
	}
	current := r.queue.Take()
	r.queue.Push(r.held...)
	r.queue.Push(current...)
	r.held = nil
}

// releaseSearch queues a held search call before the current events.
func (r *reader) releaseSearch() {
	if len(r.search) == 0 {
		return
	}
	current := r.queue.Take()
	r.queue.Push(r.search...)
	r.queue.Push(current...)
	r.search = nil
}

// record turns one line into events.
func (r *reader) record(b []byte, n int) error {
	var l line
	if err := r.opts.Report.Unmarshal(n, b, &l); err != nil {
		return err
	}
	r.queue.Begin(formats.Source{Dialect: r.opts.Dialect, Type: l.Type, Line: append([]byte(nil), b...), LineNo: n})
	r.run.lastLine = n
	emit := r.queue.Add
	switch l.Type {
	case "thread.started":
		if r.run.open {
			r.endRun(n)
		}
		r.run = runState{open: true, sessionID: l.ThreadID, lastLine: n}
		emit(&formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: l.ThreadID, Provider: Provider, AgentName: AgentName}})
	case "turn.started":
		r.run.open = true
		r.run.turnOpen = true
		emit(&formats.Event{Kind: formats.TurnStart})
	case "turn.completed":
		r.run.open = true
		r.usage(l.Usage, emit)
		r.endTurn(formats.Completed)
		emit(&formats.Event{Kind: formats.TurnEnd, Status: formats.Completed})
	case "turn.failed":
		r.run.open = true
		msg := "turn failed"
		if l.Error != nil {
			msg = l.Error.Message
		}
		// Codex prints the fatal error, then turn.failed with the same
		// message: one notice is enough.
		if !r.run.fatalSeen || msg != r.run.fatal {
			emit(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: msg})
		}
		r.run.fatal, r.run.fatalSeen = msg, true
		// Codex prints no usage on a failed turn; agentconv's writer does,
		// so that the run's totals survive it.
		r.usage(l.Usage, emit)
		r.endTurn(formats.Failed)
		emit(&formats.Event{Kind: formats.TurnEnd, Status: formats.Failed})
	case "error":
		r.run.open = true
		r.run.fatal, r.run.fatalSeen = l.Message, true
		r.run.failed = true
		emit(&formats.Event{Kind: formats.Notice, Severity: formats.Error, Text: l.Message})
	case "item.started", "item.updated", "item.completed":
		r.run.open = true
		if len(l.Item) == 0 || l.Item[0] != '{' {
			return formats.Errorf(n, "%s without an item object: %s", l.Type, formats.Snippet(b))
		}
		if err := r.item(l.Type, l.Item, n, emit); err != nil {
			return err
		}
	case "":
		// Codex before 0.44: a config summary (with the model) starts a
		// run, as thread.started does now; its events and prompt belong to
		// the run open, or open one.
		legacyRun := len(l.Msg) > 0 && l.Msg[0] == '{' || l.Prompt != nil || l.Model != nil
		if legacyRun && (!r.run.open || l.Model != nil && l.Prompt == nil && len(l.Msg) == 0) {
			if r.run.open {
				r.endRun(n)
			}
			r.run = runState{open: true, lastLine: n}
			start := &formats.Event{Kind: formats.RunStart, Run: formats.RunInfo{Provider: Provider, AgentName: AgentName}}
			if l.Model != nil {
				start.Run.Model = *l.Model
			}
			if len(l.Msg) > 0 {
				// Opened by session_configured, which names the session.
				var m legacyMsg
				json.Unmarshal(l.Msg, &m)
				if m.Type == "session_configured" {
					start.Run.SessionID, start.Run.Model, r.run.sessionID = m.SessionID, m.Model, m.SessionID
					emit(start)
					return nil
				}
			}
			emit(start)
		}
		switch {
		case len(l.Msg) > 0 && l.Msg[0] == '{':
			return r.legacy(l.Msg, n, emit)
		case l.Prompt != nil:
			emit(&formats.Event{Kind: formats.UserMessage, Text: *l.Prompt})
		case l.Model == nil:
			r.opts.Report.Warn(n, "an event without a \"type\"; kept as an unknown event")
			emit(&formats.Event{Kind: formats.Raw})
		}
	default:
		emit(&formats.Event{Kind: formats.Raw})
	}
	return nil
}

// usage queues the token counts of a turn, if it has them.
func (r *reader) usage(u *usage, emit func(*formats.Event)) {
	if u == nil {
		return
	}
	if u.CacheWriteInputTokens != nil && r.run.sessionID != "" {
		if r.totals == nil {
			r.totals = map[string]usage{}
		}
		prev, seen := r.totals[r.run.sessionID]
		r.totals[r.run.sessionID] = *u
		if seen {
			own := u.since(prev)
			u = &own
		}
	}
	ev := u.info()
	r.run.usage.Add(ev)
	// A turn's usage, of every request it made: exec --json marks no
	// request of its own.
	emit(&formats.Event{Kind: formats.Usage, Usage: ev, Aggregate: true})
}

func (r *reader) endTurn(s formats.Status) {
	r.run.turnOpen = false
	r.run.turns++
	r.run.failed = s == formats.Failed
}

// finished reports whether the open run's last turn ended (or a fatal
// error came): a codex stream has no end event, and a run that did not
// finish was cut.
func (r *reader) finished() bool {
	s := &r.run
	return s.open && (s.failed || (s.turns > 0 && !s.turnOpen))
}

// endRun queues the Answer and RunEnd of a run that finished before the
// next one began at line n; a run that did not is left to the pipeline.
func (r *reader) endRun(n int) {
	if r.finished() {
		for _, e := range r.endEvents() {
			r.queue.Push(formats.MadeAt(e, r.opts.Dialect, n))
		}
	}
	r.run.open = false
}

// endEvents are the Answer and RunEnd of the run that finished.
func (r *reader) endEvents() []*formats.Event {
	s := &r.run
	var evs []*formats.Event
	if s.answered {
		evs = append(evs, &formats.Event{Kind: formats.Answer, Text: s.answer})
	}
	// codex exec exits 0 when its run completed and 1 when it failed; it
	// knows no other code.
	end := &formats.Event{Kind: formats.RunEnd, Status: formats.Completed, Usage: s.usage,
		Run: formats.RunInfo{SessionID: s.sessionID, Provider: Provider, AgentName: AgentName, ExitCode: formats.Some(0)}}
	if s.failed {
		end.Status, end.Text, end.Run.ExitCode = formats.Failed, s.fatal, formats.Some(1)
	}
	s.open = false
	return append(evs, end)
}

func (r *reader) item(evType string, raw json.RawMessage, n int, emit func(*formats.Event)) error {
	var it item
	if err := r.opts.Report.Unmarshal(n, raw, &it); err != nil {
		return err
	}
	id := firstID(raw)
	completed := evType == "item.completed"
	switch {
	case it.Type == "agent_message" && completed:
		r.run.answer, r.run.answered = it.Text, true
		emit(&formats.Event{Kind: formats.Message, Text: it.Text})
	case it.Type == "reasoning" && completed:
		emit(&formats.Event{Kind: formats.ThinkingDelta, Text: it.Text})
	case it.Type == "todo_list":
		todos := make([]formats.Todo, len(it.Items))
		for i, t := range it.Items {
			todos[i] = formats.Todo{Content: t.Text, Status: "pending"}
			if t.Completed {
				todos[i].Status = "completed"
			}
		}
		emit(&formats.Event{Kind: formats.Todos, Todos: todos})
	case it.Type == "error" && completed:
		emit(&formats.Event{Kind: formats.Notice, Severity: formats.Warning, Text: it.Message})
	case isToolItem(it.Type) && evType == "item.started":
		if r.run.started == nil {
			r.run.started = map[string]string{}
		}
		c := callOf(id, &it)
		r.run.started[id] = c.Name
		emit(&formats.Event{Kind: formats.ToolCall, Call: c})
		r.holdSearch = it.Type == typeSearch && it.Query == "" && searchSummary(&it) == ""
	case isToolItem(it.Type) && completed:
		res := resultOf(id, &it)
		if res.Status == formats.StatusUnknown {
			r.opts.Report.Warn(n, "%s item %q has status %q; kept as completed", it.Type, id, it.Status)
			res.Status = formats.Completed
		}
		if len(r.search) > 0 && r.search[0].Call.ID == id {
			// The search held at its start: what it did is known now.
			c := callOf(id, &it)
			r.search[0].Call.Args, r.search[0].Call.Summary = c.Args, c.Summary
		}
		// An item that only completes (file changes, some searches) still
		// starts a call, except a declined one, which never ran.
		if name, ok := r.run.started[id]; ok {
			res.Name = name
		} else {
			if res.Status == formats.Denied {
				res.Args = callOf(id, &it).Args
			} else {
				emit(&formats.Event{Kind: formats.ToolCall, Call: callOf(id, &it)})
			}
		}
		delete(r.run.started, id)
		emit(&formats.Event{Kind: formats.ToolResult, Call: res})
	default:
		// Updates of a running call, and item types this reader does not
		// know, travel raw; the item's type names them.
		emit(&formats.Event{Kind: formats.Raw, Source: formats.Source{Type: evType + " " + it.Type}})
	}
	return nil
}

// toolName names the call of a tool item: the item type, or for an MCP call
// mcp__<server>__<tool> as Claude Code names them (the bare tool when
// there is no server).
func toolName(it *item) string {
	if it.Type != typeMCP {
		return it.Type
	}
	tool := rawString(it.Tool)
	if it.Server == "" {
		return tool
	}
	return "mcp__" + it.Server + "__" + tool
}

type commandArgs struct {
	Command string `json:"command"`
}

type fileArgs struct {
	Changes json.RawMessage `json:"changes"`
}

type searchArgs struct {
	Query  string          `json:"query"`
	Action json.RawMessage `json:"action,omitempty"`
}

// searchAction is what a web_search item says it did.
type searchAction struct {
	Type    string   `json:"type"`
	Query   string   `json:"query"`
	Queries []string `json:"queries"`
	URL     string   `json:"url"`
	Pattern string   `json:"pattern"`
}

// searchSummary says what a search did, as Codex shows it: the query (of
// the action, else its first query, else the item's), the page opened, or
// the pattern looked for in it.
func searchSummary(it *item) string {
	var a searchAction
	json.Unmarshal(it.Action, &a)
	switch a.Type {
	case "search":
		if a.Query != "" {
			return a.Query
		}
		if len(a.Queries) > 0 && a.Queries[0] != "" {
			return a.Queries[0]
		}
	case "open_page":
		if a.URL != "" {
			return a.URL
		}
	case "find_in_page":
		switch {
		case a.Pattern != "" && a.URL != "":
			return "'" + a.Pattern + "' in " + a.URL
		case a.Pattern != "":
			return "'" + a.Pattern + "'"
		case a.URL != "":
			return a.URL
		}
	}
	return it.Query
}

type collabArgs struct {
	Tool              json.RawMessage `json:"tool"`
	SenderThreadID    string          `json:"sender_thread_id"`
	ReceiverThreadIDs json.RawMessage `json:"receiver_thread_ids,omitempty"`
	Prompt            *string         `json:"prompt"`
}

func callOf(id string, it *item) formats.Call {
	c := formats.Call{ID: id, Name: toolName(it)}
	var args any
	switch it.Type {
	case typeCommand:
		args, c.Summary = commandArgs{it.Command}, it.Command
	case typeFile:
		args = fileArgs{orNull(it.Changes)}
	case typeSearch:
		args, c.Summary = searchArgs{it.Query, nilIfNull(it.Action)}, searchSummary(it)
	case typeCollab:
		args = collabArgs{orNull(it.Tool), it.SenderThreadID, it.ReceiverThreadIDs, it.Prompt}
	case typeMCP:
		if len(it.Arguments) > 0 && string(it.Arguments) != "null" {
			c.Args = append(json.RawMessage(nil), it.Arguments...)
		} else {
			c.Args = json.RawMessage("{}")
		}
		return c
	}
	c.Args, _ = formats.Marshal(args)
	return c
}

func resultOf(id string, it *item) formats.Call {
	c := formats.Call{ID: id, Name: toolName(it), Status: statusWords.Parse(it.Status)}
	switch it.Type {
	case typeCommand:
		c.Output = formats.TextOutput(it.AggregatedOutput)
		c.ExitCode = formats.OptFrom(it.ExitCode)
		if it.ExitCode != nil && *it.ExitCode != 0 {
			c.Error = "exit code " + strconv.Itoa(*it.ExitCode)
			if c.Status == formats.Completed {
				c.Status = formats.Failed
			}
		}
		if c.Status == formats.Denied {
			// A declined command has no output: the writer keeps the
			// reason in aggregated_output.
			c.Output, c.Error = formats.TextOutput(""), it.AggregatedOutput
			if c.Error == "" {
				c.Error = "declined"
			}
		}
	case typeMCP:
		if it.Result != nil {
			var parts []string
			for _, p := range it.Result.Content {
				if p.Type == "text" || p.Text != "" {
					parts = append(parts, p.Text)
				}
			}
			c.Output = formats.TextOutput(strings.Join(parts, "\n"))
			if c.Output.Text() == "" && len(it.Result.StructuredContent) > 0 && string(it.Result.StructuredContent) != "null" {
				c.Output = formats.TextOutput(compact(it.Result.StructuredContent))
			}
		}
		if it.Error != nil {
			c.Error = it.Error.Message
			if c.Status == formats.Completed || c.Status == formats.StatusUnknown {
				c.Status = formats.Failed
			}
		}
	case typeSearch:
		// A search item has no status: completing is succeeding. What it
		// did is known once it completed (its query was empty when it
		// started), and its results come with it.
		if it.Status == "" {
			c.Status = formats.Completed
		}
		c.Args = callOf(id, it).Args
		if r := nilIfNull(it.Results); r != nil && string(r) != "[]" {
			c.Output = formats.TextOutput(compact(r))
		}
	case typeCollab:
		if len(it.AgentsStates) > 0 && string(it.AgentsStates) != "null" && string(it.AgentsStates) != "{}" {
			c.Output = formats.TextOutput(compact(it.AgentsStates))
		}
	}
	if c.Status == formats.Running {
		// item.completed says it ended; in_progress there means it did.
		c.Status = formats.Completed
	}
	return c
}

// nilIfNull is nil for an absent or null JSON value.
func nilIfNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// compact prints JSON without spaces, so that it reads back the same after
// a writer re-encodes it.
func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return strings.ToValidUTF8(buf.String(), "\uFFFD")
}

func rawString(b json.RawMessage) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	// Not a string: its JSON text, valid UTF-8 as every string read is.
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// statusWords are Codex's item statuses.
var statusWords = formats.StatusWords{"in_progress": formats.Running, "declined": formats.Denied}
