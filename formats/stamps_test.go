package formats

import (
	"testing"
	"time"
)

func TestStamps(t *testing.T) {
	ms := time.Millisecond
	src := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	read := time.Date(2026, 1, 1, 0, 0, 0, 123456, time.UTC)
	var s Stamps
	for i, c := range []struct {
		e    Event
		want time.Time
	}{
		{Event{}, FixedEpoch.Add(ms)},                             // no time at all: never the zero time
		{Event{Arrived: read}, read.Truncate(ms)},                 // the arrival time, to the millisecond
		{Event{Arrived: read.Add(10)}, read.Add(ms).Truncate(ms)}, // the same millisecond: the next one
		{Event{Time: src, Arrived: read}, src},                    // the source's time, as it is
		{Event{Time: src}, src},                                   // even when it repeats
		{Event{Arrived: read}, src.Add(ms)},                       // without one, it follows the source's
		{Event{Arrived: read.Add(time.Hour)}, src.Add(2 * ms)},
	} {
		if got := s.Next(&c.e); !got.Equal(c.want) {
			t.Errorf("%d: %v, want %v", i, got, c.want)
		}
	}
}
