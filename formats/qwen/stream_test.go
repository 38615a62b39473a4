package qwen_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/claude"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/formats/qwen"
)

// TestQwenCode reads what Qwen Code 0.24.4 printed (issue 24 #12, #13, #14,
// #18): its stream is detected as qwen-code by its init line; the run's
// tokens and each request's are what the model server sent, the cache
// counted once (input_tokens include it), the subagent's requests in the
// result's total, and the 0/0 usage of a message per content block no
// request.
func TestQwenCode(t *testing.T) {
	for _, scenario := range []string{"text-shell", "subagent", "thinking"} {
		dir := filepath.Join("..", "..", "testdata", "agents", "qwen-code", "0.24.4", scenario, "stream-json")
		data, err := os.ReadFile(filepath.Join(dir, "stdout.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var srv struct {
			Requests []struct {
				Status int `json:"status"`
				Sent   *struct {
					Input, Output int64
					CacheRead     int64 `json:"cache_read"`
				} `json:"sent"`
			} `json:"requests"`
		}
		b, _ := os.ReadFile(filepath.Join(dir, "server.json"))
		if err := json.Unmarshal(b, &srv); err != nil {
			t.Fatal(err)
		}
		var in, out int64
		var calls int
		for _, r := range srv.Requests {
			if r.Status == 200 && r.Sent != nil {
				in, out, calls = in+r.Sent.Input+r.Sent.CacheRead, out+r.Sent.Output, calls+1
			}
		}
		if q, c := qwen.Stream.Detect(data), claude.Stream.Detect(data); q <= c {
			t.Errorf("%s: qwen-code scores %d, claude-stream %d", scenario, q, c)
		}
		evs := formatstest.Read(t, qwen.Stream, data)
		end := formatstest.OfKind(evs, formats.RunEnd)
		if len(end) != 1 || end[0].Usage.InputTokens.V != in || end[0].Usage.OutputTokens.V != out {
			t.Errorf("%s: run's usage %+v; the server sent %d in, %d out", scenario, end[0].Usage, in, out)
		}
		var sumIn int64
		usage := formatstest.OfKind(evs, formats.Usage)
		for _, u := range usage {
			sumIn += u.Usage.InputTokens.V
		}
		if scenario == "subagent" {
			continue // the subagent's messages have 0/0 usage: no request of theirs is known
		}
		if len(usage) != calls || sumIn != in {
			t.Errorf("%s: %d requests of %d input tokens; the server answered %d of %d", scenario, len(usage), sumIn, calls, in)
		}
	}
}

// TestQwenJSON reads what Qwen Code 0.24.4 printed with -o json (issue 24
// #17): the array of its stream-json messages, detected as qwen-json by its
// init message, not as claude-json; the run is Qwen Code's, and its tokens
// are what the model server sent, by Qwen's counts (the cache counted once,
// the subagent's requests in the result's total).
func TestQwenJSON(t *testing.T) {
	for _, scenario := range []string{"text-shell", "subagent", "thinking", "edit", "parallel", "refused"} {
		dir := filepath.Join("..", "..", "testdata", "agents", "qwen-code", "0.24.4", scenario, "json")
		data, err := os.ReadFile(filepath.Join(dir, "stdout.json"))
		if err != nil {
			t.Fatal(err)
		}
		if q, c := qwen.JSON.Detect(data), claude.JSON.Detect(data); q <= c {
			t.Errorf("%s: qwen-json scores %d, claude-json %d", scenario, q, c)
		}
		if q, s := qwen.JSON.Detect(data), qwen.Stream.Detect(data); q <= s {
			t.Errorf("%s: qwen-json scores %d, qwen-code %d", scenario, q, s)
		}
		evs := formatstest.Read(t, qwen.JSON, data)
		if evs[0].Run.AgentName != "qwen-code" || evs[0].Run.Provider != "" {
			t.Errorf("%s: run %+v", scenario, evs[0].Run)
		}
		want := serverRuns(t, dir)[0]
		end := formatstest.OfKind(evs, formats.RunEnd)
		if len(end) != 1 || end[0].Status != formats.Completed {
			t.Fatalf("%s: runs %v", scenario, formatstest.Kinds(end))
		}
		if got := [2]int64{end[0].Usage.InputTokens.V, end[0].Usage.OutputTokens.V}; got != want {
			t.Errorf("%s: run's tokens %v; the server sent %v", scenario, got, want)
		}
	}
}

// TestResumedTotals (issue 24 #15): after `qwen --resume ID -p …`, Qwen
// Code 0.24.4's result is the session's running total (its first run's
// 1,200 in and 30 out, then 4,044 and 111). Its two stdouts read one after
// the other give each run its own requests' tokens, as the server sent
// them (the resume's two requests: 1,348 + 1,496 in, 37 + 44 out), in
// stream-json and json alike.
func TestResumedTotals(t *testing.T) {
	for _, c := range []struct {
		mode, ext string
		dialect   formats.Dialect
	}{{"stream-json", "jsonl", qwen.Stream}, {"json", "json", qwen.JSON}} {
		dir := filepath.Join("..", "..", "testdata", "agents", "qwen-code", "0.24.4", "resume", c.mode)
		var data []byte
		for _, f := range []string{"stdout." + c.ext, "stdout-2." + c.ext} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			data = append(append(data, b...), '\n')
		}
		want := serverRuns(t, dir)
		ends := formatstest.OfKind(formatstest.Read(t, c.dialect, data), formats.RunEnd)
		if len(ends) != len(want) {
			t.Fatalf("%s: %d runs, want %d", c.mode, len(ends), len(want))
		}
		for i, e := range ends {
			if got := [2]int64{e.Usage.InputTokens.V, e.Usage.OutputTokens.V}; got != want[i] {
				t.Errorf("%s run %d: tokens %v; the server sent %v", c.mode, i+1, got, want[i])
			}
		}
	}
}

