package gemini

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// The reader follows Gemini CLI's own loader (loadConversationRecord in
// chatRecordingService.ts): a record with a string "$rewindTo" drops that
// message and every one after it; a record with a string "id" is a message,
// and a message re-appended under the same id replaces the earlier copy in
// its place (the last occurrence wins); "$set" patches the metadata, and
// one with "messages" is a checkpoint that replaces them all; a record
// with sessionId and projectHash is the metadata (a whole legacy record if
// it holds "messages"). Because a later record can change or drop any
// earlier message, the reader holds one session's messages until its file
// (or the next session's metadata) ends, then gives its events.

// message is a MessageRecord; gemini records carry the optional fields.
type message struct {
	ID        string           `json:"id"`
	Timestamp string           `json:"timestamp"`
	Type      string           `json:"type"`
	Content   json.RawMessage  `json:"content"`
	ToolCalls []toolCallRecord `json:"toolCalls"`
	Thoughts  json.RawMessage  `json:"thoughts"`
	Tokens    *tokensSummary   `json:"tokens"`
	Model     string           `json:"model"`
	// undone: a checkpoint left the message out of the conversation's
	// end (Gemini CLI takes a failed turn back so), and none put it back.
	undone bool
}

type toolCallRecord struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args"`
	Result        json.RawMessage `json:"result"`
	Status        string          `json:"status"`
	Timestamp     string          `json:"timestamp"`
	AgentID       string          `json:"agentId"`
	DisplayName   string          `json:"displayName"`
	Description   string          `json:"description"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
	// inline are the subagent's records, where the session's file holds
	// them (Gemini CLI 0.20): see inlineSubagents.
	inline []*entry
}

type tokensSummary struct {
	Input    *int64 `json:"input"`
	Output   *int64 `json:"output"`
	Cached   *int64 `json:"cached"`
	Thoughts *int64 `json:"thoughts"`
	Tool     *int64 `json:"tool"`
	Total    *int64 `json:"total"`
}

type thought struct {
	Subject     string `json:"subject"`
	Description string `json:"description"`
	Timestamp   string `json:"timestamp"`
}

// record is any line of a session file, as far as the reader tells them
// apart.
type record struct {
	ID          json.RawMessage   `json:"id"`
	RewindTo    json.RawMessage   `json:"$rewindTo"`
	Set         json.RawMessage   `json:"$set"`
	SessionID   json.RawMessage   `json:"sessionId"`
	ProjectHash json.RawMessage   `json:"projectHash"`
	Messages    []json.RawMessage `json:"messages"`
	metadata
}

type metadata struct {
	StartTime string `json:"startTime"`
	Kind      string `json:"kind"`
}

// Gemini CLI's tool call statuses (CoreToolCallStatus) that end a call.
var callStatusWords = formats.StatusWords{"success": formats.Completed, "error": formats.Failed, "cancelled": formats.Cancelled}

// cancelledText is the info message Gemini CLI records when the user
// cancels a request (useGeminiStream.ts).
const cancelledText = "Request cancelled."

// entry is one message of the session in its place, or a record the
// reader keeps raw.
type entry struct {
	msg    *message
	line   []byte
	lineNo int
	raw    string // the type of a record kept raw
}

// session is the state of one session file being read.
type session struct {
	id, start, kind string
	hash            string // projectHash: the sha256 of the project's path
	entries         []*entry
	index           map[string]int
	cut             bool // the file ends inside a record
	started         bool // a metadata or message record was seen
}

func (s *session) put(e *entry) {
	if s.index == nil {
		s.index = map[string]int{}
	}
	if i, ok := s.index[e.msg.ID]; ok {
		s.entries[i] = e
		return
	}
	s.index[e.msg.ID] = len(s.entries)
	s.entries = append(s.entries, e)
}

// drop removes the entries from i on and returns how many messages went.
func (s *session) drop(i int) int {
	n := 0
	for _, e := range s.entries[i:] {
		if e.msg != nil {
			delete(s.index, e.msg.ID)
			n++
		}
	}
	s.entries = s.entries[:i]
	return n
}

type chatReader struct {
	opts  formats.ReadOptions
	br    *bufio.Reader
	lines *formats.LineReader
	vals  *formats.ValueReader
	queue formats.EventQueue
	// carried: an event carried a record of the input.
	carried bool
	cur     session
	// next is the session whose metadata ended the one before.
	next *session
	// A malformed record is held until the next one: the last record of
	// a file is a cut write, not an error.
	bad  *formats.LineError
	badB []byte
	badN int
	// held is a record read after a bad one, applied on the next call.
	held  []byte
	heldN int
	done  bool
	// sink takes each session read (emit, or a subagent's collector).
	sink func(*session)
	// seen are the subagent files read, so that none is read twice.
	seen map[string]bool
	// warned: the session names subagents whose files cannot be found
	// without a path.
	warned bool
}

func newChatReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	c := &chatReader{opts: o, br: bufferOf(r)}
	c.sink = c.emit
	return c
}

func bufferOf(r io.Reader) *bufio.Reader {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 64<<10 {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return br
}

// document reports whether the input is pretty-printed documents (legacy
// .json, whose "{" stands alone on its line) rather than one record per
// line.
func document(br *bufio.Reader) bool {
	head, _ := br.Peek(4096)
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	rest := bytes.TrimLeft(head[1:], " \t\r")
	return len(rest) == 0 || rest[0] == '\n'
}

func (r *chatReader) Next() (*formats.Event, error) {
	for {
		if r.queue.Len() > 0 {
			e := r.queue.Pop()
			switch src := &e.Source; {
			case src.Line != nil:
				r.carried = true
			case !src.Continued || !r.carried:
				// A session's start and end, a subagent's: no record of
				// the file is theirs.
				src.Continued, src.Made = false, true
			}
			return e, nil
		}
		if r.done {
			return nil, io.EOF
		}
		if err := r.read(); err != nil {
			return nil, err
		}
	}
}

// read reads on until a session ends (and its events are queued), or a
// record is malformed.
func (r *chatReader) read() error {
	if r.lines == nil && r.vals == nil {
		if document(r.br) {
			r.vals = formats.NewValueReader(r.br)
		} else {
			r.lines = formats.NewLineReader(r.br)
		}
	}
	if r.vals != nil {
		return r.readDocument()
	}
	return r.readLines()
}

// readDocument reads one legacy document: a whole session.
func (r *chatReader) readDocument() error {
	b, n, err := r.vals.Next()
	if err == io.EOF {
		r.done = true
		return nil
	}
	if err != nil {
		return err
	}
	b = append([]byte(nil), b...)
	var rec record
	if err := r.opts.Report.UnmarshalObject(n, b, &rec); err != nil {
		return err
	}
	s := &session{}
	if !r.metadata(s, &rec, n) {
		s.entries = append(s.entries, &entry{line: b, lineNo: n, raw: recordType(b)})
	}
	r.sink(s)
	return nil
}

// readLines reads the records of one session from a JSONL file, and gives
// the session to the sink when it ends.
func (r *chatReader) readLines() error {
	if r.next != nil {
		r.cur, r.next = *r.next, nil
	}
	for {
		var b []byte
		var n int
		if r.held != nil {
			b, n, r.held = r.held, r.heldN, nil
		} else {
			var err error
			b, err = r.lines.Next()
			n = r.lines.Line()
			if err == io.EOF {
				if r.bad != nil {
					r.opts.Report.Warn(r.badN, "the file ends inside a record (Gemini CLI may still be writing it): %s; the run is cut there",
						formats.Snippet(r.badB))
					r.cur.cut, r.bad = true, nil
				}
				r.done = true
				s := r.cur
				r.cur = session{}
				r.sink(&s)
				return nil
			}
			if errors.Is(err, formats.ErrLineTooLong) {
				return formats.Errorf(n, "a record longer than 256 MiB; it is left out")
			}
			if err != nil {
				return err
			}
			b = append([]byte(nil), b...)
			if bad := r.bad; bad != nil {
				// More records follow a malformed one: it is an error, and
				// this record is applied on the next call.
				r.bad, r.held, r.heldN = nil, b, n
				return bad
			}
		}
		var rec record
		if err := r.opts.Report.UnmarshalObject(n, b, &rec); err != nil {
			r.bad, r.badB, r.badN = err, b, n
			continue
		}
		if next := r.record(&rec, b, n); next != nil {
			s := r.cur
			r.cur, r.next = session{}, next
			r.sink(&s)
			return nil
		}
	}
}

// record applies one JSONL record to the session; it returns a new session
// when the record is the metadata of another one.
func (r *chatReader) record(rec *record, line []byte, n int) *session {
	s := &r.cur
	var id string
	switch {
	case isString(rec.RewindTo):
		json.Unmarshal(rec.RewindTo, &id)
		i, ok := s.index[id]
		if !ok {
			// Gemini CLI's loader then drops every message.
			if dropped := s.drop(0); dropped > 0 {
				r.opts.Report.Warn(n, "$rewindTo names message %q, which the session does not hold; as Gemini CLI does, the %s before it are dropped and not converted", id, messages(dropped))
			}
			return nil
		}
		dropped := s.drop(i)
		r.opts.Report.Warn(n, "a rewind to message %q dropped %s; not converted", id, messages(dropped))
	case isString(rec.ID):
		s.started = true
		m := &message{}
		if err := r.opts.Report.Unmarshal(n, line, m); err != nil {
			r.opts.Report.Warn(n, "a message record of a shape not known (%s); kept as it is", shortErr(err))
			s.entries = append(s.entries, &entry{line: line, lineNo: n, raw: "message"})
			return nil
		}
		s.put(&entry{msg: m, line: line, lineNo: n})
	case len(rec.Set) > 0 && rec.Set[0] == '{':
		var set record
		json.Unmarshal(rec.Set, &set)
		if isString(set.SessionID) {
			json.Unmarshal(set.SessionID, &s.id)
		}
		if set.StartTime != "" {
			s.start = set.StartTime
		}
		if set.Kind != "" {
			s.kind = set.Kind
		}
		if set.Messages != nil {
			r.checkpoint(s, set.Messages, n)
		}
	case isString(rec.SessionID) && isString(rec.ProjectHash):
		json.Unmarshal(rec.SessionID, &id)
		if s.started && id != s.id {
			next := &session{}
			r.metadata(next, rec, n)
			return next
		}
		r.metadata(s, rec, n)
	default:
		s.entries = append(s.entries, &entry{line: line, lineNo: n, raw: recordType(line)})
	}
	return nil
}

// checkpoint replaces the session's messages with those of a $set, as
// Gemini CLI's loader does. Gemini CLI also writes one with the messages
// the session holds, restated from the model's history (without their
// tokens, model, thoughts or times): at the start of a session (its
// <session_context>), on a resume, and without the turn it takes back
// when the turn fails. Such a checkpoint keeps the held records, and
// marks those it leaves out as undone, to be put back by a later one.
func (r *chatReader) checkpoint(s *session, msgs []json.RawMessage, n int) {
	var keep []*entry
	ids := map[string]bool{}
	for _, raw := range msgs {
		m := &message{}
		if r.opts.Report.Unmarshal(n, raw, m) != nil || m.ID == "" {
			continue
		}
		ids[m.ID] = true
		keep = append(keep, &entry{msg: m, line: append([]byte(nil), raw...), lineNo: n})
	}
	if restates(s, keep) {
		for _, en := range s.entries {
			if en.msg != nil {
				en.msg.undone = !ids[en.msg.ID]
			}
		}
		s.started = true
		return
	}
	gone := 0
	for id := range s.index {
		if !ids[id] {
			gone++
		}
	}
	s.drop(0)
	if gone > 0 {
		r.opts.Report.Warn(n, "a checkpoint ($set of the messages) replaced the session's messages: %s it leaves out not converted", messages(gone))
	}
	for _, e := range keep {
		s.put(e)
	}
	s.started = true
}

// restates says whether the messages of a checkpoint are messages the
// session holds, in its order.
func restates(s *session, keep []*entry) bool {
	at := 0
	for _, k := range keep {
		i, ok := s.index[k.msg.ID]
		if !ok || i < at {
			return false
		}
		at = i
	}
	return true
}

// metadata takes a metadata record, or a whole legacy record, into s; it
// reports false if the record is not one.
func (r *chatReader) metadata(s *session, rec *record, n int) bool {
	if !isString(rec.SessionID) {
		return false
	}
	json.Unmarshal(rec.SessionID, &s.id)
	json.Unmarshal(rec.ProjectHash, &s.hash)
	s.start, s.kind, s.started = rec.StartTime, rec.Kind, true
	for _, raw := range rec.Messages {
		raw = append([]byte(nil), raw...)
		m := &message{}
		if err := r.opts.Report.Unmarshal(n, raw, m); err != nil || m.ID == "" {
			s.entries = append(s.entries, &entry{line: raw, lineNo: n, raw: "message"})
			continue
		}
		s.put(&entry{msg: m, line: raw, lineNo: n})
	}
	return true
}

// messages counts messages in words.
func messages(n int) string {
	if n == 1 {
		return "1 message"
	}
	return strconv.Itoa(n) + " messages"
}

func isString(b json.RawMessage) bool { return len(b) > 0 && b[0] == '"' }

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

// recordType names a record the reader does not know: its "type", else
// the first of its keys that starts with "$".
func recordType(line []byte) string {
	if t := formats.TypeOf(line); t != "" {
		return t
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) == nil {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.HasPrefix(k, "$") {
				return k
			}
		}
	}
	return ""
}
