package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// cancelOnWrite cancels a context when anything is written to it.
type cancelOnWrite struct{ cancel func() }

func (c cancelOnWrite) Write(b []byte) (int, error) {
	c.cancel()
	return len(b), nil
}

// TestSignalStopsALoadingReader: a signal that comes while a reader reads
// its whole input before its first event (a session file, read as an
// index first) stops it at its next read, not at the end of the file (a
// 1,000,000-record session took 21 s to stop). The signal is made
// deterministic: the context is cancelled by the warning about the
// invalid UTF-8 of a record near the start.
func TestSignalStopsALoadingReader(t *testing.T) {
	var b bytes.Buffer
	parent := "null"
	for i := 0; b.Len() < 8<<20; i++ {
		text := "ok"
		if i == 5000 { // past the head that detection reads, about 1 MB in
			text = "bad \xff byte"
		}
		u := fmt.Sprintf(`"u%d"`, i)
		fmt.Fprintf(&b, `{"parentUuid":%s,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]},"sessionId":"s1","uuid":%s,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`+"\n", parent, i, text, u)
		parent = u
	}
	path := filepath.Join(t.TempDir(), "s1.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	from, _ := Lookup("claude-session")
	to, _ := Lookup("adal-stream")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := New(to, io.Discard, formats.WriteOptions{Stderr: io.Discard}, Options{From: from, Report: formats.NewReport(cancelOnWrite{cancel})})
	err = p.Convert(ctx, Input{Name: path, R: f, Path: path})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("got %v, want ErrInterrupted", err)
	}
	at, _ := f.Seek(0, io.SeekCurrent)
	if at > 2<<20 {
		t.Errorf("read %d bytes of %d after the signal at 1 MB", at, b.Len())
	}
}

// cutAtSignal is a producer that writes its chunks, one a read, and is
// cut by a signal after the last: at its next read the context is
// cancelled and it ends.
type cutAtSignal struct {
	chunks [][]byte
	cancel func()
}

func (c *cutAtSignal) Read(b []byte) (int, error) {
	if len(c.chunks) > 0 {
		n := copy(b, c.chunks[0])
		c.chunks = c.chunks[1:]
		return n, nil
	}
	c.cancel()
	return 0, io.EOF
}

// slowOutput takes a while to write, as a collector that lags does.
type slowOutput struct{}

func (slowOutput) Write(b []byte) (int, error) {
	time.Sleep(2 * time.Millisecond)
	return len(b), nil
}

// TestSignalCutsALiveLine: a signal that stops the reading of a live
// input in the middle of a line ends the conversion as interrupted, never
// with that line as malformed input (exit 1). The pipeline is still
// writing the first line's events when the reader, cut, hands over the
// second line's and the cut one: then both the signal and those events
// wait for it, and it may take either first.
func TestSignalCutsALiveLine(t *testing.T) {
	from, _ := Lookup("adal-stream")
	to, _ := Lookup("malac")
	first := []byte(`{"type":"tool_call","id":"c1","name":"bash","args":{}}` + "\n")
	rest := []byte(`{"type":"answer","content":"x"}` + "\n" + `{"type":"tool_call","id":"c2","na`)
	for range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		var warnings bytes.Buffer
		p := New(to, slowOutput{}, formats.WriteOptions{Stderr: io.Discard}, Options{From: from, Report: formats.NewReport(&warnings)})
		err := p.Convert(ctx, Input{Name: "<stdin>", R: &cutAtSignal{chunks: [][]byte{first, rest}, cancel: cancel}})
		cancel()
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("got %v, want ErrInterrupted; warnings: %s", err, warnings.String())
		}
	}
}
