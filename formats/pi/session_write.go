package pi

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The session writer writes each session as pi 0.73 keeps it, so that
// `pi --session ID` resumes it: the session header (version 3, the
// session's id, time and cwd), then one chain of message entries, each
// the child of the one before: a prompt is a user message; a model's
// response an assistant message (its thinking blocks with their
// signatures, its text, its tool calls, its model, usage and cost); each
// call's result a toolResult message; a run that failed ends with an
// assistant message of stopReason error, as pi writes one (pi leaves it
// out of what it sends the model). A model change is a model_change
// entry. With -o DIR each session goes to DIR/<time>_<id>.jsonl, the name
// pi gives it (pi finds a session by the id in its header, in the folder
// of its cwd: name that folder with -o). pi's session ids are UUIDs: a
// session id that is not one gets a UUID derived from it.
type sessionWriter struct {
	stream io.Writer
	opts   formats.WriteOptions
	files  map[string]*piFile
	order  []*piFile
	out    *formats.SessionFiles // with -o DIR
	cur    *piFile
	runs   int
	cwd    string // --pi-cwd
	stamps formats.Stamps
	err    error
}

// The losses of the session writer's own encoding.
var (
	lossUnanswered    = formats.NewQuirk("tool calls without a result (written as failed calls, as pi needs a result for each)")
	lossLooseUsage    = formats.NewQuirk("token usage not given with a model response (a turn's or a run's totals)")
	lossSubagentUsage = formats.NewQuirk("token usage of subagents (pi has none: a subagent's requests are not the session's)")
)

// piFile is one session file being written.
type piFile struct {
	id   string
	w    io.Writer
	c    io.Closer
	ids  int
	leaf string // the id of the last entry written: the next one's parent
	// pending holds the entries of the turn being written, so that a
	// response's usage given after its calls' results still finds it.
	pending  []*piEntry
	asst     *piEntry          // the response being written
	open     map[string]string // calls without a result yet: id → name
	called   map[string]bool   // every call written
	sid, cwd string            // the source's session id, and the header's cwd
	runs     int               // the runs written
	sum      formats.UsageInfo // the usage written in the run
	// needPrompt: a run after the file's first began, and gave no prompt
	// yet.
	needPrompt bool
	// streamed: deltas were written into the response since its last
	// whole message, which repeats them.
	streamed bool
	model    string
	// provider and api name the source's provider as pi does, so that pi
	// resuming with the same model sends its thinking back as thinking.
	provider, api string
	lastOut       string // the last answer's text
}

// piEntry is one message entry to write.
type piEntry struct {
	id, parent string
	at         time.Time
	msg        map[string]any
	content    []any
	usage      *formats.UsageInfo
	calls      int
	// grown is the text of the block streamed into last, the
	// grownAt-th, gathered in work linear in its length.
	grown   formats.Text
	grownAt int
}

func newSessionWriter(w io.Writer, o formats.WriteOptions) formats.Writer {
	sw := &sessionWriter{stream: w, opts: o, files: map[string]*piFile{}, cwd: o.Params[ParamCwd]}
	if o.Create != nil {
		sw.out = formats.NewSessionFiles(o)
	}
	if sw.cwd != "" {
		// A session of pi's own gets the new folder too: it is rewritten,
		// not copied.
		return rewriter{sw}
	}
	return sw
}

// rewriter is the session writer without Observe: the pipeline gives it
// every event, a pi-session's too.
type rewriter struct{ w *sessionWriter }

func (r rewriter) Write(e *formats.Event, v *formats.RunView) error { return r.w.Write(e, v) }
func (r rewriter) Close() error                                     { return r.w.Close() }

// sessionUUID is the id of a session: its own when it is a UUID, else
// one derived from it.
func sessionUUID(id string) string {
	if formats.IsUUID(id) {
		return strings.ToLower(id)
	}
	return formats.NameUUID("agentconv pi-session\x00" + id)
}

// fileName is the name pi gives a session's file.
func fileName(at time.Time, id string) string {
	return strings.NewReplacer(":", "-", ".", "-").Replace(at.UTC().Format("2006-01-02T15:04:05.000Z")) + "_" + id + ".jsonl"
}

