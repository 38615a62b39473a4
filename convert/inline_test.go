package convert

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// A file is read in the pipeline's own goroutine; a pipe in another, so
// that a signal stops a silent one.
func TestMayBlock(t *testing.T) {
	name := filepath.Join(t.TempDir(), "in.ndjson")
	os.WriteFile(name, []byte("{}\n"), 0o644)
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for _, c := range []struct {
		what string
		r    io.Reader
		want bool
	}{
		{"a regular file", f, false},
		{"a bytes.Reader", bytes.NewReader(nil), false},
		{"a pipe", pr, true},
		{"another reader", io.MultiReader(f), true},
	} {
		if got := mayBlock(c.r); got != c.want {
			t.Errorf("mayBlock(%s) = %v, want %v", c.what, got, c.want)
		}
	}
}

// A signal stops the conversion of a file between events: the run is
// closed as cancelled, and what was read is written: the events of what
// the pipeline had taken from the file (its buffer), and no more.
// cancelledMidway is a dense adal-stream of 200 KB, to malac, and a
// context that the clock cancels at the 30th event read: a signal in the
// middle of an input.
func cancelledMidway(t *testing.T) (from, to formats.Dialect, in *bytes.Buffer, ctx context.Context, clock func() time.Time) {
	t.Helper()
	from, _ = Lookup("adal-stream")
	to, _ = Lookup("malac")
	in = &bytes.Buffer{}
	if err := GenerateProfile(in, from, 200<<10, 1, 0, "dense"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events := 0
	clock = func() time.Time {
		events++
		if events == 30 {
			cancel()
		}
		return formats.FixedEpoch
	}
	return from, to, in, ctx, clock
}

func TestSignalStopsAFileBetweenEvents(t *testing.T) {
	from, to, in, ctx, clock := cancelledMidway(t)
	var out bytes.Buffer
	rep := formats.NewReport(io.Discard)
	p := New(to, &out, formats.WriteOptions{Stderr: io.Discard}, Options{From: from, Report: rep, Clock: clock})
	r := bytes.NewReader(in.Bytes())
	err := p.Convert(ctx, Input{Name: "in", R: r})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Convert = %v, want ErrInterrupted", err)
	}
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	// The whole lines of what was taken from the input, all converted.
	taken := in.Bytes()[:in.Len()-r.Len()]
	whole := bytes.Count(taken, []byte{'\n'})
	if r.Len() == 0 || whole < 30 {
		t.Fatalf("took %d bytes of %d (%d lines) at the signal, want some and not all", len(taken), in.Len(), whole)
	}
	if n := p.Result().Events; n != whole {
		t.Errorf("%d events read, want the %d of the %d whole lines taken from the input before the signal", n, whole, whole)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(out.String(), `"type":"turn_finished","status":"cancelled"`) || !strings.HasSuffix(lines[len(lines)-1], `"exit_code":130}`) {
		t.Errorf("the output ends with %s, want the run closed as cancelled by a signal", strings.Join(lines[max(0, len(lines)-3):], "\n"))
	}
}

// A reader that lends its lines (formats.Lender) gives the same output as
// one that copies them, on inputs much larger than its buffer, for every
// writer that keeps no events: no writer and no part of the run view reads
// a lent line after the next one is read.
func TestLentLinesGiveTheSameOutput(t *testing.T) {
	from, _ := Lookup("adal-stream")
	// The same reader without its Recycle and LendLines.
	copying := from
	copying.NewReader = func(r io.Reader, o formats.ReadOptions) formats.Reader {
		return struct{ formats.Reader }{from.NewReader(r, o)}
	}
	if _, ok := from.NewReader(strings.NewReader(""), formats.ReadOptions{Report: formats.NewReport(io.Discard)}).(formats.Lender); !ok {
		t.Fatal("the adal-stream reader lends no lines: this test tests nothing")
	}
	var kept int
	for _, d := range Dialects {
		if !d.KeepsNoEvents || d.NewWriter == nil || d.Remote {
			continue
		}
		kept++
		// As it is, and with every switch of the writer on.
		on := map[string]string{}
		for _, p := range d.Params {
			if p.Kind == formats.ParamBool {
				on[p.Key] = "true"
			}
		}
		for _, c := range []struct {
			profile string
			params  map[string]string
		}{{"dense", nil}, {"big-outputs", nil}, {"late refusal", nil}, {"dense", on}, {"late refusal", on}} {
			profile := c.profile
			var in bytes.Buffer
			if profile == "late refusal" {
				// A call whose refusal, 200 KB of lines later, names no
				// arguments: the writers take them from the run view.
				in.WriteString(`{"type":"tool_call","id":"c0","name":"Bash","args":{"command":"rm -rf build"}}` + "\n")
				for i := 1; i <= 200; i++ {
					fmt.Fprintf(&in, `{"type":"tool_call","id":"c%d","name":"Read","args":{"path":"f%d"}}`+"\n", i, i)
					fmt.Fprintf(&in, `{"type":"tool_result","id":"c%d","name":"Read","status":"completed","output":%q}`+"\n", i, strings.Repeat("x", 1000))
				}
				in.WriteString(`{"type":"permission_denied","id":"c0","name":"Bash","reason":"not allowed"}` + "\n")
				in.WriteString(`{"type":"complete","exit_code":2}` + "\n")
			} else if err := GenerateProfile(&in, from, 1<<20, 7, 0, profile); err != nil {
				t.Fatal(err)
			}
			var outs [2]string
			for i, f := range []formats.Dialect{from, copying} {
				outs[i] = convertAll(t, f, d, c.params, in.Bytes())
			}
			if outs[0] != outs[1] {
				t.Errorf("%s %v, %s: lent lines give another output (%d bytes against %d)", d.Name, c.params, profile, len(outs[0]), len(outs[1]))
			}
		}
	}
	if kept == 0 {
		t.Fatal("no dialect keeps no events")
	}
}

// convertAll converts in from one dialect to another on the fixed clock, in
// the pipeline's own way for a buffer, and returns the output, the
// warnings and the losses.
func convertAll(t *testing.T, from, to formats.Dialect, params map[string]string, in []byte) string {
	t.Helper()
	var out, stderr bytes.Buffer
	rep := formats.NewReport(&stderr)
	p := New(to, &out, formats.WriteOptions{Stderr: &stderr, Params: params}, Options{From: from, Report: rep, Clock: func() time.Time { return formats.FixedEpoch }})
	if err := p.Convert(context.Background(), Input{Name: "in", R: bytes.NewReader(in)}); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String() + stderr.String() + fmt.Sprint(rep.LossTable())
}

// A file is read ahead of its writer only when the target's row says
// ReadAhead, a second core is there, and the file's first 64 KB holds
// short records.
func TestReadAheadDecision(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	short := strings.Repeat(`{"type":"answer","content":"ok"}`+"\n", 4000)
	long := strings.Repeat(`{"type":"answer","content":"`+strings.Repeat("x", 2000)+`"}`+"\n", 100)
	for _, c := range []struct {
		what      string
		in        string
		readAhead bool
		procs     int
		want      bool
	}{
		{"short records", short, true, 2, true},
		{"long records", long, true, 2, false},
		{"less than 64 KB", short[:10000], true, 2, false},
		{"a row without ReadAhead", short, false, 2, false},
		{"one core", short, true, 1, false},
		{"a reader that decodes", short, true, 2, false},
	} {
		runtime.GOMAXPROCS(c.procs)
		p := NewPipeline(&seenWriter{evs: map[*formats.Event]bool{}}, formats.Dialect{Name: "sink", ReadAhead: c.readAhead}, Options{})
		var r formats.Reader = &recyclingReader{}
		if c.what == "a reader that decodes" {
			r = struct{ formats.Reader }{r}
		}
		if got := p.readAhead(r, bufio.NewReaderSize(strings.NewReader(c.in), 64<<10)); got != c.want {
			t.Errorf("%s: readAhead %v, want %v", c.what, got, c.want)
		}
	}
}

// A file read ahead of its writer gives what one read in the pipeline's
// goroutine gives, for every writer that reads ahead.
func TestReadAheadGivesTheSameOutput(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	from, _ := Lookup("adal-stream")
	var in bytes.Buffer
	if err := GenerateProfile(&in, from, 1<<20, 3, 0, "dense"); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range Dialects {
		if !d.ReadAhead || d.NewWriter == nil || d.Remote {
			continue
		}
		n++
		alone := d
		alone.ReadAhead = false
		p := NewPipeline(&seenWriter{evs: map[*formats.Event]bool{}}, d, Options{})
		if !p.readAhead(from.NewReader(strings.NewReader(""), formats.ReadOptions{}), bufio.NewReaderSize(bytes.NewReader(in.Bytes()), 64<<10)) {
			t.Fatalf("%s: the dense profile is not read ahead", d.Name)
		}
		var outs [2]string
		for i, to := range []formats.Dialect{d, alone} {
			outs[i] = convertAll(t, from, to, nil, in.Bytes())
		}
		if outs[0] != outs[1] {
			t.Errorf("%s: read ahead, another output (%d bytes against %d)", d.Name, len(outs[0]), len(outs[1]))
		}
	}
	if n == 0 {
		t.Fatal("no dialect reads ahead: this test tests nothing")
	}
}

// Events read in a goroutine of their own (a pipe) come back to a reader
// that reuses them, a batch at a time, when the writer keeps none, and
// each is whole when it is written.
func TestEventsRecycledAcrossGoroutines(t *testing.T) {
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	for _, keeps := range []bool{false, true} {
		pr, pw := io.Pipe()
		go func() {
			// In pieces, so that the reader hands over many batches.
			s := in.String()
			for len(s) > 0 {
				k := min(len(s), 1000)
				pw.Write([]byte(s[:k]))
				s = s[k:]
			}
			pw.Close()
		}()
		var r *recyclingReader
		from := formats.Dialect{Name: "fake", NewReader: func(in io.Reader, _ formats.ReadOptions) formats.Reader {
			r = &recyclingReader{lines: formats.NewLineReader(in)}
			return r
		}}
		w := &seenWriter{evs: map[*formats.Event]bool{}}
		to := formats.Dialect{Name: "sink", Carries: formats.AllFeatures, KeepsNoEvents: !keeps}
		p := NewPipeline(w, to, Options{From: from})
		if err := p.Convert(context.Background(), Input{Name: "in", R: pr}); err != nil {
			t.Fatal(err)
		}
		if len(w.texts) != 3000 || w.texts[0] != "line 0" || w.texts[2999] != "line 2999" {
			t.Fatalf("keeps %v: %d texts written", keeps, len(w.texts))
		}
		for i, s := range w.texts {
			if s != fmt.Sprintf("line %d", i) {
				t.Fatalf("keeps %v: text %d is %q", keeps, i, s)
			}
		}
		switch {
		case keeps && r.back != 0:
			t.Errorf("a writer that keeps events had %d of them reused", r.back)
		case !keeps && (r.back == 0 || len(w.evs) >= 3000):
			t.Errorf("handed back %d events, the writer saw %d distinct", r.back, len(w.evs))
		case r.lent:
			t.Error("lines lent to a reader that reads ahead")
		}
	}
}

// /dev/null is a character device but no terminal: `2>/dev/null` shows no
// progress, and `>/dev/null` gets no colours.
func TestDevNullIsNoTerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Errorf("%s is taken for a terminal", os.DevNull)
	}
}

