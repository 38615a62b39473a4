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
// ids item_0, item_1, … in order (tool calls keep their own ids), and
// turn.completed or turn.failed at the end, as `codex exec --json` does. It
// reads the run's outcome, failure and usage totals from the run view; what
// it keeps itself is about its own encoding: the thread and turn it has
// open, the item ids it gave, and what it printed last.
type writer struct {
	w    io.Writer
	opts formats.WriteOptions
	view *formats.RunView
	text formats.TextTracker
	run  writerRun
}

// writerRun is the state of the thread being written.
type writerRun struct {
	open bool
	// pending: thread.started waits for the run's first line, so that it
	// names the session when the source says it only later.
	pending   bool
	sessionID string // the thread id written
	turnOpen  bool
	turns     int
	turnFail  bool // the last turn written failed
	// held: the last turn ended, and its line waits (see endTurn).
	held      bool
	heldFail  bool
	heldMsg   string
	nextItem  int
	items     map[*formats.TrackedCall]*callItem
	used      map[string]bool // item ids written in the run
	callIDs   map[string]bool // of those, the ids that calls brought
	openCalls map[string]int  // call items started and not yet completed, by id
	todoID    string
	thinking  strings.Builder
	lastText  string // the last agent_message written
	wroteText bool
	lastError string // the last fatal error line written
	errored   bool
	usage     formats.UsageInfo // usage of the open turn
	usageSeen bool
	written   formats.UsageInfo // usage of the turns written (or reported lost)
}

// callItem is the thread item of a call.
type callItem struct {
	id        string
	completed bool
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
	// ReasoningOutputTokens, part of output_tokens, as newer Codex prints it.
	ReasoningOutputTokens *int64 `json:"reasoning_output_tokens,omitempty"`
}

type turnCompletedLine struct {
	Type  string     `json:"type"`
	Usage *usageLine `json:"usage,omitempty"`
}

// turnFailedLine is turn.failed; codex prints no usage on it, this writer
// does when the turn had some, so that a failed run's totals survive.
type turnFailedLine struct {
	Type  string     `json:"type"`
	Error message    `json:"error"`
	Usage *usageLine `json:"usage,omitempty"`
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

func (w *writer) Write(e *formats.Event, v *formats.RunView) error {
	w.view = v
	if e.Kind == formats.RunStart {
		w.reset()
		w.run.open, w.run.pending = true, true
		if e.Run.SessionID != "" {
			return w.thread(e.Run.SessionID)
		}
		return nil
	}
	if !w.run.open {
		// A writer given no RunStart (outside a pipeline).
		w.run.open, w.run.pending = true, true
	}
	if e.Agent != "" {
		// A flat thread holds a subagent's tool calls, notices and token
		// usage; the vocabulary reports the rest (SubagentThinking,
		// SubagentTodos and SubagentTurns, which codex carries of the main
		// agent alone).
		switch e.Kind {
		case formats.ToolCall, formats.ToolResult, formats.Notice, formats.Usage:
			ev := *e
			ev.Agent = ""
			e = &ev
		default:
			return nil
		}
	}
	switch e.Kind {
	case formats.TextDelta:
		w.text.Delta("", e.Piece())
		return nil
	case formats.ThinkingDelta:
		w.run.thinking.WriteString(e.Piece())
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
			w.endTurn(false, "")
		}
		return w.ensureTurn()
	case formats.TurnEnd:
		if e.FinalText() != "" && (!w.run.wroteText || w.run.lastText != e.FinalText()) {
			// The turn's final text, which no message gave: the turn's
			// last agent_message.
			if err := w.message(e.FinalText()); err != nil {
				return err
			}
		}
		if err := w.ensureTurn(); err != nil {
			return err
		}
		w.endTurn(e.Status == formats.Failed || e.Status == formats.Cancelled, "")
		return nil
	case formats.Message:
		// Deltas that carried this very text were its stream; other
		// streamed text was a message of its own.
		if t := w.text.Flush(""); t != "" && t != e.MessageText() {
			if err := w.message(t); err != nil {
				return err
			}
		}
		if e.Thinking != "" {
			if err := w.writeItem("item.completed", textItem{w.newID(), "reasoning", e.Thinking}); err != nil {
				return err
			}
		}
		if e.MessageText() != "" || e.Thinking == "" {
			return w.message(e.MessageText())
		}
	case formats.Answer:
		if !w.run.wroteText || w.run.lastText != e.AnswerText() {
			return w.message(e.AnswerText())
		}
	case formats.ToolCall:
		c := v.Calls.Get(e.Call.ID)
		return w.writeItem("item.started", w.toolItem(&e.Call, w.item(c).id))
	case formats.ToolResult:
		c := v.Calls.Get(e.Call.ID)
		it := w.item(c)
		if it.completed {
			if e.Call.ID == "" {
				// A result without an id after the last one without an
				// id ended: another call (a refusal needs no start),
				// written as the source gave it, without an id.
				call := e.Call
				call.Output = formats.TextOutput(call.Output.Text())
				return w.writeItem("item.completed", w.toolItem(&call, ""))
			}
			// Its item is complete already: a thread item ends once.
			w.opts.Report.Quirk(lossLateResults)
			return nil
		}
		it.completed = true
		w.run.openCalls[it.id]--
		call := c.Call
		call.Output = formats.TextOutput(e.Call.Output.Text())
		return w.writeItem("item.completed", w.toolItem(&call, it.id))
	case formats.Todos:
		items := make([]todoItem, len(e.Todos))
		for i, t := range e.Todos {
			items[i] = todoItem{Text: t.Content, Completed: t.Status == "completed"}
			if t.Status != "completed" && t.Status != "pending" {
				w.opts.Report.Quirk(lossTodoStatuses)
			}
		}
		typ := "item.updated"
		if w.run.todoID == "" {
			typ, w.run.todoID = "item.started", w.newID()
		}
		return w.writeItem(typ, todoListItem{w.run.todoID, "todo_list", items})
	case formats.Notice:
		if e.Severity == formats.Error {
			w.run.lastError, w.run.errored = e.NoticeText(), true
			return w.line(errorLine{"error", e.NoticeText()})
		}
		return w.writeItem("item.completed", errorItem{w.newID(), "error", e.NoticeText()})
	case formats.RunEnd:
		return w.endRun(e, v)
	}
	return nil
}