// serverRuns are the tokens the server sent in each process of a resume
// capture (in and out, the cache counted in the input): the requests whose
// history holds the resume's prompt are the second's.
func serverRuns(t *testing.T, dir string) [][2]int64 {
	t.Helper()
	var srv struct {
		Scenario struct {
			Resume string `json:"resume"`
		} `json:"scenario"`
		Requests []struct {
			Status  int             `json:"status"`
			History json.RawMessage `json:"history"`
			Sent    *struct {
				Input, Output int64
				CacheRead     int64 `json:"cache_read"`
			} `json:"sent"`
		} `json:"requests"`
	}
	readServer(t, dir, &srv)
	out := make([][2]int64, 2)
	for _, r := range srv.Requests {
		if r.Status != 200 || r.Sent == nil {
			continue
		}
		i := 0
		if srv.Scenario.Resume != "" && strings.Contains(string(r.History), srv.Scenario.Resume) {
			i = 1
		}
		out[i][0] += r.Sent.Input + r.Sent.CacheRead
		out[i][1] += r.Sent.Output
	}
	return out
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// readServer decodes a capture's server.json (the scenario and the
// requests the server answered) into v.
func readServer(t *testing.T, dir string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// serverCalls are the tokens the server sent for each request it answered,
// in order (in and out, the cache counted in the input).
func serverCalls(t *testing.T, dir string) [][2]int64 {
	t.Helper()
	var srv struct {
		Requests []struct {
			Status int `json:"status"`
			Sent   *struct {
				Input, Output int64
				CacheRead     int64 `json:"cache_read"`
			} `json:"sent"`
		} `json:"requests"`
	}
	readServer(t, dir, &srv)
	var out [][2]int64
	for _, r := range srv.Requests {
		if r.Status == 200 && r.Sent != nil {
			out = append(out, [2]int64{r.Sent.Input + r.Sent.CacheRead, r.Sent.Output})
		}
	}
	return out
}

// TestQwenRefused: Qwen Code 0.24.4 run without the shell's permission
// declines the call itself ("Qwen Code requires permission to use
// \"run_shell_command\", but that permission was declined") and lists it in
// its result's permission_denials: the call is refused (denied), not
// failed, in stream-json and json, as in its session file.
func TestQwenRefused(t *testing.T) {
	for _, c := range []struct {
		mode    string
		dialect formats.Dialect
	}{{"stream-json", qwen.Stream}, {"json", qwen.JSON}} {
		dir := filepath.Join("..", "..", "testdata", "agents", "qwen-code", "0.24.4", "refused", c.mode)
		names, _ := filepath.Glob(filepath.Join(dir, "stdout.json*"))
		if len(names) != 1 {
			t.Fatalf("%s: stdout files %v", c.mode, names)
		}
		data, err := os.ReadFile(names[0])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range formatstest.OfKind(formatstest.Read(t, c.dialect, data), formats.ToolResult) {
			got = append(got, e.Call.Name+":"+e.Call.Status.String())
		}
		if strings.Join(got, " ") != "run_shell_command:denied" {
			t.Errorf("%s: results %v, want run_shell_command denied once", c.mode, got)
		}
	}
}