// recyclingReader gives one event per line, from a pool that the pipeline
// refills; it counts the events handed back.
type recyclingReader struct {
	lines *formats.LineReader
	pool  formats.EventPool
	back  int
	lent  bool
}

func (r *recyclingReader) LendLines() { r.lent = true }

func (r *recyclingReader) Next() (*formats.Event, error) {
	line, err := r.lines.Next()
	if err != nil {
		return nil, err
	}
	e := r.pool.New()
	if e.Kind != 0 || e.Text != "" {
		return nil, errors.New("a reused event was not zeroed")
	}
	e.Kind, e.Text = formats.Message, string(line)
	return e, nil
}

func (r *recyclingReader) Recycle(e *formats.Event) { r.back++; r.pool.Put(e) }

// seenWriter keeps what it was given, and the events themselves.
type seenWriter struct {
	texts []string
	evs   map[*formats.Event]bool
}

func (w *seenWriter) Write(e *formats.Event, _ *formats.RunView) error {
	if e.Kind == formats.Message {
		w.texts = append(w.texts, e.Text)
	}
	w.evs[e] = true
	return nil
}
func (w *seenWriter) Close() error { return nil }

// A reader's events are handed back for reuse only when the target's row
// says that its writer keeps none, and each is whole when it is written.
func TestEventsRecycledOnlyWhenTheWriterKeepsNone(t *testing.T) {
	in := "a\nb\nc\nd\ne\n"
	for _, keeps := range []bool{false, true} {
		r := &recyclingReader{lines: formats.NewLineReader(strings.NewReader(in))}
		from := formats.Dialect{Name: "fake", NewReader: func(io.Reader, formats.ReadOptions) formats.Reader { return r }}
		w := &seenWriter{evs: map[*formats.Event]bool{}}
		to := formats.Dialect{Name: "sink", Carries: formats.AllFeatures, KeepsNoEvents: !keeps}
		p := NewPipeline(w, to, Options{From: from})
		if err := p.Convert(context.Background(), Input{Name: "in", R: strings.NewReader(in)}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(w.texts, ""); got != "abcde" {
			t.Errorf("keeps %v: written %q", keeps, got)
		}
		switch {
		case keeps && (r.back != 0 || r.lent):
			t.Errorf("a writer that keeps events had %d of them reused (lines lent: %v)", r.back, r.lent)
		case !keeps && !r.lent:
			t.Error("a reader that can lend its lines was not asked to")
		case !keeps && (r.back != 5 || len(w.evs) > 3):
			// The synthetic RunStart is the pipeline's; the five messages
			// share one event.
			t.Errorf("handed back %d events, the writer saw %d distinct", r.back, len(w.evs))
		}
	}
}

// ConvertOne ends the open run as cancelled when its context is
// cancelled, as the command line does at a signal, not as cut.
func TestConvertOneCancelled(t *testing.T) {
	from, to, in, ctx, clock := cancelledMidway(t)
	var out bytes.Buffer
	rep := formats.NewReport(io.Discard)
	_, err := ConvertOne(ctx, Input{Name: "in", R: bytes.NewReader(in.Bytes())}, to, &out, formats.WriteOptions{Stderr: io.Discard},
		Options{From: from, Report: rep, Clock: clock})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("ConvertOne = %v, want ErrInterrupted", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasSuffix(lines[len(lines)-1], `"exit_code":130}`) {
		t.Errorf("the output ends with %s, want the run closed as cancelled", lines[len(lines)-1])
	}
}
