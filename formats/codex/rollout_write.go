package codex

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The rollout writer writes each session as Codex records it, so that
// `codex resume` can continue it: session_meta first (the thread id a
// UUID), then per run (a Codex task) task_started, the prompt as a user
// message item and a user_message event, a turn_context with the model,
// the assistant's messages (agent_message and the message item), reasoning
// (agent_reasoning), tool calls (function_call and function_call_output),
// token_count events, and task_complete, turn_aborted or an error at the
// end. With -o DIR each session goes to its own file,
// YYYY/MM/DD/rollout-<start>-<uuid>.jsonl, as under ~/.codex/sessions.
type rolloutWriter struct {
	stream io.Writer
	opts   formats.WriteOptions
	// files are the sessions' and subagents' rollouts, by id; open are
	// those whose file is open, in the order they were opened.
	files map[string]*rolloutFile
	open  []*rolloutFile
	cur   *rolloutFile
	// subCopy is where the record observed last goes, if a subagent's.
	subCopy io.Writer
	runs    int // runs without a session id, for their thread ids
	run     writeRun
	err     error
	last    formats.Event // the time of the last event written, for what Close writes
	// stamps times the lines written: where the source has no times,
	// they strictly increase, and none is the zero time.
	stamps formats.Stamps
}

// rolloutFile is one session's rollout. With -o DIR, path is its file's;
// c is nil once it is closed, until the session is written again.
type rolloutFile struct {
	id    string
	path  string
	w     io.Writer
	c     io.Closer
	total tokenTotals // the session's running token counts
	turns int         // the tasks written
}

type tokenTotals struct{ in, cached, out, reasoning, total int64 }

// writeRun is the state of the run being written.
type writeRun struct {
	open     bool
	taskOpen bool
	turnID   string
	turns    int
	context  bool // a turn_context was written for the task
	model    string
	cwd      string
	calls    formats.CallMap[bool] // the calls written (function_call), while open and for a while after
	pending  []string              // the calls written without their output, in order
	usage    bool                  // a token_count was written
	sum      formats.UsageInfo     // the usage written
	errored  bool                  // an error was written since the last output
	worked   bool                  // the open task has the model's work, not only its prompt
	text     strings.Builder       // streamed text not yet written
	thinking strings.Builder
	lastText string
}

func newRolloutWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	return &rolloutWriter{stream: w, opts: o, files: map[string]*rolloutFile{}}
}

// Observe follows a record that the pipeline copies: a run's start picks
// its session's file, where its records go (CopyTo).
func (w *rolloutWriter) Observe(e *formats.Event, _ *formats.RunView) {
	if e.Kind == formats.RunStart {
		w.cur, w.err = w.file(e, false)
	}
	w.subCopy = nil
	if e.Agent != "" {
		w.subCopy, w.err = w.subagentFile(e)
	}
}

// subagentFile is where the copied records of a subagent go: its own
// rollout with -o DIR, named by its thread id, as Codex keeps it; nothing
// to a stream, where it would end its parent's session (reported lost).
func (w *rolloutWriter) subagentFile(e *formats.Event) (io.Writer, error) {
	if f := w.files[e.Agent]; f != nil {
		return f.w, w.reopen(f)
	}
	if w.opts.Create == nil {
		if e.Kind == formats.AgentStart && w.opts.Report != nil {
			w.opts.Report.Quirk(lossSubagentRollout)
		}
		return io.Discard, nil
	}
	p := rolloutPath(e.TimeOf(), e.Agent)
	c, err := w.opts.Create(p)
	if err != nil {
		return nil, err
	}
	f := &rolloutFile{id: e.Agent, path: p, w: c, c: c}
	w.files[e.Agent] = f
	w.open = append(w.open, f)
	return f.w, nil
}

// CopyTo is the file of the session being copied, with -o DIR.
func (w *rolloutWriter) CopyTo() io.Writer {
	if w.subCopy != nil {
		return w.subCopy
	}
	if w.cur == nil || w.opts.Create == nil {
		return nil
	}
	return w.cur.w
}

