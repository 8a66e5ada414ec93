// Package testserver runs the real servers the client's tests talk to: hsd
// processes (on the embedded store or on MariaDB), SQL on their stores, and
// the tables every test server gets. It is for tests only.
package testserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Schema is the tables every test server gets, in SQL that SQLite and
// MariaDB both take. @AUTOINC@ and @BLOB@ are replaced per store (ForSQLite,
// ForMariaDB).
const Schema = `
CREATE TABLE emp (
  id INTEGER NOT NULL PRIMARY KEY,
  empno INTEGER NOT NULL,
  ename VARCHAR(32),
  dept INTEGER,
  sal INTEGER,
  note VARCHAR(64)
);
CREATE UNIQUE INDEX emp_empno ON emp (empno);
CREATE INDEX emp_dept_sal ON emp (dept, sal);
INSERT INTO emp (id, empno, ename, dept, sal, note) VALUES
  (1, 7369, 'SMITH', 20, 800, NULL),
  (2, 7499, 'ALLEN', 30, 1600, 'sales'),
  (3, 7521, 'WARD', 30, 1250, 'sales'),
  (4, 7566, 'JONES', 20, 2975, NULL),
  (5, 7654, 'MARTIN', 30, 1250, 'sales'),
  (6, 7698, 'BLAKE', 30, 2850, NULL),
  (7, 7782, 'CLARK', 10, 2450, NULL),
  (8, 7788, 'SCOTT', 20, 3000, ''),
  (9, 7839, 'KING', 10, 5000, 'boss'),
  (10, 7844, 'TURNER', 30, 1500, 'sales'),
  (11, 7876, 'ADAMS', 20, 1100, NULL),
  (12, 7900, 'JAMES', 30, 950, NULL),
  (13, 7902, 'FORD', 20, 3000, NULL),
  (14, 7934, 'MILLER', 10, 1300, NULL);
CREATE TABLE kv (
  k VARCHAR(64) NOT NULL PRIMARY KEY,
  v VARCHAR(255),
  n INTEGER
);
CREATE TABLE bin (
  k INTEGER NOT NULL PRIMARY KEY,
  v @BLOB@
);
CREATE TABLE seq (
  id @AUTOINC@,
  name VARCHAR(64)
);
CREATE TABLE counter (
  id INTEGER NOT NULL PRIMARY KEY,
  hits INTEGER,
  score INTEGER
);
`

// ForSQLite is Schema for hsd's embedded store.
func ForSQLite() string {
	return strings.NewReplacer("@AUTOINC@", "INTEGER PRIMARY KEY AUTOINCREMENT", "@BLOB@", "BLOB").Replace(Schema)
}

// ForMariaDB is Schema for MariaDB.
func ForMariaDB() string {
	return strings.NewReplacer("@AUTOINC@", "INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY", "@BLOB@", "VARBINARY(255)").Replace(Schema)
}

// Repo is the root of the hsd checkout holding this module.
func Repo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "clients", "go", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside an hsd checkout (no clients/go/go.mod above the working directory)")
		}
		dir = parent
	}
}

// Binary is $HSD_BIN, or target/debug/hsd of the checkout.
func Binary() (string, error) {
	if bin := os.Getenv("HSD_BIN"); bin != "" {
		return bin, nil
	}
	repo, err := Repo()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(repo, "target", "debug", "hsd")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no hsd binary at %s: run `cargo build -p hsd` (or set HSD_BIN)", bin)
	}
	return bin, nil
}

// Hsd is a running `hsd serve`.
type Hsd struct {
	Host      string
	ReadPort  int
	WritePort int
	Log       string
	cmd       *exec.Cmd
}

// ReadAddr is host:port of the read port.
func (h *Hsd) ReadAddr() string { return net.JoinHostPort(h.Host, fmt.Sprint(h.ReadPort)) }

