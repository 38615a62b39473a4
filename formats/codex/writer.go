package codex

import (
	"io"
	"strconv"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The codex writer prints each run as one thread: thread.started, turns
// (opened around the items when the source has none), items with synthetic
// ids item_0, item_1, … in order (tool calls keep their own ids), and turn.completed or turn.failed at the
// end, as `codex exec --json` does.
type writer struct {
	w     io.Writer
	opts  formats.WriteOptions
	calls formats.CallTracker
	text  formats.TextTracker
	run   writerRun
}

// writerRun is the state of the run being written.
type writerRun struct {
	open bool
	// same: the run came from a codex input and is copied; what the
	// pipeline adds to it (closing a cut run) is encoded without losses.
	same      bool
	sessionID string
	turnOpen  bool
	turns     int
	turnFail  bool // the last turn written failed
	nextItem  int
	itemIDs   map[string]string // call id -> item id
	used      map[string]bool   // item ids written in the run
	todoID    string
	thinking  strings.Builder
	lastText  string // the last agent_message written
	wroteText bool
	lastError string // the last fatal error written
	errored   bool   // a fatal error was written
	denied    string // the reason of the last declined call
	usage     formats.UsageInfo
	usageSeen bool
	written   formats.UsageInfo // usage of the turns written
}

func newWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &writer{w: w, opts: o}
}

type threadStartedLine struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
}

type typeLine struct {
	Type string `json:"type"`
}

type usageLine struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

type turnCompletedLine struct {
	Type  string     `json:"type"`
	Usage *usageLine `json:"usage,omitempty"`
}

type turnFailedLine struct {
	Type  string  `json:"type"`
	Error message `json:"error"`
}

type errorLine struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type itemLine struct {
	Type string `json:"type"`
	Item any    `json:"item"`
}

type textItem struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Text string `json:"text"`
}

type errorItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

type todoListItem struct {
	ID    string     `json:"id"`
	Type  string     `json:"type"`
	Items []todoItem `json:"items"`
}

type commandItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code,omitempty"`
	Status           string `json:"status"`
}

type fileItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Changes json.RawMessage `json:"changes"`
	Status  string          `json:"status"`
}

type mcpItem struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    *mcpResultLine  `json:"result"`
	Error     *message        `json:"error"`
	Status    string          `json:"status"`
}

type mcpResultLine struct {
	Content           []mcpContent    `json:"content"`
	StructuredContent json.RawMessage `json:"structured_content"`
}

type searchItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Query   string          `json:"query"`
	Action  json.RawMessage `json:"action,omitempty"`
	Results json.RawMessage `json:"results,omitempty"`
	Status  string          `json:"status,omitempty"`
}

type collabItem struct {
	ID                string          `json:"id"`
	Type              string          `json:"type"`
	Tool              json.RawMessage `json:"tool"`
	SenderThreadID    string          `json:"sender_thread_id"`
	ReceiverThreadIDs json.RawMessage `json:"receiver_thread_ids"`
	Prompt            *string         `json:"prompt"`
	AgentsStates      json.RawMessage `json:"agents_states"`
	Status            string          `json:"status"`
}

