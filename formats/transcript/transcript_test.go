package transcript

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"golang.org/x/net/html"
)

// hostile is what a transcript must show as text, never as markup.
const hostile = "<script>alert(1)</script></details></div><img src=x onerror=alert(2)>\n```\n````\nend"

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// run makes the events of one run: a prompt, thinking, a call that
// starts a subagent (which calls a tool whose output is long, and a
// subagent of its own), a refused call, and the answer.
func run(session string, bad string) []*formats.Event {
	long := strings.Repeat("line of output\n", 40)
	return []*formats.Event{
		{Kind: formats.RunStart, Time: t0, Run: formats.RunInfo{SessionID: session, Model: "model-" + bad, Cwd: "/w/" + bad, AgentName: "agent"}},
		{Kind: formats.UserMessage, Time: t0, Text: "prompt " + bad},
		{Kind: formats.Message, Thinking: "thought " + bad, Text: "text " + bad},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c1", Name: "Task " + bad, Args: []byte(`{"description":"look ` + jsonEsc(bad) + `"}`)}},
		{Kind: formats.AgentStart, Agent: "a1", AgentInfo: formats.AgentInfo{Label: "explorer " + bad, ParentCall: "c1"}},
		{Kind: formats.UserMessage, Agent: "a1", Text: "task " + bad},
		{Kind: formats.ToolCall, Agent: "a1", Call: formats.Call{ID: "c2", Name: "Grep", Args: []byte(`{"pattern":"x"}`)}},
		{Kind: formats.ToolResult, Agent: "a1", Call: formats.Call{ID: "c2", Name: "Grep", Status: formats.Completed, Output: formats.TextOutput(long + bad)}},
		{Kind: formats.ToolCall, Agent: "a1", Call: formats.Call{ID: "c3", Name: "Task", Args: []byte(`{"description":"deeper"}`)}},
		{Kind: formats.AgentStart, Agent: "a2", AgentInfo: formats.AgentInfo{Label: "deep", Parent: "a1", ParentCall: "c3"}},
		{Kind: formats.Message, Agent: "a2", Text: "deep text"},
		{Kind: formats.AgentEnd, Agent: "a2", Status: formats.Completed, Text: "deep report"},
		{Kind: formats.ToolResult, Agent: "a1", Call: formats.Call{ID: "c3", Name: "Task", Status: formats.Completed, Output: formats.TextOutput("deep done")}},
		{Kind: formats.AgentEnd, Agent: "a1", Status: formats.Completed, Text: "report " + bad},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c1", Name: "Task " + bad, Status: formats.Completed, Output: formats.TextOutput("short " + bad)}},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "c4", Name: "Write", Args: []byte(`{"file_path":"/etc/hosts"}`)}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "c4", Name: "Write", Status: formats.Denied, Error: "not allowed " + bad}},
		{Kind: formats.Notice, Severity: formats.Error, Text: "boom " + bad},
		{Kind: formats.Answer, Text: "answer " + bad},
		{Kind: formats.RunEnd, Time: t0.Add(3 * time.Second), Status: formats.Failed, Text: "the run failed " + bad,
			Usage: formats.UsageInfo{InputTokens: formats.Some[int64](1200), OutputTokens: formats.Some[int64](34), CostUSD: formats.Some(0.25)}},
	}
}

func jsonEsc(s string) string {
	b, _ := formats.Marshal(s)
	return string(b[1 : len(b)-1])
}

func write(t *testing.T, d formats.Dialect, o formats.WriteOptions, evs ...[]*formats.Event) string {
	t.Helper()
	var out bytes.Buffer
	if o.Report == nil {
		o.Report = &formats.Report{}
	}
	w := formats.Standalone(d.NewWriter(&out, o))
	for _, run := range evs {
		for _, e := range run {
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// parse parses a page, and fails on any script, event handler attribute
// or element that loads something.
func parse(t *testing.T, page string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "script", "img", "iframe", "object", "embed", "link", "base", "form":
			t.Errorf("the page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") || a.Key == "src" {
				t.Errorf("<%s> has an attribute %s=%q", n.Data, a.Key, a.Val)
			}
		}
	})
	return doc
}

