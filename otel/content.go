package otel

import (
	"strings"

	"github.com/agentconv/agentconv/formats"
	"go.opentelemetry.io/otel/attribute"
)

// said takes a prompt or an answer: kept with --otlp-content (the run's
// answer is the view's, cut when the run ends), else a loss.
func (b *builder) said(e *formats.Event, a *agent) {
	if e.Kind == formats.Answer {
		switch {
		case b.cfg.content && e.Agent == "":
			b.lose(lostContentPast, len(e.AnswerText()) > b.cfg.contentLimit)
		case b.cfg.content && !a.done:
			a.answer = b.cut(e.AnswerText())
		default:
			b.lose(lostAnswers, e.AnswerText() != "")
		}
		return
	}
	switch {
	case e.Prompt() == "":
	case b.cfg.content && !a.done:
		a.prompts = append(a.prompts, b.cut(e.Prompt()))
		b.message(e, a)
	default:
		b.lose(lostPrompts, true)
	}
}

// cut keeps a text to --otlp-content-limit, whole characters only; a cut
// is a loss.
func (b *builder) cut(text string) string {
	if len(text) <= b.cfg.contentLimit {
		return text
	}
	b.lose(lostContentPast, true)
	return strings.ToValidUTF8(text[:b.cfg.contentLimit], "")
}

// setMessages puts an agent's prompts and answer on its span, with
// --otlp-content: what Langfuse and Phoenix show as its input and output.
func (b *builder) setMessages(a *agent) {
	if !b.cfg.content {
		return
	}
	var msgs []chatMessage
	var texts []string
	for _, p := range a.prompts {
		if p != "" { // all of it past a limit of 0
			msgs = append(msgs, chatMessage{Role: "user", Parts: []msgPart{{Type: partText, Content: p}}})
			texts = append(texts, p)
		}
	}
	// Phoenix shows an agent's input.value and output.value as its input
	// and output, and so does Langfuse before the messages: the prompts
	// and the answer as text.
	if len(msgs) > 0 {
		if j, err := formats.Marshal(msgs); err == nil {
			a.span.set(attribute.String(keyInputMessages, string(j)))
		}
		a.span.set(attribute.String(keyInputValue, strings.Join(texts, "\n\n")), attribute.String(keyInputMime, "text/plain"))
	}
	answer := a.answer
	if a == b.agents[""] {
		// The run's answer: its Answer event, else its last text.
		answer = cutString(b.view.Answer(), b.cfg.contentLimit)
	} else if answer == "" {
		answer = a.lastText // a source that names no answer (a session file): its last text
	}
	if answer != "" {
		msgs := []chatMessage{{Role: "assistant", Parts: []msgPart{{Type: partText, Content: answer}}, FinishReason: "stop"}}
		if j, err := formats.Marshal(msgs); err == nil {
			a.span.set(attribute.String(keyOutputMsgs, string(j)))
		}
		a.span.set(attribute.String(keyOutputValue, answer), attribute.String(keyOutputMime, "text/plain"))
	}
}

// recordContent puts a tool call's arguments or result on its span when
// --otlp-content asks for it, cut at the limit; else it is a loss. It takes
// bytes too, so that they are made a string only when kept.
func recordContent[T ~string | ~[]byte](b *builder, s *span, key string, v T) {
	if len(v) == 0 {
		return
	}
	if !b.cfg.content {
		b.lose(lostContent, true)
		return
	}
	if len(v) > b.cfg.contentLimit {
		v = v[:b.cfg.contentLimit]
		b.lose(lostContentPast, true)
	}
	s.set(attribute.String(key, string(v)))
}
