package otel

import (
	"strings"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
	"go.opentelemetry.io/otel/attribute"
)

// The message JSON of the GenAI conventions (gen-ai-input-messages.json,
// gen-ai-output-messages.json): a list of messages, each a role and its
// parts.
type chatMessage struct {
	Role         string    `json:"role"`
	Parts        []msgPart `json:"parts"`
	FinishReason string    `json:"finish_reason,omitempty"`
}

// msgPart is one part of a message: text and reasoning (Content), a tool
// call (ID, Name, Arguments) or a tool call's result (ID, Response).
type msgPart struct {
	Type      string          `json:"type"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Content   string          `json:"content,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  json.RawMessage `json:"response,omitempty"`
	// role is the role of the message the part goes in.
	role string
	// text is the text of streamed deltas, gathered; Content once the
	// part is written.
	text []byte
	full bool // the text was cut at the limit
}

const (
	partText     = "text"
	partThinking = "reasoning"
	partCall     = "tool_call"
	partResult   = "tool_call_response"
)

// maxParts bounds the parts a request's input or output keeps, so that a
// source without requests, whose content waits for one that never comes,
// holds a bounded amount of it.
const maxParts = 128

// request is a chat span whose content is still coming, with
// --otlp-content: it stays open from its usage until the model is given
// something new (a tool result, a prompt), and takes the answer that comes
// meanwhile.
type request struct {
	span *span
	end  time.Time
	stop string // the source's stop reason
	in   []msgPart
	out  []msgPart
	// system: the system instructions, on the run's first request.
	system string
}

// conversation is what an agent's model was given and answered, with
// --otlp-content, between its requests.
type conversation struct {
	req   *request  // the latest request, while its answer may still come
	in    []msgPart // what the model was given since its previous request
	out   []msgPart // what it answered before the next request's usage came
	texts int       // text and reasoning events in out, counted as lost if no request takes them
	// streamed: text or reasoning deltas came since the last whole
	// message, which repeats them.
	streamedText, streamedThinking bool
}

// given notes what the model of an agent was given: its previous request's
// answer is complete.
func (b *builder) given(a *agent, p msgPart) {
	b.closeRequest(a)
	if len(a.conv.in) >= maxParts {
		b.lose(lostMessagesPast, true)
		return
	}
	a.conv.in = append(a.conv.in, p)
}

// replied adds a part of the model's answer: to its latest request while
// that is open, else to what the next request's usage takes.
func (b *builder) replied(a *agent, kind, text string, delta bool) {
	parts := &a.conv.out
	if a.conv.req != nil {
		parts = &a.conv.req.out
	} else {
		a.conv.texts++
	}
	if delta && len(*parts) > 0 {
		if last := &(*parts)[len(*parts)-1]; last.Type == kind {
			if last.text == nil {
				last.text = append(make([]byte, 0, 2*len(last.Content)+len(text)), last.Content...)
			}
			switch room := b.cfg.contentLimit - len(last.text); {
			case last.full:
			case room >= len(text):
				last.text = append(last.text, text...)
			default:
				last.text = append(last.text, cutString(text, room)...)
				last.full = true
				b.lose(lostContentPast, true)
			}
			return
		}
	}
	if len(*parts) >= maxParts || b.cfg.contentLimit == 0 {
		if a.conv.req == nil {
			a.conv.texts-- // lost here, not counted again
		}
		b.lose(lostMessagesPast, b.cfg.contentLimit > 0)
		b.lose(lostContentPast, b.cfg.contentLimit == 0)
		return
	}
	*parts = append(*parts, msgPart{Type: kind, Content: b.cut(text), role: "assistant", full: len(text) > b.cfg.contentLimit})
}

// callAsked adds a tool call to the model's answer.
func (b *builder) callAsked(a *agent, c *formats.Call) {
	p := msgPart{Type: partCall, ID: c.ID, Name: c.Name, role: "assistant"}
	if len(c.Args) > 0 {
		if len(c.Args) <= b.cfg.contentLimit && json.Valid(c.Args) {
			p.Arguments = c.Args
		} else {
			// Cut, no longer JSON: as a string (the tool span reports the
			// cut).
			p.Arguments, _ = formats.Marshal(cutString(string(c.Args), b.cfg.contentLimit))
		}
	}
	parts := &a.conv.out
	if a.conv.req != nil {
		parts = &a.conv.req.out
	}
	if len(*parts) >= maxParts {
		b.lose(lostMessagesPast, true)
		return
	}
	*parts = append(*parts, p)
}

// resultGiven adds a tool call's result to what the model is given.
func (b *builder) resultGiven(a *agent, c *formats.Call) {
	out := c.Output.Text()
	if out == "" && c.Error != "" {
		out = c.Error
	}
	resp, _ := formats.Marshal(cutString(out, b.cfg.contentLimit)) // the tool span reports the cut
	b.given(a, msgPart{Type: partResult, ID: c.ID, Response: resp, role: "tool"})
}

