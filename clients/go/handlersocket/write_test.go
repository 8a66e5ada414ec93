// Writes: insert (with and without an auto-increment id), update, delete,
// increment and decrement, with and without the rows as they were (U?,
// D?, +?, -?). Every result is also checked with SQL on the server's own
// store, not only through the client that made the change.

package handlersocket_test

import (
	"errors"
	"fmt"
	"testing"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
)

func TestInsertReturnsTheAutoIncrementID(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		seq := open(t, dial(t, s, true), s, "seq", "PRIMARY", "name")
		tg := tag(t)
		first := must(seq.Insert(ctx, hs.Str(tg+"a")))(t)
		second := must(seq.Insert(ctx, hs.Str(tg+"b")))(t)
		if first == 0 || second != first+1 {
			t.Fatalf("ids %d then %d, want n > 0 then n+1", first, second)
		}
		equal(t, "stored", sqlOne(t, s, fmt.Sprintf("SELECT name FROM seq WHERE id = %d", second)), []string{tg + "b"})
	})
}

func TestInsertWithoutAutoIncrementAndExplicitID(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		kv := open(t, c, s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		equal(t, "id without auto-increment", must(kv.Insert(ctx, hs.Str(tg), hs.Str("v"), hs.Int(7)))(t), uint64(0))
		equal(t, "row", must(kv.Get(ctx, hs.Str(tg)))(t).Strings(), []string{tg, "v", "7"})
		equal(t, "stored", sqlOne(t, s, fmt.Sprintf("SELECT v, n FROM kv WHERE k = '%s'", tg)), []string{"v", "7"})
		// An id given is stored and answered 0: nothing was generated. (The
		// plugin answers 1 1 167 instead once its write thread met any error,
		// so no test opens a missing table on a write port.)
		seq := open(t, c, s, "seq", "PRIMARY", "id,name")
		given := 10_000_000 + keys(t)()
		equal(t, "explicit id", must(seq.Insert(ctx, hs.Int(given), hs.Str("explicit")))(t), uint64(0))
		equal(t, "explicit row", must(seq.Get(ctx, hs.Int(given)))(t).Strings(), []string{fmt.Sprint(given), "explicit"})
	})
}

func TestInsertFillsTheFirstColumns(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		kv := open(t, dial(t, s, true), s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		must(kv.Insert(ctx, hs.Str(tg)))(t)
		// As the original does: NULL flags cleared, so '' and 0.
		equal(t, "row", must(kv.Get(ctx, hs.Str(tg)))(t).String(), fmt.Sprintf("[%q \"\" \"0\"]", tg))
	})
}

func TestDuplicateKey(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		kv := open(t, dial(t, s, true), s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		must(kv.Insert(ctx, hs.Str(tg), hs.Str("one"), hs.Int(1)))(t)
		_, err := kv.Insert(ctx, hs.Str(tg), hs.Str("two"), hs.Int(2))
		var se *hs.ServerError
		if !errors.Is(err, hs.ErrDuplicateKey) || !errors.Is(err, hs.ErrStorage) || !errors.As(err, &se) {
			t.Fatalf("second insert: %v, want a duplicate key", err)
		}
		equal(t, "error", []any{se.Code, se.Reason, se.Errno()}, []any{1, "121", hs.DuplicateKey})
		equal(t, "row kept", must(kv.Get(ctx, hs.Str(tg)))(t).Strings(), []string{tg, "one", "1"})
	})
}

func TestUpdate(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		kv := open(t, c, s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		must(kv.Insert(ctx, hs.Str(tg), hs.Str("old"), hs.Int(1)))(t)
		equal(t, "update", must(kv.Update(ctx, hs.Eq(hs.Str(tg)), hs.Str(tg), hs.Str("new"), hs.Int(2)))(t), 1)
		equal(t, "row", must(kv.Get(ctx, hs.Str(tg)))(t).Strings(), []string{tg, "new", "2"})
		equal(t, "update missing", must(kv.Update(ctx, hs.Eq(hs.Str(tg+"missing")), hs.Str(tg), hs.Str("x"), hs.Int(0)))(t), 0)
		equal(t, "stored", sqlOne(t, s, fmt.Sprintf("SELECT v, n FROM kv WHERE k = '%s'", tg)), []string{"new", "2"})

		before := must(kv.UpdateReturning(ctx, hs.Eq(hs.Str(tg)), hs.Str(tg), hs.Str("newer"), hs.Int(3)))(t)
		equal(t, "U? answers the rows before", show(before), []string{fmt.Sprintf("[%q \"new\" \"2\"]", tg)})
		equal(t, "row after U?", must(kv.Get(ctx, hs.Str(tg)))(t).Strings(), []string{tg, "newer", "3"})
		equal(t, "U? on nothing", len(must(kv.UpdateReturning(ctx, hs.Eq(hs.Str(tg+"missing")), hs.Str(tg), hs.Str("x"), hs.Int(0)))(t)), 0)
	})
}

