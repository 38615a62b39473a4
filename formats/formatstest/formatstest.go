// Package formatstest has checks that every dialect package's tests share:
// reading fixtures and whole inputs, the round trip of fuzz targets, and
// the check of the contract of readers and writers (Conformance).
package formatstest

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// MaxEvents bounds how many events a check reads, so that a reader that
// never ends fails instead of hanging.
const MaxEvents = 100000

// ReadAll reads every event of data with the dialect's reader. Malformed
// records are skipped, as --lenient does, and returned as errors.
func ReadAll(d formats.Dialect, data []byte) (evs []*formats.Event, bad []error, err error) {
	return readAll(d, data, false)
}

// ReadFigures is ReadAll with ReadOptions.Figures: the events read for
// their figures alone.
func ReadFigures(d formats.Dialect, data []byte) (evs []*formats.Event, bad []error, err error) {
	return readAll(d, data, true)
}

func readAll(d formats.Dialect, data []byte, figures bool) (evs []*formats.Event, bad []error, err error) {
	r := d.NewReader(bytes.NewReader(data), formats.ReadOptions{Dialect: d.Name, Report: formats.NewReport(io.Discard), Figures: figures})
	for n := 0; ; n++ {
		if n > MaxEvents {
			return evs, bad, fmt.Errorf("more than %d events from %d bytes: the reader does not end", MaxEvents, len(data))
		}
		ev, err := r.Next()
		if err == io.EOF {
			return evs, bad, nil
		}
		var le *formats.LineError
		if errors.As(err, &le) {
			bad = append(bad, err)
			if len(bad) > MaxEvents {
				return evs, bad, fmt.Errorf("the reader repeats a malformed record forever")
			}
			continue
		}
		if err != nil {
			return evs, bad, err
		}
		if ev == nil {
			return evs, bad, fmt.Errorf("Next returned neither an event nor an error")
		}
		evs = append(evs, ev)
	}
}

// Fixture reads testdata/<dir>/<name> of the module, from the test of any
// of its packages.
func Fixture(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(t), "testdata", dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Root returns the module's root, the nearest directory above the test's
// own that holds go.mod, so that a test reads the shared testdata from
// whichever package it runs in.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// Read reads every event of data with the dialect's reader, and fails the
// test on any error, malformed records included.
func Read[T ~string | ~[]byte](t testing.TB, d formats.Dialect, data T) []*formats.Event {
	t.Helper()
	evs, _ := ReadWarnings(t, d, data)
	return evs
}

// ReadWarnings is Read that also returns the warnings the reader reported.
func ReadWarnings[T ~string | ~[]byte](t testing.TB, d formats.Dialect, data T) ([]*formats.Event, string) {
	t.Helper()
	return ReadFileWarnings(t, d, data, "")
}

// ReadFileWarnings is ReadWarnings of the file at path, whose bytes are
// data: a reader that reads the files beside it (a session's subagents)
// finds them.
func ReadFileWarnings[T ~string | ~[]byte](t testing.TB, d formats.Dialect, data T, path string) ([]*formats.Event, string) {
	t.Helper()
	var warn bytes.Buffer
	r := d.NewReader(bytes.NewReader([]byte(data)), formats.ReadOptions{Dialect: d.Name, Report: formats.NewReport(&warn), Path: path})
	var evs []*formats.Event
	for len(evs) <= MaxEvents {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, warn.String()
		}
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		evs = append(evs, ev)
	}
	t.Fatalf("more than %d events from %d bytes: the reader does not end", MaxEvents, len(data))
	return nil, ""
}

// Kinds lists the kinds of events, separated by spaces.
func Kinds(evs []*formats.Event) string {
	k := make([]string, len(evs))
	for i, e := range evs {
		k[i] = e.Kind.String()
	}
	return strings.Join(k, " ")
}

