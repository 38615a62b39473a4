package convert_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/convert"
	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/adal"
	"github.com/agentconv/agentconv/formats/formatstest"
)

// AdaL's session files, as AdaL 1.8.6 wrote them in every capture: detected
// as adal-session (not gemini-stream, whose record types they share), a run
// for each prompt with the outcome AdaL printed, and a Usage event for each
// model call, main or subagent, with what the model server sent.
func TestSessionFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "agents", "adal", "*", "*", "*", "home", ".adal", "sessions", "conversation_*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no AdaL session files")
	}
	for _, f := range files {
		capture := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(f))))
		rel, _ := filepath.Rel(filepath.Join("..", "testdata", "agents"), capture)
		t.Run(rel, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if d, score := convert.Detect(b); d.Name != "adal-session" {
				t.Errorf("detected as %s (%d)", d.Name, score)
			}
			evs := formatstest.Read(t, adal.Session, string(b))
			var got [][2]int64
			var outcomes []string
			for _, e := range evs {
				switch e.Kind {
				case formats.Usage:
					got = append(got, [2]int64{e.Usage.InputTokens.V, e.Usage.OutputTokens.V})
				case formats.RunEnd:
					outcomes = append(outcomes, e.Status.String())
				}
			}
			var server struct {
				Requests []struct {
					Sent *struct {
						Input      int64 `json:"input"`
						CacheRead  int64 `json:"cache_read"`
						CacheWrite int64 `json:"cache_write"`
						Output     int64 `json:"output"`
					}
				}
			}
			sb, err := os.ReadFile(filepath.Join(capture, "server.json"))
			if err != nil || json.Unmarshal(sb, &server) != nil {
				t.Fatal(err)
			}
			var want [][2]int64
			for _, r := range server.Requests {
				if s := r.Sent; s != nil {
					want = append(want, [2]int64{s.Input + s.CacheRead + s.CacheWrite, s.Output})
				}
			}
			if len(got) != len(want) {
				t.Errorf("usage per model call %v, the server sent %v", got, want)
			}
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Errorf("model call %d: %v, the server sent %v", i, got[i], want[i])
				}
			}
			var meta struct{ Runs []struct{ Exit int } }
			mb, _ := os.ReadFile(filepath.Join(capture, "meta.json"))
			json.Unmarshal(mb, &meta)
			var wantOut []string
			for _, r := range meta.Runs {
				if r.Exit == 0 {
					wantOut = append(wantOut, formats.Completed.String())
				} else {
					wantOut = append(wantOut, formats.Failed.String())
				}
			}
			if strings.Join(outcomes, " ") != strings.Join(wantOut, " ") {
				t.Errorf("runs %v, AdaL's processes %v", outcomes, wantOut)
			}
		})
	}
}

// A refusal as AdaL 1.8.6 keeps it (a headless run with --permission-mode
// default whose model called create_file, which needs approval; AdaL's own
// file, kept as it wrote it): the call has status cancelled and
// output.metadata.permission, the run's final message status cancelled;
// it is read as the refusal the run stopped at (exit 2), and written back
// so, by the session writer.
func TestSessionRefusal(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "formats", "adal", "testdata", "refused-session-1.8.6.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, evs []*formats.Event) {
		t.Helper()
		var denied, end *formats.Event
		for _, e := range evs {
			switch {
			case e.Kind == formats.ToolResult && e.Call.Status == formats.Denied:
				denied = e
			case e.Kind == formats.RunEnd:
				end = e
			}
		}
		if denied == nil || !strings.Contains(denied.Call.Error, "needs approval") {
			t.Fatalf("%s: no refused call with AdaL's reason: %+v", what, denied)
		}
		if end == nil || end.Status != formats.Denied || end.Run.ExitCode.V != 2 {
			t.Fatalf("%s: the run ends %+v, not refused with exit 2", what, end)
		}
	}
	evs := formatstest.Read(t, adal.Session, string(b))
	check("read", evs)
	out, err := formatstest.WriteAll(adal.Session, evs, true)
	if err != nil {
		t.Fatal(err)
	}
	check("written and read back", formatstest.Read(t, adal.Session, string(out)))
}