func TestUpdateToNullAndToEmpty(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		kv := open(t, dial(t, s, true), s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		must(kv.Insert(ctx, hs.Str(tg), hs.Str("x"), hs.Int(1)))(t)
		must(kv.Update(ctx, hs.Eq(hs.Str(tg)), hs.Str(tg), nil, nil))(t)
		equal(t, "NULLs", must(kv.Get(ctx, hs.Str(tg)))(t).String(), fmt.Sprintf("[%q NULL NULL]", tg))
		equal(t, "stored NULLs", sqlOne(t, s, fmt.Sprintf("SELECT v IS NULL, n IS NULL FROM kv WHERE k = '%s'", tg)), []string{"1", "1"})
		must(kv.Update(ctx, hs.Eq(hs.Str(tg)), hs.Str(tg), hs.Str(""), hs.Int(0)))(t)
		equal(t, "empty", must(kv.Get(ctx, hs.Str(tg)))(t).String(), fmt.Sprintf("[%q \"\" \"0\"]", tg))
	})
}

func TestUpdateARangeWithLimit(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		kv := open(t, c, s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		for i := range 5 {
			must(kv.Insert(ctx, hs.Str(fmt.Sprint(tg, i)), hs.Str("before"), hs.Int(int64(i))))(t)
		}
		values := open(t, c, s, "kv", "PRIMARY", "v")
		equal(t, "update 3", must(values.Update(ctx, hs.Where(hs.GE, hs.Str(tg+"0")).WithLimit(3), hs.Str("after")))(t), 3)
		rows := must(kv.Find(ctx, hs.Where(hs.GE, hs.Str(tg+"0")).WithLimit(5)))(t)
		equal(t, "values", col(rows, 1), []string{"after", "after", "after", "before", "before"})
	})
}

func TestDelete(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		kv := open(t, dial(t, s, true), s, "kv", "PRIMARY", "k,v,n|n,k")
		tg := tag(t)
		must(kv.Insert(ctx, hs.Str(tg), hs.Str("x"), hs.Int(1)))(t)
		equal(t, "delete", must(kv.Delete(ctx, hs.Eq(hs.Str(tg))))(t), 1)
		if row := must(kv.Get(ctx, hs.Str(tg)))(t); row != nil {
			t.Fatalf("deleted row still there: %v", row)
		}
		equal(t, "delete again", must(kv.Delete(ctx, hs.Eq(hs.Str(tg))))(t), 0)
		rows, err := s.sql(fmt.Sprintf("SELECT k FROM kv WHERE k = '%s'", tg))
		check(t, err)
		equal(t, "stored", len(rows), 0)

		must(kv.Insert(ctx, hs.Str(tg), hs.Str("y"), hs.Int(2)))(t)
		equal(t, "D?", show(must(kv.DeleteReturning(ctx, hs.Eq(hs.Str(tg))))(t)), []string{fmt.Sprintf("[%q \"y\" \"2\"]", tg)})
		if row := must(kv.Get(ctx, hs.Str(tg)))(t); row != nil {
			t.Fatalf("row deleted by D? still there: %v", row)
		}

		for i := range 5 {
			must(kv.Insert(ctx, hs.Str(fmt.Sprint(tg, i)), hs.Str("v"), hs.Int(int64(i))))(t)
		}
		in := hs.Eq().WithIn(0, hs.Str(tg+"1"), hs.Str(tg+"3")).WithLimit(5)
		equal(t, "delete IN", must(kv.Delete(ctx, in))(t), 2)
		// F skips n <= 2; W keeps the scan on this test's keys.
		filtered := hs.Where(hs.GE, hs.Str(tg+"0")).WithLimit(3).WithFilter(hs.F("n", ">", hs.Int(2)), hs.W("k", "<=", hs.Str(tg+"4")))
		equal(t, "delete filtered", must(kv.Delete(ctx, filtered))(t), 1)
		left := must(kv.Find(ctx, hs.Where(hs.GE, hs.Str(tg+"0")).WithLimit(3).WithFilter(hs.W("k", "<=", hs.Str(tg+"4")))))(t)
		equal(t, "left", col(left, 0), []string{tg + "0", tg + "2"})
	})
}

