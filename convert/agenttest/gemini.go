package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// gemini is the Gemini API: POST /v1beta/models/{model}:generateContent
// and :streamGenerateContent?alt=sse (Gemini CLI, through @google/genai).
// A :countTokens request is answered with a count.
type gemini struct{}

// geminiJSON keeps, from Parse to the writer of the same request, the
// JSON schema a request asks its answer to fit (nil: text). The server
// passes the same *Request to Parse and to the writer.
var geminiJSON sync.Map // *Request → map[string]any

func init() {
	Register(func(p string) bool {
		return strings.Contains(p, "/models/") &&
			(strings.HasSuffix(p, ":generateContent") || strings.HasSuffix(p, ":streamGenerateContent") || strings.HasSuffix(p, ":countTokens"))
	}, gemini{})
}

func (gemini) Name() string { return "gemini" }

// geminiPart is one part of a content, in a request or a reply.
type geminiPart struct {
	Text             string          `json:"text,omitempty"`
	Thought          bool            `json:"thought,omitempty"`
	ThoughtSignature string          `json:"thoughtSignature,omitempty"`
	FunctionCall     *geminiCall     `json:"functionCall,omitempty"`
	FunctionResponse *geminiResponse `json:"functionResponse,omitempty"`
}

type geminiCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type geminiResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

// geminiRequest is the part of a generateContent body the server reads.
type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType   string         `json:"responseMimeType"`
		ResponseSchema     map[string]any `json:"responseSchema"`
		ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

func (gemini) Parse(r *http.Request, body []byte, req *Request) error {
	var b geminiRequest
	if err := json.Unmarshal(body, &b); err != nil {
		return err
	}
	_, after, _ := strings.Cut(r.URL.Path, "/models/")
	req.Model, _, _ = strings.Cut(after, ":")
	req.Stream = strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
	for _, t := range b.Tools {
		for _, d := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, d.Name)
		}
	}
	if b.SystemInstruction != nil {
		req.System = geminiText(b.SystemInstruction.Parts)
	}
	for _, c := range b.Contents {
		for _, m := range geminiMsgs(c) {
			// Consecutive user texts are one message: Gemini CLI 0.2x
			// sends its session context as a content before the prompt's.
			if n := len(req.History); n > 0 && m.Role == "user" && req.History[n-1].Role == "user" {
				req.History[n-1].Text += "\n" + m.Text
				continue
			}
			req.History = append(req.History, m)
		}
	}
	g := b.GenerationConfig
	if schema := g.ResponseJSONSchema; schema != nil || g.ResponseSchema != nil || g.ResponseMimeType == "application/json" {
		if schema == nil {
			schema = g.ResponseSchema
		}
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		geminiJSON.Store(req, schema)
	}
	return nil
}

// geminiText joins the text parts that are not thoughts.
func geminiText(parts []geminiPart) string {
	var s []string
	for _, p := range parts {
		if p.Text != "" && !p.Thought {
			s = append(s, p.Text)
		}
	}
	return strings.Join(s, "\n")
}

// geminiMsgs turns one content into messages: a model content is an
// assistant message; a user content is a tool message for its function
// responses and a user message for its text.
func geminiMsgs(c geminiContent) []Msg {
	if c.Role == "model" {
		m := Msg{Role: "assistant", Text: geminiText(c.Parts)}
		for _, p := range c.Parts {
			if p.Thought {
				m.Thinking += p.Text
			}
			if p.ThoughtSignature != "" && m.Signature == "" {
				m.Signature = p.ThoughtSignature
			}
			if p.FunctionCall != nil {
				m.Calls = append(m.Calls, Call{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: p.FunctionCall.Args})
			}
		}
		return []Msg{m}
	}
	var out []Msg
	tool := Msg{Role: "tool"}
	for _, p := range c.Parts {
		if f := p.FunctionResponse; f != nil {
			res := Result{ID: f.ID}
			switch {
			case f.Response["error"] != nil:
				res.Output, res.IsError = fmt.Sprint(f.Response["error"]), true
			case f.Response["output"] != nil:
				res.Output = fmt.Sprint(f.Response["output"])
			default:
				b, _ := json.Marshal(f.Response)
				res.Output = string(b)
			}
			tool.Results = append(tool.Results, res)
		}
	}
	if len(tool.Results) > 0 {
		out = append(out, tool)
	}
	if t := geminiText(c.Parts); t != "" || len(out) == 0 {
		out = append(out, Msg{Role: "user", Text: t})
	}
	return out
}

// geminiUsage is usageMetadata: Gemini counts the prompt with the cache,
// and the candidates without the thoughts.
func geminiUsage(u Usage) map[string]any {
	m := map[string]any{
		"promptTokenCount":     u.Input + u.CacheRead,
		"candidatesTokenCount": u.Output - u.Reasoning,
		"totalTokenCount":      u.Input + u.CacheRead + u.Output,
	}
	if u.CacheRead > 0 {
		m["cachedContentTokenCount"] = u.CacheRead
	}
	if u.Reasoning > 0 {
		m["thoughtsTokenCount"] = u.Reasoning
	}
	return m
}

