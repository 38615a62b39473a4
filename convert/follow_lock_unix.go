//go:build unix

package convert

import (
	"os"
	"syscall"
)

// lockState takes the lock of a state file (FILE.lock, held while follow
// runs): two follows on one state would each deliver every run. false: it
// is held by another process.
func lockState(path string) (release func(), ok bool, err error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}