func TestIncrementAndDecrement(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		counter := open(t, c, s, "counter", "PRIMARY", "id,hits,score")
		next := keys(t)
		k := next()
		key := hs.Eq(hs.Int(k))
		id := fmt.Sprint(k)
		must(counter.Insert(ctx, hs.Int(k), hs.Int(10), hs.Int(5)))(t)
		equal(t, "+", must(counter.Increment(ctx, key, hs.Int(0), hs.Int(1), hs.Int(20)))(t), 1)
		equal(t, "after +", must(counter.Get(ctx, hs.Int(k)))(t).Strings(), []string{id, "11", "25"})
		equal(t, "+?", show(must(counter.IncrementReturning(ctx, key, hs.Int(0), hs.Int(1), hs.Int(1)))(t)), []string{fmt.Sprintf("[%q \"11\" \"25\"]", id)})
		equal(t, "stored", sqlOne(t, s, fmt.Sprintf("SELECT hits, score FROM counter WHERE id = %d", k)), []string{"12", "26"})
		equal(t, "-", must(counter.Decrement(ctx, key, hs.Int(0), hs.Int(2), hs.Int(6)))(t), 1)
		equal(t, "after -", must(counter.Get(ctx, hs.Int(k)))(t).Strings(), []string{id, "10", "20"})
		equal(t, "-?", show(must(counter.DecrementReturning(ctx, key, hs.Int(0), hs.Int(1), hs.Int(1)))(t)), []string{fmt.Sprintf("[%q \"10\" \"20\"]", id)})
		equal(t, "after -?", must(counter.Get(ctx, hs.Int(k)))(t).Strings(), []string{id, "9", "19"})
		// A row where a column would change sign is left alone, not counted.
		equal(t, "- past zero", must(counter.Decrement(ctx, key, hs.Int(0), hs.Int(1), hs.Int(100)))(t), 0)
		equal(t, "unchanged", must(counter.Get(ctx, hs.Int(k)))(t).Strings(), []string{id, "9", "19"})

		// NULL columns are left alone.
		n := next()
		must(counter.Insert(ctx, hs.Int(n), nil, hs.Int(5)))(t)
		equal(t, "+ on NULL", must(counter.Increment(ctx, hs.Eq(hs.Int(n)), hs.Int(0), hs.Int(3), hs.Int(3)))(t), 1)
		equal(t, "NULL kept", must(counter.Get(ctx, hs.Int(n)))(t).String(), fmt.Sprintf("[%q NULL \"8\"]", fmt.Sprint(n)))
	})
}

func TestValuesPerOpenedColumn(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		kv := open(t, c, s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		if _, err := kv.Update(ctx, hs.Eq(hs.Str(tg)), hs.Str("only one")); !errors.Is(err, hs.ErrInvalid) {
			t.Fatalf("update with one value for three columns: %v, want ErrInvalid", err)
		}
		if _, err := kv.Insert(ctx, hs.Str(tg), hs.Str("v"), hs.Int(1), hs.Str("one too many")); !errors.Is(err, hs.ErrInvalid) {
			t.Fatalf("insert of four values for three columns: %v, want ErrInvalid", err)
		}
		if _, err := kv.Insert(ctx); !errors.Is(err, hs.ErrInvalid) {
			t.Fatalf("insert of nothing: %v, want ErrInvalid", err)
		}
		if row := must(kv.Get(ctx, hs.Str(tg)))(t); row != nil {
			t.Fatalf("a refused call wrote: %v", row)
		}
	})
}