// file returns the rollout of the run's session, made if new; meta writes
// its session_meta (a copy has its own).
func (w *rolloutWriter) file(e *formats.Event, meta bool) (*rolloutFile, error) {
	at := e.TimeOf()
	if meta || at.IsZero() {
		at = w.stamps.Next(e)
	}
	sid := e.Run.SessionID
	if sid == "" {
		w.runs++
		sid = fmt.Sprintf("agentconv:%s:run-%d", at.UTC().Format(time.RFC3339Nano), w.runs)
	}
	id := sessionUUID(sid)
	f := w.files[id]
	if err := w.closeOthers(f); err != nil {
		return nil, err
	}
	if f == nil {
		f = &rolloutFile{id: id, w: w.stream}
		if w.opts.Create != nil {
			f.path = rolloutPath(at, id)
			c, err := w.opts.Create(f.path)
			if err != nil {
				return nil, err
			}
			f.w, f.c = c, c
			w.open = append(w.open, f)
		}
		w.files[id] = f
	} else if err := w.reopen(f); err != nil {
		return nil, err
	}
	if meta {
		// Each run of the session opens with its meta (Codex takes the
		// first as the session's and passes over the others), so that a
		// run without a prompt still starts where it did.
		m := map[string]any{"id": id, "timestamp": stamp(at), "cwd": e.Run.Cwd, "originator": "agentconv",
			"cli_version": "", "instructions": nil, "source": "cli", "model_provider": w.modelProvider(e)}
		if e.Run.AgentName == AgentName {
			// Another agent's version is not Codex's.
			m["cli_version"] = e.Run.AgentVersion
		}
		if e.Run.SessionID != id {
			m["agentconv_session_id"] = e.Run.SessionID
		}
		if s := e.Run.SystemInstructions; s != "" {
			m["base_instructions"] = map[string]string{"text": s}
		}
		if err := w.put(f, "session_meta", at, m); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// closeOthers closes the files open but f's when the run of another
// session begins (with -o DIR, where the conversion can reopen them): they
// are put in place as the conversion goes, and a conversion of many
// sessions holds few files open.
func (w *rolloutWriter) closeOthers(f *rolloutFile) error {
	if w.opts.Reopen == nil {
		return nil
	}
	var first error
	kept := w.open[:0]
	for _, g := range w.open {
		if g == f {
			kept = append(kept, g)
			continue
		}
		if err := g.c.Close(); err != nil && first == nil {
			first = err
		}
		g.w, g.c = closedFile{}, nil
	}
	clear(w.open[len(kept):])
	w.open = kept
	return first
}

// closedFile is the writer of a file closeOthers closed, until reopen.
type closedFile struct{}

func (closedFile) Write([]byte) (int, error) {
	return 0, errors.New("codex-rollout: written to a session's file after it was closed")
}

// reopen continues the file of a session (or subagent) closed by
// closeOthers.
func (w *rolloutWriter) reopen(f *rolloutFile) error {
	if f.c != nil || f.path == "" {
		return nil
	}
	c, err := w.opts.Reopen(f.path)
	if err != nil {
		return err
	}
	f.w, f.c = c, c
	w.open = append(w.open, f)
	return nil
}

// modelProvider is the provider Codex continues the session with (Codex
// 0.171 resumes a session only under the provider its session_meta names,
// and lists sessions by it): a rollout source's own, else the
// --codex-model-provider setting, else openai.
func (w *rolloutWriter) modelProvider(e *formats.Event) string {
	if e.Source.Dialect == Rollout.Name && e.Run.Provider != "" {
		return e.Run.Provider
	}
	return w.opts.Param(ParamModelProvider, DefaultModelProvider)
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// put writes one rollout line.
func (w *rolloutWriter) put(f *rolloutFile, typ string, at time.Time, payload any) error {
	p, err := formats.Marshal(payload)
	if err != nil {
		return err
	}
	var j formats.JSONLine
	j.Begin().Str("timestamp", stamp(at)).Str("type", typ).Raw("payload", p)
	_, err = j.WriteTo(f.w)
	return err
}

func (w *rolloutWriter) line(typ string, e *formats.Event, payload any) error {
	if w.cur == nil {
		return nil
	}
	return w.put(w.cur, typ, w.stamps.Next(e), payload)
}

func (w *rolloutWriter) event(e *formats.Event, payload map[string]any) error {
	return w.line("event_msg", e, payload)
}

func (w *rolloutWriter) item(e *formats.Event, payload map[string]any) error {
	return w.line("response_item", e, payload)
}

func (w *rolloutWriter) Write(e *formats.Event, v *formats.RunView) error {
	if w.err != nil {
		return w.err
	}
	if !e.Time.IsZero() || !e.Arrived.IsZero() {
		w.last = formats.Event{Time: e.Time, Arrived: e.Arrived}
	}
	if e.Source.Dialect == w.opts.Dialect && e.Source.NothingToCopy() {
		// Made by this dialect's reader without a record: nothing to write.
		if e.Kind == formats.RunStart {
			w.cur, w.err = w.file(e, false)
		}
		return w.err
	}
	switch e.Kind {
	case formats.RunStart:
		f, err := w.file(e, true)
		if err != nil {
			return err
		}
		w.cur = f
		w.run = writeRun{open: true, model: e.Run.Model, cwd: e.Run.Cwd}
		return nil
	case formats.RunEnd:
		return w.endRun(e, v)
	}
	if w.cur == nil {
		// Outside a run (a writer used without a pipeline): one of its own.
		if err := w.Write(&formats.Event{Kind: formats.RunStart, Time: e.Time, Arrived: e.Arrived}, v); err != nil {
			return err
		}
	}
	if e.Kind != formats.TextDelta && e.Kind != formats.ThinkingDelta && e.Kind != formats.Raw {
		// (A record the reader kept raw, such as a stream's marks
		// between a message's deltas and the message, ends no text.)
		if err := w.flushText(e); err != nil {
			return err
		}
	}
	sub := e.Agent != ""
	switch e.Kind {
	case formats.TurnStart:
		if sub {
			return nil
		}
		if w.run.taskOpen && !w.run.worked {
			return nil // the prompt opened it
		}
		if err := w.endTask(e, v); err != nil {
			return err
		}
		return w.startTask(e)
	case formats.TurnEnd:
		if sub {
			return nil
		}
		if !w.run.taskOpen {
			// A turn the source ends without starting it (one that failed
			// at once): a task of its own.
			if err := w.startTask(e); err != nil {
				return err
			}
		}
		if e.Status == formats.Cancelled {
			w.run.taskOpen = false
			return w.event(e, map[string]any{"type": "turn_aborted", "turn_id": w.run.turnID, "reason": "interrupted"})
		}
		if e.Status == formats.Failed && !w.run.errored {
			if err := w.event(e, map[string]any{"type": "error", "message": e.FinalText()}); err != nil {
				return err
			}
			w.run.errored = true
		}
		return w.endTask(e, v)
	case formats.UserMessage:
		if sub {
			return nil
		}
		if w.run.taskOpen && w.run.worked {
			// A follow-up after the task's work: a task of its own.
			if err := w.endTask(e, v); err != nil {
				return err
			}
		}
		if !w.run.taskOpen {
			if err := w.startTask(e); err != nil {
				return err
			}
		}
		if err := w.item(e, map[string]any{"type": "message", "role": "user",
			"content": []contentPart{{Type: "input_text", Text: e.Prompt()}}}); err != nil {
			return err
		}
		if err := w.event(e, map[string]any{"type": "user_message", "message": e.Prompt(), "images": []string{}}); err != nil {
			return err
		}
		return w.turnContext(e)
	case formats.TextDelta:
		if !sub {
			w.run.text.WriteString(e.Piece())
		}
		return nil
	case formats.ThinkingDelta:
		if !sub {
			w.run.thinking.WriteString(e.Piece())
		}
		return nil
	case formats.Message:
		if sub {
			return nil
		}
		if err := w.begin(e); err != nil {
			return err
		}
		if e.Thinking != "" {
			if err := w.event(e, map[string]any{"type": "agent_reasoning", "text": e.Thinking}); err != nil {
				return err
			}
		}
		if e.MessageText() != "" {
			return w.message(e, e.MessageText())
		}
		return nil
	case formats.ToolCall, formats.ToolResult:
		if sub {
			// The main model never made a subagent's calls: in its
			// history they would be calls it did not ask for. The
			// pipeline reports them (Carries has no SubagentToolCalls).
			return nil
		}
		if err := w.begin(e); err != nil {
			return err
		}
		if e.Kind == formats.ToolCall {
			return w.call(e, e.Call)
		}
		if _, written := w.run.calls.Get(e.Call.ID); !written {
			c := e.Call
			if c.Name == "" {
				if tc := v.Calls.Get(c.ID); tc != nil {
					c.Name = tc.Name
				}
			}
			if err := w.call(e, c); err != nil {
				return err
			}
		}
		w.run.errored = false
		w.run.pending = slices.DeleteFunc(w.run.pending, func(id string) bool { return id == e.Call.ID })
		w.run.calls.End(e.Call.ID)
		return w.item(e, map[string]any{"type": "function_call_output", "call_id": e.Call.ID, "output": outputText(e)})
	case formats.Usage:
		if err := w.begin(e); err != nil {
			return err
		}
		return w.tokenCount(e, e.Usage)
	case formats.Todos:
		if sub {
			return nil
		}
		plan := make([]planStep, len(e.Todos))
		for i, t := range e.Todos {
			plan[i] = planStep{Step: t.Content, Status: t.Status}
		}
		return w.event(e, map[string]any{"type": "plan_update", "explanation": nil, "plan": plan})
	case formats.Compaction:
		return w.line("compacted", e, map[string]any{"message": e.Summary()})
	case formats.ModelChange:
		if sub || e.Run.Model == "" || e.Run.Model == w.run.model {
			return nil
		}
		w.run.model = e.Run.Model
		if w.run.taskOpen {
			return w.writeContext(e)
		}
		return nil
	case formats.Notice:
		if sub {
			return nil
		}
		switch e.Severity {
		case formats.Error:
			w.run.errored = true
			return w.event(e, map[string]any{"type": "error", "message": e.NoticeText()})
		case formats.Warning:
			return w.event(e, map[string]any{"type": "warning", "message": e.NoticeText()})
		}
		return w.event(e, map[string]any{"type": "background_event", "message": e.NoticeText()})
	}
	return nil
}

// begin opens a task for the model's work if none is open.
func (w *rolloutWriter) begin(e *formats.Event) error {
	if !w.run.taskOpen {
		if err := w.startTask(e); err != nil {
			return err
		}
	}
	w.run.worked = true
	return w.turnContext(e)
}

func (w *rolloutWriter) startTask(e *formats.Event) error {
	w.run.turns++
	w.run.taskOpen, w.run.context, w.run.worked = true, false, false
	w.cur.turns++
	w.run.turnID = fmt.Sprintf("%s-turn-%d", w.cur.id, w.cur.turns)
	return w.event(e, map[string]any{"type": "task_started", "turn_id": w.run.turnID, "model_context_window": nil})
}

// endTask writes the task's end, with its last message.
func (w *rolloutWriter) endTask(e *formats.Event, v *formats.RunView) error {
	if !w.run.taskOpen {
		return nil
	}
	w.run.taskOpen = false
	var last any
	if t := w.run.lastText; t != "" {
		last = t
	}
	return w.event(e, map[string]any{"type": "task_complete", "turn_id": w.run.turnID, "last_agent_message": last})
}

func (w *rolloutWriter) turnContext(e *formats.Event) error {
	if w.run.context {
		return nil
	}
	return w.writeContext(e)
}

// writeContext writes the turn's context: the model of record, and the
// settings every TurnContextItem has (the most restrictive ones).
func (w *rolloutWriter) writeContext(e *formats.Event) error {
	w.run.context = true
	return w.line("turn_context", e, map[string]any{"turn_id": w.run.turnID, "cwd": w.run.cwd,
		"approval_policy": "on-request", "sandbox_policy": map[string]string{"type": "read-only"},
		"model": w.run.model, "summary": "auto"})
}

func (w *rolloutWriter) message(e *formats.Event, text string) error {
	w.run.lastText = text
	w.run.errored = false
	if err := w.event(e, map[string]any{"type": "agent_message", "message": text}); err != nil {
		return err
	}
	return w.item(e, map[string]any{"type": "message", "role": "assistant",
		"content": []contentPart{{Type: "output_text", Text: text}}})
}

// flushText writes streamed reasoning and text as whole records, when the
// agent moves on; a whole message that repeats them is not written again.
func (w *rolloutWriter) flushText(e *formats.Event) error {
	th, tx := w.run.thinking.String(), w.run.text.String()
	w.run.thinking.Reset()
	w.run.text.Reset()
	if th == "" && tx == "" {
		return nil
	}
	if err := w.begin(e); err != nil {
		return err
	}
	if th != "" && !(e.Kind == formats.Message && e.Thinking == th) {
		if err := w.event(e, map[string]any{"type": "agent_reasoning", "text": th}); err != nil {
			return err
		}
	}
	if tx != "" {
		if e.Kind == formats.Message && e.MessageText() == tx {
			return nil
		}
		return w.message(e, tx)
	}
	return nil
}

func (w *rolloutWriter) call(e *formats.Event, c formats.Call) error {
	w.run.calls.Set(c.ID, true)
	w.run.pending = append(w.run.pending, c.ID)
	args := string(c.Args)
	if args == "" || args == "null" {
		args = "{}"
	}
	w.run.errored = false
	return w.item(e, map[string]any{"type": "function_call", "name": c.Name, "arguments": args, "call_id": c.ID})
}

// outputText is a call's output as a function_call_output says it: the
// text, or, for a call that failed or has an exit code or duration, the
// wrapper Codex's shell tools printed before 0.46 (with "success" and
// "error" for a failure without an exit code).
func outputText(e *formats.Event) string {
	c := &e.Call
	failed := c.Status != formats.Completed && c.Status != formats.StatusUnknown
	if !failed && !c.ExitCode.OK && e.Duration <= 0 {
		return c.Output.Text()
	}
	var j formats.JSONLine
	j.Begin().Str("output", c.Output.Text())
	if c.ExitCode.OK || e.Duration > 0 {
		var m formats.JSONLine
		m.Begin()
		if c.ExitCode.OK {
			m.Int("exit_code", int64(c.ExitCode.V))
		}
		if e.Duration > 0 {
			m.Raw("duration_seconds", []byte(strconv.FormatFloat(e.Duration.Seconds(), 'f', -1, 64)))
		}
		var b strings.Builder
		m.WriteTo(&b)
		j.Raw("metadata", []byte(strings.TrimSuffix(b.String(), "\n")))
	}
	exitSays := c.ExitCode.OK && c.ExitCode.V != 0
	if failed && !exitSays {
		j.Bool("success", false)
	}
	if c.Error != "" && !(exitSays && c.Error == "exit code "+strconv.Itoa(c.ExitCode.V)) {
		j.Str("error", c.Error)
	}
	var b strings.Builder
	j.WriteTo(&b)
	return strings.TrimSuffix(b.String(), "\n")
}

// tokenCount writes one request's usage, with the session's running total
// as total_token_usage.
func (w *rolloutWriter) tokenCount(e *formats.Event, u formats.UsageInfo) error {
	w.run.usage = true
	w.run.sum.Add(u)
	last := tokenTotals{in: u.InputTokens.V, cached: u.CacheReadTokens.V, out: u.OutputTokens.V,
		reasoning: u.ReasoningTokens.V, total: u.Total().V}
	t := &w.cur.total
	t.in, t.cached, t.out, t.reasoning, t.total = t.in+last.in, t.cached+last.cached, t.out+last.out,
		t.reasoning+last.reasoning, t.total+last.total
	if u.CacheWriteTokens.OK || !u.InputTokens.OK || !u.OutputTokens.OK {
		if !u.InputTokens.OK || !u.OutputTokens.OK {
			w.opts.Report.Quirk(formats.ZeroTokenCounts)
		}
	}
	return w.event(e, map[string]any{"type": "token_count", "info": map[string]any{
		"total_token_usage": t.json(), "last_token_usage": last.json(), "model_context_window": nil}, "rate_limits": nil})
}

func (t tokenTotals) json() json.RawMessage {
	var j formats.JSONLine
	j.Begin().Int("input_tokens", t.in).Int("cached_input_tokens", t.cached).Int("output_tokens", t.out).
		Int("reasoning_output_tokens", t.reasoning).Int("total_tokens", t.total)
	var b strings.Builder
	j.WriteTo(&b)
	return json.RawMessage(strings.TrimSuffix(b.String(), "\n"))
}

// endRun ends the task as the run ended: complete, aborted, or failed
// with its error.
func (w *rolloutWriter) endRun(e *formats.Event, v *formats.RunView) error {
	if w.cur == nil {
		return nil
	}
	if err := w.flushText(e); err != nil {
		return err
	}
	if err := w.abortPending(e); err != nil {
		return err
	}
	if !w.run.usage && !v.Usage.Empty() && v.Requests == 0 && (v.Usage.InputTokens.OK || v.Usage.OutputTokens.OK) {
		// Run totals from a source without per-request usage: one count.
		if err := w.begin(e); err != nil {
			return err
		}
		if err := w.tokenCount(e, v.Usage); err != nil {
			return err
		}
	}
	if s, u := w.run.sum, v.Usage; s.InputTokens.V != u.InputTokens.V || s.OutputTokens.V != u.OutputTokens.V ||
		s.CacheReadTokens.V != u.CacheReadTokens.V {
		w.opts.Report.Quirk(formats.UnsummedRunUsage)
	}
	if v.ExitCode != 0 && v.ExitCode != 1 {
		w.opts.Report.Quirk(formats.ExitCodesBeyond01)
	}
	if v.Prompts == 0 {
		w.opts.Report.Quirk(formats.PromptsNeverGiven)
	}
	switch v.Status {
	case formats.Completed:
		if !w.run.taskOpen && w.run.turns == 0 {
			if err := w.begin(e); err != nil {
				return err
			}
		}
		if a := v.Answer(); a != "" && w.run.lastText == "" {
			// An answer of a run that wrote no message (AdaL's answer
			// event, a result line alone): the model's last response,
			// which Codex resuming the session sends as such.
			if err := w.begin(e); err != nil {
				return err
			}
			if err := w.message(e, a); err != nil {
				return err
			}
		}
	case formats.Cancelled:
		id := w.run.turnID
		if !w.run.taskOpen {
			id = ""
		}
		w.run = writeRun{}
		return w.event(e, map[string]any{"type": "turn_aborted", "turn_id": id, "reason": "interrupted"})
	default:
		// The error ends the run; a task open ends with it.
		if !w.run.errored {
			msg := ""
			if v.FailureSaid {
				msg = v.Failure
			}
			if err := w.event(e, map[string]any{"type": "error", "message": msg}); err != nil {
				return err
			}
		}
	}
	err := w.endTask(e, v)
	w.run = writeRun{}
	return err
}

// lossAborted: a call the source never gave a result, written as Codex
// writes a call its interrupted turn cut.
var lossAborted = formats.NewQuirk("tool calls without a result (written with Codex's \"aborted\" output)")

// abortPending ends the run's calls that had no result as Codex ends the
// calls of an interrupted turn: a function_call_output of "aborted".
// Without it, Codex puts that output in the history itself when it
// resumes (0.45 at the start of the next request, newer ones after the
// call, with an error).
func (w *rolloutWriter) abortPending(e *formats.Event) error {
	for _, id := range w.run.pending {
		w.opts.Report.Quirk(lossAborted)
		if err := w.item(e, map[string]any{"type": "function_call_output", "call_id": id, "output": "aborted"}); err != nil {
			return err
		}
	}
	w.run.pending = nil
	return nil
}

// Close closes every session's file.
func (w *rolloutWriter) Close() error {
	var first error
	if w.cur != nil && w.err == nil {
		// A run left open (the writer was not given its end): what was
		// streamed into it is written still.
		if err := w.flushText(&w.last); err != nil {
			first = err
		}
	}
	for _, f := range w.open {
		if err := f.c.Close(); err != nil && first == nil {
			first = err
		}
	}
	w.files, w.open, w.cur = nil, nil, nil
	return first
}