// Observe follows a record that the pipeline copies, or what the pipeline
// made to start or close a cut run it copies, which is not written. It
// keeps what closing the run needs if a signal ends it (then the pipeline
// writes the end): the thread and turn that are open.
func (w *writer) Observe(e *formats.Event, v *formats.RunView) {
	w.view = v
	switch e.Kind {
	case formats.RunStart, formats.RunEnd:
		w.reset()
		w.run.open = e.Kind == formats.RunStart
	case formats.TurnStart:
		w.run.turnOpen = true
	case formats.TurnEnd:
		w.run.turnOpen, w.run.turnFail = false, e.Status == formats.Failed || e.Status == formats.Cancelled
		w.run.turns++
	}
}

// thread writes thread.started.
func (w *writer) thread(sessionID string) error {
	w.run.pending, w.run.sessionID = false, sessionID
	return formats.WriteJSONLine(w.w, threadStartedLine{"thread.started", sessionID})
}

// line writes one line of the run, after its thread.started and the turn
// end held back.
func (w *writer) line(v any) error {
	if w.run.pending {
		if err := w.thread(w.view.Info.SessionID); err != nil {
			return err
		}
	}
	if w.run.held {
		if err := w.closeTurn(); err != nil {
			return err
		}
	}
	return formats.WriteJSONLine(w.w, v)
}

