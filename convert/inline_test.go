package convert

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
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
// closed as cancelled, and what was read is written.
func TestSignalStopsAFileBetweenEvents(t *testing.T) {
	from, _ := Lookup("adal-stream")
	to, _ := Lookup("malac")
	var in bytes.Buffer
	if err := GenerateProfile(&in, from, 200<<10, 1, 0, "dense"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	rep := formats.NewReport(io.Discard)
	events := 0
	clock := func() time.Time {
		events++
		if events == 30 {
			cancel()
		}
		return formats.FixedEpoch
	}
	p := New(to, &out, formats.WriteOptions{Stderr: io.Discard}, Options{From: from, Report: rep, Clock: clock})
	err := p.Convert(ctx, Input{Name: "in", R: bytes.NewReader(in.Bytes())})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Convert = %v, want ErrInterrupted", err)
	}
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if n := p.Result().Events; n != 30 {
		t.Errorf("%d events read, want the 30 read before the signal", n)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(out.String(), `"type":"turn_finished","status":"cancelled"`) || !strings.HasSuffix(lines[len(lines)-1], `"exit_code":130}`) {
		t.Errorf("the output ends with %s, want the run closed as cancelled by a signal", strings.Join(lines[max(0, len(lines)-3):], "\n"))
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
