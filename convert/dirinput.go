package convert

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentconv/agentconv/formats"
)

// dirInputs lists the files a directory named as an input holds, for a
// dialect that reads directories (Dialect.DirFiles): with --from, that
// dialect's pattern; without, the pattern of any readable dialect that
// declares one, each file's dialect being detected as usual. The files are
// every one under dir whose name matches, in path order (a directory's
// entries by name, each subdirectory where its name comes), so the output
// is the same run to run; names starting with a dot are left out, files
// and directories alike. A dialect that declares no pattern keeps the
// error: name the files.
//
// What cannot be read under dir (a subdirectory or file whose permissions
// forbid it, one that vanished during the walk) is passed to unreadable,
// and left out; nil makes it an error.
func dirInputs(dir string, from formats.Dialect, unreadable func(path string, err error)) ([]Source, error) {
	return dirInputsOwned(dir, from, unreadable, nil)
}

// dirInputsOwned is dirInputs, keeping in owners, when not nil, the owner
// of each file it looked at (ownerOf), so that a second look at the
// directory (ownedFiles) need not ask again: an Owner hook may open the
// file.
func dirInputsOwned(dir string, from formats.Dialect, unreadable func(path string, err error), owners map[string]string) ([]Source, error) {
	var patterns, readers []string
	for _, d := range Readable() {
		if d.DirFiles == "" || from.Name != "" && d.Name != from.Name {
			continue
		}
		readers = append(readers, d.Name)
		if !slices.Contains(patterns, d.DirFiles) {
			patterns = append(patterns, d.DirFiles)
		}
	}
	if len(patterns) == 0 {
		msg := fmt.Sprintf("%s: is a directory; name the files in it", dir)
		if all := dirReaders(); len(all) == 1 {
			msg += " (only " + all[0] + " reads a directory)"
		} else if len(all) > 1 {
			msg += " (only " + strings.Join(all, ", ") + " read a directory)"
		}
		return nil, fmt.Errorf("%s", msg)
	}
	var files []string
	sizes := map[string]int64{}
	root, rerr := filepath.EvalSymlinks(dir)
	if rerr != nil {
		root = dir
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir || unreadable == nil {
				return err
			}
			unreadable(p, unwrapPath(err))
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !matchAny(patterns, d.Name()) {
			return nil
		}
		if !d.Type().IsRegular() {
			// A symlink or other: only one that leads to a regular file
			// under the directory. One that leads out of it (to
			// /proc/self/environ, say) is not read, lest a message quote
			// what the user never named.
			st, err := os.Stat(p)
			if err != nil || !st.Mode().IsRegular() {
				return nil
			}
			if !within(root, p) {
				if unreadable != nil {
					unreadable(p, errors.New("a symbolic link to a file outside the directory; left out (name the file to read it)"))
				}
				return nil
			}
			sizes[p] = st.Size()
		} else if info, err := d.Info(); err == nil {
			sizes[p] = info.Size()
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: cannot read it: %v", pe.Path, pe.Err)
		}
		return nil, fmt.Errorf("%s: cannot read it: %v", dir, err)
	}
	files = dropOwned(files, from, owners)
	if len(files) == 0 {
		return nil, noFilesError(fmt.Sprintf("%s: no %s file under it (for %s)", dir, strings.Join(patterns, " or "), strings.Join(readers, ", ")))
	}
	out := make([]Source, len(files))
	for i, f := range files {
		out[i] = Source{Path: f, Dir: dir, Size: sizes[f]}
	}
	return out, nil
}

// dropOwned leaves out the files that another file of the list brings
// with it (Dialect.Owner: a subagent's file beside its session's file); a
// file whose owner is not in the list stays, to be read on its own. Each
// file's owner is kept in known, when not nil.
func dropOwned(files []string, from formats.Dialect, known map[string]string) []string {
	owners := ownerDialects(from)
	if len(owners) == 0 {
		return files
	}
	listed := make(map[string]bool, len(files))
	for _, f := range files {
		listed[f] = true
	}
	out := files[:0]
	for _, f := range files {
		o := ownerOf(owners, f)
		if known != nil {
			known[f] = o
		}
		if o == "" || !listed[o] {
			out = append(out, f)
		}
	}
	return out
}

// ownerDialects are the dialects (from alone, if named) that say which
// file owns another (Dialect.Owner).
func ownerDialects(from formats.Dialect) []formats.Dialect {
	var owners []formats.Dialect
	for _, d := range Readable() {
		if d.Owner != nil && (from.Name == "" || d.Name == from.Name) {
			owners = append(owners, d)
		}
	}
	return owners
}

// ownerOf is the file that the first of owners to know one says owns p,
// or "".
func ownerOf(owners []formats.Dialect, p string) string {
	for _, d := range owners {
		if o := d.Owner(p); o != "" && o != p {
			return o
		}
	}
	return ""
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}

// dirReaders names the dialects that read a directory.
func dirReaders() []string {
	var out []string
	for _, d := range Readable() {
		if d.DirFiles != "" {
			out = append(out, d.Name)
		}
	}
	return out
}

// noFilesError: a directory holds no file that a dialect reads.
type noFilesError string

func (e noFilesError) Error() string { return string(e) }

// readsDir: a directory walk reads the file at path as d, a dialect that
// reads directories and whose pattern matches the file's name. A file of
// another dialect (a stream of the same agent, a text that the text
// dialects would take) is not one of the directory's files.
func readsDir(d formats.Dialect, path string) bool {
	return d.DirFiles != "" && matchAny([]string{d.DirFiles}, filepath.Base(path))
}

// within says whether the file p, a symbolic link, leads to a file under
// root (a directory with its links resolved).
func within(root, p string) bool {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(root, target)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
