//go:build unix

package convert

import (
	"path/filepath"
	"testing"
	"time"
)

// TestLockStateWaits: a lock let go soon after (a follow that is ending)
// is taken; one held for longer than lockWait is reported as held.
func TestLockStateWaits(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "follow.json")
	release, ok, err := lockState(path)
	if err != nil || !ok {
		t.Fatalf("first lock: ok %v, err %v", ok, err)
	}
	time.AfterFunc(lockWait/4, release)
	release2, ok, err := lockState(path)
	if err != nil || !ok {
		t.Fatalf("a lock let go after %v was not taken: ok %v, err %v", lockWait/4, ok, err)
	}
	start := time.Now()
	if _, ok, err := lockState(path); err != nil || ok {
		t.Fatalf("a lock held throughout was taken: ok %v, err %v", ok, err)
	}
	if waited := time.Since(start); waited < lockWait {
		t.Errorf("gave up on a held lock after %v, want %v", waited, lockWait)
	}
	release2()
}
