//go:build unix

package convert

import (
	"os"
	"syscall"
	"time"
)

// lockWait is how long lockState waits for a held lock before it gives
// up. A follow that has just ended may not have let go yet: the lock
// belongs to the open file, and a process started at that moment (by a
// follow's parent, between its fork and its exec) holds a copy of it for
// a while.
const lockWait = 2 * time.Second

// lockState takes the lock of a state file (FILE.lock, held while follow
// runs): two follows on one state would each deliver every run. false: it
// is still held by another after lockWait.
func lockState(path string) (release func(), ok bool, err error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	deadline := time.Now().Add(lockWait)
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	for err == syscall.EWOULDBLOCK && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	switch {
	case err == nil:
		return func() { f.Close() }, true, nil
	case err == syscall.EWOULDBLOCK:
		f.Close()
		return nil, false, nil
	}
	f.Close()
	return nil, false, err
}
