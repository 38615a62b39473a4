package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/transcript"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

var update = flag.Bool("update", false, "rewrite formats/transcript/testdata/screenshot.png")

// chromium is Debian's headless browser (apt-get install chromium).
const chromium = "/usr/bin/chromium"

// browserFixtures are converted to HTML and loaded in the browser: a
// subagent, failures and a refusal, thinking, todos, a session with
// subagents' files. The first is the screenshot's.
var browserFixtures = []string{
	"claude/subagent-stream.jsonl",
	"claude/failures-stream.jsonl",
	"codex/tools-and-todos.jsonl",
	"gemini/error-result-stream.jsonl",
	"adal/seed-stream.ndjson",
}

// TestBrowser loads transcripts in a real browser (Debian's chromium,
// headless): each page loads without a console message of error level,
// an exception, a dialog or a request of its own; every fold opens when
// its summary is clicked; on a phone's width nothing is wider than the
// screen; dark mode darkens it. -update keeps a screenshot of the first
// fixture in formats/transcript/testdata/screenshot.png (the README's).
// Without chromium the test skips, but fails in CI (CI=true). It is with
// the tests of the whole program, not in formats/transcript, since it
// converts the fixtures of other dialects through the command line: a
// dialect's own tests need no other dialect.
func TestBrowser(t *testing.T) {
	formatstest.Long(t)
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (apt-get install chromium; .ci/run installs it): %v", chromium, err)
		}
		t.Skipf("%s is missing (apt-get install chromium): %v", chromium, err)
	}
	dir := t.TempDir()
	var pages []string
	for _, f := range browserFixtures {
		out := filepath.Join(dir, strings.ReplaceAll(f, "/", "_")+".html")
		convertTo(t, "-o", out, filepath.Join("testdata", f))
		pages = append(pages, out)
	}
	// -o DIR: a page per session and the index, from a directory.
	site := filepath.Join(dir, "site") + "/"
	convertTo(t, "-o", site, filepath.Join("testdata", "claude", "sessions"))
	more, _ := filepath.Glob(filepath.Join(site, "*.html"))
	if len(more) < 3 {
		t.Fatalf("-o DIR wrote %v, want a page per session and index.html", more)
	}
	pages = append(pages, more...)
	// A hostile transcript: a script in every field would open a dialog.
	hostile := filepath.Join(dir, "hostile.html")
	if err := os.WriteFile(hostile, []byte(hostilePage(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	pages = append(pages, hostile)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(900, 1200))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("cannot start %s: %v", chromium, err)
	}
	for i, p := range pages {
		t.Run(filepath.Base(p), func(t *testing.T) {
			checkPage(t, bctx, p, i == 0)
		})
	}
}

func convertTo(t *testing.T, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := convert.Run(append([]string{"agentconv", "--deterministic", "--to", "html"}, args...), convert.Sys{
		Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" },
	})
	if code != 0 {
		t.Fatalf("agentconv %v: exit %d: %s", args, code, errb.String())
	}
}

