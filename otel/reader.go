package otel

import (
	"bytes"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// detect: an OTLP/JSON request begins with its resourceSpans.
func detect(head []byte) int {
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if bytes.HasPrefix(head, []byte(`{"resourceSpans"`)) {
		return 100
	}
	return 0
}

// decodeLine reads one otlp-json record into spans the exporters take.
func decodeLine(line []byte) ([]sdktrace.ReadOnlySpan, error) {
	var req jsonRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, err
	}
	var out []sdktrace.ReadOnlySpan
	for _, d := range req.spans() {
		st, err := d.stub()
		if err != nil {
			return nil, err
		}
		out = append(out, st.Snapshot())
	}
	return out, nil
}

// reader turns OTLP/JSON requests back into runs. Spans come children
// first, batched in any way, so it holds the spans of a trace until their
// root arrives (the run's span, which ends last), then replays the run's
// events in order. Memory is bounded by one run.
type reader struct {
	anonymous int // subagents given an id here
	lines     *formats.LineReader
	tail      *tailReader
	ledger    *ledger // what was read, for the writer (nil if none)
	opts      formats.ReadOptions
	traces    map[string][]readSpan // spans waiting for their root, by trace id
	order     []string              // trace ids in the order they were first seen
	records   []record              // input records not yet attached to an event
	queue     []*formats.Event
	keys      []jsonUint64 // the order keys of the run being read's events
	eof       bool
}

type readSpan struct {
	jsonSpan
	line int
}

type record struct {
	line []byte
	no   int
}

func newReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	t := &tailReader{r: r}
	return &reader{lines: formats.NewLineReader(t), tail: t, opts: o, traces: map[string][]readSpan{}, ledger: readerLedger(o.Report)}
}

// tailReader remembers the last byte of its input, and whether it ended,
// so that a last line without its newline can be told from the others.
type tailReader struct {
	r    io.Reader
	last byte
	eof  bool
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.last = p[n-1]
	}
	if err == io.EOF {
		t.eof = true
	}
	return n, err
}

// cutLast: the line just read is the input's last, and has no newline: a
// spool written as the disk filled, or by a process that was killed.
func (r *reader) cutLast() bool {
	return r.tail.eof && r.tail.last != '\n' && r.lines.Buffered() == 0
}

func (r *reader) Next() (*formats.Event, error) {
	for len(r.queue) == 0 {
		if r.eof {
			return nil, io.EOF
		}
		line, err := r.lines.Next()
		if err == io.EOF {
			r.eof = true
			// Spans whose root never came (a spool file of a run cut short)
			// still make runs.
			for _, tid := range r.order {
				if spans := r.traces[tid]; len(spans) > 0 {
					r.replay(spans)
				}
				delete(r.traces, tid)
			}
			r.order = nil
			r.flushRecords()
			continue
		}
		if err != nil {
			return nil, err
		}
		no := r.lines.Line()
		var req jsonRequest
		if le := formats.Unmarshal(no, line, &req); le != nil {
			if r.cutLast() {
				// The one cut line that is not an error: what a full disk
				// or a kill leaves at the end of a spool.
				r.opts.Report.Warn(no, "the last line is cut short (the spool's disk filled, or its writer was killed?); skipped, with the spans in it")
				continue
			}
			return nil, le
		}
		if len(req.ResourceSpans) == 0 && !bytes.Contains(line, []byte(`"resourceSpans"`)) {
			return nil, formats.Errorf(no, "not an OTLP/JSON trace request: no resourceSpans")
		}
		r.records = append(r.records, record{line: bytes.Clone(line), no: no})
		r.ledger.read(r.records[len(r.records)-1])
		for _, d := range req.spans() {
			s := readSpan{jsonSpan: d.span, line: no}
			if _, seen := r.traces[s.TraceID]; !seen {
				r.order = append(r.order, s.TraceID)
			}
			r.traces[s.TraceID] = append(r.traces[s.TraceID], s)
			if s.ParentSpanID == "" {
				r.replay(r.traces[s.TraceID])
				// Forgotten once replayed, so that what is held follows
				// the runs under way, not the spool's size (a span of the
				// trace that comes later waits for the end, as one
				// without its root).
				delete(r.traces, s.TraceID)
			}
		}
		r.pruneOrder()
		if len(r.queue) == 0 && len(req.spans()) == 0 {
			r.flushRecords()
		}
	}
	ev := r.queue[0]
	r.queue = r.queue[1:]
	return ev, nil
}

