package claude

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/maphash"
	"io"
	"os"
)

// A session file is read twice, so that memory is bounded by what is live
// and not by the file: a first pass keeps of each record only what finding
// the conversation and its runs needs (its ids, flags and where its line
// is: sessRec's key, offset, length and hash); a second pass reads each
// record's line again, in file order, when its events are given, and
// forgets it once they are.
//
// The second pass reads the session file itself when the reader is given
// its path and the lines it reads are the file's bytes at their offsets
// (checked on the first line). From a line that may differ from the file
// (one that holds U+FFFD, which the pipeline puts in place of invalid
// UTF-8), and for input that is no file (standard input, a pipe), the
// lines are copied to a temporary file, deleted at once, that the second
// pass reads instead. Each line read again is checked against the hash
// the first pass took: a file changed in between gives an error that says
// so, never wrong events.

// recFile is where the records of one file are read again.
type recFile struct {
	name string
	// path: opened on the first read again (a subagent's file); try: the
	// path of the file the stream may be, checked on its first line.
	path, try string
	f         *os.File
	// direct: the lines are the file's bytes at their offsets; repaired:
	// the input may have had invalid UTF-8 replaced, so that a line with
	// U+FFFD may not be.
	direct, repaired bool
	// spool is the temporary copy of the lines from one that may differ
	// from the file on; sw writes it, spoolPos is its length.
	spool    *os.File
	sw       *bufio.Writer
	spoolPos int64
	spoolErr error
	// syms: the strings that most records repeat (types, session ids,
	// folders, versions, models), each once; symOf finds them.
	syms  []string
	symAt map[string]uint32
	// the sequential reader of the second pass: cur at position at.
	cur *os.File
	br  *bufio.Reader
	at  int64
}

var lineSeed = maphash.MakeSeed()

// symOf is v's place in the table; 0 is "".
func (s *recFile) symOf(v string) uint32 {
	if v == "" {
		return 0
	}
	if i, ok := s.symAt[v]; ok {
		return i
	}
	if s.symAt == nil {
		s.symAt, s.syms = map[string]uint32{}, []string{""}
	}
	i := uint32(len(s.syms))
	s.syms = append(s.syms, v)
	s.symAt[v] = i
	return i
}

func (s *recFile) sym(i uint32) string {
	if i == 0 {
		return ""
	}
	return s.syms[i]
}

func lineSum(b []byte) uint64 { return maphash.Bytes(lineSeed, b) }

// openSessionFile opens the file at path for the second pass when the
// stream's first line, at offset off, is its bytes there; nil otherwise.
func openSessionFile(path string, off int64, line []byte) *os.File {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil
	}
	got := make([]byte, len(line))
	if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, line) {
		f.Close()
		return nil
	}
	return f
}

// keep notes where rec's line b is, copying it to the spool when the file
// cannot give it back.
func (s *recFile) keep(rec *sessRec, off int64, b []byte) {
	rec.src, rec.n, rec.sum = s, int32(len(b)), lineSum(b)
	if s.try != "" {
		s.f = openSessionFile(s.try, off, b)
		s.direct, s.try = s.f != nil, ""
	}
	if s.direct && s.spool == nil && !(s.repaired && bytes.Contains(b, []byte("\uFFFD"))) {
		rec.off = off
		return
	}
	if s.spool == nil && s.spoolErr == nil {
		f, err := os.CreateTemp("", "agentconv-session-*.jsonl")
		if err != nil {
			s.spoolErr = err
		} else {
			os.Remove(f.Name())
			s.spool, s.sw = f, bufio.NewWriterSize(f, 256<<10)
		}
	}
	rec.spooled, rec.off = true, s.spoolPos
	if s.spoolErr == nil {
		if _, err := s.sw.Write(b); err != nil {
			s.spoolErr = err
		}
		s.sw.WriteByte('\n')
	}
	s.spoolPos += int64(len(b)) + 1
}

// done ends the first pass.
func (s *recFile) done() {
	if s.sw != nil && s.spoolErr == nil {
		s.spoolErr = s.sw.Flush()
		s.sw = nil
	}
}

// read gives a record's line again, a copy of its own.
func (s *recFile) read(rec *sessRec) ([]byte, error) {
	file := s.f
	if rec.spooled {
		if s.spoolErr != nil {
			return nil, fmt.Errorf("%s: line %d: the temporary copy of the session could not be written (%v); convert the file by its path, or free room in the temporary folder", s.name, rec.line, s.spoolErr)
		}
		file = s.spool
	} else if file == nil && s.path != "" {
		f, err := os.Open(s.path)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot be read again (%v)", s.path, err)
		}
		s.f, file = f, f
	}
	if file == nil {
		return nil, fmt.Errorf("%s: line %d cannot be read again", s.name, rec.line)
	}
	if s.cur != file || rec.off < s.at || rec.off-s.at > 1<<20 {
		if _, err := file.Seek(rec.off, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: cannot be read again (%v)", s.name, err)
		}
		if s.br == nil {
			// No bigger than what is left of the file: a small session
			// file need not cost a buffer of 256 KiB (sessions reads
			// thousands).
			size := 256 << 10
			if st, err := file.Stat(); err == nil && st.Mode().IsRegular() && st.Size()-rec.off < int64(size) {
				size = max(int(st.Size()-rec.off), 16)
			}
			s.br = bufio.NewReaderSize(file, size)
		} else {
			s.br.Reset(file)
		}
		s.cur, s.at = file, rec.off
	}
	if d := rec.off - s.at; d > 0 {
		s.br.Discard(int(d))
	}
	b := make([]byte, rec.n)
	_, err := io.ReadFull(s.br, b)
	s.at = rec.off + int64(rec.n)
	if err != nil || lineSum(b) != rec.sum {
		return nil, fmt.Errorf("%s: line %d changed while the session was read (it is written to again, or was replaced); convert it again", s.name, rec.line)
	}
	return b, nil
}

// close closes the files of the second pass.
func (s *recFile) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if s.spool != nil {
		s.spool.Close()
		s.spool = nil
	}
	s.cur, s.br = nil, nil
}
