// Error answers become *ServerError values that keep the server's code and
// reason and match the Err* kinds with errors.Is; the connection stays
// usable after them. Client-side mistakes fail before anything is sent.

package handlersocket_test

import (
	"errors"
	"testing"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
)

// serverError is err as a *ServerError, or the test fails.
func serverError(t *testing.T, err error) *hs.ServerError {
	t.Helper()
	var se *hs.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("%v (%T), want a *ServerError", err, err)
	}
	return se
}

func TestUnknownTableAndDB(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		// On the read port: on the original's write port a failed open
		// changes later inserts until MariaDB restarts (see write_test.go).
		c := dial(t, s, false)
		_, err := c.OpenIndex(ctx, hs.IndexSpec{DB: s.db, Table: "no_such_table", Columns: []string{"id"}})
		se := serverError(t, err)
		equal(t, "answer", []any{se.Code, se.Reason}, []any{1, "open_table"})
		if !errors.Is(err, hs.ErrOpenTable) || !errors.Is(err, hs.ErrStorage) || errors.Is(err, hs.ErrRequest) {
			t.Fatalf("%v: wrong kinds", err)
		}
		_, err = c.OpenIndex(ctx, hs.IndexSpec{DB: "no_such_db", Table: "emp", Columns: []string{"id"}})
		if !errors.Is(err, hs.ErrOpenTable) {
			t.Fatalf("unknown db: %v", err)
		}
	})
}

func TestUnknownIndexAndColumn(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		_, err := c.OpenIndex(ctx, hs.IndexSpec{DB: s.db, Table: "emp", Index: "no_such_index", Columns: []string{"id"}})
		se := serverError(t, err)
		equal(t, "unknown index", []any{se.Code, se.Reason, errors.Is(err, hs.ErrRequest)}, []any{2, "idxnum", true})
		_, err = c.OpenIndex(ctx, hs.IndexSpec{DB: s.db, Table: "emp", Columns: []string{"id", "no_such_column"}})
		se = serverError(t, err)
		equal(t, "unknown column", []any{se.Code, se.Reason}, []any{2, "fld"})
		// A failed open leaves the connection as it was.
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		equal(t, "after", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
	})
}

func TestWriteOnTheReadPort(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		kv := open(t, dial(t, s, false), s, "kv", "PRIMARY", "k,v,n")
		_, err := kv.Insert(ctx, hs.Str("never"), hs.Str("x"), hs.Int(1))
		se := serverError(t, err)
		equal(t, "insert", []any{se.Code, se.Reason}, []any{2, "readonly"})
		if !errors.Is(err, hs.ErrReadOnly) || !errors.Is(err, hs.ErrRequest) {
			t.Fatalf("%v: want ErrReadOnly and ErrRequest", err)
		}
		if _, err := kv.Delete(ctx, hs.Eq(hs.Str("never"))); !errors.Is(err, hs.ErrReadOnly) {
			t.Fatalf("delete on the read port: %v", err)
		}
		if _, err := kv.IncrementReturning(ctx, hs.Eq(hs.Str("never")), hs.Int(0), hs.Int(0), hs.Int(1)); !errors.Is(err, hs.ErrReadOnly) {
			t.Fatalf("+? on the read port: %v", err)
		}
		if row := must(kv.Get(ctx, hs.Str("never")))(t); row != nil {
			t.Fatalf("got %v", row)
		}
	})
}

func TestRequestErrors(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, true), s, "emp", "PRIMARY", "id")
		_, err := emp.Find(ctx, hs.Eq(hs.Int(1), hs.Int(2)))
		equal(t, "more key values than key columns", serverError(t, err).Reason, "kpnum")
		if !errors.Is(err, hs.ErrRequest) || errors.Is(err, hs.ErrStorage) || errors.Is(err, hs.ErrReadOnly) {
			t.Fatalf("%v: wrong kinds", err)
		}
	})
}