func (w *writer) ensureTurn() error {
	if w.run.turnOpen {
		return nil
	}
	if err := w.line(typeLine{"turn.started"}); err != nil {
		return err
	}
	w.run.turnOpen = true
	return nil
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

// endTurn closes the open turn. Its line waits for the next line of the
// run (see closeTurn), so that the run's last turn says how the run ended
// and carries what the run's totals count beyond the turns before it.
func (w *writer) endTurn(failed bool, msg string) {
	w.run.turnOpen = false
	w.run.turns++
	w.run.held, w.run.heldFail, w.run.heldMsg = true, failed, w.failure(msg)
}

// closeTurn writes the turn end held back, turn.completed or turn.failed,
// with the usage gathered since the turn before, in codex's convention:
// input_tokens include the cached ones and output_tokens the reasoning
// ones, as the model's do (codex has no count of cache writes).
func (w *writer) closeTurn() error {
	u, seen := w.run.usage, w.run.usageSeen
	w.run.held, w.run.turnFail = false, w.run.heldFail
	w.run.usage, w.run.usageSeen = formats.UsageInfo{}, false
	var ul *usageLine
	if seen && hasTokens(u) {
		ul = &usageLine{u.InputTokens.V, u.CacheReadTokens.V, u.OutputTokens.V, u.ReasoningTokens.Ptr()}
		w.run.written.Add(u)
	}
	if w.run.heldFail {
		return formats.WriteJSONLine(w.w, turnFailedLine{"turn.failed", message{w.run.heldMsg}, ul})
	}
	return formats.WriteJSONLine(w.w, turnCompletedLine{"turn.completed", ul})
}

// flush writes the reasoning and streamed text gathered so far, before an
// event of another kind. Before a whole Message the streamed text is left to
// it, since the message repeats it.
func (w *writer) flush(beforeMessage bool) error {
	if w.run.thinking.Len() > 0 {
		t := w.run.thinking.String()
		w.run.thinking.Reset()
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
	return w.line(itemLine{evType, it})
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

// item is the thread item of a call of the run view: its id is the call's
// own (even none), so that it survives a round trip, or a synthetic one
// when an item that has not ended holds it (another call that reused the
// id while the first was open) or a synthetic id took it. A call that
// reuses the id of one that has ended keeps it, as the source gave it.
// Its start and end get the same.
func (w *writer) item(c *formats.TrackedCall) *callItem {
	if it, ok := w.run.items[c]; ok {
		return it
	}
	if w.run.items == nil {
		w.run.items = map[*formats.TrackedCall]*callItem{}
	}
	id := c.ID
	if id != "" && w.run.used[id] && (!w.run.callIDs[id] || w.run.openCalls[id] > 0) {
		id = w.newID()
	}
	w.use(id)
	if w.run.callIDs == nil {
		w.run.callIDs, w.run.openCalls = map[string]bool{}, map[string]int{}
	}
	w.run.callIDs[id] = true
	w.run.openCalls[id]++
	it := &callItem{id: id}
	w.run.items[c] = it
	return it
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
		it := commandItem{ID: id, Type: typeCommand, Command: a.Command, AggregatedOutput: c.Output.Text(), Status: status}
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
				it.AggregatedOutput = joinLines(c.Output.Text(), c.Error)
				w.opts.Report.Quirk(formats.MergedToolErrors)
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
		if out := strings.TrimSpace(c.Output.Text()); done(c.Status) && strings.HasPrefix(out, "[") && json.Valid([]byte(out)) {
			it.Results = json.RawMessage(out)
		}
		return it
	case typeCollab:
		var a collabArgs
		json.Unmarshal(c.Args, &a)
		w.loseError(c)
		states := json.RawMessage("{}")
		if c.Output.Text() != "" && json.Valid([]byte(c.Output.Text())) {
			states = json.RawMessage(c.Output.Text())
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
		if c.Output.Text() != "" || c.Error == "" {
			it.Result = &mcpResultLine{Content: []mcpContent{}, StructuredContent: json.RawMessage("null")}
			if c.Output.Text() != "" {
				it.Result.Content = append(it.Result.Content, mcpContent{"text", c.Output.Text()})
			}
		}
	}
	return it
}

// loseError reports the error text of an item type that has no field for it.
func (w *writer) loseError(c *formats.Call) {
	if c.Error != "" && done(c.Status) {
		w.opts.Report.Quirk(lossErrorTexts)
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

// endRun closes the run with the outcome the run view settled: the open
// turn ends (or an empty turn is written, so that a reader sees the run
// end), failed if the run failed; after a completed turn, a failure is a
// fatal error line.
func (w *writer) endRun(e *formats.Event, v *formats.RunView) error {
	defer w.reset()
	if v.ExitCode != 0 && v.ExitCode != 1 {
		w.opts.Report.Quirk(formats.ExitCodesBeyond01)
	}
	ok := v.Success()
	msg := ""
	if !ok && !(e.ErrorText() == "" && w.run.errored && w.run.lastError == "") {
		// (A fatal error line without a message said it already: the
		// view's words for it would read back as another error.)
		msg = v.Failure
	}
	// The run's totals win: the last turn gets what the turns written
	// before did not count, so that they sum to them.
	rest := remainder(v.Usage, w.run.written)
	var err error
	switch {
	case w.run.turnOpen || w.run.turns == 0:
		if err = w.ensureTurn(); err != nil {
			return err
		}
		if hasTokens(v.Usage) {
			w.run.usage, w.run.usageSeen = rest, true
		}
		w.endTurn(!ok, msg)
		err = w.closeTurn()
	case w.run.held:
		if hasTokens(v.Usage) {
			w.run.usage, w.run.usageSeen = rest, true
		}
		if w.run.heldFail && !ok && msg != "" {
			w.run.heldMsg = msg // the run's failure, said by its last turn
		}
		err = w.closeTurn()
		if err == nil && !ok && !w.run.turnFail && !(w.run.errored && w.run.lastError == msg) {
			err = w.line(errorLine{"error", msg})
		}
	default:
		if counts(rest) {
			// Codex counts tokens in turn.completed alone.
			w.opts.Report.Quirk(lossLateUsage)
		}
		if !ok && !w.run.turnFail && !(w.run.errored && w.run.lastError == msg) {
			err = w.line(errorLine{"error", msg})
		}
	}
	if s := v.Info.SessionID; s != "" && s != w.run.sessionID {
		w.opts.Report.Quirk(formats.LateSessionIDs)
	}
	return err
}

func (w *writer) reset() {
	w.text.Reset()
	w.run = writerRun{}
}

// Close writes the turn end held back of a run that never ended
// (outside a pipeline, which ends every run).
func (w *writer) Close() error {
	if w.run.held {
		return w.closeTurn()
	}
	return nil
}

// hasTokens reports whether a usage counts the tokens a turn.completed
// carries.
func hasTokens(u formats.UsageInfo) bool {
	return u.InputTokens.OK || u.CacheReadTokens.OK || u.OutputTokens.OK
}

// counts reports whether a usage counts any token a turn.completed carries.
func counts(u formats.UsageInfo) bool {
	return u.InputTokens.V > 0 || u.CacheReadTokens.V > 0 || u.OutputTokens.V > 0
}

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
		CacheReadTokens: sub(total.CacheReadTokens, written.CacheReadTokens), OutputTokens: sub(total.OutputTokens, written.OutputTokens),
		ReasoningTokens: sub(total.ReasoningTokens, written.ReasoningTokens)}
}

func intPtr(v int) *int { return &v }

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}