// OfKind returns the events of kind k.
func OfKind(evs []*formats.Event, k formats.Kind) []*formats.Event {
	var out []*formats.Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// WriteAll writes events with the dialect's writer, with a fixed clock, and
// returns the output. strip drops each event's Source first, so that the
// writer must encode the events rather than copy their records.
func WriteAll(d formats.Dialect, evs []*formats.Event, strip bool) ([]byte, error) {
	return writeAll(d, evs, strip, formats.NewReport(io.Discard))
}

// WriteReport writes events as WriteAll does, keeping their Source, fails
// the test on an error, and returns the output and the losses the writer
// reported, as the command line prints them.
func WriteReport(t testing.TB, d formats.Dialect, evs []*formats.Event) (out, losses string) {
	t.Helper()
	var rep bytes.Buffer
	report := formats.NewReport(&rep)
	b, err := writeAll(d, evs, false, report)
	if err != nil {
		t.Fatal(err)
	}
	report.Summary(d.Name)
	return string(b), rep.String()
}

func writeAll(d formats.Dialect, evs []*formats.Event, strip bool, report *formats.Report) ([]byte, error) {
	var out bytes.Buffer
	dw := d.NewWriter(&out, formats.WriteOptions{Dialect: d.Name, Report: report, Stderr: io.Discard})
	_, raw := dw.(formats.RawOutputWriter)
	w := formats.Standalone(dw)
	for i, ev := range evs {
		e := *ev
		if !raw {
			e.Call.Output.Decode()
		}
		if strip {
			e.Source = formats.Source{}
		}
		if e.Arrived.IsZero() {
			e.Arrived = formats.FixedEpoch.Add(time.Duration(i) * time.Millisecond)
		}
		if err := w.Write(&e); err != nil {
			return out.Bytes(), err
		}
	}
	err := w.Close()
	return out.Bytes(), err
}

// Comparable is the part of an event a dialect's own round trip must keep.
type Comparable struct {
	Kind    formats.Kind
	Agent   string
	Text    string
	CallID  string
	Name    string
	Status  formats.Status
	Output  string
	Session string
}

// Compare maps events to what a round trip must keep, skipping the kinds
// that only some dialects write (a reader may add RunStart, a writer may
// close a run), and Raw events, which only a same-dialect copy keeps.
func Compare(evs []*formats.Event, kinds ...formats.Kind) []Comparable {
	keep := map[formats.Kind]bool{}
	for _, k := range kinds {
		keep[k] = true
	}
	var out []Comparable
	names := map[string]string{} // a result's name may be filled from its call
	for _, e := range evs {
		if e.Kind == formats.RunStart || e.Kind == formats.RunEnd {
			clear(names) // call ids are a run's own
		}
		name := e.Call.Name
		if e.Kind == formats.ToolCall {
			names[e.Call.ID] = name
		} else if name == "" && e.Call.ID != "" {
			name = names[e.Call.ID]
		}
		if !keep[e.Kind] {
			continue
		}
		output := e.Call.Output.Decoded()
		out = append(out, Comparable{Kind: e.Kind, Agent: e.Agent, Text: e.Text, CallID: e.Call.ID,
			Name: name, Status: e.Call.Status, Output: output, Session: e.Run.SessionID})
	}
	return out
}

// RoundTrip is the body of a fuzz target: reading data must not fail
// fatally or run away, and the events read must write (encoded, not copied)
// and read back through the same dialect to the same events, compared on
// the given kinds.
func RoundTrip(t *testing.T, d formats.Dialect, data []byte, kinds ...formats.Kind) {
	t.Helper()
	RoundTripNormalized(t, d, data, nil, kinds...)
}

// RoundTripNormalized is RoundTrip that compares the events after
// normalize (if not nil), for what a dialect may rightly change.
func RoundTripNormalized(t *testing.T, d formats.Dialect, data []byte, normalize func([]Comparable) []Comparable, kinds ...formats.Kind) {
	t.Helper()
	if normalize == nil {
		normalize = func(cs []Comparable) []Comparable { return cs }
	}
	evs, _, err := ReadAll(d, data)
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	var clean []*formats.Event
	for _, e := range evs {
		if e.Kind != formats.Raw {
			clean = append(clean, e)
		}
	}
	out, err := WriteAll(d, clean, true)
	if err != nil {
		t.Fatalf("writing what was read: %v", err)
	}
	back, bad, err := ReadAll(d, out)
	if err != nil || len(bad) > 0 {
		t.Fatalf("reading back what was written: %v %v\n%s", err, bad, out)
	}
	want, got := normalize(Compare(clean, kinds...)), normalize(Compare(back, kinds...))
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("round trip changed the events:\nwant %+v\ngot  %+v\noutput:\n%s", want, got, out)
	}
}

// Next returns the reader's next event, and fails the test if it does not
// come within seconds: a live reader must give each event as soon as its
// record is in (nil at the end of the input or on an error).
func Next(t testing.TB, r formats.Reader) *formats.Event {
	t.Helper()
	done := make(chan *formats.Event, 1)
	go func() {
		ev, _ := r.Next()
		done <- ev
	}()
	select {
	case ev := <-done:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("the reader waits for more input than the event needs")
		return nil
	}
}

// OneLine gives each JSON value of s compacted on a line of its own, keys
// and strings as they are: what tests look for in one line of adal-json,
// which AdaL pretty-prints. Anything not JSON is given back as it is.
func OneLine(s string) string {
	d := stdjson.NewDecoder(strings.NewReader(s))
	var b bytes.Buffer
	for {
		var v stdjson.RawMessage
		if err := d.Decode(&v); err == io.EOF {
			return b.String()
		} else if err != nil {
			return s
		}
		if err := stdjson.Compact(&b, v); err != nil {
			return s
		}
		b.WriteByte('\n')
	}
}
