package convert

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{0, 16 * mb, 400},       // before the first collection: the 4 MB minimum heap, times 4
		{1 * mb, 16 * mb, 400},  // under the minimum heap: the same
		{4 * mb, 16 * mb, 400},  // 4 MB live + 16 MB
		{8 * mb, 16 * mb, 200},  // 8 MB live + 16 MB = 24 MB, three times live
		{16 * mb, 16 * mb, 100}, // twice live is live + the headroom
		{24 * mb, 16 * mb, 66},  // live + the headroom
		{32 * mb, 16 * mb, 50},  // live + the headroom is 1.5 times live
		{64 * mb, 16 * mb, 50},  // a large heap: grows by half, not doubled
		{2 << 30, 16 * mb, 50},
	} {
		if got := gcPercent(c.live, c.headroom); got != c.want {
			t.Errorf("gcPercent(%d MB, %d MB) = %d, want %d", c.live/mb, c.headroom/mb, got, c.want)
		}
	}
}

// TestTuneGC: with no GOGC the setting follows the collections, and stop
// puts back the one it found; with GOGC (or GOMEMLIMIT) set, nothing
// changes.
func TestTuneGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)

	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		stop := TuneGC(func(k string) string {
			if k == env {
				return "100"
			}
			return ""
		})
		runtime.GC()
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("with %s set, the setting became %d", env, got)
		}
		stop()
	}

	stop := TuneGC(func(string) string { return "" })
	// Each collection puts the tuner's own setting in place of the 150
	// put before it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		debug.SetGCPercent(150)
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer runs after the collection
		if got := debug.SetGCPercent(150); got != 150 {
			if got < 100 {
				t.Fatalf("the setting became %d, under the runtime's default", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no collection changed the setting")
		}
	}
	stop()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after stop the setting is %d, want the 100 it found", got)
	}
}