// pruneOrder drops from order the traces replayed, once they are most of
// it: its length stays within twice the traces held, at a cost spread
// over the spans read.
func (r *reader) pruneOrder() {
	if len(r.order) <= 2*len(r.traces)+64 {
		return
	}
	kept := r.order[:0]
	for _, tid := range r.order {
		if _, ok := r.traces[tid]; ok {
			kept = append(kept, tid)
		}
	}
	clear(r.order[len(kept):])
	r.order = kept
}

// flushRecords gives records that no event carried a Raw event each, so
// that a same-dialect copy keeps them.
func (r *reader) flushRecords() {
	for _, rec := range r.records {
		r.queue = append(r.queue, &formats.Event{Kind: formats.Raw,
			Source: formats.Source{Dialect: r.opts.Dialect, Type: "request", Line: rec.line, LineNo: rec.no}})
	}
	r.records = nil
}

// node is a span in the tree of a run.
type node struct {
	readSpan
	attrs       map[string]jsonValue
	children    []*node
	syntheticID string     // the call id given to a tool span without one
	from        jsonUint64 // nothing in the span is ordered before this
}

func (n *node) op() string { return n.attrs[keyOperation].str() }

func (n *node) isTurn() bool {
	_, ok := n.attrs[keyTurn]
	return ok || strings.HasPrefix(n.Name, "turn ")
}

// replay makes the events of one run from its spans.
func (r *reader) replay(spans []readSpan) {
	byID := map[string]*node{}
	nodes := make([]*node, len(spans))
	for i, s := range spans {
		nodes[i] = &node{readSpan: s, attrs: attrMap(s.Attributes)}
		byID[s.SpanID] = nodes[i]
	}
	var root *node
	for _, n := range nodes {
		if n.ParentSpanID == "" {
			root = n
		}
	}
	if root == nil {
		// The run's own span is missing (a spool of a run cut short): the
		// run is what is left, marked cut.
		root = &node{readSpan: readSpan{line: spans[0].line}, attrs: map[string]jsonValue{}}
		root.Name, root.StartTimeUnixNano, root.EndTimeUnixNano = "run", spans[0].StartTimeUnixNano, spans[0].EndTimeUnixNano
		t := true
		failed := "failed"
		root.attrs[keyCut] = jsonValue{BoolValue: &t}
		root.attrs[keyErrorType] = jsonValue{StringValue: &failed}
		root.Status = jsonStatus{Code: 2, Message: "the run's own span is missing"}
		for _, n := range nodes {
			root.StartTimeUnixNano = min(root.StartTimeUnixNano, n.StartTimeUnixNano)
			root.EndTimeUnixNano = max(root.EndTimeUnixNano, n.EndTimeUnixNano)
		}
	}
	for _, n := range nodes {
		if n == root {
			continue
		}
		if p := byID[n.ParentSpanID]; p != nil && p != n && !cyclic(n, byID) {
			p.children = append(p.children, n)
		} else {
			root.children = append(root.children, n)
		}
	}
	if root.StartTimeUnixNano == 0 {
		for _, n := range nodes {
			if s := n.StartTimeUnixNano; s != 0 && (root.StartTimeUnixNano == 0 || s < root.StartTimeUnixNano) {
				root.StartTimeUnixNano = s
			}
		}
	}
	settleTimes(root, root.StartTimeUnixNano, 0, true)
	first := len(r.queue)
	r.keys = r.keys[:0]
	r.run(root)
	// The walk gives each span's events nested; sorting by time (ties
	// keep the walk's order) interleaves spans that overlapped, as the
	// source had them. A span's events are ordered no earlier than the
	// spans around it start, so that nothing comes before its agent.
	evs := r.queue[first+1 : len(r.queue)-1] // RunStart and RunEnd stay outside
	sort.Stable(byKey{evs, r.keys[1 : len(r.keys)-1]})
	// The input records go with the run's first events, in their order.
	for i := first; i < len(r.queue) && len(r.records) > 0; i++ {
		r.queue[i].Source.Line, r.queue[i].Source.LineNo = r.records[0].line, r.records[0].no
		r.queue[i].Source.Continued, r.queue[i].Source.Made = false, false
		r.records = r.records[1:]
	}
}

