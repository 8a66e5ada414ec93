// Reconnecting: reads sent once more on a new connection, indexes re-opened
// under their ids, writes never sent twice. The client talks to the server
// through a relay (testserver.Relay) that breaks connections the way a
// restart or a network fault does.

package handlersocket_test

import (
	"errors"
	"fmt"
	"net"
	"testing"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
)

func TestReadIsRetriedOnANewConnection(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		equal(t, "before", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
		relay.Cut()
		equal(t, "after the cut", must(emp.Get(ctx, hs.Int(9)))(t).Strings(), []string{"KING"})
		equal(t, "connections", []int{relay.Accepted(), c.Connects()}, []int{2, 2})
	})
}

func TestEveryIndexIsReopenedUnderItsID(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		names := open(t, c, s, "emp", "PRIMARY", "ename")
		depts := open(t, c, s, "emp", "emp_dept_sal", "ename")
		salaries := open(t, c, s, "emp", "emp_empno", "sal")
		equal(t, "ids", []int{names.ID(), depts.ID(), salaries.ID()}, []int{0, 1, 2})
		relay.Cut()
		// Used in another order than opened: each id must name the same index.
		equal(t, "salaries", must(salaries.Get(ctx, hs.Int(7839)))(t).Strings(), []string{"5000"})
		equal(t, "depts", col(must(depts.Find(ctx, hs.Eq(hs.Int(10)).WithLimit(3)))(t), 0), []string{"MILLER", "CLARK", "KING"})
		equal(t, "names", must(names.Get(ctx, hs.Int(1)))(t).Strings(), []string{"SMITH"})
		equal(t, "connections", relay.Accepted(), 2)
	})
}

func TestPipelineOfReadsIsRetriedWhole(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		emp := open(t, c, s, "emp", "PRIMARY", "id")
		must(emp.Get(ctx, hs.Int(1)))(t)
		relay.Cut()
		var keys [][]byte
		var want []string
		for k := 1; k <= 14; k++ {
			keys = append(keys, hs.Int(int64(k)))
			want = append(want, fmt.Sprintf("[%q]", fmt.Sprint(k)))
		}
		equal(t, "rows", show(must(emp.GetMany(ctx, keys...))(t)), want)
	})
}

func TestReadFailsAfterOneRetry(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		must(emp.Get(ctx, hs.Int(1)))(t)
		relay.Cut()
		relay.Refuse(true)
		_, err := emp.Get(ctx, hs.Int(1))
		var ne *hs.NetworkError
		var wu *hs.WriteUnconfirmedError
		if !errors.As(err, &ne) || errors.As(err, &wu) {
			t.Fatalf("get with the server gone: %v (%T), want a NetworkError", err, err)
		}
		equal(t, "connections: the first and exactly one retry", relay.Accepted(), 2)
		relay.Refuse(false)
		equal(t, "and it comes back by itself", must(emp.Get(ctx, hs.Int(1)))(t).Strings(), []string{"SMITH"})
	})
}

func TestWriteAfterTheServerClosedAnIdleConnection(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		counter := open(t, c, s, "counter", "PRIMARY", "id,hits,score")
		hits := open(t, c, s, "counter", "PRIMARY", "hits")
		key := keys(t)()
		must(counter.Insert(ctx, hs.Int(key), hs.Int(0), hs.Int(0)))(t)
		relay.Cut()
		// The dead connection is noticed before the write goes out: the
		// write is sent once, on a new connection, and succeeds.
		equal(t, "increment", must(hits.Increment(ctx, hs.Eq(hs.Int(key)), hs.Int(1)))(t), 1)
		equal(t, "stored", sqlOne(t, s, fmt.Sprintf("SELECT hits FROM counter WHERE id = %d", key)), []string{"1"})
		equal(t, "connections", relay.Accepted(), 2)
	})
}

func TestWriteWhoseAnswerIsLostIsNeverResent(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		hits := open(t, c, s, "counter", "PRIMARY", "hits")
		counter := open(t, c, s, "counter", "PRIMARY", "id,hits,score")
		key := keys(t)()
		must(counter.Insert(ctx, hs.Int(key), hs.Int(0), hs.Int(0)))(t)
		relay.DropAnswers(true)
		_, err := hits.Increment(ctx, hs.Eq(hs.Int(key)), hs.Int(1))
		var wu *hs.WriteUnconfirmedError
		var ne *hs.NetworkError
		if !errors.As(err, &wu) || errors.As(err, &ne) {
			t.Fatalf("increment whose answer was lost: %v (%T), want WriteUnconfirmedError", err, err)
		}
		equal(t, "no second connection: nothing sent again", relay.Accepted(), 1)
		relay.DropAnswers(false)
		// Applied exactly once; the next call reconnects.
		equal(t, "stored", sqlOne(t, s, fmt.Sprintf("SELECT hits FROM counter WHERE id = %d", key)), []string{"1"})
		equal(t, "read back", must(hits.Get(ctx, hs.Int(key)))(t).Strings(), []string{"1"})
		equal(t, "connections", relay.Accepted(), 2)
	})
}

func TestPipelineHoldingAWriteIsNeverResent(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		counter := open(t, c, s, "counter", "PRIMARY", "id,hits,score")
		hits := open(t, c, s, "counter", "PRIMARY", "hits")
		key := keys(t)()
		must(counter.Insert(ctx, hs.Int(key), hs.Int(0), hs.Int(0)))(t)
		relay.DropAnswers(true)
		p := c.Pipeline()
		before := p.Get(hits, hs.Int(key))
		p.Increment(hits, hs.Eq(hs.Int(key)), hs.Int(5))
		p.Get(hits, hs.Int(key))
		err := p.Exec(ctx)
		var wu *hs.WriteUnconfirmedError
		if !errors.As(err, &wu) || !errors.As(before.Err(), &wu) {
			t.Fatalf("Exec: %v, first result %v; want WriteUnconfirmedError for all", err, before.Err())
		}
		relay.DropAnswers(false)
		equal(t, "applied once", must(hits.Get(ctx, hs.Int(key)))(t).Strings(), []string{"5"})
	})
}

func TestCannotConnect(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		probe, err := net.Listen("tcp", "127.0.0.1:0") // a free port nothing listens on
		check(t, err)
		addr := probe.Addr().String()
		probe.Close()
		_, err = hs.Dial(ctx, addr, nil)
		var ne *hs.NetworkError
		if !errors.As(err, &ne) {
			t.Fatalf("Dial of a closed port: %v (%T), want a NetworkError", err, err)
		}
		pool := newPool(t, addr, 1, nil)
		_, err = pool.OpenIndex(ctx, hs.IndexSpec{DB: s.db, Table: "emp", Columns: []string{"ename"}})
		var wu *hs.WriteUnconfirmedError
		if !errors.As(err, &ne) || errors.As(err, &wu) {
			t.Fatalf("OpenIndex on a pool of a closed port: %v (%T), want a NetworkError", err, err)
		}
	})
}
