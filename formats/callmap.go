package formats

// RecentCalls is how many of a run's calls that ended a CallMap keeps,
// so that a result repeated soon after its call's (or a late line about
// it) still finds what was kept of the call.
const RecentCalls = 64

// CallMap holds what a reader, a writer or the run view keeps of each call
// of a run, by call id (or of each message, by its id), bounded by what stays live in the run rather than
// by its number of calls: an entry stays while its call is open, and once
// End says the call ended, until RecentCalls more calls have ended. With
// Keep, every entry stays until Reset. The zero value is ready to use.
type CallMap[V any] struct {
	// Keep keeps every entry until Reset.
	Keep bool
	m    map[string]callEntry[V]
	// recent are the last calls that ended, a ring from next, with the
	// count of ends at theirs (an entry set again since is not forgotten).
	recent [RecentCalls]endedCall
	next   int
	ends   uint64
}

type callEntry[V any] struct {
	v     V
	ended uint64 // the count of ends at the call's end; 0 while open
}

type endedCall struct {
	id  string
	end uint64
}

// Get returns the entry of a call, and whether there is one.
func (c *CallMap[V]) Get(id string) (V, bool) {
	e, ok := c.m[id]
	return e.v, ok
}

// Set sets the entry of a call, which is open until End.
func (c *CallMap[V]) Set(id string, v V) {
	if c.m == nil {
		c.m = map[string]callEntry[V]{}
	}
	c.m[id] = callEntry[V]{v: v}
}

// End says that a call ended: its entry is forgotten once RecentCalls
// more calls have ended (never, with Keep). A call without an entry, or
// one that ended already, is left as it is.
func (c *CallMap[V]) End(id string) {
	e, ok := c.m[id]
	if !ok || e.ended != 0 || c.Keep {
		return
	}
	c.ends++
	e.ended = c.ends
	c.m[id] = e
	slot := &c.recent[c.next]
	if old, ok := c.m[slot.id]; ok && slot.end != 0 && old.ended == slot.end {
		delete(c.m, slot.id)
	}
	*slot = endedCall{id, c.ends}
	c.next = (c.next + 1) % RecentCalls
}

// Len is the number of entries kept.
func (c *CallMap[V]) Len() int { return len(c.m) }

// Reset forgets every entry, at the end of a run.
func (c *CallMap[V]) Reset() {
	clear(c.m)
	c.recent, c.next = [RecentCalls]endedCall{}, 0
}