// checkPage loads one page in a tab of its own and checks it.
func checkPage(t *testing.T, bctx context.Context, path string, shoot bool) {
	ctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	console := chromedp.Console(ctx)
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	failed := chromedp.Events(ctx, network.LoadingFailed)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)

	u := (&url.URL{Scheme: "file", Path: path}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("cannot load %s: %v", path, err)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('details').length`))
	if err != nil {
		t.Fatal(err)
	}
	title, _ := chromedp.Run(ctx, chromedp.Title())
	if !strings.HasPrefix(title, "Transcript") {
		t.Errorf("the page's title is %q", title)
	}
	if shoot && *update {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("formats", "transcript", "testdata", "screenshot.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Open every fold by a click on its summary, outer ones first; a
	// subagent's fold is open from the start.
	clicked := 0
	for range n + 1 {
		i, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('details')].findIndex(d => !d.open)`))
		if err != nil {
			t.Fatal(err)
		}
		if i < 0 {
			break
		}
		sel := chromedp.JSPath(fmt.Sprintf(`document.querySelectorAll('details')[%d].querySelector('summary')`, i))
		if err := chromedp.Do(ctx, chromedp.Click(sel)); err != nil {
			t.Fatalf("cannot click fold %d: %v", i, err)
		}
		if open, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelectorAll('details')[%d].open`, i))); !open {
			t.Fatalf("fold %d did not open when its summary was clicked", i)
		}
		clicked++
	}
	// Every fold is open and shows what it holds.
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`[...document.querySelectorAll('details')].filter(d => !d.open || d.lastElementChild.getBoundingClientRect().height == 0).length`))
	if err != nil {
		t.Fatal(err)
	}
	if hidden != 0 {
		t.Errorf("%d of %d folds are closed or show nothing", hidden, n)
	}
	t.Logf("%d folds, %d opened by a click", n, clicked)

	// A phone: nothing is wider than its screen.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	if w, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
		t.Errorf("on a phone 390 px wide, the page is %d px wide", w)
	}
	// Dark mode: the page follows it.
	dark := func(on string) string {
		if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: on}}})
			return err
		})); err != nil {
			t.Fatal(err)
		}
		bg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
		return bg
	}
	if light, darkBG := dark("light"), dark("dark"); light != "rgb(255, 255, 255)" || darkBG != "rgb(13, 17, 23)" {
		t.Errorf("background: %s light, %s dark; want white and dark", light, darkBG)
	}

	// What the browser said while all that happened.
	if err := chromedp.Do(ctx, chromedp.Sleep(100*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	cancelT()
	for m, err := range console {
		if err != nil {
			break
		}
		if m.Type == chromedp.ConsoleError || m.IsException() || m.Type == chromedp.ConsoleWarning {
			t.Errorf("console: %s", m)
		}
	}
	for r, err := range requests {
		if err != nil {
			break
		}
		if r.Request.URL != u {
			t.Errorf("the page asked for %s", r.Request.URL)
		}
	}
	for f, err := range failed {
		if err != nil {
			break
		}
		t.Errorf("a request failed: %s %s (%s)", f.Type, f.ErrorText, f.BlockedReason)
	}
	for d, err := range dialogs {
		if err != nil {
			break
		}
		t.Errorf("the page opened a dialog: %q", d.Message)
	}
}

// hostilePage is the transcript of a run whose every field tries to run
// a script.
func hostilePage(t *testing.T) string {
	bad := `"'><script>alert(1)</script><img src=x onerror=alert(2)><svg onload=alert(3)>`
	evs := []*formats.Event{
		{Kind: formats.RunStart, Run: formats.RunInfo{SessionID: bad, Model: bad, Cwd: bad, AgentName: bad}},
		{Kind: formats.UserMessage, Text: bad},
		{Kind: formats.Message, Text: bad, Thinking: bad},
		{Kind: formats.ToolCall, Call: formats.Call{ID: "1", Name: bad, Args: []byte(`{"command":"\"><script>alert(4)</script>"}`)}},
		{Kind: formats.AgentStart, Agent: "a", AgentInfo: formats.AgentInfo{Label: bad, ParentCall: "1", Model: bad}},
		{Kind: formats.Message, Agent: "a", Text: bad},
		{Kind: formats.AgentEnd, Agent: "a", Status: formats.Completed, Text: "report " + bad},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "1", Name: bad, Status: formats.Failed, Output: formats.TextOutput(strings.Repeat(bad+"\n", 30)), Error: bad}},
		{Kind: formats.Todos, Todos: []formats.Todo{{Content: bad, Status: "completed"}}},
		{Kind: formats.Notice, Severity: formats.Error, Text: bad},
		{Kind: formats.RunEnd, Status: formats.Failed, Text: "end " + bad},
	}
	var out bytes.Buffer
	w := formats.Standalone(transcript.HTML.NewWriter(&out, formats.WriteOptions{Report: &formats.Report{}}))
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
