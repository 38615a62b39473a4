package claude

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// readEvents reads a session with the session reader: in is the stream it
// gets, path the file it is told it comes from ("": none). It holds no
// record between its passes, so that the second reads each again.
func readEvents(t *testing.T, in []byte, path string) ([]*formats.Event, error) {
	t.Helper()
	return readEventsHolding(t, in, path, 0)
}

// readEventsHolding is readEvents holding held bytes of lines decoded
// between the passes.
func readEventsHolding(t *testing.T, in []byte, path string, held int) ([]*formats.Event, error) {
	t.Helper()
	r := &sessionReader{in: bytes.NewReader(in), opts: formats.ReadOptions{Dialect: Session.Name, Report: formats.NewReport(io.Discard), Path: path}, held: held}
	var evs []*formats.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func sameEvents(t *testing.T, what string, got, want []*formats.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.Text != w.Text || g.Call.ID != w.Call.ID || g.Call.Output.Decoded() != w.Call.Output.Decoded() ||
			g.Source.LineNo != w.Source.LineNo || !bytes.Equal(g.Source.Line, w.Source.Line) {
			t.Fatalf("%s: event %d is %v %q (line %d), want %v %q (line %d)", what, i, g.Kind, g.Text, g.Source.LineNo, w.Kind, w.Text, w.Source.LineNo)
		}
	}
}

// TestSessionReadAgain: the second pass gives the same events whether it
// reads the records again from the file (the reader has its path), from
// its temporary copy (standard input), or takes them as the first pass
// decoded them (all of them, or the first few), on sessions with
// branches, compactions, sidechains and subagents' files.
func TestSessionReadAgain(t *testing.T) {
	names, _ := filepath.Glob("testdata/sessions/*.jsonl")
	if len(names) < 3 {
		t.Fatalf("%d session fixtures", len(names))
	}
	for _, name := range names {
		in, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// Subagents' files are found by the path: copy the session
		// without them, so that both reads see the same records.
		p := filepath.Join(t.TempDir(), filepath.Base(name))
		if err := os.WriteFile(p, in, 0o644); err != nil {
			t.Fatal(err)
		}
		fromFile, err := readEvents(t, in, p)
		if err != nil {
			t.Fatalf("%s by its path: %v", name, err)
		}
		spooled, err := readEvents(t, in, "")
		if err != nil {
			t.Fatalf("%s from a stream: %v", name, err)
		}
		sameEvents(t, name, fromFile, spooled)
		// Held decoded from the first pass: all of it, or its first
		// records (4 KiB of lines), the rest read again.
		for _, held := range []int{heldBudget, 4 << 10} {
			for _, path := range []string{p, ""} {
				got, err := readEventsHolding(t, in, path, held)
				if err != nil {
					t.Fatalf("%s holding %d bytes (path %q): %v", name, held, path, err)
				}
				sameEvents(t, fmt.Sprintf("%s holding %d bytes (path %q)", name, held, path), got, fromFile)
			}
		}
	}
}

// TestSessionChangedBetweenPasses: a record whose line in the file is no
// longer the one the first pass read is an error that says so, not
// events made of other bytes.
func TestSessionChangedBetweenPasses(t *testing.T) {
	in, err := os.ReadFile("testdata/sessions/DRMacIver__claude-reliability__hello-world-script.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(in, []byte("\n"))
	if len(lines) < 4 {
		t.Fatalf("%d lines", len(lines))
	}
	// The file as rewritten: its third line's uuid changed, same length.
	changed := bytes.Clone(in)
	at := len(lines[0]) + len(lines[1]) + bytes.Index(lines[2], []byte(`"uuid":"`)) + len(`"uuid":"`)
	changed[at] ^= 1
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = readEvents(t, in, p)
	if err == nil || !strings.Contains(err.Error(), "changed while the session was read") || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("got %v, want an error that line 3 changed", err)
	}
}