func (w *writer) Write(e *formats.Event) error {
	if e.Source.From(w.opts.Dialect) {
		// Same dialect: records go out as they came; the events the reader
		// or the pipeline made up (run ends, answers) print nothing.
		w.follow(e)
		if e.Source.Line != nil && !e.Source.Continued {
			return formats.WriteRawLine(w.w, e.Source.Line)
		}
		return nil
	}
	w.reportLosses(e)
	if e.Kind == formats.RunStart {
		return w.startRun(e.Run.SessionID)
	}
	if err := w.ensureRun(); err != nil {
		return err
	}
	if e.Agent != "" {
		// A flat thread holds a subagent's tool calls, notices and token
		// usage; the rest is reported as lost.
		switch e.Kind {
		case formats.ToolCall, formats.ToolResult, formats.Notice, formats.Usage:
			ev := *e
			ev.Agent = ""
			e = &ev
		case formats.Todos:
			w.lose("subagent todo lists")
			return nil
		default:
			return nil
		}
	}
	switch e.Kind {
	case formats.TextDelta:
		w.text.Delta("", e.Text)
		return nil
	case formats.ThinkingDelta:
		w.run.thinking.WriteString(e.Text)
		return nil
	case formats.Usage:
		w.run.usage.Add(e.Usage)
		w.run.usageSeen = true
		return nil
	}
	if e.Kind == formats.Message && e.Thinking != "" {
		// The message repeats the reasoning that streamed before it.
		w.run.thinking.Reset()
	}
	if err := w.flush(e.Kind == formats.Message); err != nil {
		return err
	}
	switch e.Kind {
	case formats.TurnStart:
		if w.run.turnOpen {
			if err := w.endTurn(false, ""); err != nil {
				return err
			}
		}
		return w.ensureTurn()
	case formats.TurnEnd:
		if err := w.ensureTurn(); err != nil {
			return err
		}
		return w.endTurn(e.Status == formats.Failed || e.Status == formats.Cancelled, w.failure(""))
	case formats.Message:
		// Deltas that carried this very text were its stream; other
		// streamed text was a message of its own.
		if t := w.text.Flush(""); t != "" && t != e.Text {
			if err := w.message(t); err != nil {
				return err
			}
		}
		if e.Thinking != "" {
			if err := w.writeItem("item.completed", textItem{w.newID(), "reasoning", e.Thinking}); err != nil {
				return err
			}
		}
		if e.Text != "" || e.Thinking == "" {
			return w.message(e.Text)
		}
	case formats.Answer:
		if !w.run.wroteText || w.run.lastText != e.Text {
			return w.message(e.Text)
		}
	case formats.ToolCall:
		c := w.calls.Start(e)
		return w.writeItem("item.started", w.toolItem(&c.Call, w.itemID(c.ID)))
	case formats.ToolResult:
		c, _ := w.calls.Finish(e)
		if c.Status == formats.Denied {
			w.run.denied = c.Error
		}
		return w.writeItem("item.completed", w.toolItem(&c.Call, w.itemID(c.ID)))
	case formats.Todos:
		items := make([]todoItem, len(e.Todos))
		for i, t := range e.Todos {
			items[i] = todoItem{Text: t.Content, Completed: t.Status == "completed"}
			if t.Status != "completed" && t.Status != "pending" {
				w.lose("todo statuses besides pending and completed")
			}
		}
		typ := "item.updated"
		if w.run.todoID == "" {
			typ, w.run.todoID = "item.started", w.newID()
		}
		return w.writeItem(typ, todoListItem{w.run.todoID, "todo_list", items})
	case formats.Notice:
		if e.Severity == formats.Error {
			w.run.lastError, w.run.errored = e.Text, true
			return formats.WriteJSONLine(w.w, errorLine{"error", e.Text})
		}
		return w.writeItem("item.completed", errorItem{w.newID(), "error", e.Text})
	case formats.RunEnd:
		return w.endRun(e)
	}
	return nil
}

// follow keeps the state of a copied codex run, so that the pipeline can
// close it properly if it was cut: its open turn and calls.
func (w *writer) follow(e *formats.Event) {
	switch e.Kind {
	case formats.RunStart:
		w.reset()
		w.run.open, w.run.same, w.run.sessionID = true, true, e.Run.SessionID
	case formats.RunEnd:
		w.reset()
	case formats.TurnStart:
		w.run.turnOpen = true
	case formats.TurnEnd:
		w.run.turnOpen = false
		w.run.turns++
	case formats.ToolCall:
		w.calls.Start(e)
		w.itemID(e.Call.ID)
	case formats.ToolResult:
		w.calls.Finish(e)
	}
}

func (w *writer) startRun(sessionID string) error {
	w.reset()
	w.run.open, w.run.sessionID = true, sessionID
	return formats.WriteJSONLine(w.w, threadStartedLine{"thread.started", sessionID})
}

