package opencode

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite": SQLite in pure Go, no cgo
)

// DB is the opencode-db dialect: OpenCode's SQLite database,
// $XDG_DATA_HOME/opencode/opencode.db (~/.local/share/opencode), which
// holds every session: the tables session (parent_id: the session whose
// task call started a subagent's), message and part (each row's data is
// the message's or the part's JSON, as the export prints them) and event.
// Read only.
//
// A reader takes a stream, and SQLite reads a file: the reader copies the
// input to a temporary file, and when the input is a file (not standard
// input) whose write-ahead log lies beside it (opencode.db-wal, where
// OpenCode's writes wait until SQLite checkpoints them) it copies that too,
// so that the copy holds what OpenCode wrote. It never opens OpenCode's
// own file. From standard input only the main file is read: writes still
// in the log are not.
var DB = formats.Dialect{
	Name:        "opencode-db",
	Aliases:     []string{"opencode-sqlite"},
	Description: "OpenCode's SQLite database `~/.local/share/opencode/opencode.db` (every session: session, message and part rows; a subagent's session names its parent) (read only)",
	NewReader:   newDBReader,
	Detect:      detectDB,
	Binary:      true,
	DirFiles:    "opencode.db",
	Places:      dbPlaces,
}

// dbPlaces: $XDG_DATA_HOME/opencode, else ~/.local/share/opencode.
func dbPlaces(getenv func(string) string) []string {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return []string{filepath.Join(d, "opencode")}
	}
	if h := getenv("HOME"); h != "" {
		return []string{filepath.Join(h, ".local", "share", "opencode")}
	}
	return nil
}

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// dbTables are tables of OpenCode's schema whose names no other program's
// schema is likely to share; the first page or pages hold some of their
// CREATE TABLE statements (sqlite_schema), in an order SQLite chooses.
var dbTables = [][]byte{[]byte("CREATE TABLE `part`"), []byte("CREATE TABLE `session_message`"),
	[]byte("CREATE TABLE `event_sequence`"), []byte("CREATE TABLE `session_share`"), []byte("CREATE TABLE `project_directory`"),
	[]byte("CREATE TABLE `session_context_epoch`"), []byte("CREATE TABLE `control_account`")}

// detectDB claims a SQLite database whose head names tables of
// OpenCode's schema.
func detectDB(head []byte) int {
	if !bytes.HasPrefix(head, sqliteMagic) {
		return 0
	}
	for _, t := range dbTables {
		if bytes.Contains(head, t) {
			return 100
		}
	}
	return 0
}

func newDBReader(r io.Reader, o formats.ReadOptions) formats.Reader {
	return &sliceReader{load: func() ([]*formats.Event, error) {
		sessions, err := loadDB(r, o.Path)
		if err != nil {
			return nil, err
		}
		b := builder{dialect: o.Dialect}
		return b.events(sessions), nil
	}}
}

// loadDB copies the database (and its write-ahead log, beside path) to a
// temporary folder, and reads its sessions, each with its messages and
// their parts, in order.
func loadDB(r io.Reader, path string) ([]*session, error) {
	first := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(r, first)
	switch {
	case n == 0 && (err == io.EOF || err == io.ErrUnexpectedEOF):
		return nil, nil // nothing to read
	case err != nil && err != io.ErrUnexpectedEOF:
		return nil, err
	case !bytes.Equal(first[:n], sqliteMagic):
		return nil, formats.Errorf(1, "not a SQLite database (it does not start with SQLite's header): opencode-db reads OpenCode's opencode.db")
	}
	r = io.MultiReader(bytes.NewReader(first), r)
	dir, err := os.MkdirTemp("", "agentconv-opencode-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "opencode.db")
	if err := copyTo(name, r); err != nil {
		return nil, fmt.Errorf("copying the database to %s: %w", dir, err)
	}
	if path != "" {
		if wal, err := os.Open(path + "-wal"); err == nil {
			err := copyTo(name+"-wal", wal)
			wal.Close()
			if err != nil {
				return nil, fmt.Errorf("copying %s-wal: %w", path, err)
			}
		}
	}
	db, err := sql.Open("sqlite", "file:"+name+"?_pragma=query_only(1)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	sessions, err := readDB(db)
	if err != nil {
		// Line 1: a database has no lines, and an error names its place.
		return nil, formats.Errorf(1, "not an OpenCode database, or one of another schema: %v", err)
	}
	return sessions, nil
}

func copyTo(name string, r io.Reader) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readDB(db *sql.DB) ([]*session, error) {
	var sessions []*session
	byID := map[string]*session{}
	rows, err := db.Query("SELECT id, COALESCE(parent_id, ''), directory, version, title, time_created, time_updated FROM session ORDER BY time_created, id")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		s := &session{}
		if err := rows.Scan(&s.Info.ID, &s.Info.ParentID, &s.Info.Directory, &s.Info.Version, &s.Info.Title, &s.Info.Time.Created, &s.Info.Time.Updated); err != nil {
			rows.Close()
			return nil, err
		}
		sessions = append(sessions, s)
		byID[s.Info.ID] = s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	byMsg := map[string]*message{}
	rows, err = db.Query("SELECT id, session_id, time_created, data FROM message ORDER BY session_id, time_created, id")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, sid, data string
		var created int64
		if err := rows.Scan(&id, &sid, &created, &data); err != nil {
			rows.Close()
			return nil, err
		}
		m := &message{}
		if err := json.Unmarshal([]byte(data), &m.Info); err != nil {
			rows.Close()
			return nil, fmt.Errorf("message %s: its data is not a message's JSON: %w", id, err)
		}
		m.Info.ID, m.Info.SessionID = id, sid
		if m.Info.Time.Created == 0 {
			m.Info.Time.Created = created
		}
		if s := byID[sid]; s != nil {
			s.Messages = append(s.Messages, m)
			byMsg[id] = m
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = db.Query("SELECT id, message_id, session_id, data FROM part ORDER BY message_id, id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, mid, sid, data string
		if err := rows.Scan(&id, &mid, &sid, &data); err != nil {
			return nil, err
		}
		p := &part{}
		if err := json.Unmarshal([]byte(data), p); err != nil {
			return nil, fmt.Errorf("part %s: its data is not a part's JSON: %w", id, err)
		}
		p.ID, p.MessageID, p.SessionID = id, mid, sid
		if m := byMsg[mid]; m != nil {
			m.Parts = append(m.Parts, p)
		}
	}
	return sessions, rows.Err()
}
