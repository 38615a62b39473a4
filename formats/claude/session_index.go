package claude

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/maphash"
	"io"
	"iter"
	"math/bits"
	"os"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// A session file is read twice, so that memory is bounded by what is live
// and not by the file: a first pass keeps of each record only what finding
// the conversation and its runs needs (hashes of its ids, flags, its time
// and where its line is: a sessRec of 72 bytes, in blocks of its file's,
// and the hashes of its calls' ids), and in maps of its file what only
// some records have; a second pass reads each record's line again, in file
// order, when its events are given, and forgets it once they are.
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
	// recs are the file's records; dec is the one read again (or read
	// first), decoded, while its events are given (one a file at a time).
	recs recList
	dec  *sessRecord
	// agent: the subagent whose file it is.
	agent string
	// ids are the hashes of the records' call and result ids (sessRec.ids).
	ids []uint64
	// What only some records have, by their place: the error of a line
	// that is no record, a time that is not in UTC (or out of the range of
	// Unix nanoseconds), the inline subagent of a sidechain record, and
	// what recExtra holds.
	errs   map[int32]*formats.LineError
	times  map[int32]time.Time
	agents map[int32]string
	extras map[int32]*recExtra
	// syms: the strings that most records repeat (types, session ids,
	// folders, versions, models), each once; symOf finds them. facts are
	// the records' recFacts, each once; factsOf finds them.
	syms    []string
	symAt   map[string]uint32
	facts   []recFacts
	factsAt map[recFacts]uint32
	// the sequential reader of the second pass: cur at position at.
	cur *os.File
	br  *bufio.Reader
	at  int64
	// held are the records of the file's start as the first pass decoded
	// them, by their place (nil once given), kept for the second pass,
	// which then need not read and decode them again. budget is the bytes
	// of lines that a session's files may still hold: memory is bounded
	// by it, not by the files.
	held   []*sessRecord
	budget *int
}

// heldBudget is the bytes of lines a session reader holds decoded between
// its passes. Most session files are smaller, and are decoded once; of a
// larger one, its start.
const heldBudget = 4 << 20

// hold keeps the record just decoded (dec) for the second pass, while the
// budget lasts and every record before it was kept.
func (s *recFile) hold(rec *sessRec, line []byte) {
	if !s.holds(rec, line) {
		return
	}
	*s.budget -= len(line)
	s.dec.raw = bytes.Clone(line)
	s.held = append(s.held, s.dec)
}

// holds says whether hold will keep the record of line.
func (s *recFile) holds(rec *sessRec, line []byte) bool {
	return s.budget != nil && *s.budget >= len(line) && int(rec.idx) == len(s.held)
}

// take gives a record the first pass kept, and forgets it; nil if it was
// not kept.
func (s *recFile) take(rec *sessRec) *sessRecord {
	i := int(rec.idx)
	if i >= len(s.held) {
		return nil
	}
	d := s.held[i]
	s.held[i] = nil
	return d
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

// factsOf is f's place in the table.
func (s *recFile) factsOf(f recFacts) uint32 {
	if i, ok := s.factsAt[f]; ok {
		return i
	}
	if s.factsAt == nil {
		s.factsAt = map[recFacts]uint32{}
	}
	i := uint32(len(s.facts))
	s.facts = append(s.facts, f)
	s.factsAt[f] = i
	return i
}

// fact is the string of the facts at place i that is their k-th.
func (s *recFile) fact(i uint32, k int) string {
	if int(i) >= len(s.facts) {
		return ""
	}
	return s.sym(s.facts[i][k])
}

// recList holds a file's records in blocks that never move: 16, 16, 32,
// …, 2048 records, then 4096 each, so that a record costs its struct and
// little more, a small file little, and a pointer to a record stays good.
type recList struct {
	blocks [][]sessRec
	n      int
	// freed: the blocks before it were let go (recList.free).
	freed int
}

const recBlock = 4096

// place is the block of record i, and its place there.
func place(i int) (int, int) {
	switch {
	case i < 16:
		return 0, i
	case i < recBlock:
		k := bits.Len(uint(i)) - 4
		return k, i - 1<<(k+3)
	}
	return 9 + (i-recBlock)/recBlock, (i - recBlock) % recBlock
}

func (l *recList) at(i int) *sessRec {
	k, j := place(i)
	return &l.blocks[k][j]
}

// add gives a new record, the last.
func (l *recList) add() *sessRec {
	k, j := place(l.n)
	if k == len(l.blocks) {
		size := recBlock
		if k < 9 {
			size = max(16, 1<<(k+3))
		}
		l.blocks = append(l.blocks, make([]sessRec, size))
	}
	l.n++
	return &l.blocks[k][j]
}

// drop takes the last record back.
func (l *recList) drop() {
	l.n--
	*l.at(l.n) = sessRec{}
}

// all gives the records in order.
func (l *recList) all() iter.Seq[*sessRec] {
	return func(yield func(*sessRec) bool) {
		for i := range l.n {
			if !yield(l.at(i)) {
				return
			}
		}
	}
}

// dropLast takes the file's last record back.
func (s *recFile) dropLast() {
	i := int32(s.recs.n - 1)
	if int(i) < len(s.held) {
		*s.budget += len(s.held[i].raw)
		s.held = s.held[:i]
	}
	delete(s.errs, i)
	delete(s.times, i)
	delete(s.agents, i)
	delete(s.extras, i)
	s.ids = s.ids[:s.recs.at(int(i)).xoff]
	s.recs.drop()
}

// free lets go of the blocks wholly before record i: nothing reads them
// by their place again (a pointer to one of their records keeps its block).
func (l *recList) free(i int) {
	k, _ := place(min(i, l.n))
	for ; l.freed < k; l.freed++ {
		l.blocks[l.freed] = nil
	}
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
	rec.flags, rec.off = rec.flags|fSpooled, s.spoolPos
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

// file is the file that holds a record's line.
func (s *recFile) file(rec *sessRec) (*os.File, error) {
	file := s.f
	if rec.is(fSpooled) {
		if s.spoolErr != nil {
			return nil, fmt.Errorf("%s: line %d: the temporary copy of the session could not be written (%v); convert the file by its path, or free room in the temporary folder", s.name, rec.line(), s.spoolErr)
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
		return nil, fmt.Errorf("%s: line %d cannot be read again", s.name, rec.line())
	}
	return file, nil
}

func (s *recFile) changed(rec *sessRec) error {
	return fmt.Errorf("%s: line %d changed while the session was read (it is written to again, or was replaced); convert it again", s.name, rec.line())
}

// usage is the usage of an assistant record's message, read again aside
// from the second pass's reading in order.
func (s *recFile) usage(rec *sessRec) (*apiUsage, error) {
	file, err := s.file(rec)
	if err != nil {
		return nil, err
	}
	b := make([]byte, rec.n)
	if _, err := file.ReadAt(b, rec.off); err != nil || lineSum(b) != rec.sum {
		return nil, s.changed(rec)
	}
	// Its usage alone: the first pass decoded the whole record.
	var r struct {
		Message struct {
			Usage *apiUsage `json:"usage"`
		} `json:"message"`
	}
	json.Unmarshal(b, &r)
	return r.Message.Usage, nil
}

// read gives a record's line again, a copy of its own.
func (s *recFile) read(rec *sessRec) ([]byte, error) {
	file, err := s.file(rec)
	if err != nil {
		return nil, err
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
	_, err = io.ReadFull(s.br, b)
	s.at = rec.off + int64(rec.n)
	if err != nil || lineSum(b) != rec.sum {
		return nil, s.changed(rec)
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
