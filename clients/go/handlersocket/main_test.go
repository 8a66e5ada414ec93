// The three servers every client test runs against, with the same calls
// and the same expected results:
//
//   - hsd-sqlite: hsd on its embedded store, in a fresh data directory;
//   - hsd-mysql: hsd serving database goclient_hsd of the MariaDB at
//     $HSD_TEST_MYSQL_URL;
//   - plugin: MariaDB's own HandlerSocket plugin ($HSD_HS_ORIGINAL_PORT,
//     $HSD_HS_ORIGINAL_PORT_WR) on database goclient_plugin of that MariaDB.
//
// Each server starts when a test first needs it. Without the MariaDB
// variables the last two are skipped, except under CI ($CI set), where a
// missing server fails the test: scripts/mariadb.sh provides them.

package handlersocket_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
	"github.com/hsd-project/hsd/clients/go/internal/testserver"
)

var (
	inCI        = os.Getenv("CI") != ""
	tmpRoot     string
	serverNames = []string{"hsd-sqlite", "hsd-mysql", "plugin"}

	startMu sync.Mutex
	started = map[string]*server{}
	stops   []func()
)

// server is one of the three, as the tests see it.
type server struct {
	name      string
	readAddr  string
	writeAddr string
	db        string
	// sql runs SQL on the server's own store: rows as text, NULL as "NULL"
	// on MariaDB and "" on the embedded store.
	sql func(statement string) ([][]string, error)
	// missing says why the server cannot run here (an unset variable).
	missing string
	err     error
}

func (s *server) isPlugin() bool { return s.name == "plugin" }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hsd-goclient-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tmpRoot = dir
	code := m.Run()
	for _, stop := range stops {
		stop()
	}
	os.RemoveAll(tmpRoot)
	os.Exit(code)
}

// mariadbFromEnv is the MariaDB of $HSD_TEST_MYSQL_URL, or why there is none.
func mariadbFromEnv() (*testserver.MariaDB, string, error) {
	raw := os.Getenv("HSD_TEST_MYSQL_URL")
	if raw == "" {
		return nil, "$HSD_TEST_MYSQL_URL is not set", nil
	}
	m, err := testserver.NewMariaDB(raw)
	return m, "", err
}

// startHsd starts an hsd the run stops at its end.
func startHsd(name string, extra ...string) (*testserver.Hsd, string, error) {
	data := filepath.Join(tmpRoot, name)
	h, err := testserver.StartHsd(data, extra...)
	if err == nil {
		stops = append(stops, h.Stop)
	}
	return h, data, err
}

func startServer(name string) *server {
	s := &server{name: name}
	switch name {
	case "hsd-sqlite":
		s.db = "goclient"
		data := filepath.Join(tmpRoot, name)
		if _, err := testserver.HsdSQL(data, s.db, testserver.ForSQLite()); err != nil {
			s.err = err
			return s
		}
		h, _, err := startHsd(name)
		if err != nil {
			s.err = err
			return s
		}
		s.readAddr, s.writeAddr = h.ReadAddr(), h.WriteAddr()
		s.sql = func(q string) ([][]string, error) { return testserver.HsdSQL(data, s.db, q) }
	case "hsd-mysql", "plugin":
		m, missing, err := mariadbFromEnv()
		if missing != "" || err != nil {
			s.missing, s.err = missing, err
			return s
		}
		s.db = "goclient_hsd"
		if name == "plugin" {
			s.db = "goclient_plugin"
		}
		if err := m.Recreate(s.db, testserver.ForMariaDB()); err != nil {
			s.err = err
			return s
		}
		s.sql = func(q string) ([][]string, error) { return m.SQL(s.db, q) }
		if name == "plugin" {
			rd, wr := os.Getenv("HSD_HS_ORIGINAL_PORT"), os.Getenv("HSD_HS_ORIGINAL_PORT_WR")
			if rd == "" || wr == "" {
				s.missing = "$HSD_HS_ORIGINAL_PORT or $HSD_HS_ORIGINAL_PORT_WR is not set"
				return s
			}
			s.readAddr, s.writeAddr = net.JoinHostPort(m.Host, rd), net.JoinHostPort(m.Host, wr)
			return s
		}
		h, _, err := startHsd(name, "--backend", m.URL)
		if err != nil {
			s.err = err
			return s
		}
		s.readAddr, s.writeAddr = h.ReadAddr(), h.WriteAddr()
	}
	return s
}

