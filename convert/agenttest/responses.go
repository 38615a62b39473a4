package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The OpenAI Responses API (POST /v1/responses), which Codex speaks.
//
// A request's instructions are its System; its input items become the
// history: messages by role (developer as system), reasoning and the
// model's calls (function_call, custom_tool_call, local_shell_call) on
// assistant messages, the calls' outputs as Results on a "tool" message.
// A reply is streamed as server-sent events, or written as one response
// object when the request does not stream.
//
// A call is written as the kind of tool the request declared under its
// name: a custom tool (apply_patch) gets the call's "input" argument as
// its raw input, a function gets the arguments as JSON.
//
// A Failure with Status 200 is a failure inside the stream: the response
// starts, then ends with response.failed instead of response.completed.
func init() {
	Register(func(p string) bool { return p == "/v1/responses" || p == "/responses" }, &responsesAPI{kinds: map[*Request]map[string]string{}})
}

type responsesAPI struct {
	mu sync.Mutex
	// kinds holds, between Parse and the answer, the type each of a
	// request's tools was declared with (function, custom, local_shell).
	kinds map[*Request]map[string]string
}

func (*responsesAPI) Name() string { return "responses" }

// ServeHTTP answers a request of another method than POST: a WebSocket
// upgrade (Codex tries the Responses API over a WebSocket first when its
// provider supports_websockets) gets 426 Upgrade Required, on which Codex
// falls back to HTTPS at once, without retrying the upgrade.
func (*responsesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "agenttest: the Responses API is served over HTTP only", http.StatusUpgradeRequired)
		return
	}
	http.Error(w, "agenttest: POST a request", http.StatusMethodNotAllowed)
}

// respItem is an item of a request's input or a response's output.
type respItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   []respText      `json:"summary"`
	Encrypted *string         `json:"encrypted_content"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	CallID    string          `json:"call_id"`
	Arguments json.RawMessage `json:"arguments"` // a string of JSON, or an object (tool_search_call)
	Input     string          `json:"input"`
	Action    map[string]any  `json:"action"`
	Output    json.RawMessage `json:"output"`
}

type respText struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Encrypted string `json:"encrypted_content"` // a part the agent passes on as the model wrote it
}

func (a *responsesAPI) Parse(r *http.Request, body []byte, req *Request) error {
	var in struct {
		Model        string          `json:"model"`
		Stream       bool            `json:"stream"`
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
		Tools        []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"tools"` // a namespace's tools
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return err
	}
	req.Model, req.Stream, req.System = in.Model, in.Stream, in.Instructions
	kinds := map[string]string{}
	for _, t := range in.Tools {
		name := t.Name
		if name == "" {
			name = t.Type // local_shell, web_search, …
		}
		req.Tools = append(req.Tools, name)
		kinds[name] = t.Type
		for _, s := range t.Tools {
			req.Tools = append(req.Tools, name+"."+s.Name)
			kinds[name+"."+s.Name] = s.Type
		}
	}
	var items []respItem
	switch {
	case len(in.Input) > 0 && in.Input[0] == '"': // input as one string: a user message
		var s string
		if err := json.Unmarshal(in.Input, &s); err != nil {
			return err
		}
		req.History = []Msg{{Role: "user", Text: s}}
	case len(in.Input) > 0:
		if err := json.Unmarshal(in.Input, &items); err != nil {
			return fmt.Errorf("input: %w", err)
		}
		req.History = responsesHistory(items)
	}
	a.mu.Lock()
	a.kinds[req] = kinds
	a.mu.Unlock()
	return nil
}

// siblings maps the id of each call the server wrote to the id of the
// first call of the same response: an agent that sends each call's output
// right after its call (Codex) interleaves the calls of one response with
// outputs, and the history puts them back together. The ids are the
// scenarios', so every server writes the same map.
var siblings sync.Map

