// Secrets and TLS, against hsd processes started with them. The original
// plugin of the test MariaDB has neither (its secrets are empty, and it has
// no TLS), so these run on hsd: secrets on both stores, TLS on the
// embedded store.

package handlersocket_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
	"github.com/hsd-project/hsd/clients/go/internal/testserver"
)

// No byte below 0x10: such a byte travels escaped, and the original (whose
// answers hsd gives) compares the secret's raw length, so it never matches.
const (
	readSecret  = "read-secret with space"
	writeSecret = "write-secret"
)

// secured is hsd with a secret on each port, on the store of server name,
// and the db holding the test tables; started once per store.
type secured struct {
	hsd *testserver.Hsd
	db  string
}

var (
	securedOnce = map[string]*sync.Once{"hsd-sqlite": {}, "hsd-mysql": {}}
	securedHsd  = map[string]*secured{}
	securedErr  = map[string]error{}
)

func startSecured(t *testing.T, base *server) *secured {
	t.Helper()
	securedOnce[base.name].Do(func() {
		name := "secured-" + base.name
		data := filepath.Join(tmpRoot, name)
		if err := os.MkdirAll(data, 0o755); err != nil {
			securedErr[base.name] = err
			return
		}
		os.WriteFile(filepath.Join(data, "secret"), []byte(readSecret+"\n"), 0o600)
		os.WriteFile(filepath.Join(data, "secret-wr"), []byte(writeSecret+"\n"), 0o600)
		args := []string{"--plain-secret-file", filepath.Join(data, "secret"), "--plain-secret-wr-file", filepath.Join(data, "secret-wr")}
		db := base.db // MariaDB: hsd-mysql's database, served again with secrets
		if base.name == "hsd-sqlite" {
			db = "secured"
			if _, err := testserver.HsdSQL(data, db, testserver.ForSQLite()); err != nil {
				securedErr[base.name] = err
				return
			}
		} else {
			m, _, err := mariadbFromEnv()
			if err != nil {
				securedErr[base.name] = err
				return
			}
			args = append(args, "--backend", m.URL)
		}
		h, _, err := startHsd(name, args...)
		securedHsd[base.name], securedErr[base.name] = &secured{hsd: h, db: db}, err
	})
	if err := securedErr[base.name]; err != nil {
		t.Fatal(err)
	}
	return securedHsd[base.name]
}

// eachSecured runs fn on hsd with secrets, on both stores.
func eachSecured(t *testing.T, fn func(t *testing.T, sec *secured)) {
	for _, name := range []string{"hsd-sqlite", "hsd-mysql"} {
		t.Run(name, func(t *testing.T) { fn(t, startSecured(t, require(t, name))) })
	}
}

