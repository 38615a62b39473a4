package convert

// follow's state file: per session file, the runs delivered and where
// it was read up to (see follow.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// followState is the state file.
type followState struct {
	Version int                     `json:"version"`
	Files   map[string]*followEntry `json:"files"`
}

// followEntry is the state of one session file.
type followEntry struct {
	// Runs is how many of its runs were delivered, in order.
	Runs int `json:"runs"`
	// Offset is how far it was read, to the end of its last whole line.
	Offset int64 `json:"offset"`
	// Size and MTime (unix nanoseconds) are its own at that read, and of
	// the files it owns (its subagents'): a file unchanged since is not
	// read again.
	Size  int64 `json:"size"`
	MTime int64 `json:"mtime"`
	// Cut: its last run delivered went out cut, its agent gone (quiet for
	// ten times --idle without its end): if the file goes on, it goes
	// again.
	Cut bool `json:"cut,omitempty"`
	// CutOut is the size of its -o output file before that cut run.
	CutOut int64 `json:"cut_out,omitempty"`
	// Settled: every run it held was delivered.
	Settled bool `json:"settled,omitempty"`
	// Skip: no dialect reads it as a session file.
	Skip bool `json:"skip,omitempty"`
	// OutSize is the size of its -o output file after the last delivery:
	// what a pass cut short appended after it is taken back.
	OutSize int64 `json:"out_size,omitempty"`
}

// load reads the state file; a missing one is an empty state.
func (f *follower) load() error {
	f.state = followState{Version: 1, Files: map[string]*followEntry{}}
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--state %s: cannot read it: %v", f.path, unwrapPath(err))
	}
	if err := json.Unmarshal(data, &f.state); err != nil {
		return fmt.Errorf("--state %s: not a state file of agentconv follow (%v); move it away to start afresh", f.path, err)
	}
	if f.state.Files == nil {
		f.state.Files = map[string]*followEntry{}
	}
	return nil
}

// save writes the state file whole, then renames it into place: a kill
// leaves the old state or the new one, never half of one.
func (f *follower) save() error {
	data, err := json.Marshal(f.state)
	if err != nil {
		return err
	}
	if err := replaceFile(f.path, true, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	}); err != nil {
		return fmt.Errorf("cannot save the state in %s: %v", f.path, unwrapPath(err))
	}
	f.dirty, f.saved = false, f.now()
	return nil
}

// saveSoon saves the state if it changed, at most once a second: a kill
// (not a signal, which saves it) between a delivery and its save makes the
// delivery again at the next start; its spans keep their ids, and an -o
// file is cut back to its size at the last save first.
func (f *follower) saveSoon() {
	if f.dirty && f.now().Sub(f.saved) >= time.Second {
		if err := f.save(); err != nil {
			f.warn("%v", err)
		}
	}
}
