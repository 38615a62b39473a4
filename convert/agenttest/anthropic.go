package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// Anthropic is the Anthropic Messages API (POST /v1/messages), answered
// as server-sent events when the request streams and as one JSON message
// otherwise. Its methods are exported so that an agent which reaches
// Anthropic models by another path (a proxy with its own envelope) can
// decode its body and reuse ParseBody and the writers.
type Anthropic struct{}

// AnthropicCount is POST /v1/messages/count_tokens: it declares no tools,
// so the server treats every such request as a side request, which it
// answers with a plausible count.
type AnthropicCount struct{ Anthropic }

func init() {
	Register(func(p string) bool { return p == "/v1/messages/count_tokens" }, AnthropicCount{})
	Register(func(p string) bool { return p == "/v1/messages" }, Anthropic{})
}

// Name implements API.
func (Anthropic) Name() string { return "anthropic" }

// Parse implements API.
func (a Anthropic) Parse(_ *http.Request, body []byte, req *Request) error {
	return a.ParseBody(body, req)
}

// anthropicBlock is one content block of a message, of any type.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     map[string]any  `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // a tool_result's: a string or blocks
	IsError   bool            `json:"is_error"`
}

// anthropicContent is a string or a list of blocks.
type anthropicContent []anthropicBlock

func (c *anthropicContent) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*c = anthropicContent{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(b, (*[]anthropicBlock)(c))
}

