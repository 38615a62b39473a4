// Package agenttest runs the real coding agents, installed from the npm
// registry at the versions pinned in testdata/agents/pins.tsv, against a
// scripted model server on 127.0.0.1, and keeps what they print and store
// as captures under testdata/agents/.
//
// The server speaks the four APIs the agents use: Anthropic Messages,
// OpenAI Responses, OpenAI Chat Completions and Gemini generateContent.
// What it answers is a Scenario, which is data: the model's replies in
// order, for each thread (the main agent, a subagent), with distinct known
// usage numbers per reply. It logs every request it receives, reduced to
// one shape for every API, so that a test can assert what the agent sent.
package agenttest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Usage is what the server says a reply cost, in the API's own fields. Each
// API's handler maps it to its convention: Anthropic counts Input without
// the cache, OpenAI and Gemini count it with the cache.
type Usage struct {
	Input      int `json:"input"`       // input tokens not read from or written to the cache
	CacheRead  int `json:"cache_read"`  // input tokens read from the cache
	CacheWrite int `json:"cache_write"` // input tokens written to the cache (Anthropic)
	Output     int `json:"output"`      // output tokens, reasoning included
	Reasoning  int `json:"reasoning"`   // of Output, the reasoning tokens
}

// Add sums two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.Input + o.Input, u.CacheRead + o.CacheRead, u.CacheWrite + o.CacheWrite, u.Output + o.Output, u.Reasoning + o.Reasoning}
}

// Call is a tool call the model asks for.
type Call struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// Failure is an error answer: an HTTP status and the API's error type.
type Failure struct {
	Status  int    `json:"status"`
	Type    string `json:"type,omitempty"`    // e.g. overloaded_error, rate_limit_error, api_error
	Message string `json:"message,omitempty"` // defaults to a sentence naming the status
}

// Reply is one model response.
type Reply struct {
	Thinking  string `json:"thinking,omitempty"`  // reasoning text
	Signature string `json:"signature,omitempty"` // the thinking block's signature (Anthropic)
	Text      string `json:"text,omitempty"`
	Calls     []Call `json:"calls,omitempty"` // more than one: parallel calls in one response
	Usage     Usage  `json:"usage"`
	// Fail answers the first len(Fail) attempts at this reply with these
	// errors, before the reply itself; with FailAlways, every attempt
	// past them fails as the last one did, and the reply never comes.
	Fail       []Failure `json:"fail,omitempty"`
	FailAlways bool      `json:"fail_always,omitempty"`
}

// Thread is a conversation the server recognises: a request belongs to
// it when it declares tools and its first user message contains Match
// ("" matches any). The reply to a request is Replies[n], n being the
// number of model turns in the request's history, so that a retry, a
// resume in a new process and a side request all find their place.
type Thread struct {
	Name    string  `json:"name"` // "main", "subagent", …
	Match   string  `json:"match"`
	Replies []Reply `json:"replies"`
	// Last looks for Match in the last user message instead of the first
	// (a resume, whose first message is the session's own).
	Last bool `json:"last,omitempty"`
	// Repeat answers past the last reply with the last reply again,
	// instead of an error (a resume of a session the scenario did not
	// write, whose history is any length).
	Repeat bool `json:"repeat,omitempty"`
}

// Scenario is what the model answers in one test.
type Scenario struct {
	Name    string   `json:"name"`
	Prompt  string   `json:"prompt"`
	Resume  string   `json:"resume,omitempty"` // a second prompt, sent by the agent's own resume
	Threads []Thread `json:"threads"`
	// Side answers every request of no thread (titles, summaries, quota
	// and next-speaker checks).
	Side Reply `json:"side"`
}

// Msg is one message of a request's history, the same for every API.
type Msg struct {
	Role      string   `json:"role"` // user, assistant, system, tool
	Text      string   `json:"text,omitempty"`
	Thinking  string   `json:"thinking,omitempty"`
	Signature string   `json:"signature,omitempty"`
	Calls     []Call   `json:"calls,omitempty"`
	Results   []Result `json:"results,omitempty"`
}