// ensureRun opens a run for a source that gave no RunStart.
func (w *writer) ensureRun() error {
	if w.run.open {
		return nil
	}
	return w.startRun("")
}

func (w *writer) ensureTurn() error {
	if w.run.turnOpen {
		return nil
	}
	w.run.turnOpen = true
	w.run.usage, w.run.usageSeen = formats.UsageInfo{}, false
	return formats.WriteJSONLine(w.w, typeLine{"turn.started"})
}

// failure is the message of a failed turn: the given one, else the fatal
// error written before, else a default.
func (w *writer) failure(msg string) string {
	switch {
	case msg != "":
		return msg
	case w.run.errored:
		return w.run.lastError
	}
	return "turn failed"
}

// endTurn closes the open turn, with the usage gathered since it began.
func (w *writer) endTurn(failed bool, msg string) error {
	w.run.turnOpen = false
	w.run.turns++
	w.run.turnFail = failed
	seen := w.run.usageSeen
	w.run.usageSeen = false
	if failed {
		if seen {
			w.lose("token usage of failed turns")
		}
		return formats.WriteJSONLine(w.w, turnFailedLine{"turn.failed", message{msg}})
	}
	var u *usageLine
	if seen {
		u = &usageLine{w.run.usage.InputTokens.V, w.run.usage.CacheReadTokens.V, w.run.usage.OutputTokens.V}
		w.run.written.Add(w.run.usage)
	}
	w.run.usage = formats.UsageInfo{}
	return formats.WriteJSONLine(w.w, turnCompletedLine{"turn.completed", u})
}

// flush writes the reasoning and streamed text gathered so far, before an
// event of another kind. Before a whole Message the streamed text is left to
// it, since the message repeats it.
func (w *writer) flush(beforeMessage bool) error {
	if w.run.thinking.Len() > 0 {
		t := w.run.thinking.String()
		w.run.thinking.Reset()
		if err := w.ensureTurn(); err != nil {
			return err
		}
		if err := w.writeItem("item.completed", textItem{w.newID(), "reasoning", t}); err != nil {
			return err
		}
	}
	if beforeMessage {
		return nil
	}
	if t := w.text.Flush(""); t != "" {
		return w.message(t)
	}
	return nil
}

func (w *writer) message(text string) error {
	w.run.lastText, w.run.wroteText = text, true
	return w.writeItem("item.completed", textItem{w.newID(), "agent_message", text})
}

func (w *writer) writeItem(evType string, it any) error {
	if err := w.ensureTurn(); err != nil {
		return err
	}
	return formats.WriteJSONLine(w.w, itemLine{evType, it})
}

func (w *writer) newID() string {
	for {
		id := "item_" + strconv.Itoa(w.run.nextItem)
		w.run.nextItem++
		if !w.run.used[id] {
			w.use(id)
			return id
		}
	}
}

func (w *writer) use(id string) {
	if w.run.used == nil {
		w.run.used = map[string]bool{}
	}
	w.run.used[id] = true
}

// itemID is the item id of a call: the call's own id (even none), so that
// it survives a round trip, or a synthetic one when an earlier item took
// it. Its start and end get the same.
func (w *writer) itemID(callID string) string {
	if id, ok := w.run.itemIDs[callID]; ok {
		return id
	}
	if w.run.itemIDs == nil {
		w.run.itemIDs = map[string]string{}
	}
	id := callID
	if id != "" && w.run.used[id] {
		id = w.newID()
	}
	w.use(id)
	w.run.itemIDs[callID] = id
	return id
}