// settleTimes gives a span without a start its parent's start, a span
// event without a time its span's start, a span an end no earlier than its
// start, and the run's and an agent's span an end no earlier than their
// children's and their events' (a turn may end while its call goes on). An
// unknown time is not "before everything". from is the time before which
// nothing in the span is ordered: the latest start of it and its parents.
func settleTimes(n *node, parentStart, parentFrom jsonUint64, root bool) {
	if n.StartTimeUnixNano == 0 {
		n.StartTimeUnixNano = parentStart
	}
	n.from = max(n.StartTimeUnixNano, parentFrom)
	n.EndTimeUnixNano = max(n.EndTimeUnixNano, n.StartTimeUnixNano)
	for i := range n.Events {
		if n.Events[i].TimeUnixNano == 0 {
			n.Events[i].TimeUnixNano = n.StartTimeUnixNano
		}
	}
	for _, c := range n.children {
		settleTimes(c, n.StartTimeUnixNano, n.from, false)
		if root || n.op() == opInvokeAgent {
			n.EndTimeUnixNano = max(n.EndTimeUnixNano, c.EndTimeUnixNano)
		}
	}
	if root || n.op() == opInvokeAgent {
		for _, e := range n.Events {
			n.EndTimeUnixNano = max(n.EndTimeUnixNano, e.TimeUnixNano)
		}
	}
}

// byKey sorts a run's events by their order keys.
type byKey struct {
	evs  []*formats.Event
	keys []jsonUint64
}

func (b byKey) Len() int           { return len(b.evs) }
func (b byKey) Less(i, j int) bool { return b.keys[i] < b.keys[j] }
func (b byKey) Swap(i, j int) {
	b.evs[i], b.evs[j] = b.evs[j], b.evs[i]
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
}

func (r *reader) emit(n *node, kind formats.Kind, t time.Time, agent string) *formats.Event {
	ev := &formats.Event{Kind: kind, Time: t, Agent: agent,
		Source: formats.Source{Dialect: r.opts.Dialect, Type: n.Name, LineNo: n.line, Continued: true}}
	r.queue = append(r.queue, ev)
	r.keys = append(r.keys, max(toUnixNano(t), n.from))
	return ev
}

func toUnixNano(t time.Time) jsonUint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return jsonUint64(t.UnixNano())
}

func (r *reader) run(root *node) {
	a := root.attrs
	start := r.emit(root, formats.RunStart, fromUnixNano(root.StartTimeUnixNano), "")
	start.Run = formats.RunInfo{SessionID: a[keyConversation].str(), Model: a[keyModel].str(),
		Provider: a[keyProvider].str(), AgentName: a[keyAgentName].str(), SystemInstructions: systemText(a[keySystem].str())}
	if models := a[keyModels].strs(); start.Run.Model == "" && len(models) > 0 {
		start.Run.Model = models[0] // a run of several models starts with its first
	}
	for _, text := range messageTexts(a[keyInputMessages].str(), "user") {
		r.emit(root, formats.UserMessage, start.Time, "").Text = text
	}
	r.body(root, "")
	for _, text := range messageTexts(a[keyOutputMsgs].str(), "assistant") {
		r.emit(root, formats.Answer, fromUnixNano(root.EndTimeUnixNano), "").Text = text
	}
	end := r.emit(root, formats.RunEnd, fromUnixNano(root.EndTimeUnixNano), "")
	end.Status, end.Text = statusOf(root)
	if et := a[keyErrorType].str(); root.Status.Code == 2 && formats.ParseStatus(et) == formats.StatusUnknown && et != "" {
		end.Code = et // the provider's code
	}
	end.Run.SessionID = a[keyConversation].str()
	end.Run.Model = a[keyModel].str()
	if code, ok := a[keyExitCode].int(); ok {
		end.Run.ExitCode = formats.Some(int(code))
	}
	end.Usage = totalsOf(a)
	end.Cut = a[keyCut].bool()
}

// statusOf reads a span's outcome: its error.type, else completed.
func statusOf(n *node) (formats.Status, string) {
	if n.Status.Code != 2 {
		return formats.Completed, ""
	}
	st := formats.ParseStatus(n.attrs[keyErrorType].str())
	if st == formats.StatusUnknown || st == formats.Completed || st == formats.Running {
		st = formats.Failed
	}
	return st, n.Status.Message
}

// usageOf reads the counts a span carries as gen_ai.usage.* (its own), or
// as agentconv.usage.* (an agent's totals) when total is set.
func usageOf(a map[string]jsonValue, total bool) formats.UsageInfo {
	var u formats.UsageInfo
	for _, f := range usageKeys {
		key := f.key
		if total {
			key = totalKey(key)
		}
		if v, ok := a[key].int(); ok {
			*f.of(&u) = formats.Some(v)
		}
	}
	if !total {
		if v, ok := a["gen_ai.usage.cache_write.input_tokens"].int(); ok && !u.CacheWriteTokens.OK {
			u.CacheWriteTokens = formats.Some(v)
		}
	}
	costKey := keyCost
	if total {
		costKey = totalKey(keyCost)
	}
	if c, ok := a[costKey].float(); ok {
		u.CostUSD = formats.Some(c)
	} else if c, ok := a[keyOldCost].float(); ok && !total {
		u.CostUSD = formats.Some(c)
	}
	return u
}

