// Pipelines: many requests written at once, answers read back in order,
// errors in the middle kept in their places.

package handlersocket_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
	"github.com/hsd-project/hsd/clients/go/internal/testserver"
)

func TestGetManyKeepsOrder(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, false), s, "emp", "PRIMARY", "id")
		var keys [][]byte
		var want []string
		for k := range 600 {
			keys = append(keys, hs.Int(int64(k%20)))
			if n := k % 20; n >= 1 && n <= 14 {
				want = append(want, fmt.Sprintf("[%q]", fmt.Sprint(n)))
			} else {
				want = append(want, "[]") // no row: a nil Row
			}
		}
		rows := must(emp.GetMany(ctx, keys...))(t)
		equal(t, "rows", show(rows), want)
		if rows[0] != nil {
			t.Fatalf("key 0: %v, want nil", rows[0])
		}
		equal(t, "no keys", len(must(emp.GetMany(ctx))(t)), 0)
	})
}

func TestRequestsGoOutBeforeAnyAnswerIsRead(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		// No answer comes back until all 14 lines are in: a client that
		// waited for each answer before sending on would wait for ever.
		relay.Hold()
		go func() {
			for relay.RequestLines() < 15 {
				time.Sleep(time.Millisecond)
			}
			relay.Release()
		}()
		p := c.Pipeline()
		var results []*hs.RowResult
		for k := range 14 {
			results = append(results, p.Get(emp, hs.Int(int64(k+1))))
		}
		check(t, p.Exec(ctx))
		equal(t, "row 9", must(results[8].Row())(t).Strings(), []string{"KING"})
		equal(t, "lines and connections", []int{relay.RequestLines(), relay.Accepted()}, []int{15, 1})
	})
}

func TestMixedPipelineRunsInOrder(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		kv := open(t, c, s, "kv", "PRIMARY", "k,v,n")
		counts := open(t, c, s, "kv", "PRIMARY", "n")
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		tg := tag(t)
		key := hs.Eq(hs.Str(tg))
		p := c.Pipeline()
		ins := p.Insert(kv, hs.Str(tg), hs.Str("one"), hs.Int(1))
		get1 := p.Get(kv, hs.Str(tg))
		upd := p.UpdateReturning(kv, key, hs.Str(tg), hs.Str("two"), hs.Int(2))
		find := p.Find(emp, hs.Where(hs.LE, hs.Int(13)).WithLimit(2))
		inc := p.Increment(counts, key, hs.Int(40))
		get2 := p.Get(kv, hs.Str(tg))
		del := p.Delete(kv, key)
		get3 := p.Get(kv, hs.Str(tg))
		if err := ins.Err(); !errors.Is(err, hs.ErrNotExecuted) {
			t.Fatalf("before Exec: %v", err)
		}
		equal(t, "queued", p.Len(), 8)
		check(t, p.Exec(ctx))
		equal(t, "insert id", must(ins.ID())(t), uint64(0))
		equal(t, "get", must(get1.Row())(t).Strings(), []string{tg, "one", "1"})
		equal(t, "U?", show(must(upd.Rows())(t)), []string{fmt.Sprintf("[%q \"one\" \"1\"]", tg)})
		equal(t, "find", col(must(find.Rows())(t), 0), []string{"FORD", "JAMES"})
		equal(t, "+", must(inc.Count())(t), 1)
		equal(t, "get", must(get2.Row())(t).Strings(), []string{tg, "two", "42"})
		equal(t, "delete", must(del.Count())(t), 1)
		if row := must(get3.Row())(t); row != nil {
			t.Fatalf("after delete: %v", row)
		}
		equal(t, "emptied", p.Len(), 0)
		check(t, p.Exec(ctx))
	})
}

func TestPipelineErrorInTheMiddle(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		kv := open(t, c, s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		must(kv.Insert(ctx, hs.Str(tg), hs.Str("x"), hs.Int(1)))(t)
		p := c.Pipeline()
		first := p.Get(kv, hs.Str(tg))
		dup := p.Insert(kv, hs.Str(tg), hs.Str("again"), hs.Int(2))
		bad := p.Find(kv, hs.Eq(hs.Str(tg), hs.Str("too"), hs.Str("long")))
		last := p.Get(kv, hs.Str(tg))
		err := p.Exec(ctx)
		if !errors.Is(err, hs.ErrDuplicateKey) {
			t.Fatalf("Exec: %v, want the first error, a duplicate key", err)
		}
		equal(t, "first", must(first.Row())(t).Strings(), []string{tg, "x", "1"})
		equal(t, "last", must(last.Row())(t).Strings(), []string{tg, "x", "1"})
		if !errors.Is(dup.Err(), hs.ErrDuplicateKey) {
			t.Fatalf("insert: %v", dup.Err())
		}
		equal(t, "kpnum", serverError(t, bad.Err()).Reason, "kpnum")
		// Every answer was read: the connection is still in step.
		equal(t, "after", must(kv.Get(ctx, hs.Str(tg)))(t).Strings(), []string{tg, "x", "1"})
		equal(t, "connects", c.Connects(), 1)
	})
}

func TestPipelineRefusedBeforeSending(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, true)
		other := dial(t, s, true)
		kv := open(t, c, s, "kv", "PRIMARY", "k,v,n")
		theirs := open(t, other, s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		p := c.Pipeline()
		ins := p.Insert(kv, hs.Str(tg), hs.Str("x"), hs.Int(1))
		p.Update(kv, hs.Eq(hs.Str(tg)), hs.Str("one value"))
		if err := p.Exec(ctx); !errors.Is(err, hs.ErrInvalid) || !errors.Is(ins.Err(), hs.ErrInvalid) {
			t.Fatalf("Exec: %v / %v, want ErrInvalid for all", err, ins.Err())
		}
		p.Get(theirs, hs.Str(tg))
		if err := p.Exec(ctx); !errors.Is(err, hs.ErrInvalid) {
			t.Fatalf("an index of another connection: %v, want ErrInvalid", err)
		}
		if row := must(kv.Get(ctx, hs.Str(tg)))(t); row != nil {
			t.Fatalf("a refused pipeline wrote: %v", row)
		}
	})
}

// newRelay is a relay to addr, closed after the test.
func newRelay(t *testing.T, addr string) *testserver.Relay {
	t.Helper()
	r, err := testserver.NewRelay(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestBigPipeline(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, false), s, "emp", "PRIMARY", "id,ename,empno,dept,sal,note")
		// About 700 kB of requests and 2 MB of answers: written while the
		// first answers are read.
		keys := make([][]byte, 50_000)
		for i := range keys {
			keys[i] = hs.Int(int64(i%15 + 1))
		}
		rows := must(emp.GetMany(ctx, keys...))(t)
		for i, row := range rows {
			if id := i%15 + 1; (id == 15) != (row == nil) || (row != nil && row.Str(0) != fmt.Sprint(id)) {
				t.Fatalf("get %d answered %v", id, row)
			}
		}
	})
}
