package agenttest

// AdaL (the platform package @sylphai/adal-cli-<os>-<arch>) is a Bun front
// end that starts a Python back end (compiled with Nuitka) and talks, with
// it, to one platform at ADAL_APP_URL. The platform serves the model
// catalog, the signed-in user and the model calls, the last in Anthropic's
// Messages format at /proxy/v1/messages with a base64-encoded body. Its
// stand-in here is adalPlatform (the server's Other handler) and adalProxy
// (an API on the proxy path that reuses the Anthropic one).
//
// What else the agent needs to start here, found by running it:
//   - a signed-in user: ~/.adal/adal_oauth_creds.json holds a JWT whose
//     signature nobody checks; the back end takes its "sub" claim and looks
//     the user up at GET /api/user/by-clerk-id/<sub>;
//   - the cl100k_base BPE file tiktoken downloads at start, written to
//     TIKTOKEN_CACHE_DIR (~/.adal/cache/tiktoken) from the npm tiktoken
//     package (see adalTokenizer);
//   - an npm on PATH: the front end runs `npm view @sylphai/adal-cli
//     dist-tags.latest` at every start to look for an update;
//   - a proxy: the front end and the back end send crash reports (Sentry,
//     with a built-in address) and the back end uploads logs (S3), so
//     HTTP(S)_PROXY points at the server, whose Other handler refuses every
//     CONNECT; the S3 upload is also turned off by empty credentials.

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

func init() {
	Families["adal"] = adal{}
	Register(func(p string) bool { return p == adalProxyPath }, adalProxy{})
}

// adalProxyPath is where AdaL's back end sends its Anthropic model calls.
const adalProxyPath = "/proxy/v1/messages"

type adal struct{}

// Platform answers what AdaL asks its platform besides the model calls.
func (adal) Platform(Pin) http.Handler { return adalPlatform{} }

func (adal) Setup(pin Pin, home, work, serverURL string) ([]string, error) {
	dir := filepath.Join(home, ".adal")
	if err := os.MkdirAll(filepath.Join(dir, "cache", "tiktoken"), 0o755); err != nil {
		return nil, err
	}
	creds, _ := json.Marshal(map[string]any{"access_token": adalToken(), "expiry_date": int64(4102444800000)})
	if err := os.WriteFile(filepath.Join(dir, "adal_oauth_creds.json"), creds, 0o600); err != nil {
		return nil, err
	}
	bpe, err := adalTokenizer()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cache", "tiktoken", adalBPEKey), bpe, 0o644); err != nil {
		return nil, err
	}
	// The update check: `npm view PACKAGE dist-tags.TAG` says the
	// running version is the latest.
	bin := filepath.Join(home, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	npm := fmt.Sprintf("#!/bin/sh\n# agentconv's stand-in: no update, nothing installed\n[ \"$1\" = view ] && echo %s\nexit 0\n", pin.Version)
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(npm), 0o755); err != nil {
		return nil, err
	}
	env := BaseEnv(home)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + bin + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	return append(env,
		"ADAL_APP_URL="+serverURL,
		"ADAL_TELEMETRY=false",
		// Everything not for 127.0.0.1 goes to the server, which refuses it.
		"HTTP_PROXY="+serverURL, "HTTPS_PROXY="+serverURL, "http_proxy="+serverURL, "https_proxy="+serverURL,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"AWS_S3_LOG_WRITER_ACCESS_KEY_ID=", "AWS_S3_LOG_WRITER_SECRET_ACCESS_KEY=",
	), nil
}

func (adal) Modes(Pin) []Mode {
	return []Mode{
		{Name: "stream-json", Dialect: "adal-stream", Ext: "ndjson", NoUsage: true},
		{Name: "json", Dialect: "adal-json", Ext: "json", NoUsage: true},
		{Name: "text", Dialect: "adal-text", Ext: "txt", NoUsage: true, Text: true},
	}
}

func (adal) Args(_ Pin, mode Mode, sc Scenario) []string {
	perm := []string{"--yolo"}
	if sc.Refuses() {
		// Nothing that writes or runs commands without approval, and in a
		// headless run nobody can approve: the call stops the run.
		perm = []string{"--permission-mode", "default"}
	}
	return append([]string{"-q", sc.Prompt, "-o", mode.Name}, perm...)
}

func (adal) ResumeArgs(_ Pin, mode Mode, id, prompt string) []string {
	return []string{"-q", prompt, "-r", id, "-o", mode.Name, "--yolo"}
}

