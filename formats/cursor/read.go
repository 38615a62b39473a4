package cursor

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// record is every field of a Cursor stream-json line that the reader uses.
// Fields whose shape varies (content, tool_call, result) stay raw.
type record struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`

	// system/init
	Model string `json:"model"`
	Cwd   string `json:"cwd"`

	// user, assistant
	Message *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	// assistant, thinking, tool_call
	ModelCallID *json.RawMessage `json:"model_call_id"`
	// timestamp_ms: a number, or a numeric string.
	TimestampMS *json.RawMessage `json:"timestamp_ms"`
	// thinking/delta
	Text string `json:"text"`

	// tool_call
	CallID   string          `json:"call_id"`
	ToolCall json.RawMessage `json:"tool_call"`

	// result
	IsError    *bool           `json:"is_error"`
	DurationMS *float64        `json:"duration_ms"`
	Result     json.RawMessage `json:"result"`
	Usage      *usage          `json:"usage"`
}

// usage is the result's usage, camelCase. Cursor counts cache reads and
// writes apart from inputTokens, as the Anthropic API does.
type usage struct {
	InputTokens      *int64   `json:"inputTokens"`
	OutputTokens     *int64   `json:"outputTokens"`
	CacheReadTokens  *int64   `json:"cacheReadTokens"`
	CacheWriteTokens *int64   `json:"cacheWriteTokens"`
	TotalCost        *float64 `json:"totalCost"`
	Cost             *float64 `json:"cost"`
}

func (u *usage) info() formats.UsageInfo {
	nonNeg := func(p *int64) formats.Opt[int64] {
		if p == nil {
			return formats.Opt[int64]{}
		}
		return formats.Some(max(*p, 0))
	}
	in, cr, cw := nonNeg(u.InputTokens), nonNeg(u.CacheReadTokens), nonNeg(u.CacheWriteTokens)
	if in.OK {
		// The model's convention: input includes what the cache gave and took.
		in.V += cr.V + cw.V
	}
	info := formats.UsageInfo{InputTokens: in, OutputTokens: nonNeg(u.OutputTokens), CacheReadTokens: cr, CacheWriteTokens: cw}
	cost := u.TotalCost
	if cost == nil {
		cost = u.Cost
	}
	if cost != nil && *cost >= 0 {
		info.CostUSD = formats.Some(*cost)
	}
	return info
}

type reader struct {
	lines *formats.LineReader
	opts  formats.ReadOptions
	queue formats.EventQueue
	// held are records that gave no event (thinking/completed, an empty
	// message, a repeated final message): the next event carries them, so
	// that cursor → cursor prints every line, in order.
	held     [][]byte
	heldLine int
	heldType string
	eof      bool

	open    bool
	session string
	names   map[string]string // call_id → tool name, for completed events
	// streamed is the text of assistant deltas (--stream-partial-output)
	// that no whole message has repeated yet.
	streamed strings.Builder
	// partial: the run streams deltas, so its final assistant line may
	// repeat text already given.
	partial bool
	// lastWhole is the text of the last whole message and turnText all of
	// them since the prompt; moved: something came after the last one.
	lastWhole string
	turnText  formats.Text
	moved     bool
}

func newReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &reader{lines: formats.NewLineReader(r), opts: o}
}

func (r *reader) Next() (*formats.Event, error) {
	for r.queue.Len() == 0 {
		if r.eof {
			return nil, io.EOF
		}
		if err := r.readRecord(); err != nil {
			if err == io.EOF {
				r.eof = true
				r.finish()
				continue
			}
			return nil, err
		}
	}
	return r.queue.Pop(), nil
}

// finish ends the input: streamed text becomes its message, and records
// still held go out as one unknown event, so that nothing is dropped.
func (r *reader) finish() {
	m := r.endStream()
	if len(r.held) > 0 {
		if m == nil {
			m = &formats.Event{Kind: formats.Raw}
		}
		r.queue.Record(formats.Source{Dialect: r.opts.Dialect, Type: r.heldType, Line: r.takeHeld(nil), LineNo: r.heldLine}, m)
		return
	}
	if m != nil {
		// Gathered from the delta lines before it, which carried their
		// records: Cursor printed no whole message.
		m.Source = formats.Source{Dialect: r.opts.Dialect, Type: "assistant", LineNo: r.lines.Line(), Made: true}
		r.queue.Push(m)
	}
}

// takeHeld returns the held records and line joined, one per line.
func (r *reader) takeHeld(line []byte) []byte {
	if len(r.held) == 0 {
		if line == nil {
			return nil
		}
		return append([]byte(nil), line...)
	}
	all := r.held
	if line != nil {
		all = append(all, line)
	}
	r.held = nil
	return bytes.Join(all, []byte{'\n'})
}

func (r *reader) readRecord() error {
	line, err := r.lines.Next()
	if errors.Is(err, formats.ErrLineTooLong) {
		// The line reader skipped it: --lenient goes on after it.
		return formats.Errorf(r.lines.Line(), "a line longer than 256 MiB")
	}
	if err != nil {
		return err
	}
	n := r.lines.Line()
	var rec record
	var evs []*formats.Event
	if le := r.opts.Report.UnmarshalObject(n, line, &rec); le != nil {
		if len(line) == 0 || line[0] != '{' || !json.Valid(line) {
			return le
		}
		// Valid JSON of an unexpected shape: keep it as it is.
		r.opts.Report.Warn(n, "a Cursor event with fields of unexpected types; kept as an unknown event")
		rec = record{Type: formats.TypeOf(line)}
		evs = r.ensureRun("")
		evs = append(evs, &formats.Event{Kind: formats.Raw})
	} else {
		evs = r.events(&rec, n)
	}
	if len(evs) == 0 {
		if len(r.held) == 0 {
			r.heldLine, r.heldType = n, rec.Type
		}
		r.held = append(r.held, append([]byte(nil), line...))
		return nil
	}
	var at time.Time
	if rec.TimestampMS != nil {
		at = msTime(number(*rec.TimestampMS))
	}
	for _, e := range evs {
		if e.Time.IsZero() {
			e.Time = at
		}
	}
	r.queue.Record(formats.Source{Dialect: r.opts.Dialect, Type: rec.Type, Line: r.takeHeld(line), LineNo: n}, evs...)
	return nil
}

// number reads a JSON number, or a string that holds one; 0 otherwise.
func number(raw json.RawMessage) float64 {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		f, _ = strconv.ParseFloat(strings.TrimSpace(s), 64)
	}
	return f
}

// msTime is a time from milliseconds since the epoch; zero for what is not
// a plausible time.
func msTime(ms float64) time.Time {
	if !(ms > 0 && ms < 1e14) {
		return time.Time{}
	}
	whole, frac := math.Modf(ms)
	return time.UnixMilli(int64(whole)).Add(time.Duration(math.Round(frac * 1e6))).UTC()
}

// ensureRun opens a run when none is open, or a new one when the session
// changes without a new init.
func (r *reader) ensureRun(session string) []*formats.Event {
	if r.open && (session == "" || r.session == "" || session == r.session) {
		if r.session == "" {
			r.session = session
		}
		return nil
	}
	return []*formats.Event{r.startRun(formats.RunInfo{SessionID: session})}
}

func (r *reader) startRun(info formats.RunInfo) *formats.Event {
	r.open, r.session = true, info.SessionID
	clear(r.names)
	r.streamed.Reset()
	r.partial, r.lastWhole, r.moved = false, "", false
	r.turnText.Reset()
	info.AgentName = AgentName
	info.Provider = provider(info.Model)
	return &formats.Event{Kind: formats.RunStart, Run: info}
}

// provider guesses the model provider, as OpenTelemetry names it, from
// the model's display name ("Claude 4.6 Opus (Thinking)", "GPT-5"); none
// for "Auto" and names it does not know.
func provider(model string) string {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "claude"), strings.Contains(m, "opus"), strings.Contains(m, "sonnet"):
		return "anthropic"
	case strings.Contains(m, "gpt"), strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"):
		return "openai"
	case strings.Contains(m, "gemini"):
		return "gcp.gemini"
	case strings.Contains(m, "grok"):
		return "x_ai"
	}
	return ""
}

// endStream gives streamed text that no whole message repeated as its
// message, where the agent moves on: that is where a writer that cannot
// stream writes it, so both read the same.
func (r *reader) endStream() *formats.Event {
	if r.streamed.Len() == 0 {
		return nil
	}
	t := r.streamed.String()
	r.streamed.Reset()
	r.whole(t)
	return &formats.Event{Kind: formats.Message, Text: t}
}

func (r *reader) whole(t string) {
	r.lastWhole, r.moved = t, false
	r.turnText.Add(t)
}

// moveOn: the agent does something else than speak; streamed text ends.
func (r *reader) moveOn(evs []*formats.Event) []*formats.Event {
	r.moved = true
	if m := r.endStream(); m != nil {
		evs = append(evs, m)
	}
	return evs
}

func (r *reader) events(rec *record, n int) []*formats.Event {
	if rec.Type == "system" && rec.Subtype == "init" {
		return []*formats.Event{r.startRun(formats.RunInfo{SessionID: rec.SessionID, Model: rec.Model, Cwd: rec.Cwd})}
	}
	evs := r.ensureRun(rec.SessionID)
	switch rec.Type {
	case "user":
		evs = r.moveOn(evs)
		r.turnText.Reset()
		if t := r.text(rec); t != "" {
			evs = append(evs, &formats.Event{Kind: formats.UserMessage, Text: t})
		}
	case "assistant":
		evs = append(evs, r.assistant(rec)...)
	case "thinking":
		switch rec.Subtype {
		case "delta":
			r.moved = true
			if rec.Text != "" {
				evs = append(evs, &formats.Event{Kind: formats.ThinkingDelta, Text: rec.Text})
			}
		case "completed":
		default:
			evs = append(evs, &formats.Event{Kind: formats.Raw})
		}
	case "tool_call":
		evs = append(evs, r.toolCall(rec)...)
	case "result":
		evs = append(r.moveOn(evs), r.result(rec)...)
	default:
		// system events other than init, interaction_query (approvals,
		// whose shape no source pins down), and types to come.
		if rec.Type == "" {
			r.opts.Report.Warn(n, "an event without a \"type\"; kept as an unknown event")
		}
		evs = append(evs, &formats.Event{Kind: formats.Raw})
	}
	return evs
}

// text joins the text blocks of a message (a string is one block).
func (r *reader) text(rec *record) string {
	if rec.Message == nil {
		return ""
	}
	c := bytes.TrimSpace(rec.Message.Content)
	if len(c) > 0 && c[0] == '"' {
		var s string
		json.Unmarshal(c, &s)
		return s
	}
	var items []json.RawMessage
	if json.Unmarshal(c, &items) != nil {
		return ""
	}
	var parts []string
	for _, it := range items {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(it, &b) == nil && b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// assistant reads an assistant line. With --stream-partial-output the
// deltas are lines with timestamp_ms and no model_call_id; the line of a
// whole segment (with model_call_id) and the final line (with neither)
// repeat text that came before.
func (r *reader) assistant(rec *record) []*formats.Event {
	t := r.text(rec)
	if rec.TimestampMS != nil && rec.ModelCallID == nil {
		r.partial, r.moved = true, true
		if t == "" {
			return nil
		}
		r.streamed.WriteString(t)
		return []*formats.Event{{Kind: formats.TextDelta, Text: t}}
	}
	if r.streamed.Len() > 0 {
		// The whole message of the deltas before it.
		r.streamed.Reset()
		r.whole(t)
		return []*formats.Event{{Kind: formats.Message, Text: t}}
	}
	final := rec.TimestampMS == nil && rec.ModelCallID == nil
	if t == "" || final && r.partial && (t == r.lastWhole && !r.moved || t == r.turnText.String()) {
		return nil
	}
	r.whole(t)
	return []*formats.Event{{Kind: formats.Message, Text: t}}
}

func (r *reader) toolCall(rec *record) []*formats.Event {
	if rec.Subtype != "started" && rec.Subtype != "completed" {
		return []*formats.Event{{Kind: formats.Raw}}
	}
	evs := r.moveOn(nil)
	name, args, result := tool(rec.ToolCall)
	if name == "" {
		name = r.names[rec.CallID]
	}
	if rec.Subtype == "started" {
		if r.names == nil {
			r.names = map[string]string{}
		}
		r.names[rec.CallID] = name
		return append(evs, &formats.Event{Kind: formats.ToolCall, Call: formats.Call{ID: rec.CallID, Name: name, Args: args}})
	}
	c := formats.Call{ID: rec.CallID, Name: name, Args: args}
	var out string
	c.Status, out, c.Error = outcome(result)
	c.Output = formats.TextOutput(out)
	return append(evs, &formats.Event{Kind: formats.ToolResult, Call: c})
}

// tool reads a tool_call object: its one "<name>ToolCall" key (or a
// generic "function" {name, arguments}) holds args and, once completed,
// result. Other keys (toolCallId) are left.
func tool(raw json.RawMessage) (name string, args, result json.RawMessage) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "", nil, nil
	}
	var body struct {
		Name      string          `json:"name"`
		Args      json.RawMessage `json:"args"`
		Arguments json.RawMessage `json:"arguments"`
		Result    json.RawMessage `json:"result"`
	}
	key := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if v := bytes.TrimSpace(m[k]); len(v) == 0 || v[0] != '{' {
			continue
		}
		if strings.HasSuffix(k, "ToolCall") {
			key = k
			break
		}
		if k == "function" || key == "" {
			key = k
		}
	}
	if key == "" || json.Unmarshal(m[key], &body) != nil {
		return "", nil, nil
	}
	if key == "function" {
		return body.Name, arguments(body.Arguments), body.Result
	}
	return strings.TrimSuffix(key, "ToolCall"), object(body.Args), body.Result
}

// object keeps args that are a JSON object; anything else is no args.
func object(raw json.RawMessage) json.RawMessage {
	if r := bytes.TrimSpace(raw); len(r) > 0 && r[0] == '{' {
		return r
	}
	return nil
}

// arguments reads a function's arguments: an object, or a string that
// holds one (as the OpenAI API gives them).
func arguments(raw json.RawMessage) json.RawMessage {
	if o := object(raw); o != nil {
		return o
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if o := object(json.RawMessage(s)); o != nil && json.Valid(o) {
			return o
		}
	}
	return nil
}

// outcome reads a tool's result: {success:{…}}, {failure:{…}} (a shell
// command that failed: stdout, stderr, exitCode), {error:{…}},
// {rejected:{reason}}, or, in older captures, the output object itself.
func outcome(raw json.RawMessage) (st formats.Status, output, errText string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return formats.Completed, "", ""
	}
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return formats.Completed, scalar(raw), ""
	}
	if v, ok := m["success"]; ok {
		return formats.Completed, successText(v), ""
	}
	for _, k := range []string{"failure", "error", "rejected"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		st = formats.Failed
		if k == "rejected" {
			st = formats.Denied
		}
		output, errText = failureText(v)
		if errText == "" && output == "" {
			errText = "the tool call was " + map[string]string{"failure": "a failure", "error": "an error", "rejected": "rejected"}[k]
		}
		return st, output, errText
	}
	return formats.Completed, successText(raw), ""
}

// fields reads the string fields of an object.
func fields(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if r := bytes.TrimSpace(raw); len(r) == 0 || r[0] != '{' || json.Unmarshal(r, &m) != nil {
		return nil, false
	}
	return m, true
}

func str(m map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		var s string
		if json.Unmarshal(m[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// outputKeys name a tool's output in its result, by tool: read's content,
// shell's stdout, edit's resultForModel, …
var outputKeys = []string{"content", "stdout", "output", "text", "resultForModel"}

// successText is a successful result's output: its output field, shell's
// stderr after its stdout, else the result's JSON.
func successText(raw json.RawMessage) string {
	m, ok := fields(raw)
	if !ok {
		return scalar(raw)
	}
	out := str(m, outputKeys...)
	if e := str(m, "stderr"); e != "" {
		out = join(out, e)
	}
	if out == "" && !has(m, append(outputKeys, "stderr")...) && len(m) > 0 {
		return compact(raw)
	}
	return out
}

// has reports whether an object has one of the keys.
func has(m map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// failureText is a failed result's output and error: the error's message,
// else shell's stderr or exit code, else the result's JSON.
func failureText(raw json.RawMessage) (output, errText string) {
	m, ok := fields(raw)
	if !ok {
		return "", scalar(raw)
	}
	output = str(m, outputKeys...)
	errText = str(m, "errorMessage", "error", "message", "reason", "stderr")
	if errText == "" {
		if sub, ok := m["error"]; ok {
			if _, e := failureText(sub); e != "" {
				errText = e
			}
		}
	}
	if errText == "" {
		var code *int64
		if json.Unmarshal(m["exitCode"], &code) == nil && code != nil {
			errText = "exit code " + strconv.FormatInt(*code, 10)
		}
	}
	if errText == "" && output == "" && len(m) > 0 {
		errText = compact(raw)
	}
	return output, errText
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// scalar is a JSON value as text: a string's value, nothing for null or
// true, the JSON of anything else.
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", "true":
		return ""
	}
	return compact(raw)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return strings.ToValidUTF8(string(raw), "\uFFFD")
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// result ends the run: the answer when it succeeded, and RunEnd with the
// outcome, usage and duration. A failed run's exit code is left to the
// run view: 2 when it stopped at a refused call, else 1.
func (r *reader) result(rec *record) []*formats.Event {
	r.open = false
	text := ""
	if len(rec.Result) > 0 {
		json.Unmarshal(rec.Result, &text)
	}
	end := &formats.Event{Kind: formats.RunEnd, Run: formats.RunInfo{SessionID: rec.SessionID}}
	if end.Run.SessionID == "" {
		end.Run.SessionID = r.session
	}
	if rec.Usage != nil {
		end.Usage = rec.Usage.info()
	}
	if rec.DurationMS != nil && *rec.DurationMS > 0 && *rec.DurationMS < 1e12 {
		end.Duration = time.Duration(*rec.DurationMS * float64(time.Millisecond))
	}
	failed := rec.IsError != nil && *rec.IsError || rec.Subtype != "" && rec.Subtype != "success"
	if !failed {
		end.Status, end.Run.ExitCode = formats.Completed, formats.Some(0)
		if text != "" {
			return []*formats.Event{{Kind: formats.Answer, Text: text}, end}
		}
		return []*formats.Event{end}
	}
	switch {
	case text != "":
		end.Text = text
	case rec.Subtype != "" && rec.Subtype != "success" && rec.Subtype != "error":
		end.Text = "the run ended with " + rec.Subtype
	default:
		end.Text = "the run failed"
	}
	return []*formats.Event{end}
}