func walk(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func hasClass(n *html.Node, class string) bool {
	for _, a := range n.Attr {
		if a.Key == "class" && strings.Contains(" "+a.Val+" ", " "+class+" ") {
			return true
		}
	}
	return false
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

// find returns the elements of a class under n, in document order.
func find(n *html.Node, class string) []*html.Node {
	var out []*html.Node
	walk(n, func(c *html.Node) {
		if c.Type == html.ElementNode && hasClass(c, class) {
			out = append(out, c)
		}
	})
	return out
}

// TestHTMLHostile: whatever the input holds shows as text; the page has
// no script, no handler, nothing that loads, and its structure is ours.
func TestHTMLHostile(t *testing.T) {
	page := write(t, HTML, formats.WriteOptions{}, run(`"><script>alert(0)</script>`, hostile))
	doc := parse(t, page)
	body := text(doc)
	for _, want := range []string{"prompt " + hostile, "text " + hostile, "answer " + hostile, "boom " + hostile} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q as text", want)
		}
	}
	// The structure is the writer's: one run, three calls' blocks at the
	// top level of their agents, two subagents.
	if n := len(find(doc, "run")); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
	if n := len(find(doc, "agent")); n != 2 {
		t.Errorf("%d subagents, want 2", n)
	}
	if !strings.Contains(page, `default-src 'none'`) || !strings.Contains(page, `name="viewport"`) || !strings.Contains(page, "prefers-color-scheme:dark") {
		t.Error("the page lacks its CSP, viewport or dark mode")
	}
	if regexp.MustCompile(`(?i)(https?:)?//[a-z]`).MatchString(strings.ReplaceAll(page, "http-equiv", "")) {
		t.Error("the page names an address")
	}
}

// TestHTMLNesting: a subagent sits in the call that started it, its own
// subagent in its call; long outputs and thinking are folded, short
// outputs are not; the refusal and the error are marked.
func TestHTMLNesting(t *testing.T) {
	doc := parse(t, write(t, HTML, formats.WriteOptions{}, run("s1", "x")))
	calls := find(doc, "call")
	byName := map[string]*html.Node{}
	for _, c := range calls {
		head := text(find(c, "head")[0])
		if name := strings.Fields(head)[1]; byName[name] == nil {
			byName[name] = c
		}
	}
	task := byName["Task"] // the first: the main agent's
	if task == nil {
		t.Fatal("no Task call")
	}
	agents := find(task, "agent")
	if len(agents) != 2 || !strings.Contains(text(agents[0]), "explorer x") || !strings.Contains(text(agents[1]), "deep text") {
		t.Fatalf("the Task call does not hold the explorer and, in it, the deep subagent")
	}
	inner := find(agents[0], "call")
	if len(inner) != 2 || len(find(inner[1], "agent")) != 1 || len(find(inner[0], "agent")) != 0 {
		t.Errorf("the deep subagent is not under the explorer's second call")
	}
	// Grep's long output is folded, Task's short one is not.
	folds := find(inner[0], "fold")
	if len(folds) != 1 || folds[0].Data != "details" || !strings.Contains(text(folds[0]), "41 lines") {
		t.Errorf("Grep's 41 lines of output are not one fold")
	}
	if len(find(task, "fold")) != 1 {
		t.Errorf("the main Task call has %d folds, want only its subagent's Grep output", len(find(task, "fold")))
	}
	if th := find(doc, "thinking"); len(th) != 1 || th[0].Data != "details" {
		t.Errorf("thinking is not folded")
	}
	write := byName["Write"]
	if write == nil || !hasClass(write, "bad") || !strings.Contains(text(write), "⛔ refused") || !strings.Contains(text(write), "not allowed x") {
		t.Errorf("the refused call is not marked with its reason")
	}
	problems := find(doc, "problem")
	var said []string
	for _, p := range problems {
		said = append(said, text(p))
	}
	all := strings.Join(said, "\n")
	if !strings.Contains(all, "✗ Error: boom x") || !strings.Contains(all, "✗ Run failed: the run failed x") {
		t.Errorf("the error and the run's failure are not marked: %q", all)
	}
	facts := text(find(doc, "facts")[0])
	for _, want := range []string{"model-x", "3.0s", "✗ failed (exit 2)", "1,234 (1,200 in, 34 out)", "$0.2500", "4 (1 refused)"} {
		if !strings.Contains(facts, want) {
			t.Errorf("the run's table lacks %q: %s", want, facts)
		}
	}
}

// mdStructure reads markdown as GitHub does, as far as fences, quotes
// and HTML blocks go: it fails when a fence is left open, and returns
// the lines outside fences that start an HTML block.
func mdStructure(t *testing.T, md string) []string {
	t.Helper()
	var tags []string
	type open struct {
		ch    byte
		n     int
		depth int
	}
	var f *open
	for i, l := range strings.Split(md, "\n") {
		depth := 0
		for strings.HasPrefix(l, ">") {
			l = strings.TrimPrefix(strings.TrimPrefix(l, ">"), " ")
			depth++
		}
		if f != nil && depth < f.depth {
			f = nil // the quote that held the fence ended
		}
		tl := strings.TrimLeft(l, " ")
		if f != nil {
			if longestPrefix(tl, f.ch) >= f.n && strings.Trim(tl, string(f.ch)) == "" {
				f = nil
			}
			continue
		}
		for _, ch := range []byte{'`', '~'} {
			if n := longestPrefix(tl, ch); n >= 3 && len(l)-len(tl) < 4 {
				f = &open{ch, n, depth}
			}
		}
		if f != nil {
			continue
		}
		if strings.HasPrefix(tl, "<") {
			tags = append(tags, strings.TrimSpace(tl))
		}
		_ = i
	}
	if f != nil {
		t.Errorf("a fence is left open at the end")
	}
	return tags
}