// toolItem rebuilds the thread item of a call from its name and arguments:
// codex's own item types come back as they were read; any other tool
// becomes an MCP call without a server.
func (w *writer) toolItem(c *formats.Call, id string) any {
	status := itemStatus(c.Status)
	switch c.Name {
	case typeCommand:
		var a commandArgs
		json.Unmarshal(c.Args, &a)
		it := commandItem{ID: id, Type: typeCommand, Command: a.Command, AggregatedOutput: c.Output, Status: status}
		switch c.Status {
		case formats.Completed:
			it.ExitCode = intPtr(0)
		case formats.Denied:
			it.AggregatedOutput = c.Error
		case formats.Failed, formats.Cancelled:
			if n, ok := strings.CutPrefix(c.Error, "exit code "); ok {
				if code, err := strconv.Atoi(n); err == nil {
					it.ExitCode = intPtr(code)
					break
				}
			}
			if c.Error != "" {
				it.AggregatedOutput = joinLines(c.Output, c.Error)
				w.lose("tool error texts (merged into the output)")
			}
		}
		return it
	case typeFile:
		var a fileArgs
		json.Unmarshal(c.Args, &a)
		w.loseError(c)
		return fileItem{id, typeFile, orNull(a.Changes), status}
	case typeSearch:
		var a searchArgs
		json.Unmarshal(c.Args, &a)
		w.loseError(c)
		if !done(c.Status) || c.Status == formats.Completed {
			status = ""
		}
		it := searchItem{ID: id, Type: typeSearch, Query: a.Query, Action: a.Action, Status: status}
		if out := strings.TrimSpace(c.Output); done(c.Status) && strings.HasPrefix(out, "[") && json.Valid([]byte(out)) {
			it.Results = json.RawMessage(out)
		}
		return it
	case typeCollab:
		var a collabArgs
		json.Unmarshal(c.Args, &a)
		w.loseError(c)
		states := json.RawMessage("{}")
		if c.Output != "" && json.Valid([]byte(c.Output)) {
			states = json.RawMessage(c.Output)
		}
		return collabItem{id, typeCollab, orNull(a.Tool), a.SenderThreadID, orNull(a.ReceiverThreadIDs), a.Prompt, states, status}
	}
	it := mcpItem{ID: id, Type: typeMCP, Tool: c.Name, Arguments: c.Args, Status: status}
	if rest, ok := strings.CutPrefix(c.Name, "mcp__"); ok {
		if server, tool, ok := strings.Cut(rest, "__"); ok {
			it.Server, it.Tool = server, tool
		}
	}
	if len(it.Arguments) == 0 {
		it.Arguments = json.RawMessage("{}")
	}
	if done(c.Status) {
		if c.Error != "" {
			it.Error = &message{c.Error}
		}
		if c.Output != "" || c.Error == "" {
			it.Result = &mcpResultLine{Content: []mcpContent{}, StructuredContent: json.RawMessage("null")}
			if c.Output != "" {
				it.Result.Content = append(it.Result.Content, mcpContent{"text", c.Output})
			}
		}
	}
	return it
}

// loseError reports the error text of an item type that has no field for it.
func (w *writer) loseError(c *formats.Call) {
	if c.Error != "" && done(c.Status) {
		w.lose("tool error texts")
	}
}

// done reports whether a call has ended.
func done(s formats.Status) bool { return s != formats.StatusUnknown && s != formats.Running }

// itemStatus is the status word of an item; codex has no "cancelled".
func itemStatus(s formats.Status) string {
	switch s {
	case formats.Completed:
		return "completed"
	case formats.Denied:
		return "declined"
	case formats.Failed, formats.Cancelled:
		return "failed"
	}
	return "in_progress"
}

// endRun closes the run: the open turn ends (or an empty turn is written,
// so that a reader sees the run end), failed if the run failed.
func (w *writer) endRun(e *formats.Event) error {
	defer w.reset()
	ok := e.Status == formats.Completed ||
		(e.Status == formats.StatusUnknown && (!e.Run.ExitCode.OK || e.Run.ExitCode.V == 0))
	msg := e.Text
	if msg == "" && w.run.errored {
		msg = w.run.lastError
	}
	if msg == "" && !ok && !w.run.errored {
		switch {
		case w.run.denied != "":
			msg = w.run.denied
		case e.Status == formats.Cancelled:
			msg = "the run was cancelled"
		default:
			msg = "the run failed"
		}
	}
	if w.run.turnOpen || w.run.turns == 0 {
		if err := w.ensureTurn(); err != nil {
			return err
		}
		if !e.Usage.Empty() {
			// The run's totals win: the last turn gets what the turns
			// written before did not count, so that they sum to them.
			w.run.usage, w.run.usageSeen = remainder(e.Usage, w.run.written), true
		}
		return w.endTurn(!ok, msg)
	}
	if !e.Usage.Empty() && w.run.written.Empty() {
		w.lose("token usage and cost")
	}
	if !ok && !w.run.turnFail && !(w.run.errored && w.run.lastError == msg) {
		return formats.WriteJSONLine(w.w, errorLine{"error", msg})
	}
	return nil
}