// Result is a tool result sent back to the model.
type Result struct {
	ID      string `json:"id"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
}

// Request is what the server logged of one request.
type Request struct {
	Seq     int       `json:"seq"`
	API     string    `json:"api"` // anthropic, responses, chat, gemini
	Path    string    `json:"path"`
	Model   string    `json:"model"`
	Stream  bool      `json:"stream"`
	Tools   []string  `json:"tools,omitempty"`
	System  string    `json:"-"`
	History []Msg     `json:"history"`
	Thread  string    `json:"thread"` // the thread's name, or "side"
	Turn    int       `json:"turn"`   // the reply's index in the thread
	Attempt int       `json:"attempt"`
	Status  int       `json:"status"` // what the server answered
	Sent    *Usage    `json:"sent,omitempty"`
	Time    time.Time `json:"-"`
}

// FirstUser is the text of the request's first user message.
func (r Request) FirstUser() string {
	for _, m := range r.History {
		if m.Role == "user" && m.Text != "" {
			return m.Text
		}
	}
	return ""
}

// LastUser is the text of the request's last user message.
func (r Request) LastUser() string {
	for i := len(r.History) - 1; i >= 0; i-- {
		if m := r.History[i]; m.Role == "user" && m.Text != "" {
			return m.Text
		}
	}
	return ""
}

// Turns counts the model turns in a history: runs of assistant messages.
func Turns(h []Msg) int {
	n := 0
	prev := ""
	for _, m := range h {
		if m.Role == "assistant" && prev != "assistant" {
			n++
		}
		prev = m.Role
	}
	return n
}

// API is one wire protocol: it reads a request body into a Request and
// writes a Reply or a Failure.
type API interface {
	Name() string
	// Parse fills req's Model, Stream, Tools, System and History.
	Parse(r *http.Request, body []byte, req *Request) error
	WriteReply(w http.ResponseWriter, req *Request, rep Reply)
	WriteFailure(w http.ResponseWriter, req *Request, f Failure)
	// WriteSide answers a request of no thread with the scenario's Side.
	WriteSide(w http.ResponseWriter, req *Request, rep Reply)
}

// route is a path (a prefix, or an exact path) and its API.
type route struct {
	match func(path string) bool
	api   API
}

var (
	routesMu sync.Mutex
	routes   []route
)

// Register adds an API for the paths that match. Each API's file
// registers itself in init.
func Register(match func(path string) bool, api API) {
	routesMu.Lock()
	defer routesMu.Unlock()
	routes = append(routes, route{match, api})
}

// RetryAfter is the milliseconds after which a failure says to retry.
const RetryAfter = 50

// Server is a scripted model server on 127.0.0.1.
type Server struct {
	URL string // http://127.0.0.1:PORT

	mu       sync.Mutex
	scenario Scenario
	log      []Request
	attempts map[string]int
	arrivals []arrival // who waits for the log to grow
	srv      *http.Server
	ln       net.Listener
	// Other answers paths no API claims (a model list, a user); nil: 404.
	Other http.Handler
}

// StartWith starts a server on a free port of 127.0.0.1, whose Other
// handler is other.
func StartWith(sc Scenario, other http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), scenario: sc, attempts: map[string]int{}, ln: ln, Other: other}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// SetScenario replaces the scenario (the log is kept).
func (s *Server) SetScenario(sc Scenario) {
	s.mu.Lock()
	s.scenario = sc
	s.attempts = map[string]int{}
	s.mu.Unlock()
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Log returns a copy of the requests received so far.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// arrival is a channel closed when the log holds more than after requests.
type arrival struct {
	after int
	ch    chan struct{}
}

// Arrived returns a channel that is closed when the server has received
// more than n requests.
func (s *Server) Arrived(n int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	if len(s.log) > n {
		close(ch)
	} else {
		s.arrivals = append(s.arrivals, arrival{n, ch})
	}
	return ch
}

// Requests is the number of requests received so far.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// Exec runs an agent process of the server's, as Exec does, in one of
// Starts's slots from its start until it sends the server a request (its
// start is over: it waits for the model from then on) or ends.
func (s *Server) Exec(ctx context.Context, bin string, args, env []string, work string, limit time.Duration) (Outcome, error) {
	if Starts == nil {
		return Exec(ctx, bin, args, env, work, limit)
	}
	Starts <- struct{}{}
	var once sync.Once
	free := func() { once.Do(func() { <-Starts }) }
	defer free()
	done := make(chan struct{})
	defer close(done)
	go func(arrived <-chan struct{}) {
		select {
		case <-arrived:
			free()
		case <-done:
		}
	}(s.Arrived(s.Requests()))
	return Exec(ctx, bin, args, env, work, limit)
}

// Starts, if not nil, bounds how many agent processes start at once: an
// agent's CPU is mostly its start (a Node process compiles megabytes of
// JavaScript, AdaL starts a Python back end), and starts that share the
// cores with many others take long enough to fail (AdaL gives its back
// end 60 s). A process holds its slot until its first request.
var Starts chan struct{}

// Sent sums the usage the server sent to one thread ("" for all but side).
func (s *Server) Sent(thread string) Usage {
	var u Usage
	for _, r := range s.Log() {
		if r.Sent != nil && r.Thread != "side" && (thread == "" || r.Thread == thread) {
			u = u.Add(*r.Sent)
		}
	}
	return u
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var api API
	routesMu.Lock()
	for _, rt := range routes {
		if rt.match(r.URL.Path) {
			api = rt.api
			break
		}
	}
	routesMu.Unlock()
	if h, ok := api.(http.Handler); ok && r.Method != http.MethodPost {
		h.ServeHTTP(w, r) // another method on an API's path: a WebSocket upgrade
		return
	}
	if api == nil || r.Method != http.MethodPost {
		if s.Other != nil {
			s.Other.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{API: api.Name(), Path: r.URL.Path, Time: time.Now()}
	if err := api.Parse(r, body, &req); err != nil {
		http.Error(w, fmt.Sprintf("agenttest: %s request: %v", api.Name(), err), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	req.Seq = len(s.log) + 1
	th := s.threadOf(&req)
	var rep Reply
	var fail *Failure
	switch {
	case th == nil:
		req.Thread = "side"
		rep = s.scenario.Side
	default:
		req.Thread = th.Name
		req.Turn = Turns(req.History)
		i := req.Turn
		if i >= len(th.Replies) {
			if !th.Repeat || len(th.Replies) == 0 {
				fail = &Failure{Status: 500, Type: "api_error", Message: fmt.Sprintf("agenttest: thread %q has no reply %d", th.Name, i)}
				break
			}
			i = len(th.Replies) - 1
		}
		rep = th.Replies[i]
		key := fmt.Sprintf("%s/%d", th.Name, req.Turn)
		req.Attempt = s.attempts[key]
		s.attempts[key]++
		if n := len(rep.Fail); n > 0 && (req.Attempt < n || rep.FailAlways) {
			f := rep.Fail[min(req.Attempt, n-1)]
			fail = &f
		}
	}
	if fail != nil {
		req.Status = fail.Status
	} else {
		req.Status = 200
		if th != nil {
			u := rep.Usage
			req.Sent = &u
		}
	}
	s.log = append(s.log, req)
	s.arrivals = slices.DeleteFunc(s.arrivals, func(a arrival) bool {
		if len(s.log) > a.after {
			close(a.ch)
			return true
		}
		return false
	})
	s.mu.Unlock()
	if th != nil && th.Name == "main" && req.Turn == 0 && req.Attempt == 0 {
		if d, err := time.ParseDuration(os.Getenv("AGENTCONV_TEST_FIRST_REPLY_DELAY")); err == nil {
			time.Sleep(d) // so that what the reply starts (a subagent) starts in a later minute, as it may by chance
		}
	}

	switch {
	case fail != nil:
		if fail.Message == "" {
			fail.Message = fmt.Sprintf("scripted failure %d", fail.Status)
		}
		// When to try again, as the APIs say it (Anthropic's and OpenAI's
		// SDKs read retry-after-ms, and retry-after in seconds; agents of
		// their own retry-after): soon, so that an agent that honours it
		// retries at once, rather than after its own backoff of seconds.
		w.Header().Set("retry-after-ms", strconv.Itoa(RetryAfter))
		w.Header().Set("retry-after", "0")
		api.WriteFailure(w, &req, *fail)
	case th == nil:
		api.WriteSide(w, &req, rep)
	default:
		api.WriteReply(w, &req, rep)
	}
}

func (s *Server) threadOf(req *Request) *Thread {
	if len(req.Tools) == 0 {
		return nil
	}
	first, last := req.FirstUser(), req.LastUser()
	for i := range s.scenario.Threads {
		th := &s.scenario.Threads[i]
		text := first
		if th.Last {
			text = last
		}
		if th.Match == "" || strings.Contains(text, th.Match) {
			return th
		}
	}
	return nil
}