func TestRequestsNeedTheSecret(t *testing.T) {
	eachSecured(t, func(t *testing.T, sec *secured) {
		ctx := ctxFor(t)
		spec := hs.IndexSpec{DB: sec.db, Table: "emp", Columns: []string{"ename"}}
		anonymous := dialAddr(t, sec.hsd.WriteAddr(), nil)
		_, err := anonymous.OpenIndex(ctx, spec)
		se := serverError(t, err)
		equal(t, "without a secret", []any{se.Code, se.Reason, errors.Is(err, hs.ErrAuth)}, []any{3, "unauth", true})
		// Each port has its own secret; Dial checks it.
		if _, err := hs.Dial(ctx, sec.hsd.WriteAddr(), &hs.Options{Secret: readSecret}); !errors.Is(err, hs.ErrAuth) {
			t.Fatalf("Dial with the read port's secret on the write port: %v, want ErrAuth", err)
		}
		reader := dialAddr(t, sec.hsd.ReadAddr(), &hs.Options{Secret: readSecret})
		emp := must(reader.OpenIndex(ctx, spec))(t)
		equal(t, "get", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
	})
}

func TestAWrongSecretCanBeReplaced(t *testing.T) {
	eachSecured(t, func(t *testing.T, sec *secured) {
		ctx := ctxFor(t)
		c, err := hs.Dial(ctx, sec.hsd.WriteAddr(), &hs.Options{Secret: "wrong"})
		if !errors.Is(err, hs.ErrAuth) || c != nil {
			t.Fatalf("Dial with a wrong secret: %v", err)
		}
		pool := newPool(t, sec.hsd.WriteAddr(), 1, &hs.Options{Secret: "wrong"})
		conn := must(pool.Get(ctx))(t)
		defer pool.Put(conn)
		spec := hs.IndexSpec{DB: sec.db, Table: "emp", Columns: []string{"ename"}}
		if _, err := conn.OpenIndex(ctx, spec); !errors.Is(err, hs.ErrAuth) {
			t.Fatalf("open with a wrong secret: %v", err)
		}
		if err := conn.Auth(ctx, "still wrong"); !errors.Is(err, hs.ErrAuth) {
			t.Fatalf("Auth with a wrong secret: %v", err)
		}
		check(t, conn.Auth(ctx, writeSecret))
		emp := must(conn.OpenIndex(ctx, spec))(t)
		equal(t, "get", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
	})
}

func TestReconnectAuthenticatesAgain(t *testing.T) {
	eachSecured(t, func(t *testing.T, sec *secured) {
		ctx := ctxFor(t)
		relay := newRelay(t, sec.hsd.WriteAddr())
		c := dialAddr(t, relay.Addr(), &hs.Options{Secret: writeSecret})
		emp := must(c.OpenIndex(ctx, hs.IndexSpec{DB: sec.db, Table: "emp", Columns: []string{"ename"}}))(t)
		kv := must(c.OpenIndex(ctx, hs.IndexSpec{DB: sec.db, Table: "kv", Columns: []string{"k", "v", "n"}}))(t)
		relay.Cut()
		equal(t, "a read, sent again", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
		relay.Cut()
		must(kv.Insert(ctx, hs.Str(tag(t)+"after-cut"), hs.Str("x"), hs.Int(1)))(t) // a write, on a new connection
		equal(t, "connections", relay.Accepted(), 3)
	})
}

func TestAuthCallIsRemembered(t *testing.T) {
	eachSecured(t, func(t *testing.T, sec *secured) {
		ctx := ctxFor(t)
		relay := newRelay(t, sec.hsd.WriteAddr())
		c := dialAddr(t, relay.Addr(), nil)
		check(t, c.Auth(ctx, writeSecret))
		emp := must(c.OpenIndex(ctx, hs.IndexSpec{DB: sec.db, Table: "emp", Columns: []string{"ename"}}))(t)
		relay.Cut()
		equal(t, "get", must(emp.Get(ctx, hs.Int(1)))(t).Strings(), []string{"SMITH"})
	})
}

func TestPoolAuthenticatesEachConnection(t *testing.T) {
	eachSecured(t, func(t *testing.T, sec *secured) {
		ctx := ctxFor(t)
		pool := newPool(t, sec.hsd.ReadAddr(), 4, &hs.Options{Secret: readSecret})
		emp := must(pool.OpenIndex(ctx, hs.IndexSpec{DB: sec.db, Table: "emp", Index: "PRIMARY", Columns: []string{"ename"}}))(t)
		parallel(t, 8, func(int) error {
			for range 10 {
				if row, err := emp.Get(ctx, hs.Int(7)); err != nil || row.Str(0) != "CLARK" {
					return errors.Join(err, errors.New("get 7: "+row.String()))
				}
			}
			return nil
		})
	})
}

var (
	tlsOnce  sync.Once
	tlsHsd   *testserver.Hsd
	tlsRoots *x509.CertPool
	tlsErr   error
)

// startTLS is hsd on the embedded store serving TLS with a certificate for
// localhost and 127.0.0.1 made here, and a pool trusting it.
func startTLS(t *testing.T) (*testserver.Hsd, *x509.CertPool) {
	t.Helper()
	tlsOnce.Do(func() {
		data := filepath.Join(tmpRoot, "tls")
		if tlsErr = os.MkdirAll(data, 0o755); tlsErr != nil {
			return
		}
		var certPEM []byte
		certPEM, tlsErr = writeCertificate(data)
		if tlsErr != nil {
			return
		}
		tlsRoots = x509.NewCertPool()
		tlsRoots.AppendCertsFromPEM(certPEM)
		if _, tlsErr = testserver.HsdSQL(data, "tls", testserver.ForSQLite()); tlsErr != nil {
			return
		}
		tlsHsd, _, tlsErr = startHsd("tls", "--tls-cert", filepath.Join(data, "cert.pem"), "--tls-key", filepath.Join(data, "key.pem"))
	})
	if tlsErr != nil {
		t.Fatal(tlsErr)
	}
	return tlsHsd, tlsRoots
}

// writeCertificate writes a self-signed cert.pem and key.pem into dir.
func writeCertificate(dir string) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(48 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600); err != nil {
		return nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	return certPEM, os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600)
}

func TestTLSOnBothPorts(t *testing.T) {
	h, roots := startTLS(t)
	ctx := ctxFor(t)
	reader := dialAddr(t, h.ReadAddr(), &hs.Options{TLS: &tls.Config{RootCAs: roots}})
	emp := must(reader.OpenIndex(ctx, hs.IndexSpec{DB: "tls", Table: "emp", Columns: []string{"ename"}}))(t)
	equal(t, "get", must(emp.Get(ctx, hs.Int(7)))(t).Strings(), []string{"CLARK"})
	writer := dialAddr(t, h.WriteAddr(), &hs.Options{TLS: &tls.Config{RootCAs: roots}})
	kv := must(writer.OpenIndex(ctx, hs.IndexSpec{DB: "tls", Table: "kv", Columns: []string{"k", "v", "n"}}))(t)
	must(kv.Insert(ctx, hs.Str("tls"), hs.Str("secret stuff"), hs.Int(1)))(t)
	equal(t, "row", must(kv.Get(ctx, hs.Str("tls")))(t).Strings(), []string{"tls", "secret stuff", "1"})
}

func TestTLSVerifiesTheServer(t *testing.T) {
	h, roots := startTLS(t)
	ctx := ctxFor(t)
	var ne *hs.NetworkError
	if _, err := hs.Dial(ctx, h.ReadAddr(), &hs.Options{TLS: &tls.Config{}}); !errors.As(err, &ne) {
		t.Fatalf("TLS with the system's roots: %v, want a NetworkError", err)
	}
	if _, err := hs.Dial(ctx, h.ReadAddr(), &hs.Options{TLS: &tls.Config{RootCAs: roots, ServerName: "example.com"}}); !errors.As(err, &ne) {
		t.Fatalf("TLS for another name: %v, want a NetworkError", err)
	}
	plain := dialAddr(t, h.ReadAddr(), &hs.Options{ReadTimeout: 5 * time.Second})
	if _, err := plain.OpenIndex(ctx, hs.IndexSpec{DB: "tls", Table: "emp", Columns: []string{"ename"}}); err == nil {
		t.Fatal("plain text on a TLS port worked")
	}
}

func TestTLSReconnects(t *testing.T) {
	h, roots := startTLS(t)
	ctx := ctxFor(t)
	relay := newRelay(t, h.WriteAddr())
	c := dialAddr(t, relay.Addr(), &hs.Options{TLS: &tls.Config{RootCAs: roots, ServerName: "localhost"}})
	kv := must(c.OpenIndex(ctx, hs.IndexSpec{DB: "tls", Table: "kv", Columns: []string{"k", "v", "n"}}))(t)
	emp := must(c.OpenIndex(ctx, hs.IndexSpec{DB: "tls", Table: "emp", Columns: []string{"ename"}}))(t)
	equal(t, "get", must(emp.Get(ctx, hs.Int(2)))(t).Strings(), []string{"ALLEN"})
	// An idle TLS connection, then a write: still alive, nothing resent.
	must(kv.Insert(ctx, hs.Str("tls-before"), hs.Str("x"), hs.Int(1)))(t)
	equal(t, "connections", relay.Accepted(), 1)
	relay.Cut()
	must(kv.Insert(ctx, hs.Str("tls-after"), hs.Str("x"), hs.Int(1)))(t)
	equal(t, "get", must(emp.Get(ctx, hs.Int(2)))(t).Strings(), []string{"ALLEN"})
	equal(t, "connections", relay.Accepted(), 2)
}
