// Package gomemcachetest drives hsd's memcached port with gomemcache, on
// the embedded store and, when their URLs are set, on MariaDB
// ($HSD_TEST_MYSQL_URL) and MySQL 8 ($HSD_TEST_MYSQL8_URL). Under CI a
// missing URL fails the test.
package gomemcachetest

import (
	"bufio"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
)

const (
	db    = "mcgoclient"
	table = "CREATE TABLE demo_test (c1 VARCHAR(32) NOT NULL PRIMARY KEY, c2 VARCHAR(1024), " +
		"c3 INT, c4 BIGINT UNSIGNED, c5 INT)"
	config = `
[[memcached.containers]]
name = "default"
db_schema = "` + db + `"
db_table = "demo_test"
key_columns = "c1"
value_columns = "c2"
flags = "c3"
cas_column = "c4"
expire_time_column = "c5"
`
)

var ready = regexp.MustCompile(`\bmemcached=(\S+)`)

func hsdBinary(t *testing.T) string {
	if bin := os.Getenv("HSD_BIN"); bin != "" {
		return bin
	}
	bin, err := filepath.Abs("../../../target/debug/hsd")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// mariadbSQL runs statements with the mariadb client on a mysql:// URL's server.
func mariadbSQL(t *testing.T, rawURL, statements string) {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := exec.LookPath("mariadb")
	if err != nil {
		client = "mysql"
	}
	password, _ := u.User.Password()
	cmd := exec.Command(client, "--no-defaults", "--protocol=TCP", "-h", u.Hostname(),
		"-P", u.Port(), "-u", u.User.Username())
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+password)
	cmd.Stdin = strings.NewReader(statements)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mariadb: %v: %s", err, out)
	}
}

// startHsd starts hsd over a fresh demo table and returns its memcached address.
func startHsd(t *testing.T, backendURL string) string {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--address", "127.0.0.1", "--port", "0", "--port-wr", "0",
		"--data-dir", data, "--memcached-address", "127.0.0.1:0",
		"--config", filepath.Join(dir, "hsd.toml")}
	if backendURL == "" {
		if out, err := exec.Command(hsdBinary(t), "sql", "--data-dir", data, db, table).CombinedOutput(); err != nil {
			t.Fatalf("hsd sql: %v: %s", err, out)
		}
	} else {
		mariadbSQL(t, backendURL, "DROP DATABASE IF EXISTS "+db+"; CREATE DATABASE "+db+
			"; USE "+db+"; "+table+" ENGINE=InnoDB;")
		args = append(args, "--backend", backendURL)
	}
	if err := os.WriteFile(filepath.Join(dir, "hsd.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hsdBinary(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("hsd printed no ready line: %v", err)
	}
	m := ready.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no memcached address in %q", line)
	}
	go func() { _, _ = bufio.NewReader(stdout).WriteTo(discard{}) }()
	return m[1]
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func backends(t *testing.T) map[string]string {
	all := map[string]string{"sqlite": ""}
	for name, variable := range map[string]string{"mariadb": "HSD_TEST_MYSQL_URL", "mysql8": "HSD_TEST_MYSQL8_URL"} {
		if u := os.Getenv(variable); u != "" {
			all[name] = u
		} else if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI runs every backend", variable)
		}
	}
	return all
}

func TestGomemcache(t *testing.T) {
	for name, backendURL := range backends(t) {
		t.Run(name, func(t *testing.T) {
			c := memcache.New(startHsd(t, backendURL))
			if err := c.Set(&memcache.Item{Key: "greeting", Value: []byte("hello"), Flags: 42}); err != nil {
				t.Fatal(err)
			}
			it, err := c.Get("greeting")
			if err != nil || string(it.Value) != "hello" || it.Flags != 42 {
				t.Fatalf("get: %v %+v", err, it)
			}
			if err := c.Add(&memcache.Item{Key: "greeting", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
				t.Fatalf("add of a present key: %v", err)
			}
			if err := c.Replace(&memcache.Item{Key: "absent", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
				t.Fatalf("replace of an absent key: %v", err)
			}
			if err := c.Append(&memcache.Item{Key: "greeting", Value: []byte(", world")}); err != nil {
				t.Fatal(err)
			}
			if err := c.Prepend(&memcache.Item{Key: "greeting", Value: []byte(">> ")}); err != nil {
				t.Fatal(err)
			}
			many, err := c.GetMulti([]string{"greeting", "absent"})
			if err != nil || len(many) != 1 || string(many["greeting"].Value) != ">> hello, world" {
				t.Fatalf("get multi: %v %v", err, many)
			}
			// CompareAndSwap: the item from Get carries the cas.
			it, err = c.Get("greeting")
			if err != nil {
				t.Fatal(err)
			}
			it.Value = []byte("swapped")
			if err := c.CompareAndSwap(it); err != nil {
				t.Fatalf("cas: %v", err)
			}
			it.Value = []byte("stale")
			if err := c.CompareAndSwap(it); !errors.Is(err, memcache.ErrCASConflict) {
				t.Fatalf("stale cas: %v", err)
			}
			if err := c.Set(&memcache.Item{Key: "n", Value: []byte("10")}); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Increment("n", 5); err != nil || v != 15 {
				t.Fatalf("incr: %v %d", err, v)
			}
			if v, err := c.Decrement("n", 100); err != nil || v != 0 {
				t.Fatalf("decr: %v %d", err, v)
			}
			if _, err := c.Increment("absent", 1); !errors.Is(err, memcache.ErrCacheMiss) {
				t.Fatalf("incr of an absent key: %v", err)
			}
			if err := c.Touch("n", 100); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete("n"); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete("n"); !errors.Is(err, memcache.ErrCacheMiss) {
				t.Fatalf("delete of an absent key: %v", err)
			}
			if err := c.Set(&memcache.Item{Key: "gone", Value: []byte("x"), Expiration: -1}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Get("gone"); !errors.Is(err, memcache.ErrCacheMiss) {
				t.Fatalf("get of an expired key: %v", err)
			}
			if err := c.Ping(); err != nil {
				t.Fatalf("ping (version): %v", err)
			}
			if err := c.FlushAll(); err == nil {
				t.Fatal("flush_all was not refused")
			}
		})
	}
}