// text joins the text blocks.
func (c anthropicContent) text() string {
	var parts []string
	for _, b := range c {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// anthropicRequest is the part of a Messages request the server reads.
type anthropicRequest struct {
	Model  string           `json:"model"`
	Stream bool             `json:"stream"`
	System anthropicContent `json:"system"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string           `json:"role"`
		Content anthropicContent `json:"content"`
	} `json:"messages"`
}

// ParseBody fills req from a Messages request's JSON body: a user message
// becomes a user Msg of its text, and a tool Msg of its tool results (before
// the text, as the API wants them first); an assistant message becomes one
// assistant Msg of its thinking, text and tool calls.
func (Anthropic) ParseBody(body []byte, req *Request) error {
	var in anthropicRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return err
	}
	req.Model, req.Stream, req.System = in.Model, in.Stream, in.System.text()
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, m := range in.Messages {
		switch m.Role {
		case "assistant":
			msg := Msg{Role: "assistant"}
			var texts []string
			for _, b := range m.Content {
				switch b.Type {
				case "thinking":
					msg.Thinking, msg.Signature = b.Thinking, b.Signature
				case "redacted_thinking":
					msg.Signature = b.Signature
				case "text":
					texts = append(texts, b.Text)
				case "tool_use":
					msg.Calls = append(msg.Calls, Call{ID: b.ID, Name: b.Name, Args: b.Input})
				}
			}
			msg.Text = strings.Join(texts, "\n\n")
			req.History = append(req.History, msg)
		default:
			var results []Result
			for _, b := range m.Content {
				if b.Type == "tool_result" {
					results = append(results, Result{ID: b.ToolUseID, Output: anthropicResultText(b.Content), IsError: b.IsError})
				}
			}
			if len(results) > 0 {
				req.History = append(req.History, Msg{Role: "tool", Results: results})
			}
			if t := m.Content.text(); t != "" || len(results) == 0 {
				req.History = append(req.History, Msg{Role: m.Role, Text: t})
			}
		}
	}
	return nil
}

// anthropicResultText is a tool result's content as text.
func anthropicResultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var c anthropicContent
	if json.Unmarshal(raw, &c) != nil {
		return string(raw)
	}
	return c.text()
}

// anthropicUsage is the API's usage: input_tokens excludes the cache.
type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

func toAnthropicUsage(u Usage) anthropicUsage {
	return anthropicUsage{InputTokens: u.Input, CacheCreationInputTokens: u.CacheWrite, CacheReadInputTokens: u.CacheRead, OutputTokens: u.Output}
}

// AnthropicMessage is a whole Messages response.
type AnthropicMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

var anthropicSeq atomic.Int64

// Message is the response to req that says rep.
func (Anthropic) Message(req *Request, rep Reply) AnthropicMessage {
	m := AnthropicMessage{ID: fmt.Sprintf("msg_agentconv_%04d", anthropicSeq.Add(1)), Type: "message", Role: "assistant",
		Model: req.Model, Content: []map[string]any{}, Usage: toAnthropicUsage(rep.Usage)}
	if rep.Thinking != "" {
		m.Content = append(m.Content, map[string]any{"type": "thinking", "thinking": rep.Thinking, "signature": rep.Signature})
	}
	if rep.Text != "" {
		m.Content = append(m.Content, map[string]any{"type": "text", "text": rep.Text})
	}
	for _, c := range rep.Calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		m.Content = append(m.Content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": args})
	}
	stop := "end_turn"
	if len(rep.Calls) > 0 {
		stop = "tool_use"
	}
	m.StopReason = &stop
	return m
}

// AnthropicEvent is one server-sent event of a streamed response.
type AnthropicEvent struct {
	Name string // message_start, content_block_delta, …
	Data any
}

// Events are the server-sent events that stream m, as the API sends them:
// message_start (whose usage counts one output token so far), each block
// started empty, its content in deltas, stopped; message_delta with the
// stop reason and the whole usage; message_stop.
func (Anthropic) Events(m AnthropicMessage) []AnthropicEvent {
	start := m
	start.Content, start.StopReason = []map[string]any{}, nil
	start.Usage.OutputTokens = 1
	ev := []AnthropicEvent{{"message_start", map[string]any{"type": "message_start", "message": start}}, {"ping", map[string]any{"type": "ping"}}}
	delta := func(i int, d map[string]any) {
		ev = append(ev, AnthropicEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}})
	}
	for i, b := range m.Content {
		empty := map[string]any{"type": b["type"]}
		switch b["type"] {
		case "thinking":
			empty["thinking"], empty["signature"] = "", ""
		case "text":
			empty["text"] = ""
		case "tool_use":
			empty["id"], empty["name"], empty["input"] = b["id"], b["name"], map[string]any{}
		}
		ev = append(ev, AnthropicEvent{"content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": empty}})
		switch b["type"] {
		case "thinking":
			delta(i, map[string]any{"type": "thinking_delta", "thinking": b["thinking"]})
			delta(i, map[string]any{"type": "signature_delta", "signature": b["signature"]})
		case "text":
			for _, part := range anthropicHalves(b["text"].(string)) {
				delta(i, map[string]any{"type": "text_delta", "text": part})
			}
		case "tool_use":
			js, _ := json.Marshal(b["input"])
			for _, part := range anthropicHalves(string(js)) {
				delta(i, map[string]any{"type": "input_json_delta", "partial_json": part})
			}
		}
		ev = append(ev, AnthropicEvent{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}})
	}
	ev = append(ev,
		AnthropicEvent{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": m.StopReason, "stop_sequence": nil}, "usage": m.Usage}},
		AnthropicEvent{"message_stop", map[string]any{"type": "message_stop"}})
	return ev
}

// anthropicHalves splits s in two at a rune boundary, so that a block arrives in
// more than one delta.
func anthropicHalves(s string) []string {
	r := []rune(s)
	if len(r) < 2 {
		return []string{s}
	}
	return []string{string(r[:len(r)/2]), string(r[len(r)/2:])}
}

// WriteReply implements API.
func (a Anthropic) WriteReply(w http.ResponseWriter, req *Request, rep Reply) {
	a.WriteMessage(w, req, a.Message(req, rep))
}

// WriteMessage writes m as the request wants it: streamed or whole.
func (a Anthropic) WriteMessage(w http.ResponseWriter, req *Request, m AnthropicMessage) {
	w.Header().Set("request-id", fmt.Sprintf("req_agentconv_%04d", req.Seq))
	if !req.Stream {
		anthropicJSON(w, http.StatusOK, m)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, e := range a.Events(m) {
		js, _ := json.Marshal(e.Data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Name, js)
		if f != nil {
			f.Flush()
		}
	}
}

// WriteFailure implements API: Anthropic's error object, with the status.
func (Anthropic) WriteFailure(w http.ResponseWriter, req *Request, f Failure) {
	w.Header().Set("request-id", fmt.Sprintf("req_agentconv_%04d", req.Seq))
	typ := f.Type
	if typ == "" {
		typ = "api_error"
	}
	anthropicJSON(w, f.Status, map[string]any{"type": "error",
		"error": map[string]any{"type": typ, "message": f.Message}, "request_id": fmt.Sprintf("req_agentconv_%04d", req.Seq)})
}

// WriteSide implements API: a short text reply.
func (a Anthropic) WriteSide(w http.ResponseWriter, req *Request, rep Reply) {
	a.WriteReply(w, req, Reply{Text: rep.Text, Usage: rep.Usage})
}

// Name implements API.
func (AnthropicCount) Name() string { return "anthropic-count" }

// Parse implements API: the count's request, without its tools.
func (a AnthropicCount) Parse(r *http.Request, body []byte, req *Request) error {
	err := a.ParseBody(body, req)
	req.Tools, req.Stream = nil, false
	return err
}

// WriteSide implements API: a count of about four characters a token.
func (AnthropicCount) WriteSide(w http.ResponseWriter, req *Request, _ Reply) {
	n := len(req.System)
	for _, m := range req.History {
		n += len(m.Text) + len(m.Thinking)
		for _, r := range m.Results {
			n += len(r.Output)
		}
	}
	anthropicJSON(w, http.StatusOK, map[string]int{"input_tokens": n/4 + 1})
}

// anthropicJSON writes v with status.
func anthropicJSON(w http.ResponseWriter, status int, v any) {
	js, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(js) //nolint:errcheck // the agent may have gone
}