func (w *writer) reset() {
	w.calls.Reset()
	w.text.Reset()
	w.run = writerRun{}
}

func (w *writer) Close() error { return nil }

// reportLosses counts what a codex stream has no place for.
func (w *writer) reportLosses(e *formats.Event) {
	rep := w.report()
	if !e.Time.IsZero() {
		rep.Lose("event timestamps")
	}
	switch e.Kind {
	case formats.RunStart:
		if e.Run.Cwd != "" {
			rep.Lose("working directories")
		}
		if e.Run.Model != "" {
			rep.Lose("model names")
		}
	case formats.UserMessage:
		rep.Lose("user prompts")
	case formats.Usage:
		if e.Usage.CostUSD.OK {
			rep.Lose("costs")
		}
		if e.Usage.CacheWriteTokens.V > 0 {
			rep.Lose("cache write token counts")
		}
	case formats.ToolResult:
		if e.Duration > 0 {
			rep.Lose("tool call durations")
		}
		if e.Call.Status == formats.Cancelled {
			rep.Lose("cancelled tool calls (written as failed)")
		}
	case formats.Compaction:
		rep.Lose("compactions")
	case formats.ModelChange:
		rep.Lose("model changes")
	case formats.PermissionRequest:
		rep.Lose("permission requests")
	case formats.PermissionAnswer:
		rep.Lose("permission answers")
	case formats.AgentStart:
		rep.Lose("subagents (their tool calls are flattened into the run)")
	case formats.AgentEnd:
		if e.Text != "" {
			rep.Lose("subagent reports")
		}
	case formats.TextDelta, formats.Message, formats.ThinkingDelta:
		if e.Agent != "" {
			rep.Lose("subagent text")
		}
	case formats.Answer:
		if e.Agent != "" {
			rep.Lose("subagent answers")
		}
	case formats.TurnStart, formats.TurnEnd:
		if e.Agent != "" {
			rep.Lose("turn boundaries")
		}
	case formats.Raw:
		rep.Lose("unknown " + e.Source.Dialect + " events")
	case formats.RunEnd:
		if e.Duration > 0 {
			rep.Lose("run durations")
		}
		if e.Usage.CostUSD.OK && !w.run.usageSeen {
			rep.Lose("costs")
		}
		if e.Run.SessionID != "" && w.run.sessionID == "" {
			rep.Lose("session ids given only at the run's end")
		}
		if c := e.Run.ExitCode; c.OK && c.V != 0 && c.V != 1 {
			rep.Lose("exit codes other than 0 and 1")
		}
	}
}

// report is where losses go: nowhere while a copied codex run is closed.
func (w *writer) report() *formats.Report {
	if w.run.same {
		return nil
	}
	return w.opts.Report
}

func (w *writer) lose(what string) { w.report().Lose(what) }

// remainder is the part of the run's token counts that the turns written
// did not count.
func remainder(total, written formats.UsageInfo) formats.UsageInfo {
	sub := func(t, w formats.Opt[int64]) formats.Opt[int64] {
		if !t.OK {
			return t
		}
		return formats.Some(max(t.V-w.V, 0))
	}
	return formats.UsageInfo{InputTokens: sub(total.InputTokens, written.InputTokens),
		CacheReadTokens: sub(total.CacheReadTokens, written.CacheReadTokens), OutputTokens: sub(total.OutputTokens, written.OutputTokens)}
}

func intPtr(v int) *int { return &v }

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}