// totalsOf reads an agent's totals: its agentconv.usage.*, else (spans
// that carry no totals, and those written before them) its gen_ai.usage.*.
func totalsOf(a map[string]jsonValue) formats.UsageInfo {
	if u := usageOf(a, true); !u.Empty() {
		return u
	}
	return usageOf(a, false)
}

// body replays what happened inside a span: its children and its span
// events, in time order.
func (r *reader) body(n *node, agent string) {
	type item struct {
		t     time.Time
		child *node
		event *jsonEvent
	}
	var items []item
	for _, c := range n.children {
		items = append(items, item{t: fromUnixNano(c.from), child: c})
	}
	for i := range n.Events {
		items = append(items, item{t: fromUnixNano(max(n.Events[i].TimeUnixNano, n.from)), event: &n.Events[i]})
	}
	// At the same time, spans go before span events, and spans that start
	// together go in the order they end: that is the order a writer gives
	// them, so a round trip keeps the events' order.
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		switch {
		case !a.t.Equal(b.t):
			return a.t.Before(b.t)
		case (a.child == nil) != (b.child == nil):
			return a.child != nil
		case a.child != nil:
			return a.child.EndTimeUnixNano < b.child.EndTimeUnixNano // settled: no end before its start
		}
		return false
	})
	for _, it := range items {
		if it.event != nil {
			r.spanEvent(n, it.event, agent)
			continue
		}
		r.span(it.child, n, agent)
	}
}

func (r *reader) span(n, parent *node, agent string) {
	a := n.attrs
	start, end := fromUnixNano(n.StartTimeUnixNano), fromUnixNano(n.EndTimeUnixNano) // settled: end ≥ start
	switch {
	case n.op() == opInvokeAgent:
		id := a[keyAgentID].str()
		if id == "" {
			id = n.SpanID
		}
		if id == "" {
			// Neither an agent id nor a span id: a subagent still needs an
			// id of its own, or it would be taken for the main agent.
			r.anonymous++
			id = "agent-" + strconv.Itoa(r.anonymous)
		}
		ev := r.emit(n, formats.AgentStart, start, id)
		ev.AgentInfo = formats.AgentInfo{Label: a[keyAgentName].str(), Parent: agent, Model: a[keyModel].str()}
		if parent.op() == opExecuteTool {
			ev.AgentInfo.ParentCall = r.callID(parent)
		}
		for _, text := range messageTexts(a[keyInputMessages].str(), "user") {
			r.emit(n, formats.UserMessage, start, id).Text = text
		}
		r.body(n, id)
		for _, text := range messageTexts(a[keyOutputMsgs].str(), "assistant") {
			r.emit(n, formats.Answer, end, id).Text = text
		}
		// Its requests are its chat spans; an agent without them (spans
		// of an agentconv before them) says its usage itself: its
		// requests' together (Aggregate), which no request takes.
		if u := totalsOf(a); !u.Empty() && !hasChats(n) {
			ev := r.emit(n, formats.Usage, end, id)
			ev.Usage, ev.Aggregate = u, true
		}
		ev = r.emit(n, formats.AgentEnd, end, id)
		ev.Status, _ = statusOf(n)
	case n.op() == opExecuteTool:
		call := formats.Call{ID: r.callID(n), Name: a[keyToolName].str(), Summary: a[keySummary].str()}
		if args := a[keyToolArgs].str(); json.Valid([]byte(args)) {
			call.Args = json.RawMessage(args)
		}
		r.emit(n, formats.ToolCall, start, agent).Call = call
		r.body(n, agent)
		call.Args = nil
		call.Output = formats.TextOutput(a[keyToolResult].str())
		call.Status, call.Error = statusOf(n)
		if code, ok := a[keyExitCode].int(); ok {
			call.ExitCode = formats.Some(int(code))
		}
		r.emit(n, formats.ToolResult, end, agent).Call = call
	case n.op() == opChat:
		r.body(n, agent)
		ev := r.emit(n, formats.Usage, end, agent)
		ev.Usage = usageOf(a, false)
		// A span that stands for requests the source did not list one by
		// one is their usage together, not a request.
		ev.Aggregate = a[keyAggregate].bool()
		// Without --otlp-content (or a source's content capture) the span
		// holds the request's counts, not its output messages.
		_, recorded := a[keyOutputMsgs]
		ev.Unrecorded = !recorded
		ev.Response = formats.Response{ID: a[keyResponseID].str(), Model: a[keyResponseModel].str()}
		if fr := a[keyFinish].strs(); len(fr) > 0 {
			ev.Response.StopReason = fr[0]
		}
		// The model's answer, with --otlp-content; its tool calls are
		// the tool spans.
		if text, thinking := answerOf(a[keyOutputMsgs].str()); text != "" || thinking != "" {
			m := r.emit(n, formats.Message, end, agent)
			m.Text, m.Thinking = text, thinking
		}
	case n.isTurn():
		r.emit(n, formats.TurnStart, start, agent)
		r.body(n, agent)
		if u := usageOf(a, false); !u.Empty() {
			// A turn's usage, of requests its source did not tell apart.
			ev := r.emit(n, formats.Usage, end, agent)
			ev.Usage, ev.Aggregate = u, true
		}
		ev := r.emit(n, formats.TurnEnd, end, agent)
		ev.Status, _ = statusOf(n)
	default:
		// A span of another tool: what it holds still counts.
		r.body(n, agent)
	}
}

