package malac

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentconv/agentconv/formats"
)

// The hand-made time is the one time.Format makes.
func TestAppendAtIsTheLayout(t *testing.T) {
	east := time.FixedZone("east", 5*3600+1800)
	for _, tm := range []time.Time{
		formats.FixedEpoch, time.Date(2026, 12, 1, 23, 59, 59, 999_999_999, time.UTC), time.Date(1, 2, 3, 4, 5, 6, 7_000_000, time.UTC),
		time.Date(2026, 1, 1, 1, 2, 3, 45_600_000, east), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(999, 9, 9, 9, 9, 9, 90_000_000, time.UTC),
	} {
		if got, want := string(appendAt(nil, tm)), tm.UTC().Format(timeLayout); got != want {
			t.Errorf("%v: %s, want %s", tm, got, want)
		}
	}
}

// A tool_started line built by hand is the encoder's line, whatever the
// input's white space; an input that is not JSON fails as it did.
func TestToolStartedIsTheEncodersLine(t *testing.T) {
	for _, in := range []string{`{}`, `{"command":"ls \"a b\"\tc ü <&>","n":[1, 2]}`, " { \"a\" :\n1 } ", `[1,"x y"]`, `"s"`, `{"a":1`} {
		l := toolStartedLine{envelope{"agent-1", 3, "2000-01-01T00:00:00.000Z", "tool_started"}, "c<1>", "bash\t", "s \"x\"", json.RawMessage(in), false}
		var fast, slow bytes.Buffer
		m := &writer{w: &fast}
		fastErr := m.toolStarted(l)
		slowErr := formats.WriteJSONLine(&slow, l)
		if (fastErr == nil) != (slowErr == nil) || fast.String() != slow.String() {
			t.Errorf("%s:\n by hand %s (%v)\n encoder %s (%v)", in, fast.String(), fastErr, slow.String(), slowErr)
		}
	}
}

// The times of a stream of lines, formatted through the cache, are what
// time.Format gives each: within a millisecond, a second, across seconds,
// days and years, back in time, and outside the years written by hand.
func TestAtCacheIsTheLayout(t *testing.T) {
	base := time.Date(2026, 12, 31, 23, 59, 58, 998_000_000, time.UTC)
	var times []time.Time
	for _, d := range []time.Duration{0, 100 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, time.Second, 1500 * time.Millisecond, -3 * time.Second, 0} {
		times = append(times, base.Add(d))
	}
	times = append(times, time.Date(10000, 1, 1, 0, 0, 0, 5_000_000, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 7_000_000, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 1_000_000, time.UTC), time.Date(-5, 1, 1, 0, 0, 0, 2_000_000, time.UTC), formats.FixedEpoch)
	var c atCache
	for _, tm := range times {
		if got, want := c.format(tm), tm.UTC().Format(timeLayout); got != want {
			t.Errorf("%v: %s, want %s", tm, got, want)
		}
	}
}

// The lines of every run built by hand (strs, agentStarted, agentFinished)
// are the encoder's lines, whatever their strings hold: quotes, control
// characters, HTML, U+2028, invalid UTF-8.
func TestRunLinesAreTheEncodersLines(t *testing.T) {
	env := envelope{"agent-\"1\"", 7, "2000-01-01T00:00:00.000Z", "turn_finished"}
	for _, s := range []string{"", "plain", "a \"q\" \\ b\n\t\r\x00\x1f", "<&> ü 日本 \u2028\u2029", "bad \xff\xfe utf-8 \xe2\x82", "\U0001F600"} {
		check := func(what string, fast func(m *writer) error, v any) {
			t.Helper()
			var fb, sb bytes.Buffer
			if err := fast(&writer{w: &fb}); err != nil {
				t.Fatal(err)
			}
			if err := formats.WriteJSONLine(&sb, v); err != nil {
				t.Fatal(err)
			}
			if fb.String() != sb.String() {
				t.Errorf("%s %q:\n by hand %s encoder %s", what, s, fb.String(), sb.String())
			}
		}
		check("strs", func(m *writer) error { return m.strs(env, "status", s, "text", s) }, struct {
			envelope
			Status string `json:"status"`
			Text   string `json:"text"`
		}{env, s, s})
		for _, p := range []*string{nil, &s} {
			l := agentStartedLine{env, s, p, p, &s}
			check("agent_started", func(m *writer) error { return m.agentStarted(l) }, l)
		}
		code := -3
		for _, c := range []*int{nil, &code} {
			l := agentFinishedLine{env, s, s, c}
			check("agent_finished", func(m *writer) error { return m.agentFinished(l) }, l)
		}
	}
}