func TestConnectionStaysUsableAfterErrors(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		kv := open(t, c, s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		must(kv.Insert(ctx, hs.Str(tg), hs.Str("x"), hs.Int(1)))(t)
		for range 3 {
			if _, err := kv.Insert(ctx, hs.Str(tg), hs.Str("y"), hs.Int(2)); !errors.Is(err, hs.ErrDuplicateKey) {
				t.Fatalf("duplicate: %v", err)
			}
			if _, err := emp.Find(ctx, hs.Eq(hs.Int(1), hs.Int(2))); !errors.Is(err, hs.ErrRequest) {
				t.Fatalf("kpnum: %v", err)
			}
			equal(t, "get", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
		}
		equal(t, "connects", c.Connects(), 1)
	})
}

func TestWrongSecretWhereNoneIsSet(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		// Neither server here has a secret: a wrong one is refused, the empty
		// one accepted, and requests work either way.
		c := dial(t, s, true)
		err := c.Auth(ctx, "wrong")
		se := serverError(t, err)
		equal(t, "wrong secret", []any{se.Code, se.Reason, errors.Is(err, hs.ErrAuth)}, []any{3, "unauth", true})
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		equal(t, "get", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
		check(t, c.Auth(ctx, ""))
		equal(t, "get after A 1 ''", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
	})
}

func TestClientSideMistakes(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		emp := open(t, c, s, "emp", "PRIMARY", "ename|sal")
		bad := map[string]hs.Query{
			"unknown operator":     hs.Where("==", hs.Int(1)),
			"no key":               hs.Eq(),
			"negative limit":       hs.Eq(hs.Int(1)).WithLimit(-1),
			"unknown filter col":   hs.Eq(hs.Int(1)).WithFilter(hs.F("dept", "=", hs.Int(1))),
			"unknown filter op":    hs.Eq(hs.Int(1)).WithFilter(hs.F("sal", "<>", hs.Int(1))),
			"unknown filter kind":  hs.Eq(hs.Int(1)).WithFilter(hs.Filter{Kind: 'X', Column: "sal", Op: "=", Value: hs.Int(1)}),
			"IN without values":    hs.Eq(hs.Int(1)).WithIn(0),
			"IN with a NULL value": hs.Eq().WithIn(0, hs.Int(1), nil),
		}
		for what, q := range bad {
			if _, err := emp.Find(ctx, q); !errors.Is(err, hs.ErrInvalid) {
				t.Fatalf("%s: %v, want ErrInvalid", what, err)
			}
		}
		for _, spec := range []hs.IndexSpec{
			{DB: s.db, Table: "emp", Columns: []string{"ename,sal"}},
			{DB: s.db, Table: "emp\t", Columns: []string{"ename"}},
			{DB: "", Table: "emp", Columns: []string{"ename"}},
		} {
			if _, err := c.OpenIndex(ctx, spec); !errors.Is(err, hs.ErrInvalid) {
				t.Fatalf("open %q: %v, want ErrInvalid", spec.String(), err)
			}
		}
		equal(t, "still in step", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
		equal(t, "connects", c.Connects(), 1)
	})
}

func TestErrorKindsAndMessages(t *testing.T) {
	dup := &hs.ServerError{Code: 1, Reason: "121", Request: "insert into db.t.PRIMARY(a)"}
	for _, kind := range []error{hs.ErrDuplicateKey, hs.ErrStorage} {
		if !errors.Is(dup, kind) {
			t.Fatalf("%v is not %v", dup, kind)
		}
	}
	for _, kind := range []error{hs.ErrRequest, hs.ErrReadOnly, hs.ErrAuth, hs.ErrOpenTable} {
		if errors.Is(dup, kind) {
			t.Fatalf("%v is %v", dup, kind)
		}
	}
	equal(t, "message", dup.Error(), `handlersocket: server answered "1 1 121": duplicate key (insert into db.t.PRIMARY(a))`)
	equal(t, "errno", []int{dup.Errno(), (&hs.ServerError{Code: 1, Reason: "open_table"}).Errno(), (&hs.ServerError{Code: 2, Reason: "12"}).Errno()}, []int{121, 0, 0})
	if !errors.Is(&hs.ServerError{Code: 3, Reason: "authtype"}, hs.ErrAuth) {
		t.Fatal("code 3 is not ErrAuth")
	}
	unknown := &hs.ServerError{Code: 7, Reason: "new"}
	for _, kind := range []error{hs.ErrStorage, hs.ErrRequest, hs.ErrAuth} {
		if errors.Is(unknown, kind) {
			t.Fatalf("code 7 is %v", kind)
		}
	}
}