// file returns the session's file, made if new; header writes its header
// (a copied session has its own).
func (w *sessionWriter) file(e *formats.Event, header bool) (*piFile, error) {
	sid := e.Run.SessionID
	if sid == "" {
		w.runs++
		sid = "agentconv:run-" + strconv.Itoa(w.runs)
	}
	id := sessionUUID(sid)
	f := w.files[id]
	if err := w.park(f); err != nil {
		return nil, err
	}
	if f != nil {
		return f, nil
	}
	f = &piFile{id: id, sid: sid, w: w.stream, open: map[string]string{}, called: map[string]bool{}}
	at := e.TimeOf()
	if header {
		at = w.stamps.Next(e)
	}
	if w.out != nil {
		c, err := w.out.Create(fileName(at, id))
		if err != nil {
			return nil, err
		}
		f.w, f.c = c, c
	}
	w.files[id] = f
	w.order = append(w.order, f)
	if header {
		cwd := e.Run.Cwd
		if w.cwd != "" {
			cwd = w.cwd
		}
		f.cwd = cwd
		h := map[string]any{"type": "session", "version": 3, "id": id, "timestamp": stamp(at), "cwd": cwd}
		if err := formats.WriteJSONLine(f.w, orderedHeader(h)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// park, when the run of another session than the last one's begins under
// -o DIR, writes what the last one holds and lets its file go (put in
// place; reopened if the session is written again).
func (w *sessionWriter) park(next *piFile) error {
	prev := w.cur
	if w.out == nil || prev == nil || prev == next {
		return nil
	}
	if err := w.flush(prev, &formats.Event{}); err != nil {
		return err
	}
	var keep *formats.SessionFile
	if next != nil {
		keep, _ = next.c.(*formats.SessionFile)
	}
	return w.out.Park(keep)
}

// orderedHeader keeps pi's order of the header's keys.
func orderedHeader(h map[string]any) json.RawMessage {
	var b []byte
	b = append(b, '{')
	for i, k := range []string{"type", "version", "id", "timestamp", "cwd"} {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := formats.Marshal(k)
		vb, _ := formats.Marshal(h[k])
		b = append(append(append(b, kb...), ':'), vb...)
	}
	return append(b, '}')
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Observe follows a record of pi-session that the pipeline copies: the
// file of its session takes it.
func (w *sessionWriter) Observe(e *formats.Event, _ *formats.RunView) {
	if e.Kind == formats.RunStart && !e.Synthetic {
		w.cur, w.err = w.file(e, false)
	}
}

// CopyTo is the file of the session being copied, with -o DIR.
func (w *sessionWriter) CopyTo() io.Writer {
	if w.cur == nil || w.cur.c == nil {
		return nil
	}
	return w.cur.w
}

func (w *sessionWriter) Write(e *formats.Event, v *formats.RunView) error {
	if w.err != nil {
		return w.err
	}
	if e.Kind == formats.RunStart {
		f, err := w.file(e, true)
		if err != nil {
			return err
		}
		w.cur = f
		f.needPrompt = f.runs > 0
		f.runs++
		f.sum = formats.UsageInfo{}
		if e.Run.Model != "" && f.model == "" {
			f.model = e.Run.Model
		}
		if p, ok := piProviders[e.Run.Provider]; ok {
			f.provider, f.api = p[0], p[1]
		} else if e.Run.Provider != "" {
			f.provider, f.api = e.Run.Provider, ""
		}
		return nil
	}
	if w.cur == nil {
		if err := w.Write(&formats.Event{Kind: formats.RunStart, Time: e.Time, Arrived: e.Arrived}, v); err != nil {
			return err
		}
	}
	f := w.cur
	if e.Agent != "" {
		// A subagent's work is not the main model's conversation; the
		// pipeline reports what is not carried.
		if e.Kind == formats.Usage && !e.Usage.Empty() {
			w.opts.Report.Quirk(lossSubagentUsage)
		}
		return nil
	}
	if f.needPrompt && writes(e.Kind) {
		// A run of the session without a prompt: pi would read it as
		// part of the run before, so it goes to a session of its own.
		f.needPrompt = false
		w.runs++
		nf, err := w.file(&formats.Event{Time: e.Time, Arrived: e.Arrived, Run: formats.RunInfo{
			SessionID: f.sid + "/run-" + strconv.Itoa(w.runs), Cwd: f.cwd}}, true)
		if err != nil {
			return err
		}
		nf.model, nf.provider, nf.api = f.model, f.provider, f.api
		w.cur, f = nf, nf
	}
	if e.Kind == formats.UserMessage {
		f.needPrompt = false
	}
	switch e.Kind {
	case formats.UserMessage:
		if err := w.flush(f, e); err != nil {
			return err
		}
		w.add(f, e, map[string]any{"role": "user", "content": []any{textBlock(e.Prompt())}})
	case formats.TextDelta:
		a := w.response(f, e)
		f.lastOut = appendText(a, "text", e.Piece())
		f.streamed = true
	case formats.ThinkingDelta:
		a := w.response(f, e)
		appendText(a, "thinking", e.Piece())
		f.streamed = true
	case formats.Message:
		if f.streamed && f.asst != nil {
			// The whole message repeats what was streamed: only its
			// thinking blocks' signatures are new.
			f.streamed = false
			if len(e.Thoughts) > 0 {
				a := f.asst
				var rest []any
				for _, c := range a.content {
					if m, ok := c.(map[string]any); !ok || m["type"] != "thinking" {
						rest = append(rest, c)
					}
				}
				a.content = nil
				for _, t := range e.Thoughts {
					a.content = append(a.content, map[string]any{"type": "thinking", "thinking": t.Text, "thinkingSignature": t.Signature})
				}
				a.content = append(a.content, rest...)
			}
			return nil
		}
		f.streamed = false
		a := w.response(f, e)
		if a.calls > 0 || hasText(a) {
			// A message after calls, or a second whole text: the next
			// response.
			f.asst = nil
			a = w.response(f, e)
		}
		switch {
		case len(e.Thoughts) > 0:
			for _, t := range e.Thoughts {
				b := map[string]any{"type": "thinking", "thinking": t.Text}
				if t.Signature != "" {
					b["thinkingSignature"] = t.Signature
				}
				a.content = append(a.content, b)
			}
		case e.Thinking != "":
			a.content = append(a.content, map[string]any{"type": "thinking", "thinking": e.Thinking})
		}
		if e.MessageText() != "" {
			a.content = append(a.content, textBlock(e.MessageText()))
			f.lastOut = e.MessageText()
		}
	case formats.ToolCall:
		a := w.response(f, e)
		args := json.RawMessage(e.Call.Args)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		a.content = append(a.content, map[string]any{"type": "toolCall", "id": e.Call.ID, "name": e.Call.Name, "arguments": args})
		a.calls++
		f.open[e.Call.ID] = e.Call.Name
		f.called[e.Call.ID] = true
	case formats.ToolResult:
		if !f.called[e.Call.ID] {
			// A result whose call the source never gave (a call refused
			// before it started): pi needs the call before its result.
			f.asst = nil
			a := w.response(f, e)
			args := json.RawMessage(e.Call.Args)
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			a.content = append(a.content, map[string]any{"type": "toolCall", "id": e.Call.ID, "name": e.Call.Name, "arguments": args})
			a.calls++
			f.called[e.Call.ID] = true
		}
		f.asst = nil
		w.result(f, e, e.Call, false)
	case formats.Usage:
		if e.Aggregate {
			w.opts.Report.Quirk(lossLooseUsage)
			return nil
		}
		// The response without usage yet: the one being written, else the
		// turn's last.
		var a *piEntry
		for i := len(f.pending) - 1; i >= 0; i-- {
			if p := f.pending[i]; p.msg["role"] == "assistant" {
				if p.usage == nil {
					a = p
				}
				break
			}
		}
		if a == nil {
			a = w.response(f, e)
			if a.usage != nil {
				f.asst = nil
				a = w.response(f, e)
			}
		}
		u := e.Usage
		a.usage = &u
		f.sum.Add(u)
		if e.Response.Model != "" {
			a.msg["model"] = e.Response.Model
		}
		if e.Response.ID != "" {
			a.msg["responseId"] = e.Response.ID
		}
	case formats.ModelChange:
		if err := w.flush(f, e); err != nil {
			return err
		}
		if e.Run.Model != "" {
			f.model = e.Run.Model
			return w.line(f, map[string]any{"type": "model_change", "id": w.newID(f), "parentId": parentOf(f), "timestamp": stamp(w.stamps.Next(e)),
				"provider": "agentconv", "modelId": e.Run.Model}, true)
		}
	case formats.Answer:
		if strings.TrimSpace(e.AnswerText()) != "" && strings.TrimSpace(e.AnswerText()) != strings.TrimSpace(f.lastOut) {
			f.asst = nil
			a := w.response(f, e)
			a.content = append(a.content, textBlock(e.AnswerText()))
			f.lastOut = e.AnswerText()
		}
	case formats.RunEnd:
		if c := e.Run.ExitCode; c.OK && c.V != 0 && c.V != 1 {
			w.opts.Report.Quirk(formats.ExitCodesBeyond01)
		}
		if u := e.Usage; u.InputTokens.V > f.sum.InputTokens.V || u.OutputTokens.V > f.sum.OutputTokens.V ||
			u.CacheReadTokens.V > f.sum.CacheReadTokens.V || u.CacheWriteTokens.V > f.sum.CacheWriteTokens.V || u.CostUSD.V > f.sum.CostUSD.V+1e-9 {
			// Totals the requests written do not give: pi keeps usage
			// per response only.
			w.opts.Report.Quirk(formats.UnsummedRunUsage)
		}
		f.sum = formats.UsageInfo{}
		if e.Status != formats.Completed && e.Status != formats.StatusUnknown {
			w.closeCalls(f, e)
			a := w.response(f, e)
			a.msg["stopReason"] = "error"
			if e.Status == formats.Cancelled {
				a.msg["stopReason"] = "aborted"
			}
			msg := e.ErrorText()
			if msg == "" {
				msg = "the run " + e.Status.String()
			}
			a.msg["errorMessage"] = msg
			zero := formats.UsageInfo{}
			a.usage = &zero
		}
		err := w.flush(f, e)
		f.lastOut = ""
		return err
	}
	return nil
}

// writes says whether an event of kind k writes an entry of its own.
func writes(k formats.Kind) bool {
	switch k {
	case formats.TextDelta, formats.ThinkingDelta, formats.Message, formats.ToolCall, formats.ToolResult, formats.Usage, formats.Answer:
		return true
	}
	return false
}

// piProviders are pi's provider and API for the providers as
// OpenTelemetry names them.
var piProviders = map[string][2]string{
	"anthropic":       {"anthropic", "anthropic-messages"},
	"openai":          {"openai", "openai-responses"},
	"gcp.gemini":      {"google", "google-generative-ai"},
	"gcp.vertex_ai":   {"google-vertex", "google-vertex"},
	"aws.bedrock":     {"amazon-bedrock", "bedrock-converse-stream"},
	"mistral_ai":      {"mistral", "mistral-conversations"},
	"x_ai":            {"xai", "openai-completions"},
	"groq":            {"groq", "openai-completions"},
	"deepseek":        {"deepseek", "openai-completions"},
	"azure.ai.openai": {"azure-openai-responses", "azure-openai-responses"},
}

// otelProvider is a pi provider as OpenTelemetry names it; "" for one it
// does not name (a provider of the user's own models.json).
func otelProvider(pi string) string {
	for otel, p := range piProviders {
		if p[0] == pi {
			return otel
		}
	}
	return ""
}

func parentOf(f *piFile) any {
	if f.leaf == "" {
		return nil
	}
	return f.leaf
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func hasText(a *piEntry) bool {
	for _, c := range a.content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			return true
		}
	}
	return false
}

// appendText adds streamed text to the response's last block of its
// kind, and returns the block's text.
func appendText(a *piEntry, kind, s string) string {
	key := kind
	if n := len(a.content); n > 0 {
		if m, ok := a.content[n-1].(map[string]any); ok && m["type"] == kind {
			if a.grownAt != n {
				a.grown.Set(m[key].(string))
				a.grownAt = n
			}
			a.grown.Add(s)
			m[key] = a.grown.String()
			return m[key].(string)
		}
	}
	a.content = append(a.content, map[string]any{"type": kind, key: s})
	return s
}

// newID is an entry id as pi makes them, 8 hexadecimal digits, the same
// for the same file each time it is written.
func (w *sessionWriter) newID(f *piFile) string {
	f.ids++
	id := formats.NameUUID(f.id, "/", strconv.Itoa(f.ids))
	return strings.ReplaceAll(id, "-", "")[:8]
}

// add queues a message entry, the child of the last.
func (w *sessionWriter) add(f *piFile, e *formats.Event, msg map[string]any) *piEntry {
	at := w.stamps.Next(e)
	msg["timestamp"] = at.UnixMilli()
	p := &piEntry{id: w.newID(f), parent: f.leaf, at: at, msg: msg}
	f.leaf = p.id
	f.pending = append(f.pending, p)
	return p
}

// response is the assistant message being written, made if none is.
func (w *sessionWriter) response(f *piFile, e *formats.Event) *piEntry {
	if f.asst == nil {
		f.streamed = false
		model := e.Response.Model
		if model == "" {
			model = f.model
		}
		f.asst = w.add(f, e, map[string]any{"role": "assistant", "api": f.api, "provider": f.provider, "model": model,
			"stopReason": "stop"})
	}
	return f.asst
}

// result writes a call's result; unanswered marks one the source never
// gave.
func (w *sessionWriter) result(f *piFile, e *formats.Event, c formats.Call, unanswered bool) {
	name := c.Name
	if name == "" {
		name = f.open[c.ID]
	}
	delete(f.open, c.ID)
	out := c.Output.Text()
	isErr := c.Status == formats.Failed || c.Status == formats.Denied || c.Status == formats.Cancelled || c.Error != ""
	if isErr && c.Error != "" && !strings.Contains(out, c.Error) {
		out = strings.TrimSpace(out + "\n" + c.Error)
	}
	if unanswered {
		w.opts.Report.Quirk(lossUnanswered)
		out, isErr = "no result: the source ended the call without one", true
	}
	w.add(f, e, map[string]any{"role": "toolResult", "toolCallId": c.ID, "toolName": name, "content": []any{textBlock(out)}, "isError": isErr})
}

// flush writes the turn's entries, after a result for each call left
// without one.
// closeCalls writes a failed result for each call left without one.
func (w *sessionWriter) closeCalls(f *piFile, e *formats.Event) {
	f.asst = nil
	if len(f.open) > 0 {
		// In the order of the calls.
		for _, p := range f.pending {
			for _, c := range p.content {
				m, _ := c.(map[string]any)
				id, _ := m["id"].(string)
				if _, open := f.open[id]; m["type"] == "toolCall" && open {
					w.result(f, e, formats.Call{ID: id}, true)
				}
			}
		}
		for id := range f.open {
			delete(f.open, id)
		}
	}
}

func (w *sessionWriter) flush(f *piFile, e *formats.Event) error {
	w.closeCalls(f, e)
	for _, p := range f.pending {
		msg := p.msg
		if msg["role"] == "assistant" {
			if p.content == nil {
				p.content = []any{}
			}
			msg["content"] = p.content
			msg["usage"] = piUsage(p.usage)
			if p.calls > 0 && msg["stopReason"] == "stop" {
				msg["stopReason"] = "toolUse"
			}
		}
		rec := map[string]any{"type": "message", "id": p.id, "parentId": nil, "timestamp": stamp(p.at), "message": msg}
		if p.parent != "" {
			rec["parentId"] = p.parent
		}
		if err := w.line(f, rec, false); err != nil {
			return err
		}
	}
	f.pending = f.pending[:0]
	return nil
}

// line writes one entry, keys in pi's order; leaf makes it the parent of
// the next.
func (w *sessionWriter) line(f *piFile, rec map[string]any, leaf bool) error {
	var b []byte
	b = append(b, '{')
	first := true
	for _, k := range []string{"type", "id", "parentId", "timestamp", "provider", "modelId", "message"} {
		v, ok := rec[k]
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		kb, _ := formats.Marshal(k)
		vb, err := formats.Marshal(v)
		if err != nil {
			return err
		}
		b = append(append(append(b, kb...), ':'), vb...)
	}
	b = append(b, '}', '\n')
	if leaf {
		f.leaf = rec["id"].(string)
	}
	_, err := f.w.Write(b)
	return err
}

// piUsage is usage in pi's convention: input without the cache.
func piUsage(u *formats.UsageInfo) map[string]any {
	if u == nil {
		u = &formats.UsageInfo{}
	}
	in := u.InputTokens.V - u.CacheReadTokens.V - u.CacheWriteTokens.V
	if in < 0 {
		in = 0
	}
	total := u.Total().V
	if !u.TotalTokens.OK {
		total = u.InputTokens.V + u.OutputTokens.V
	}
	return map[string]any{"input": in, "output": u.OutputTokens.V, "cacheRead": u.CacheReadTokens.V, "cacheWrite": u.CacheWriteTokens.V,
		"totalTokens": total, "cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": u.CostUSD.V}}
}

func (w *sessionWriter) Close() error {
	var first error
	for _, f := range w.order {
		if w.cur == f || len(f.pending) > 0 {
			if err := w.flush(f, &formats.Event{}); err != nil && first == nil {
				first = err
			}
		}
		if f.c != nil {
			if err := f.c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}