// responsesHistory turns input items into messages. The items of one model
// response (reasoning, text, calls) make one assistant message, and the
// outputs of its calls one "tool" message.
func responsesHistory(items []respItem) []Msg {
	var h []Msg
	last := func(role string) *Msg {
		if len(h) == 0 || h[len(h)-1].Role != role {
			h = append(h, Msg{Role: role})
		}
		return &h[len(h)-1]
	}
	// call finds the assistant message of a call: the one before the
	// outputs when the call's response wrote a call in it already.
	call := func(id string) *Msg {
		first, ok := siblings.Load(id)
		if n := len(h); ok && n >= 2 && h[n-1].Role == "tool" && h[n-2].Role == "assistant" {
			for _, c := range h[n-2].Calls {
				if f, _ := siblings.Load(c.ID); f == first {
					return &h[n-2]
				}
			}
		}
		return last("assistant")
	}
	for _, it := range items {
		switch it.Type {
		case "message", "":
			text := contentText(it.Content)
			switch it.Role {
			case "assistant":
				m := last("assistant")
				m.Text = joinText(m.Text, text)
			case "developer", "system":
				h = append(h, Msg{Role: "system", Text: text})
			default:
				role := "user"
				if agentContext(text) {
					role = "system"
				}
				h = append(h, Msg{Role: role, Text: text})
			}
		case "agent_message": // from another agent of the team (Codex's subagents): a user message
			h = append(h, Msg{Role: "user", Text: contentText(it.Content)})
		case "reasoning":
			m := last("assistant")
			var parts []string
			for _, s := range it.Summary {
				parts = append(parts, s.Text)
			}
			if c := contentText(it.Content); c != "" {
				parts = append(parts, c)
			}
			m.Thinking = joinText(m.Thinking, strings.Join(parts, "\n"))
			if it.Encrypted != nil {
				m.Signature = *it.Encrypted
			}
		case "function_call", "custom_tool_call", "local_shell_call", "tool_search_call":
			m := call(it.CallID)
			name := it.Name
			if it.Namespace != "" {
				name = it.Namespace + "." + name
			}
			args := map[string]any{}
			switch it.Type {
			case "function_call", "tool_search_call":
				raw := []byte(it.Arguments)
				var str string
				if json.Unmarshal(raw, &str) == nil {
					raw = []byte(str)
				}
				if err := json.Unmarshal(raw, &args); err != nil {
					args = map[string]any{"arguments": string(raw)}
				}
			case "custom_tool_call":
				args = map[string]any{"input": it.Input}
			case "local_shell_call":
				name = "local_shell"
				args = it.Action
			}
			m.Calls = append(m.Calls, Call{ID: it.CallID, Name: name, Args: args})
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output":
			out, isErr := outputText(it.Output)
			m := last("tool")
			m.Results = append(m.Results, Result{ID: it.CallID, Output: out, IsError: isErr})
		case "web_search_call", "image_generation_call": // the model's own tools
			last("assistant")
		}
	}
	return h
}

// contextTag matches a text wholly inside one tag, <environment_context>…
// </environment_context>: what an agent adds to the conversation as a user
// message (its environment, the user's instructions), not the user's words.
var contextTag = regexp.MustCompile(`^\s*<([a-z_]+)>[\s\S]*</([a-z_]+)>\s*$`)

// agentContext says whether a user message's text is the agent's context:
// the history keeps it as a system message.
func agentContext(text string) bool {
	m := contextTag.FindStringSubmatch(text)
	return m != nil && m[1] == m[2]
}

func joinText(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n" + b
}

// contentText joins the text parts of a message's content (a string, or
// input_text, output_text, reasoning_text parts).
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []respText
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		} else if p.Encrypted != "" {
			texts = append(texts, p.Encrypted)
		}
	}
	return strings.Join(texts, "\n")
}

// outputText reads a call's output: a string, content parts, or an object
// with content and success.
func outputText(raw json.RawMessage) (string, bool) {
	var obj struct {
		Content json.RawMessage `json:"content"`
		Success *bool           `json:"success"`
	}
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &obj) == nil {
		return contentText(obj.Content), obj.Success != nil && !*obj.Success
	}
	return contentText(raw), false
}