// SessionID is the session_id of the json and stream-json outputs; the
// text output has none, and then it is the id of the one conversation
// file in the store.
func (adal) SessionID(_ Pin, home string, stdout []byte) string {
	for _, line := range bytes.Split(stdout, []byte("\n")) {
		var v struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(line, &v) == nil && v.SessionID != "" {
			return v.SessionID
		}
	}
	var v struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(stdout, &v) == nil && v.SessionID != "" {
		return v.SessionID
	}
	names, _ := filepath.Glob(filepath.Join(home, ".adal", "sessions", "conversation_*.jsonl"))
	sort.Strings(names)
	if len(names) == 1 {
		return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(names[0]), "conversation_"), ".jsonl")
	}
	return ""
}

// Store: ~/.adal/sessions/conversation_<id>.jsonl (metadata, turn_created,
// message and usage records), read as adal-session, beside <id>_metadata.json
// and a folder <id>/ (the saved outputs of large tool results).
func (adal) Store(Pin) (string, string) { return filepath.Join(".adal", "sessions"), "adal-session" }

// SessionFile: only the conversation files are sessions.
func (adal) SessionFile(rel string) bool {
	return strings.HasPrefix(filepath.Base(rel), "conversation_") && strings.HasSuffix(rel, ".jsonl")
}

func (adal) Tools(Pin) Toolset { return adalTools{} }

type adalTools struct{}

func (adalTools) Shell(id, command string) Call {
	return Call{ID: id, Name: "bash", Args: map[string]any{"command": command}}
}

func (adalTools) WriteFile(id, path, content string) Call {
	return Call{ID: id, Name: "create_file", Args: map[string]any{"file_path": WorkMark + "/" + path, "new_string": content}}
}

// Subagent calls the search subagent, AdaL's one subagent for any task.
func (adalTools) Subagent(id, prompt string) (Call, bool) {
	return Call{ID: id, Name: "agentic_search", Args: map[string]any{"prompt": prompt, "description": "agentconv subagent"}}, true
}

// adalProxy is the Anthropic Messages API on AdaL's proxy path. The body
// comes base64-encoded (X-Content-Encoding: base64). AdaL declares one
// tool, adal_tool_reply, whose input lists the step's calls of its real
// tools: a reply's calls go out as one adal_tool_reply call.
type adalProxy struct{}

func (adalProxy) Name() string { return "anthropic" }

func (adalProxy) Parse(r *http.Request, body []byte, req *Request) error {
	if strings.EqualFold(r.Header.Get("X-Content-Encoding"), "base64") {
		b, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(body)))
		if err != nil {
			return fmt.Errorf("base64 body: %w", err)
		}
		body = b
	}
	return adalAnthropic().ParseBody(body, req)
}

func (adalProxy) WriteReply(w http.ResponseWriter, req *Request, rep Reply) {
	if len(rep.Calls) > 0 {
		calls := make([]any, len(rep.Calls))
		for i, c := range rep.Calls {
			calls[i] = map[string]any{"name": c.Name, "kwargs": c.Args}
		}
		rep.Calls = []Call{{ID: rep.Calls[0].ID, Name: "adal_tool_reply", Args: map[string]any{"calls": calls}}}
	}
	adalAnthropic().WriteReply(w, req, rep)
}

func (adalProxy) WriteFailure(w http.ResponseWriter, req *Request, f Failure) {
	adalAnthropic().WriteFailure(w, req, f)
}

func (adalProxy) WriteSide(w http.ResponseWriter, req *Request, rep Reply) {
	adalAnthropic().WriteSide(w, req, rep)
}

// adalAnthropic is the Anthropic Messages API (anthropic.go).
func adalAnthropic() Anthropic { return Anthropic{} }

// adalPlatform answers the platform's other paths: the model catalog, the
// user, the session registry. It refuses CONNECT (the proxy's tunnels to
// anywhere else) and answers 404 to anything else, naming it on stderr.
type adalPlatform struct{}

// adalUser is who the token says signed in.
const adalUser = "agentconv"

