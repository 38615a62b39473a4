package convert

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// GCHeadroom is how much the heap may grow past what is live before the
// collector runs, when GOGC is not set: a conversion keeps a few MB live
// (one run) and makes short-lived garbage at hundreds of MB a second, so
// with the runtime's default (grow by as much as is live) it collects a
// hundred times in 100 MB of input, and its marking costs a fifth of the
// conversion and keeps the second core busy. With the headroom it
// collects a few times; a run that keeps more live than the headroom
// grows by the headroom, up to half of what is live: a large heap (the
// index of a 1 GB session file, a whole JSON document) is not doubled,
// so that peak memory follows what is live.
const GCHeadroom = 16 << 20

// TuneGC gives the collector GCHeadroom, unless the user set GOGC (or
// GOMEMLIMIT, which the runtime then follows): after each collection it
// sets the next one at the larger of what is live plus the headroom and
// one and a half times what is live. It is for the agentconv command; a program that
// uses the package as a library keeps its own setting. stop ends the
// tuning and puts back the setting it found.
func TuneGC(getenv func(string) string) (stop func()) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	t := &gcTuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.was = t.tune()
	t.arm()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.stopped {
			t.stopped = true
			debug.SetGCPercent(t.was)
		}
	}
}

type gcTuner struct {
	sample []metrics.Sample
	// was is the setting before the first tuning.
	was     int
	mu      sync.Mutex
	stopped bool
}

// sentinel is made for one collection to free; its finalizer retunes and
// makes the next. It holds a pointer so that it is not a tiny allocation
// that shares its block with others and outlives the collection.
type sentinel struct{ _ *int }

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.stopped {
			t.tune()
			t.arm()
		}
	})
}

// tune sets the next collection from what the last one left live, and
// returns the setting it replaced.
func (t *gcTuner) tune() int {
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	return debug.SetGCPercent(max(gcPercent(live, GCHeadroom), int(gcFloor.Load())))
}

// gcFloor is the least GOGC the tuning sets. A command whose live heap
// grows with its input (sessions keeps a line for each file) raises it
// to the runtime's default, 100: with a fixed headroom, the collector
// would run as often at the end as at the start, each time marking more,
// and the work would grow with the square of the files.
var gcFloor atomic.Int32

func init() { gcFloor.Store(50) }

// gcPercent is the GOGC that puts the next collection at about the larger
// of live+headroom and 1.5 times live. The runtime never collects below its
// minimum heap, 4 MB scaled by GOGC, so a live heap under 4 MB counts as
// 4 MB: the heap then grows to the headroom and no further.
func gcPercent(live, headroom uint64) int {
	const minHeap = 4 << 20
	p := headroom * 100 / max(live, minHeap)
	return int(max(p, 50))
}