// responsesUsage is the usage object of a response: input counts the
// cached tokens too.
func responsesUsage(u Usage) map[string]any {
	in := u.Input + u.CacheRead
	return map[string]any{
		"input_tokens":          in,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheRead},
		"output_tokens":         u.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		"total_tokens":          in + u.Output,
	}
}

// responseOutput builds the output items of a reply, with ids made from
// the request's sequence number.
func (a *responsesAPI) responseOutput(req *Request, rep Reply) []map[string]any {
	a.mu.Lock()
	kinds := a.kinds[req]
	delete(a.kinds, req)
	a.mu.Unlock()
	var out []map[string]any
	id := func(prefix string) string { return fmt.Sprintf("%s_%d_%d", prefix, req.Seq, len(out)) }
	if rep.Thinking != "" {
		it := map[string]any{"type": "reasoning", "id": id("rs"),
			"summary": []map[string]any{{"type": "summary_text", "text": rep.Thinking}},
			"content": []map[string]any{{"type": "reasoning_text", "text": rep.Thinking}}}
		if rep.Signature != "" {
			it["encrypted_content"] = rep.Signature
		}
		out = append(out, it)
	}
	if rep.Text != "" {
		out = append(out, map[string]any{"type": "message", "id": id("msg"), "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": rep.Text, "annotations": []any{}}}})
	}
	for _, c := range rep.Calls {
		siblings.Store(c.ID, rep.Calls[0].ID)
		switch kinds[c.Name] {
		case "custom":
			input, _ := c.Args["input"].(string)
			out = append(out, map[string]any{"type": "custom_tool_call", "id": id("ctc"), "status": "completed",
				"call_id": c.ID, "name": c.Name, "input": input})
		case "local_shell":
			out = append(out, map[string]any{"type": "local_shell_call", "id": id("lsh"), "status": "completed",
				"call_id": c.ID, "action": c.Args})
		default:
			args, _ := json.Marshal(c.Args)
			it := map[string]any{"type": "function_call", "id": id("fc"), "status": "completed",
				"call_id": c.ID, "name": c.Name, "arguments": string(args)}
			if ns, name, ok := strings.Cut(c.Name, "."); ok && kinds[c.Name] != "" {
				it["namespace"], it["name"] = ns, name
			}
			out = append(out, it)
		}
	}
	return out
}

func (a *responsesAPI) response(req *Request, status string, output []map[string]any) map[string]any {
	if output == nil {
		output = []map[string]any{}
	}
	return map[string]any{"id": fmt.Sprintf("resp_agentconv_%d", req.Seq), "object": "response",
		"created_at": time.Now().Unix(), "status": status, "model": req.Model, "output": output}
}

func (a *responsesAPI) WriteReply(w http.ResponseWriter, req *Request, rep Reply) {
	output := a.responseOutput(req, rep)
	if !req.Stream {
		resp := a.response(req, "completed", output)
		resp["usage"] = responsesUsage(rep.Usage)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp) //nolint:errcheck // the client may have gone
		return
	}
	s := newSSE(w)
	s.event("response.created", map[string]any{"response": a.response(req, "in_progress", nil)})
	s.event("response.in_progress", map[string]any{"response": a.response(req, "in_progress", nil)})
	for i, it := range output {
		s.item(i, it)
	}
	resp := a.response(req, "completed", output)
	resp["usage"] = responsesUsage(rep.Usage)
	s.event("response.completed", map[string]any{"response": resp})
}

func (a *responsesAPI) WriteSide(w http.ResponseWriter, req *Request, rep Reply) {
	a.WriteReply(w, req, Reply{Text: rep.Text, Usage: rep.Usage})
}

// openaiError maps a failure's type to OpenAI's error type and code.
func openaiError(f Failure) (typ, code string) {
	switch {
	case f.Status == http.StatusTooManyRequests || f.Type == "rate_limit_error":
		return "requests", "rate_limit_exceeded"
	case f.Type == "overloaded_error":
		return "server_error", "server_is_overloaded"
	case f.Status >= 500 || f.Type == "api_error":
		return "server_error", "server_error"
	case f.Status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	}
	return "invalid_request_error", f.Type
}