// hasChats: an agent's span holds chat spans of its own (not of its
// subagents), or turns that carry their usage.
func hasChats(n *node) bool {
	for _, c := range n.children {
		if c.op() == opChat || c.isTurn() && !usageOf(c.attrs, false).Empty() || c.op() != opInvokeAgent && hasChats(c) {
			return true
		}
	}
	return false
}

// callID is a tool span's call id, else its span id, else one of its own:
// a call needs an id for its result and for the subagent it starts.
func (r *reader) callID(n *node) string {
	if id := n.attrs[keyToolCallID].str(); id != "" {
		return id
	}
	if n.SpanID != "" {
		return n.SpanID
	}
	if n.syntheticID == "" {
		r.anonymous++
		n.syntheticID = "call-" + strconv.Itoa(r.anonymous)
	}
	return n.syntheticID
}

func (r *reader) spanEvent(n *node, e *jsonEvent, agent string) {
	a := attrMap(e.Attributes)
	t := fromUnixNano(e.TimeUnixNano)
	kind, ok := eventKinds[e.Name]
	if !ok {
		return
	}
	ev := r.emit(n, kind, t, agent)
	ev.Source.Type = e.Name
	switch kind {
	case formats.PermissionRequest:
		ev.Permission.RequestID = a[keyRequestID].str()
		ev.Call = formats.Call{ID: a[keyToolCallID].str(), Name: a[keyToolName].str()}
	case formats.PermissionAnswer:
		ev.Permission = formats.Permission{RequestID: a[keyRequestID].str(), Allowed: a[keyAllowed].bool(), Reason: a[keyReason].str()}
	case formats.Notice:
		ev.Severity, ev.Text = formats.ParseSeverity(a[keySeverity].str()), a[keyText].str()
	case formats.Compaction:
		ev.Text = a[keyText].str()
	case formats.ModelChange:
		ev.Run.Model = a[keyModel].str()
	}
}

var eventKinds = map[string]formats.Kind{
	evPermissionRequest: formats.PermissionRequest, evPermissionAnswer: formats.PermissionAnswer,
	evNotice: formats.Notice, evCompaction: formats.Compaction, evModelChange: formats.ModelChange,
}

// cyclic reports whether a span is its own ancestor (bad input), which
// would make the replay loop.
func cyclic(n *node, byID map[string]*node) bool {
	seen := map[*node]bool{}
	for p := n; p != nil; p = byID[p.ParentSpanID] {
		if seen[p] {
			return true
		}
		seen[p] = true
	}
	return false
}

// strs reads a string array (gen_ai.response.finish_reasons); a lone
// string is an array of one.
func (v jsonValue) strs() []string {
	if v.ArrayValue == nil {
		if s := v.str(); s != "" {
			return []string{s}
		}
		return nil
	}
	var out []string
	for _, e := range v.ArrayValue.Values {
		out = append(out, e.str())
	}
	return out
}

// messageTexts reads the texts of one role's messages from
// gen_ai.input.messages or gen_ai.output.messages.
func messageTexts(j, role string) []string {
	if j == "" {
		return nil
	}
	var msgs []chatMessage
	if json.Unmarshal([]byte(j), &msgs) != nil {
		return nil
	}
	var out []string
	for _, m := range msgs {
		if m.Role != role {
			continue
		}
		var parts []string
		for _, p := range m.Parts {
			if p.Type == "text" && p.Content != "" {
				parts = append(parts, p.Content)
			}
		}
		if len(parts) > 0 {
			out = append(out, strings.Join(parts, "\n"))
		}
	}
	return out
}