// TestSessionRepairedLines: from a line that holds U+FFFD (the pipeline's
// repair of invalid UTF-8, which the file does not hold) the records are
// read again from the temporary copy, so that the events are those of
// the repaired stream.
func TestSessionRepairedLines(t *testing.T) {
	in, err := os.ReadFile("testdata/sessions/DRMacIver__claude-reliability__hello-world-script.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(in, []byte(`"content":"`))
	if i < 0 {
		t.Fatal("no string content in the fixture")
	}
	i += len(`"content":"`)
	// the stream: a replacement character; the file: the bad byte it replaced
	stream := append(append(append([]byte(nil), in[:i]...), "\uFFFD"...), in[i:]...)
	file := append(append(append([]byte(nil), in[:i]...), 0xff), in[i:]...)
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, file, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readEvents(t, stream, p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := readEvents(t, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, "repaired", got, want)
	held, err := readEventsHolding(t, stream, p, heldBudget)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, "repaired, held", held, want)
	if !bytes.Contains(bytes.Join(func() [][]byte {
		var ls [][]byte
		for _, e := range got {
			ls = append(ls, e.Source.Line)
		}
		return ls
	}(), nil), []byte("\uFFFD")) {
		t.Fatal("the repaired line is not in the events")
	}
}

// TestRecordTimes: a record's time comes back as the one parsed, in
// Unix nanoseconds or aside: in UTC, with an offset, out of the range of
// Unix nanoseconds, none.
func TestRecordTimes(t *testing.T) {
	src := &recFile{}
	var want []time.Time
	for _, s := range []string{"2026-12-02T23:42:44.520Z", "2026-12-02T23:42:44.520123456+02:00", "0001-01-01T00:00:00.5Z",
		"9999-12-31T23:59:59Z", "2026-12-02T23:42:44Z", "1970-01-01T00:00:00Z"} {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}
	want = append(want, time.Time{}, time.Date(2026, 1, 2, 3, 4, 5, 6, time.Local))
	for _, w := range want {
		r := src.recs.add()
		r.src, r.idx = src, int32(src.recs.n-1)
		r.setTime(w)
	}
	for i, w := range want {
		if got := src.recs.at(i).time(); got != w {
			t.Errorf("time %d: %v, want %v", i, got, w)
		}
	}
}

// TestRecordPlaces: the records of a file keep their place, and their
// address, as more are added.
func TestRecordPlaces(t *testing.T) {
	var l recList
	var ptrs []*sessRec
	for i := range 3*recBlock + 7 {
		r := l.add()
		r.idx = int32(i)
		ptrs = append(ptrs, r)
	}
	for i, p := range ptrs {
		if r := l.at(i); r != p || r.idx != int32(i) {
			t.Fatalf("record %d is at %p with place %d, was at %p", i, r, r.idx, p)
		}
	}
	l.drop()
	if r := l.add(); r.idx != 0 || r != ptrs[len(ptrs)-1] {
		t.Fatalf("a record taken back and added again: place %d", r.idx)
	}
}

// TestSessionFigures: read for its figures alone (ReadOptions.Figures, as
// agentconv sessions reads), a session gives the same events, with the
// same kinds, calls, statuses, times and counts; a successful call's
// output is left out, a failed one's error kept (it tells a refusal).
func TestSessionFigures(t *testing.T) {
	names, _ := filepath.Glob("testdata/sessions/*.jsonl")
	for _, name := range names {
		in, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		read := func(figures bool) []*formats.Event {
			r := newSessionReader(bytes.NewReader(in), formats.ReadOptions{Dialect: Session.Name, Report: formats.NewReport(io.Discard), Path: name, Figures: figures})
			var evs []*formats.Event
			for {
				ev, err := r.Next()
				if err == io.EOF {
					return evs
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				evs = append(evs, ev)
			}
		}
		all, figures := read(false), read(true)
		if len(all) != len(figures) {
			t.Fatalf("%s: %d events for its figures, %d read whole", name, len(figures), len(all))
		}
		left := 0
		for i, f := range figures {
			a := all[i]
			if f.Kind != a.Kind || f.Agent != a.Agent || f.Call.ID != a.Call.ID || f.Call.Status != a.Call.Status || f.Call.Error != a.Call.Error ||
				f.Status != a.Status || !f.Time.Equal(a.Time) || f.Usage != a.Usage || f.Response != a.Response ||
				f.Text != a.Text && f.Kind != formats.AgentEnd { // a subagent's report is its call's output
				t.Fatalf("%s: event %d for its figures is %v %s %s %q %q, read whole %v %s %s %q %q", name, i,
					f.Kind, f.Status, f.Call.Status, f.Call.Error, f.Text, a.Kind, a.Status, a.Call.Status, a.Call.Error, a.Text)
			}
			if f.Kind == formats.ToolResult && f.Call.Status == formats.Completed && a.Call.Output.Decoded() != "" {
				if f.Call.Output.Decoded() != "" {
					t.Errorf("%s: event %d: a successful call's output is given for the figures", name, i)
				}
				left++
			}
		}
		t.Logf("%s: %d events, %d outputs left out", name, len(all), left)
	}
}