// WriteAddr is host:port of the write port.
func (h *Hsd) WriteAddr() string { return net.JoinHostPort(h.Host, fmt.Sprint(h.WritePort)) }

var ready = regexp.MustCompile(`^hsd: listening read=(\S+):(\d+) write=(\S+):(\d+)`)

// StartHsd runs `hsd serve` on free ports of 127.0.0.1 with dataDir, and
// waits for its ready line. Its log goes to dataDir/hsd.log.
func StartHsd(dataDir string, extra ...string) (*Hsd, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dataDir, "hsd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := append([]string{"serve", "--address", "127.0.0.1", "--port", "0", "--port-wr", "0", "--data-dir", dataDir}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logFile
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		} else {
			lines <- ""
		}
		for sc.Scan() { // keep the pipe drained
		}
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(60 * time.Second):
	}
	m := ready.FindStringSubmatch(line)
	if m == nil {
		cmd.Process.Kill()
		cmd.Wait()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("hsd did not start (first line %q); log:\n%s", line, log)
	}
	h := &Hsd{Host: m[1], Log: logPath, cmd: cmd}
	fmt.Sscan(m[2], &h.ReadPort)
	fmt.Sscan(m[4], &h.WritePort)
	return h, nil
}

// Stop ends hsd: SIGTERM, then SIGKILL after 10 s.
func (h *Hsd) Stop() {
	if h == nil || h.cmd == nil || h.cmd.Process == nil {
		return
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}

// HsdSQL runs SQL on the embedded store in dataDir (`hsd sql`); rows as
// lists of text.
func HsdSQL(dataDir, db, statement string) ([][]string, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "sql", "--data-dir", dataDir, db, statement)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("hsd sql %s %q: %v: %s", db, statement, err, stderr.Bytes())
	}
	return splitRows(out), nil
}

func splitRows(out []byte) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows
}

// MariaDB is a MariaDB server reached with the mariadb command-line client.
type MariaDB struct {
	URL      string
	Host     string
	Port     string
	User     string
	Password string
}

// NewMariaDB parses a mysql://user:password@host:port URL.
func NewMariaDB(raw string) (*MariaDB, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("bad MariaDB URL: %v", err)
	}
	m := &MariaDB{URL: raw, Host: u.Hostname(), Port: u.Port(), User: u.User.Username()}
	m.Password, _ = u.User.Password()
	if m.Host == "" {
		m.Host = "127.0.0.1"
	}
	if m.Port == "" {
		m.Port = "3306"
	}
	return m, nil
}

// SQL runs statements on db (none when empty); rows as lists of text,
// NULL as "NULL".
func (m *MariaDB) SQL(db, statements string) ([][]string, error) {
	client, err := exec.LookPath("mariadb")
	if err != nil {
		if client, err = exec.LookPath("mysql"); err != nil {
			return nil, errors.New("no mariadb client on PATH (apt-get install mariadb-client)")
		}
	}
	args := []string{"--no-defaults", "--protocol=TCP", "-h", m.Host, "-P", m.Port, "-u", m.User,
		"--default-character-set=utf8mb4", "-N", "-B"}
	if db != "" {
		args = append(args, db)
	}
	cmd := exec.Command(client, args...)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+m.Password)
	cmd.Stdin = strings.NewReader(statements)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("mariadb: %v: %s", err, stderr.Bytes())
	}
	return splitRows(out), nil
}

// Recreate drops and creates db and loads schema into it. It waits at
// most 10 s for a lock: a connection of the original plugin holding a
// table open would block the DROP for ever.
func (m *MariaDB) Recreate(db, schema string) error {
	_, err := m.SQL("", fmt.Sprintf("SET SESSION lock_wait_timeout = 10; DROP DATABASE IF EXISTS `%s`; CREATE DATABASE `%s` CHARACTER SET utf8mb4", db, db))
	if err != nil {
		return err
	}
	_, err = m.SQL(db, schema)
	return err
}
