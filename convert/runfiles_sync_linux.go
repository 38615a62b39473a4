package convert

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncsDir: the files of -o DIR are made durable together, once, at the
// conversion's end (syncfs of DIR's file system), instead of an fsync each:
// each is still written whole beside its place and then renamed, so that
// no reader sees a part of one. An fsync per file was most of the time of
// a home directory's conversion to atif files.
const syncsDir = true

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