func (a *responsesAPI) WriteFailure(w http.ResponseWriter, req *Request, f Failure) {
	a.mu.Lock()
	delete(a.kinds, req)
	a.mu.Unlock()
	typ, code := openaiError(f)
	body := map[string]any{"message": f.Message, "type": typ, "param": nil, "code": code}
	if f.Status == http.StatusOK { // in the stream
		s := newSSE(w)
		s.event("response.created", map[string]any{"response": a.response(req, "in_progress", nil)})
		resp := a.response(req, "failed", nil)
		resp["error"] = map[string]any{"code": code, "message": f.Message}
		s.event("response.failed", map[string]any{"response": resp})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	json.NewEncoder(w).Encode(map[string]any{"error": body}) //nolint:errcheck // the client may have gone
}

// sse writes server-sent events, each with a type and a sequence number.
type sse struct {
	w   http.ResponseWriter
	seq int
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w}
}

func (s *sse) event(typ string, data map[string]any) {
	data["type"] = typ
	data["sequence_number"] = s.seq
	s.seq++
	b, _ := json.Marshal(data)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", typ, b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// item streams one output item: added, its deltas, done.
func (s *sse) item(i int, it map[string]any) {
	id, _ := it["id"].(string)
	added := map[string]any{}
	for k, v := range it {
		added[k] = v
	}
	added["status"] = "in_progress"
	switch it["type"] {
	case "message":
		added["content"] = []any{}
	case "reasoning":
		added["summary"], added["content"] = []any{}, []any{}
	case "function_call":
		added["arguments"] = ""
	case "custom_tool_call":
		added["input"] = ""
	}
	if it["type"] == "reasoning" {
		delete(added, "status")
	}
	s.event("response.output_item.added", map[string]any{"output_index": i, "item": added})
	at := func(m map[string]any) map[string]any { m["item_id"], m["output_index"] = id, i; return m }
	switch it["type"] {
	case "reasoning":
		for j, p := range it["summary"].([]map[string]any) {
			text := p["text"].(string)
			s.event("response.reasoning_summary_part.added", at(map[string]any{"summary_index": j, "part": map[string]any{"type": "summary_text", "text": ""}}))
			for _, d := range chunks(text) {
				s.event("response.reasoning_summary_text.delta", at(map[string]any{"summary_index": j, "delta": d}))
			}
			s.event("response.reasoning_summary_text.done", at(map[string]any{"summary_index": j, "text": text}))
			s.event("response.reasoning_summary_part.done", at(map[string]any{"summary_index": j, "part": p}))
		}
		for j, p := range it["content"].([]map[string]any) {
			text := p["text"].(string)
			for _, d := range chunks(text) {
				s.event("response.reasoning_text.delta", at(map[string]any{"content_index": j, "delta": d}))
			}
			s.event("response.reasoning_text.done", at(map[string]any{"content_index": j, "text": text}))
		}
	case "message":
		for j, p := range it["content"].([]map[string]any) {
			text := p["text"].(string)
			s.event("response.content_part.added", at(map[string]any{"content_index": j, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}))
			for _, d := range chunks(text) {
				s.event("response.output_text.delta", at(map[string]any{"content_index": j, "delta": d}))
			}
			s.event("response.output_text.done", at(map[string]any{"content_index": j, "text": text}))
			s.event("response.content_part.done", at(map[string]any{"content_index": j, "part": p}))
		}
	case "function_call":
		args := it["arguments"].(string)
		s.event("response.function_call_arguments.delta", at(map[string]any{"delta": args}))
		s.event("response.function_call_arguments.done", at(map[string]any{"arguments": args}))
	case "custom_tool_call":
		input := it["input"].(string)
		s.event("response.custom_tool_call_input.delta", at(map[string]any{"delta": input}))
		s.event("response.custom_tool_call_input.done", at(map[string]any{"input": input}))
	}
	s.event("response.output_item.done", map[string]any{"output_index": i, "item": it})
}

// chunks splits a text in two deltas at a word, as a model streams it.
func chunks(text string) []string {
	if i := strings.Index(text, " "); i > 0 {
		return []string{text[:i], text[i:]}
	}
	return []string{text}
}
