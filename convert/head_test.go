package convert

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// TestLeadingTextSkipped: the banner lines of a real Gemini CLI paste and
// the # comments of a saved Codex capture are skipped, with or without
// --from, with one warning at FILE:LINE; the stream converts as it would
// without them, and comes back line for line into its own dialect.
func TestLeadingTextSkipped(t *testing.T) {
	for _, tc := range []struct {
		fixture, dialect string
		lines            int
	}{
		{"gemini/oneshot-websearch-with-banner.txt", "gemini-stream", 3},
		{"codex/untether-0157-web-search.jsonl", "codex", 3},
	} {
		in := readFixture(t, tc.fixture)
		all := strings.SplitAfter(in, "\n")
		stream := strings.Join(all[tc.lines:], "")
		if s := sniff([]byte(in)); s.d.Name != tc.dialect || s.lines != tc.lines {
			t.Errorf("%s: detected as %s after %d lines, want %s after %d", tc.fixture, s.d.Name, s.lines, tc.dialect, tc.lines)
		}
		for _, from := range [][]string{nil, {"--from", tc.dialect}} {
			args := append(append([]string{"--deterministic"}, from...), "--to", tc.dialect)
			code, out, stderr := runCLI(in, args...)
			if code != 0 || out != stream {
				t.Errorf("%s %v: exit %d, %s\ngot  %q\nwant %q", tc.fixture, from, code, stderr, out, stream)
			}
			if n := strings.Count(stderr, "not JSON"); n != 1 || !strings.Contains(stderr, "<stdin>:1: skipped 3 lines that are not JSON before the "+tc.dialect+" events, which start at line 4") {
				t.Errorf("%s %v: want one warning with FILE:LINE, got %d:\n%s", tc.fixture, from, n, stderr)
			}
			_, plain, _ := runCLI(stream, "--deterministic", "--to", "adal-json")
			if _, got, _ := runCLI(in, append(append([]string{"--deterministic"}, from...), "--to", "adal-json")...); got != plain {
				t.Errorf("%s %v: the lines before the stream changed the conversion:\n%s", tc.fixture, from, diff(plain, got))
			}
		}
	}
}

// TestLeadingTextKeepsLineNumbers: after skipped lines, errors and
// warnings name the lines of the input, not of what the reader was given.
func TestLeadingTextKeepsLineNumbers(t *testing.T) {
	banner := "Loaded cached credentials.\r\n\n# saved 2026-01-19\n"
	init := `{"type":"init","timestamp":"2026-01-19T21:26:44.030Z","session_id":"s","model":"m"}` + "\n"
	odd := `{"type":"surprise","timestamp":"2026-01-19T21:26:45.030Z"}` + "\n"
	for _, from := range [][]string{nil, {"--from", "gemini-stream"}} {
		args := append(from, "--to", "adal-json")
		_, _, stderr := runCLI(banner+init+odd+"{broken\n", args...)
		for _, want := range []string{"<stdin>:1: skipped 3 lines", "<stdin>:5: gemini-stream event type \"surprise\"", "<stdin>:6: not valid JSON"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: no %q in:\n%s", from, want, stderr)
			}
		}
	}
	// A pretty-printed object after a banner: its line is the file's.
	obj := "{\n  \"session_id\": \"s\",\n  \"response\": \"hi\",\n  \"stats\": oops\n}\n"
	code, _, stderr := runCLI("npm warn config production Use `--omit=dev` instead.\n"+obj, "--from", "gemini-json", "--to", "adal-json")
	if code != ExitInput || !strings.Contains(stderr, "<stdin>:2: ") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestTextOnlyWithoutEvents: adal-text is chosen only when no line of the