// message takes an event of the agent's conversation, with --otlp-content;
// without it, the loss of the text.
func (b *builder) message(e *formats.Event, a *agent) {
	if !b.cfg.content {
		switch e.Kind {
		case formats.TextDelta:
			b.lose(lostText, e.Piece() != "")
		case formats.ThinkingDelta:
			b.lose(lostThinking, e.Piece() != "")
		case formats.Message:
			b.lose(lostText, e.MessageText() != "")
			b.lose(lostThinking, e.Thinking != "")
		}
		return
	}
	if a.done {
		b.lose(lostOutside, e.Text != "" || e.Thinking != "")
		return
	}
	c := &a.conv
	switch e.Kind {
	case formats.TextDelta:
		if e.Piece() != "" {
			b.replied(a, partText, e.Piece(), c.streamedText)
			c.streamedText = true
		}
	case formats.ThinkingDelta:
		if e.Piece() != "" {
			b.replied(a, partThinking, e.Piece(), c.streamedThinking)
			c.streamedThinking = true
		}
	case formats.Message:
		// A whole message repeats the deltas that came before it.
		if e.Thinking != "" && !c.streamedThinking {
			b.replied(a, partThinking, e.Thinking, false)
		}
		if e.MessageText() != "" && !c.streamedText {
			b.replied(a, partText, e.MessageText(), false)
		}
		if e.MessageText() != "" {
			a.lastText = cutString(e.MessageText(), b.cfg.contentLimit)
		}
		c.streamedText, c.streamedThinking = false, false
	case formats.UserMessage:
		if e.Prompt() != "" && b.cfg.contentLimit > 0 {
			b.given(a, msgPart{Type: partText, Content: cutString(e.Prompt(), b.cfg.contentLimit), role: "user"})
		}
	case formats.ToolCall:
		b.callAsked(a, &e.Call)
	case formats.ToolResult:
		b.resultGiven(a, &e.Call)
	}
}

// openRequest holds a chat span until its answer is complete, with
// --otlp-content; it takes what the model was given since the previous
// request, and what it answered before this usage came.
func (b *builder) openRequest(a *agent, s *span, t time.Time, stop string) {
	b.closeRequest(a)
	c := &a.conv
	c.req = &request{span: s, end: t, stop: stop, in: c.in, out: c.out}
	c.in, c.out, c.texts = nil, nil, 0
	if a == b.agents[""] && !b.sysGiven {
		c.req.system, b.sysGiven = b.system, true
	}
}

// closeRequest ends the agent's open request with its messages.
func (b *builder) closeRequest(a *agent) {
	r := a.conv.req
	if r == nil {
		return
	}
	a.conv.req = nil
	b.setSystem(r.span, r.system)
	if j := messagesJSON(r.in, ""); j != "" {
		r.span.set(attribute.String(keyInputMessages, j))
	}
	if len(r.out) > 0 {
		finish := "stop"
		switch {
		case r.stop != "":
			finish = finishReason(r.stop)
		case r.out[len(r.out)-1].Type == partCall:
			finish = "tool_call"
		}
		if j := messagesJSON(r.out, finish); j != "" {
			r.span.set(attribute.String(keyOutputMsgs, j))
		}
	}
	b.end(r.span, r.end)
}

// endConversation closes an agent's open request when it ends; what it
// answered that no request took is lost.
func (b *builder) endConversation(a *agent) {
	b.closeRequest(a)
	for range a.conv.texts {
		b.lose(lostOutside, true)
	}
	a.conv = conversation{}
}

// messagesJSON is the messages of a list of parts, consecutive parts of
// one role in one message; an answer (one assistant message) gets the
// finish reason, which the v1.41.1 schema requires.
func messagesJSON(parts []msgPart, finish string) string {
	if len(parts) == 0 {
		return ""
	}
	var msgs []chatMessage
	for _, p := range parts {
		if p.text != nil {
			p.Content = string(p.text)
		}
		if n := len(msgs); n > 0 && msgs[n-1].Role == p.role {
			msgs[n-1].Parts = append(msgs[n-1].Parts, p)
			continue
		}
		msgs = append(msgs, chatMessage{Role: p.role, Parts: []msgPart{p}})
	}
	if finish != "" {
		for i := range msgs {
			msgs[i].FinishReason = finish
		}
	}
	j, err := formats.Marshal(msgs)
	if err != nil {
		return ""
	}
	return string(j)
}

// cutString keeps at most n bytes of a text, whole characters only.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:max(n, 0)], "")
}

// setSystem puts system instructions on a span, as the conventions' list
// of parts.
func (b *builder) setSystem(s *span, text string) {
	if text == "" {
		return
	}
	if j, err := formats.Marshal([]msgPart{{Type: partText, Content: text}}); err == nil {
		s.set(attribute.String(keySystem, string(j)))
	}
}

// systemText reads the text parts of gen_ai.system_instructions.
func systemText(j string) string {
	if j == "" {
		return ""
	}
	var parts []msgPart
	if json.Unmarshal([]byte(j), &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == partText && p.Content != "" {
			texts = append(texts, p.Content)
		}
	}
	return strings.Join(texts, "\n\n")
}

// answerOf reads the text and the reasoning of a chat span's
// gen_ai.output.messages.
func answerOf(j string) (text, thinking string) {
	if j == "" {
		return "", ""
	}
	var msgs []chatMessage
	if json.Unmarshal([]byte(j), &msgs) != nil {
		return "", ""
	}
	var texts, thoughts []string
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch {
			case p.Content == "":
			case p.Type == partText:
				texts = append(texts, p.Content)
			case p.Type == partThinking:
				thoughts = append(thoughts, p.Content)
			}
		}
	}
	return strings.Join(texts, "\n\n"), strings.Join(thoughts, "\n\n")
}