// geminiChunk is one response object: a candidate with parts, and, when
// final, the finish reason and the usage.
func geminiChunk(req *Request, parts []geminiPart, final bool, u Usage) map[string]any {
	cand := map[string]any{"content": geminiContent{Role: "model", Parts: parts}, "index": 0}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": req.Model, "responseId": fmt.Sprintf("agentconv-%d", req.Seq)}
	if final {
		cand["finishReason"] = "STOP"
		out["usageMetadata"] = geminiUsage(u)
	}
	return out
}

func (gemini) WriteReply(w http.ResponseWriter, req *Request, rep Reply) {
	geminiJSON.Delete(req)
	var parts []geminiPart
	if rep.Thinking != "" {
		parts = append(parts, geminiPart{Text: rep.Thinking, Thought: true})
	}
	if rep.Text != "" {
		parts = append(parts, geminiPart{Text: rep.Text})
	}
	for i, c := range rep.Calls {
		p := geminiPart{FunctionCall: &geminiCall{ID: c.ID, Name: c.Name, Args: c.Args}}
		if i == 0 && rep.Signature != "" {
			// Gemini 3 signs the first call of a turn.
			p.ThoughtSignature = rep.Signature
		}
		parts = append(parts, p)
	}
	if len(rep.Calls) == 0 && rep.Signature != "" && len(parts) > 0 {
		parts[len(parts)-1].ThoughtSignature = rep.Signature
	}
	geminiWrite(w, req, parts, rep.Usage)
}

// geminiWrite writes parts as one JSON response, or as SSE events of one
// part each, the last with the finish reason and the usage.
func geminiWrite(w http.ResponseWriter, req *Request, parts []geminiPart, u Usage) {
	if !req.Stream {
		writeJSONBody(w, http.StatusOK, geminiChunk(req, parts, true, u))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i, p := range parts {
		b, _ := json.Marshal(geminiChunk(req, []geminiPart{p}, i == len(parts)-1, u))
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	}
	if len(parts) == 0 {
		b, _ := json.Marshal(geminiChunk(req, []geminiPart{{Text: ""}}, true, u))
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// geminiStatus is the status name Google's errors give an HTTP status.
func geminiStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 500:
		return "INTERNAL"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "UNKNOWN"
}

func (gemini) WriteFailure(w http.ResponseWriter, req *Request, f Failure) {
	geminiJSON.Delete(req)
	writeJSONBody(w, f.Status, map[string]any{"error": map[string]any{
		"code": f.Status, "message": f.Message, "status": geminiStatus(f.Status)}})
}

// geminiSideDelay is how long a side request takes to answer, as a real
// model would: Gemini CLI 0.20 loads its shell parser (tree-sitter) in the
// background at startup and rejects, as "could not be parsed safely", a
// shell command that comes before it is ready; its model router's side
// request comes first, and this wait keeps the race from the captures.
const geminiSideDelay = time.Second

// WriteSide answers Gemini CLI's requests of no thread: a token count; a
// request for JSON (the next-speaker check, loop detection, the model
// router) with an instance of its schema that lets the agent go on (the
// user speaks next, the normal model); any other with the Side text.
func (gemini) WriteSide(w http.ResponseWriter, req *Request, rep Reply) {
	if strings.HasSuffix(req.Path, ":countTokens") {
		geminiJSON.Delete(req)
		n := 0
		for _, m := range req.History {
			n += len(m.Text) / 4
		}
		writeJSONBody(w, http.StatusOK, map[string]any{"totalTokens": n})
		return
	}
	time.Sleep(geminiSideDelay)
	text := rep.Text
	if schema, ok := geminiJSON.LoadAndDelete(req); ok {
		b, _ := json.Marshal(schemaInstance(schema.(map[string]any), ""))
		text = string(b)
	}
	geminiWrite(w, req, []geminiPart{{Text: text}}, rep.Usage)
}

// schemaInstance makes a value that fits a JSON schema (or a Gemini
// responseSchema, whose types are upper case). Known fields of Gemini
// CLI's side requests get the answer that lets the agent go on as it
// would without them: the user speaks next, the pro model serves.
func schemaInstance(s map[string]any, key string) any {
	if s == nil {
		return map[string]any{}
	}
	var enum []string
	if e, ok := s["enum"].([]any); ok {
		for _, v := range e {
			enum = append(enum, fmt.Sprint(v))
		}
	}
	switch key {
	case "next_speaker":
		return "user"
	case "model_choice": // the router's classifier: the pro model, as without it
		for _, v := range enum {
			if v == "pro" {
				return v
			}
		}
	case "complexity_score": // the numerical classifier (1-100): pro
		return 100
	}
	if len(enum) > 0 {
		return enum[0]
	}
	switch strings.ToLower(fmt.Sprint(s["type"])) {
	case "object":
		props, _ := s["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := map[string]any{}
		for _, k := range keys {
			ps, _ := props[k].(map[string]any)
			out[k] = schemaInstance(ps, k)
		}
		return out
	case "array":
		return []any{}
	case "number", "integer":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 0
	case "boolean":
		return false
	case "string":
		return "agentconv side answer"
	}
	return nil
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b) //nolint:errcheck // the client may have gone
}