func (adalPlatform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodConnect:
		http.Error(w, "agentconv: no traffic leaves 127.0.0.1", http.StatusForbidden)
	case p == "/proxy/models/catalog":
		writeJSONTo(w, adalCatalog)
	case strings.HasPrefix(p, "/api/user/by-clerk-id/"), p == "/api/user/materialize-from-clerk":
		writeJSONTo(w, map[string]any{"id": "agentconv-user", "clerk_id": adalUser, "email": "agentconv@example.invalid", "name": "agentconv", "tier": "pro"})
	case p == "/api/subscription/me":
		writeJSONTo(w, map[string]any{"id": "agentconv-subscription", "tier": "pro", "status": "active"})
	case p == "/api/user/me/startup-notice":
		writeJSONTo(w, map[string]any{"onboarding_init_status": nil})
	case p == "/api/client-sessions/start", p == "/api/user-stats/session-complete":
		writeJSONTo(w, map[string]any{"success": true})
	default:
		fmt.Fprintf(os.Stderr, "agenttest: adal platform: no answer for %s %s\n", r.Method, r.URL)
		http.NotFound(w, r)
	}
}

// adalCatalog is the model catalog: one Anthropic model, which is also
// the compactor (AdaL will not start without one) and the search
// subagent's model (named there by its API model name).
var adalCatalog = map[string]any{
	"success":       true,
	"default_model": "agentconv-model",
	"models": []any{map[string]any{
		"key":          "agentconv-model",
		"display_name": "agentconv model",
		"model_client": "AnthropicAPIClient",
		"model_kwargs": map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 4096, "max_input_tokens": 200000},
	}},
	"helper_models":   map[string]any{"compactor": "agentconv-model"},
	"subagent_models": map[string]any{"search": map[string]any{"model_name": "claude-sonnet-4-5", "enabled": true}},
}

func writeJSONTo(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the agent reads what it gets
}

// adalToken is an unsigned-looking JWT: AdaL reads its claims without
// checking the signature.
func adalToken() string {
	part := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return part(map[string]any{"alg": "HS256", "typ": "JWT"}) + "." +
		part(map[string]any{"sub": adalUser, "email": "agentconv@example.invalid", "iat": 1700000000, "exp": 4102444800}) + "." +
		base64.RawURLEncoding.EncodeToString([]byte("agentconv"))
}

// The tokenizer file tiktoken fetches for cl100k_base: it keeps it in
// TIKTOKEN_CACHE_DIR under the SHA-1 of its address and checks its SHA-256.
const (
	adalBPEURL    = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
	adalBPESHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
	// adalTiktoken is the npm package the file is rebuilt from.
	adalTiktoken = "tiktoken@1.0.22"
)

var adalBPEKey = func() string { h := sha1.Sum([]byte(adalBPEURL)); return hex.EncodeToString(h[:]) }()

var adalBPE struct {
	once sync.Once
	b    []byte
	err  error
}

// adalTokenizer rebuilds cl100k_base.tiktoken ("<base64 token> <rank>"
// lines) from the npm tiktoken package's encoders/cl100k_base.json, whose
// bpe_ranks are lines of "<prefix> <first rank> <token> <token> …". The
// package is pinned in testdata/agents/pins.tsv, and .ci/agents installs it.
func adalTokenizer() ([]byte, error) {
	adalBPE.once.Do(func() {
		dir := filepath.Join(Cache(), strings.ReplaceAll(adalTiktoken, "@", "-"))
		name := filepath.Join(dir, "node_modules", "tiktoken", "encoders", "cl100k_base.json")
		if _, err := os.Stat(name); err != nil {
			adalBPE.err = fmt.Errorf("%s is not installed (run .ci/agents): %w", adalTiktoken, err)
			return
		}
		adalBPE.b, adalBPE.err = adalBPEFrom(name)
	})
	return adalBPE.b, adalBPE.err
}

func adalBPEFrom(name string) ([]byte, error) {
	raw, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var enc struct {
		BPERanks string `json:"bpe_ranks"`
	}
	if err := json.Unmarshal(raw, &enc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out bytes.Buffer
	for _, line := range strings.Split(enc.BPERanks, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		first, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s: bpe_ranks line %.40q: %w", name, line, err)
		}
		for i, tok := range f[2:] {
			fmt.Fprintf(&out, "%s %d\n", tok, first+i)
		}
	}
	if sum := sha256.Sum256(out.Bytes()); hex.EncodeToString(sum[:]) != adalBPESHA256 {
		return nil, errors.New(name + ": the rebuilt cl100k_base.tiktoken is not the one tiktoken expects")
	}
	return out.Bytes(), nil
}
