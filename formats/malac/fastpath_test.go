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
		l := toolStartedLine{envelope{"agent-1", 3, "2000-01-01T00:00:00.000Z", "tool_started"}, "c<1>", "bash\t", "s \"x\"", json.RawMessage(in)}
		var fast, slow bytes.Buffer
		m := &writer{w: &fast}
		fastErr := m.toolStarted(l)
		slowErr := formats.WriteJSONLine(&slow, l)
		if (fastErr == nil) != (slowErr == nil) || fast.String() != slow.String() {
			t.Errorf("%s:\n by hand %s (%v)\n encoder %s (%v)", in, fast.String(), fastErr, slow.String(), slowErr)
		}
	}
}