// require is the server, started if needed; the test is skipped (failed
// under CI) when it cannot run here.
func require(t *testing.T, name string) *server {
	t.Helper()
	startMu.Lock()
	s, ok := started[name]
	if !ok {
		s = startServer(name)
		started[name] = s
	}
	startMu.Unlock()
	if s.err != nil {
		t.Fatalf("%s: %v", name, s.err)
	}
	if s.missing != "" {
		msg := s.missing + ": start MariaDB with scripts/mariadb.sh and eval its env"
		if inCI {
			t.Fatalf("%s (under CI nothing may be skipped)", msg)
		}
		t.Skip(msg)
	}
	return s
}

// each runs fn once per server, as subtests named after them.
func each(t *testing.T, fn func(t *testing.T, s *server)) {
	t.Helper()
	for _, name := range serverNames {
		t.Run(name, func(t *testing.T) { fn(t, require(t, name)) })
	}
}

// ctxFor is a context that ends with the test, or after 30 s.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// dial connects to the server's write port (read port when !write), closed
// after the test.
func dial(t *testing.T, s *server, write bool) *hs.Conn {
	t.Helper()
	return dialAddr(t, pick(s, write), nil)
}

func pick(s *server, write bool) string {
	if write {
		return s.writeAddr
	}
	return s.readAddr
}

func dialAddr(t *testing.T, addr string, opts *hs.Options) *hs.Conn {
	t.Helper()
	c, err := hs.Dial(ctxFor(t), addr, opts)
	if err != nil {
		t.Fatalf("Dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// opener is a Conn or a Pool.
type opener interface {
	OpenIndex(context.Context, hs.IndexSpec) (*hs.Index, error)
}

// open opens db.table.index with columns (and filter columns after "|":
// "id,ename|dept,sal").
func open(t *testing.T, c opener, s *server, table, index, columns string) *hs.Index {
	t.Helper()
	spec := hs.IndexSpec{DB: s.db, Table: table, Index: index}
	cols, filters, _ := strings.Cut(columns, "|")
	spec.Columns = split(cols)
	spec.FilterColumns = split(filters)
	idx, err := c.OpenIndex(ctxFor(t), spec)
	if err != nil {
		t.Fatalf("OpenIndex %s: %v", spec.String(), err)
	}
	return idx
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

var nextBlock atomic.Int64

// keys is a fresh block of 1000 integer keys for this test.
func keys(t *testing.T) func() int64 {
	base := 1000 * nextBlock.Add(1)
	var n int64
	return func() int64 {
		n++
		return base + n
	}
}

// tag is a string key prefix no other test uses.
func tag(t *testing.T) string { return fmt.Sprintf("t%d-", keys(t)()) }

// show is rows as text, each Row.String: ["5" "MARTIN"], NULL as NULL.
func show(rows []hs.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.String()
	}
	return out
}

// col is column i of every row, as strings.
func col(rows []hs.Row, i int) []string {
	out := make([]string, len(rows))
	for n, r := range rows {
		out[n] = r.Str(i)
	}
	return out
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := fmt.Sprintf("%q", got), fmt.Sprintf("%q", want); g != w {
		t.Fatalf("%s:\n got  %s\n want %s", what, g, w)
	}
}

// must is v when err is nil: must(x.Get(ctx, key))(t).
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sqlOne runs a query on the server's store that must answer one row.
func sqlOne(t *testing.T, s *server, query string) []string {
	t.Helper()
	rows, err := s.sql(query)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%s: %d rows, want 1: %q", query, len(rows), rows)
	}
	return rows[0]
}