// head is a JSON event of a known dialect; an answer may hold JSON.
func TestTextOnlyWithoutEvents(t *testing.T) {
	answer := "Here is the config:\n{\"retries\": 3, \"type\": \"fixed\"}\n[1, 2]\nDone.\n"
	if s := sniff([]byte(answer)); s.d.Name != "adal-text" || s.skip != 0 {
		t.Errorf("an answer holding JSON detected as %s, skipping %d bytes", s.d.Name, s.skip)
	}
	code, out, stderr := runCLI(answer, "--to", "adal-json")
	if code != 0 || !strings.Contains(formatstest.OneLine(out), `"answer":"Here is the config:\n{\"retries\": 3`) {
		t.Errorf("exit %d: %s %s", code, out, stderr)
	}
	// Events among lines that are not JSON are not an answer: the reader
	// of their dialect says where the stray line is.
	mixed := "YOLO mode is enabled.\n" +
		`{"type":"init","timestamp":"2026-01-19T21:26:44.030Z","session_id":"s","model":"m"}` + "\n" +
		"Error: quota exceeded\n" +
		`{"type":"result","timestamp":"2026-01-19T21:26:50.854Z","status":"success"}` + "\n"
	if s := sniff([]byte(mixed)); s.d.Name != "gemini-stream" || s.lines != 1 {
		t.Errorf("events among text detected as %s after %d lines", s.d.Name, s.lines)
	}
	code, _, stderr = runCLI(mixed, "--to", "adal-json")
	if code != ExitInput || !strings.Contains(stderr, "<stdin>:3: not valid JSON") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	// With --from naming a text dialect, nothing is skipped.
	code, out, _ = runCLI("# a heading\n{\"type\":\"x\"}\n", "--from", "adal-text", "--to", "adal-json")
	if code != 0 || !strings.Contains(formatstest.OneLine(out), `"answer":"# a heading\n{\"type\":\"x\"}"`) {
		t.Errorf("--from adal-text: exit %d: %s", code, out)
	}
}

// TestBinaryInput: binary data is an error naming the file and line, not
// an answer, detected or not.
func TestBinaryInput(t *testing.T) {
	for name, in := range map[string]string{
		"NUL bytes":              "PK\x03\x04\x14\x00\x00\x00\x08\x00 archive\n",
		"NUL on the second line": "some text\nmore\x00\n",
		"mostly invalid UTF-8":   "\x89\xfe\xff\x90\xa0 \xc3\xfa\x81\x82\xfd\n",
	} {
		for _, from := range [][]string{nil, {"--from", "adal-text"}} {
			code, out, stderr := runCLI(in, append(from, "--to", "adal-json")...)
			if code != ExitInput || out != "" || !placeRE.MatchString(stderr) || !strings.Contains(stderr, "binary data") {
				t.Errorf("%s %v: exit %d, out %q, stderr %q", name, from, code, out, stderr)
			}
		}
	}
	// Text with a few bad bytes and terminal colours is still text.
	code, out, _ := runCLI("caf\xe9 au lait \x1b[1mbold\x1b[0m\n", "--to", "adal-json")
	if code != 0 || !strings.Contains(formatstest.OneLine(out), `"success":true`) {
		t.Errorf("text with a bad byte: exit %d: %s", code, out)
	}
}

// TestLeadingTextOnALivePipe: detection decides as soon as the first event
// after the banner is in, without waiting for more input.
func TestLeadingTextOnALivePipe(t *testing.T) {
	gemini, _ := Lookup("gemini-stream")
	for _, from := range []formats.Dialect{{}, gemini} {
		pr, pw := io.Pipe()
		go func() {
			io.WriteString(pw, "Loaded cached credentials.\n")
			io.WriteString(pw, `{"type":"init","timestamp":"2026-01-19T21:26:44.030Z","session_id":"s","model":"m"}`+"\n")
		}()
		dt := newDetector(from)
		br := bufio.NewReader(pr)
		done := make(chan formats.Dialect, 1)
		go func() {
			d, err := dt.dialect(Input{Name: "-", R: pr}, br, Source{}, formats.NewReport(io.Discard))
			if err != nil {
				t.Error(err)
			}
			done <- d
		}()
		select {
		case d := <-done:
			if d.Name != "gemini-stream" {
				t.Errorf("--from %q: detected %s", from.Name, d.Name)
			}
			r := d.NewReader(br, formats.ReadOptions{Dialect: d.Name})
			if ev := formatstest.Next(t, r); ev == nil || ev.Kind != formats.RunStart || ev.Source.LineNo != 2 {
				t.Errorf("--from %q: first event %+v", from.Name, ev)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("--from %q: detection waits for more than the first event", from.Name)
		}
		pw.Close()
	}
}
