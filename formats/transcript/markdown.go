package transcript

import (
	"html"
	"io"
	"strconv"
	"strings"
)

// markdown renders for GitHub: a table per run, folds as <details>.
// Nothing from the input can break the page: code goes in fences longer
// than any backtick run in it, text has its HTML tags neutralised and a
// fence it leaves open closed, and what goes inside HTML (a fold's
// summary) or a table cell is escaped.
type markdown struct{}

func (markdown) ext() string { return ".md" }

func (markdown) begin(w io.Writer, title string) error {
	_, err := io.WriteString(w, "# "+mdInline(title)+"\n")
	return err
}

func (markdown) end(io.Writer) error { return nil }

func (markdown) run(w io.Writer, d *runDoc) error {
	var b strings.Builder
	b.WriteString("\n## Run " + strconv.Itoa(d.N))
	if d.Failed {
		b.WriteString(" · " + mdInline(d.Outcome))
	}
	b.WriteString("\n\n| | |\n|---|---|\n")
	for _, f := range d.Facts {
		b.WriteString("| " + f.Key + " | " + mdInline(f.Value) + " |\n")
	}
	if d.System != "" {
		b.WriteString("\n")
		mdFold(&b, "System instructions", "", d.System, false)
	}
	b.WriteString("\n")
	mdItems(&b, d.Main.Items)
	_, err := io.WriteString(w, b.String())
	return err
}