// TestMarkdownHostile: tool output and text cannot open or close a fold
// or a fence of the page's; fences are longer than any backtick run in
// what they hold.
func TestMarkdownHostile(t *testing.T) {
	bad := hostile + "\n```go\nunclosed fence <details>"
	md := write(t, Markdown, formats.WriteOptions{}, run("s1", bad))
	tags := mdStructure(t, md)
	opens, closes := 0, 0
	for _, tag := range tags {
		switch {
		case strings.HasPrefix(tag, "<details"):
			opens++
		case tag == "</details>":
			closes++
		default:
			t.Errorf("a line of the input starts an HTML block: %q", tag)
		}
	}
	// Thinking, Grep's long output, the two subagents.
	if opens != 4 || closes != 4 {
		t.Errorf("%d folds open and %d close, want 4 and 4", opens, closes)
	}
	// In text, tags are escaped (in code they are code).
	if !strings.Contains(md, "> prompt &lt;script>alert(1)&lt;/script>&lt;/details>&lt;/div>&lt;img src=x onerror=alert(2)>") {
		t.Error("a tag of the prompt is left as it is")
	}
	// The outputs hold ```` : their fences are of five backticks.
	if !strings.Contains(md, "`````text\nshort ") {
		t.Error("the short output is not in a fence longer than its backticks")
	}
	// The summary of a fold is HTML-escaped.
	if !strings.Contains(md, "<summary>subagent ⤷ explorer &lt;script&gt;") {
		t.Error("a subagent's label is not escaped in its fold's summary")
	}
	// Table cells: a pipe cannot add a column.
	md = write(t, Markdown, formats.WriteOptions{}, run("a|b", "x|y"))
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") && strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") != 3 {
			t.Errorf("a table row has another column: %q", l)
		}
	}
}

// TestMarkdownText: text keeps its markdown, code included, with tags
// outside code escaped and a fence left open closed.
func TestMarkdownText(t *testing.T) {
	for in, want := range map[string]string{
		"a <b> `<c>` ``<d>`` <":       "a &lt;b> `<c>` ``<d>`` <",
		"</details>":                  "&lt;/details>",
		"```\n</details>\n```\n<x>":   "```\n</details>\n```\n&lt;x>",
		"~~~~\ncode":                  "~~~~\ncode\n~~~~",
		"    <indented code>":         "    &lt;indented code>",
		"1 < 2 and a<-b, `unclosed <": "1 < 2 and a<-b, `unclosed <",
	} {
		if got := mdText(in); got != want {
			t.Errorf("mdText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := fence("a ```` b", ""); !strings.HasPrefix(got, "`````\n") {
		t.Errorf("fence: %q", got)
	}
	if got := mdCode("`x`"); got != "`` `x` ``" {
		t.Errorf("mdCode: %q", got)
	}
}

// TestPages: with Create (-o DIR), one page per session, runs of a
// session together, and an index that links each page.
func TestPages(t *testing.T) {
	for _, d := range []formats.Dialect{HTML, Markdown} {
		files := map[string]*bytes.Buffer{}
		var order []string
		create := func(name string) (io.WriteCloser, error) {
			b := &bytes.Buffer{}
			files[name] = b
			order = append(order, name)
			return nopCloser{b}, nil
		}
		out := write(t, d, formats.WriteOptions{Create: create}, run("s-1", "a"), run("s-1", "b"), run("../s 2", "c"), run("", "d"))
		if out != "" {
			t.Errorf("%s: wrote %d bytes to the stream", d.Name, len(out))
		}
		ext := "." + map[string]string{"html": "html", "markdown": "md"}[d.Name]
		want := []string{"s-1" + ext, "_s_2" + ext, "run-4" + ext, "index" + ext}
		if strings.Join(order, " ") != strings.Join(want, " ") {
			t.Fatalf("%s: files %v, want %v", d.Name, order, want)
		}
		first := files["s-1"+ext].String()
		if !strings.Contains(first, "Run 1") || !strings.Contains(first, "Run 2") || strings.Contains(first, "Run 3") {
			t.Errorf("%s: s-1's page does not hold its two runs alone", d.Name)
		}
		index := files["index"+ext].String()
		for _, f := range want[:3] {
			if !strings.Contains(index, "("+f+")") && !strings.Contains(index, `href="`+f+`"`) {
				t.Errorf("%s: the index does not link %s", d.Name, f)
			}
		}
		if d.Name == "html" {
			parse(t, index)
			if strings.Count(index, "<tr>") != 4 || !strings.Contains(index, "prompt c") {
				t.Errorf("the index does not list the three sessions with their prompts")
			}
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
