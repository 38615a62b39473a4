package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// chat is the OpenAI Chat Completions API: POST /v1/chat/completions (or
// /chat/completions under any base), streamed as SSE chunks or answered
// as one JSON object (Qwen Code, and any OpenAI-compatible client).
type chat struct{}

func init() {
	Register(func(p string) bool { return strings.HasSuffix(p, "/chat/completions") }, chat{})
}

// chatJSON keeps, from Parse to the writer of the same request, the JSON
// schema its response_format asks the answer to fit.
var chatJSON sync.Map // *Request → map[string]any

func (chat) Name() string { return "chat" }

type chatCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []chatCall      `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
}

type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// chatContent is a message's content: a string, or text parts.
func chatContent(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts) //nolint:errcheck // no text
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

func (chat) Parse(r *http.Request, body []byte, req *Request) error {
	var b chatRequest
	if err := json.Unmarshal(body, &b); err != nil {
		return err
	}
	req.Model, req.Stream = b.Model, b.Stream
	for _, t := range b.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	var system []string
	for _, m := range b.Messages {
		text := chatContent(m.Content)
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "tool":
			req.History = append(req.History, Msg{Role: "tool", Results: []Result{{ID: m.ToolCallID, Output: text}}})
		case "assistant":
			msg := Msg{Role: "assistant", Text: text, Thinking: m.ReasoningContent}
			for _, c := range m.ToolCalls {
				var args map[string]any
				json.Unmarshal([]byte(c.Function.Arguments), &args) //nolint:errcheck // arguments that are no object stay nil
				msg.Calls = append(msg.Calls, Call{ID: c.ID, Name: c.Function.Name, Args: args})
			}
			req.History = append(req.History, msg)
		default:
			req.History = append(req.History, Msg{Role: "user", Text: text})
		}
	}
	req.System = strings.Join(system, "\n")
	if f := b.ResponseFormat; f != nil && (f.Type == "json_schema" || f.Type == "json_object") {
		schema := f.JSONSchema.Schema
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		chatJSON.Store(req, schema)
	}
	return nil
}

// chatUsage counts the prompt with the cache, and the completion with the
// reasoning.
func chatUsage(u Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":             u.Input + u.CacheRead,
		"completion_tokens":         u.Output,
		"total_tokens":              u.Input + u.CacheRead + u.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheRead},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
	}
}

func (chat) WriteReply(w http.ResponseWriter, req *Request, rep Reply) {
	chatJSON.Delete(req)
	chatWrite(w, req, rep)
}

// chatWrite writes a reply as one chat.completion, or as chunks: the
// reasoning, the text, each call's name then its arguments, the finish
// reason, and a last chunk with the usage and no choice.
func chatWrite(w http.ResponseWriter, req *Request, rep Reply) {
	id := fmt.Sprintf("chatcmpl-agentconv-%d", req.Seq)
	created := time.Now().Unix()
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
	}
	calls := make([]chatCall, len(rep.Calls))
	for i, c := range rep.Calls {
		b, _ := json.Marshal(c.Args)
		calls[i].ID, calls[i].Type = c.ID, "function"
		calls[i].Function.Name, calls[i].Function.Arguments = c.Name, string(b)
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		if rep.Thinking != "" {
			msg["reasoning_content"] = rep.Thinking
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		writeJSONBody(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": chatUsage(rep.Usage)})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(choices []any, usage map[string]any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	delta := func(d map[string]any) { send([]any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}, nil) }
	delta(map[string]any{"role": "assistant", "content": ""})
	if rep.Thinking != "" {
		delta(map[string]any{"reasoning_content": rep.Thinking})
	}
	if rep.Text != "" {
		delta(map[string]any{"content": rep.Text})
	}
	for i, c := range calls {
		head := map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Function.Name, "arguments": ""}}
		delta(map[string]any{"tool_calls": []any{head}})
		delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": c.Function.Arguments}}}})
	}
	send([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	send([]any{}, chatUsage(rep.Usage))
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// chatError is the OpenAI error type and code of an HTTP status.
func chatError(status int) (typ string, code any) {
	switch {
	case status == 429:
		return "rate_limit_error", "rate_limit_exceeded"
	case status == 401:
		return "invalid_request_error", "invalid_api_key"
	case status >= 500:
		return "server_error", nil
	}
	return "invalid_request_error", nil
}

func (chat) WriteFailure(w http.ResponseWriter, req *Request, f Failure) {
	chatJSON.Delete(req)
	typ, code := chatError(f.Status)
	writeJSONBody(w, f.Status, map[string]any{"error": map[string]any{"message": f.Message, "type": typ, "param": nil, "code": code}})
}

// WriteSide answers a request of no thread with the Side text, or, when
// its response_format asks for JSON, an instance of its schema.
func (chat) WriteSide(w http.ResponseWriter, req *Request, rep Reply) {
	if schema, ok := chatJSON.LoadAndDelete(req); ok {
		b, _ := json.Marshal(schemaInstance(schema.(map[string]any), ""))
		rep.Text = string(b)
	}
	chatWrite(w, req, rep)
}