func (markdown) index(w io.Writer, pages []*pageEntry) error {
	var b strings.Builder
	b.WriteString("# Transcripts\n\n")
	if len(pages) == 0 {
		b.WriteString("No sessions.\n")
	} else {
		b.WriteString("| session | agent | started | first prompt | runs | tool calls | tokens | cost | outcome |\n|---|---|---|---|---|---|---|---|---|\n")
	}
	for _, p := range pages {
		name := p.Session
		if name == "" {
			name = strings.TrimSuffix(p.File, ".md")
		}
		b.WriteString("| [" + mdInline(name) + "](" + p.File + ") | " + mdInline(p.Agent) + " | " + mdInline(p.Start) + " | " +
			mdInline(p.Prompt) + " | " + strconv.Itoa(p.Runs) + " | " + strconv.Itoa(p.Calls) + " | " + p.Tokens + " | " + p.Cost + " | " +
			mdInline(p.Status) + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdItems writes an agent's flow, each item a block of its own.
func mdItems(b *strings.Builder, items []*item) {
	var one strings.Builder
	for _, it := range items {
		one.Reset()
		mdItem(&one, it)
		b.WriteString(strings.TrimRight(one.String(), "\n") + "\n\n")
	}
}

func mdItem(b *strings.Builder, it *item) {
	switch it.Kind {
	case kPrompt:
		head := "**› Prompt**"
		if it.Label != "" {
			head = "**› " + mdInline(capital(it.Label)) + "**"
		}
		if it.Time != "" {
			head += " · " + it.Time
		}
		b.WriteString(head + "\n\n" + quote(mdText(it.Text)) + "\n")
	case kText:
		b.WriteString(mdText(it.Text) + "\n")
	case kThinking:
		mdFold(b, "Thinking", "", it.Text, false)
	case kCall:
		mdCall(b, it.Call)
	case kAgent:
		mdAgent(b, it.Agent, "")
	case kNotice, kFailure:
		mdProblem(b, it)
	case kPermission:
		p := it.Perm
		s := "**? Permission** for **" + mdInline(p.Name) + "**"
		if p.Summary != "" {
			s += " " + mdCode(p.Summary)
		}
		if p.Answered {
			if p.Allowed {
				s += " → allowed"
			} else {
				s += " → **⛔ refused**"
			}
			if p.Reason != "" {
				s += ": " + mdInline(p.Reason)
			}
		}
		b.WriteString(s + "\n")
	case kTodos:
		b.WriteString("**☰ Todos** · " + it.Label + "\n\n")
		for _, t := range it.Todos {
			x := " "
			if t.Done {
				x = "x"
			}
			b.WriteString("- [" + x + "] " + mdInline(oneLine(t.Content)) + "\n")
		}
	case kCompaction:
		if it.Text == "" {
			b.WriteString("*⟲ context compacted*\n")
		} else {
			mdFold(b, "⟲ Context compacted", "", it.Text, false)
		}
	case kModel:
		b.WriteString("*⇄ model " + mdInline(it.Text) + "*\n")
	case kTurn:
		if it.Bad {
			b.WriteString("**✗ " + mdInline(it.Label) + "**\n")
		} else {
			b.WriteString("*· " + mdInline(it.Label) + "*\n")
		}
	}
}

func mdProblem(b *strings.Builder, it *item) {
	var head string
	switch {
	case it.Kind == kFailure && it.Bad:
		head = "**✗ Run " + mdInline(it.Label) + "**"
	case it.Kind == kFailure:
		head = "**⊘ Run " + mdInline(it.Label) + "**"
	case it.Label == "error":
		head = "**✗ Error**"
	case it.Label == "warning":
		head = "**⚠ Warning**"
	default:
		head = "*ℹ Info*"
	}
	if !strings.Contains(strings.TrimSpace(it.Text), "\n") && len(it.Text) <= 200 {
		b.WriteString(head + ": " + mdInline(it.Text) + "\n")
		return
	}
	b.WriteString(head + "\n\n" + fence(it.Text, "text") + "\n")
}

func mdCall(b *strings.Builder, c *call) {
	s := "**▸ " + mdInline(c.Name) + "**"
	if c.Summary != "" {
		s += " " + mdCode(c.Summary)
	}
	s += " · " + callStatus(c)
	b.WriteString(s + "\n\n")
	if c.Args != "" {
		mdBlock(b, "arguments", c.Args, "json")
	}
	if c.Error != "" {
		b.WriteString("**" + c.Mark + " " + mdInline(capital(errorWord(c))) + ":**")
		if !strings.Contains(strings.TrimSpace(c.Error), "\n") && len(c.Error) <= 200 {
			b.WriteString(" " + mdInline(c.Error) + "\n\n")
		} else {
			b.WriteString("\n\n")
			mdBlock(b, "error", c.Error, "text")
		}
	}
	if c.Output != "" {
		what := "output"
		if c.Preview {
			what = "output (a preview of a longer one)"
		}
		mdBlock(b, what, c.Output, "text")
	}
	for _, a := range c.Agents {
		mdAgent(b, a, c.Name)
	}
}

// callStatus is a call's outcome, duration and exit code, as words.
func callStatus(c *call) string {
	var parts []string
	if c.Status == "" && !c.Ended {
		parts = append(parts, "… no result")
	} else if c.Status != "" {
		st := c.Mark + " " + c.Status
		if c.Bad {
			st = "**" + st + "**"
		}
		parts = append(parts, st)
	}
	if c.Duration != "" {
		parts = append(parts, c.Duration)
	}
	if c.Exit != "" {
		parts = append(parts, "exit "+c.Exit)
	}
	return strings.Join(parts, " · ")
}

// mdBlock shows a call's arguments or output: in a fence, folded when
// long.
func mdBlock(b *strings.Builder, what, text, lang string) {
	if long(text) {
		mdFold(b, what, lines(text), text, true)
		b.WriteString("\n")
		return
	}
	b.WriteString("*" + what + "*\n\n" + fence(text, lang) + "\n\n")
}

// mdFold writes a <details> fold; code: its body is a fence, else text
// in a quote.
func mdFold(b *strings.Builder, summary, size, text string, code bool) {
	b.WriteString("<details><summary>" + html.EscapeString(summary))
	if size != "" {
		b.WriteString(" · " + html.EscapeString(size))
	}
	b.WriteString("</summary>\n\n")
	if code {
		b.WriteString(fence(text, "text"))
	} else {
		b.WriteString(quote(mdText(text)))
	}
	b.WriteString("\n\n</details>\n")
}

// mdAgent writes a subagent, nested in a quote, in a fold that is open.
func mdAgent(b *strings.Builder, a *agent, under string) {
	var sum []string
	sum = append(sum, "⤷ "+a.Label)
	if a.Model != "" {
		sum = append(sum, a.Model)
	}
	if a.Status != "" {
		sum = append(sum, a.Mark+" "+a.Status)
	}
	if a.Tokens != "" {
		sum = append(sum, "tokens "+a.Tokens)
	}
	if a.Cost != "" {
		sum = append(sum, a.Cost)
	}
	var in strings.Builder
	mdItems(&in, a.Items)
	if a.Report != "" {
		in.WriteString("**Report**\n\n" + quote(mdText(a.Report)) + "\n")
	}
	b.WriteString("<details open><summary>subagent " + html.EscapeString(strings.Join(sum, " · ")) + "</summary>\n\n")
	b.WriteString(quote(strings.TrimRight(in.String(), "\n")))
	b.WriteString("\n\n</details>\n\n")
}

// quote puts a block in a blockquote: a fence it leaves open ends with it.
func quote(s string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		if l == "" {
			ls[i] = ">"
		} else {
			ls[i] = "> " + l
		}
	}
	return strings.Join(ls, "\n")
}

// fence puts text in a code fence longer than any run of backticks in it.
func fence(text, lang string) string {
	n := max(3, longestRun(text, '`')+1)
	f := strings.Repeat("`", n)
	return f + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + f
}

// mdCode is one line as inline code, delimited by more backticks than
// any run in it.
func mdCode(s string) string {
	s = oneLine(s)
	n := longestRun(s, '`') + 1
	d := strings.Repeat("`", n)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return d + " " + s + " " + d
	}
	return d + s + d
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// mdInline is text on one line with each character that markdown (or
// GitHub's: tables, strikethrough, math) could read as markup escaped: it
// shows as it is, in a paragraph or a table cell, and never starts a
// line.
func mdInline(s string) string {
	s = oneLine(s)
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && strings.ContainsRune("\\`*_[]<>|~&$", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdText keeps text as the markdown it usually is, but neutralises what
// could break the page around it: an HTML tag outside code (a stray
// </details> would close a fold) is escaped, and a fence left open is
// closed.
func mdText(s string) string {
	s = strings.TrimRight(s, "\n")
	ls := strings.Split(s, "\n")
	var fenceCh byte
	fenceLen := 0
	for i, l := range ls {
		t := strings.TrimLeft(l, " ")
		indent := len(l) - len(t)
		if fenceLen > 0 {
			if indent < 4 && longestPrefix(t, fenceCh) >= fenceLen && strings.TrimSpace(strings.TrimLeft(t, string(fenceCh))) == "" {
				fenceLen = 0
			}
			continue
		}
		if indent < 4 {
			for _, ch := range []byte{'`', '~'} {
				if n := longestPrefix(t, ch); n >= 3 && (ch == '~' || !strings.Contains(t[n:], "`")) {
					fenceCh, fenceLen = ch, n
				}
			}
			if fenceLen > 0 {
				continue
			}
		}
		ls[i] = escapeTags(l)
	}
	out := strings.Join(ls, "\n")
	if fenceLen > 0 {
		out += "\n" + strings.Repeat(string(fenceCh), fenceLen)
	}
	return out
}

func longestPrefix(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// escapeTags escapes '<' where it could open an HTML tag, a comment or a
// declaration, outside code spans.
func escapeTags(l string) string {
	if !strings.Contains(l, "<") {
		return l
	}
	var b strings.Builder
	for i := 0; i < len(l); {
		c := l[i]
		if c == '`' {
			n := longestPrefix(l[i:], '`')
			if end := closingRun(l[i+n:], n); end >= 0 {
				b.WriteString(l[i : i+n+end+n])
				i += n + end + n
				continue
			}
			b.WriteString(l[i : i+n])
			i += n
			continue
		}
		if c == '<' && i+1 < len(l) && (isLetter(l[i+1]) || strings.IndexByte("/!?", l[i+1]) >= 0) {
			b.WriteString("&lt;")
			i++
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// closingRun finds a run of exactly n backticks in s, and returns where
// it starts, or -1.
func closingRun(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := longestPrefix(s[i:], '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// errorWord heads a call's error: its status, or "error".
func errorWord(c *call) string {
	if c.Status == "" || c.Status == "completed" {
		return "error"
	}
	return c.Status
}
