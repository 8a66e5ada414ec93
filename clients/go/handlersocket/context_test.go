// Contexts and timeouts: every call honours its context's deadline and
// cancellation, while waiting for a busy connection and mid-flight; a call
// cut off mid-flight never leaves its answer to be read by the next call.

package handlersocket_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
)

// quickly fails the test when fn takes more than a few seconds: a call
// that ignored its context would hang on a held answer.
func quickly(t *testing.T, what string, fn func()) {
	t.Helper()
	start := time.Now()
	fn()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("%s took %v", what, d)
	}
}

func TestDeadlineMidFlightClosesTheConnection(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		relay.Hold()
		short, cancel := context.WithTimeout(ctxFor(t), 100*time.Millisecond)
		defer cancel()
		quickly(t, "a get with a held answer", func() {
			_, err := emp.Get(short, hs.Int(1))
			var ne *hs.NetworkError
			if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) {
				t.Fatalf("get past its deadline: %v (%T), want DeadlineExceeded in a NetworkError", err, err)
			}
		})
		relay.Release() // SMITH's answer now arrives, on a connection no one reads
		// A reused connection would answer SMITH here.
		equal(t, "next get", must(emp.Get(ctxFor(t), hs.Int(9)))(t).Strings(), []string{"KING"})
		equal(t, "connections", []int{relay.Accepted(), c.Connects()}, []int{2, 2})
	})
}

func TestCancelMidFlight(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		relay.Hold()
		ctx, cancel := context.WithCancel(ctxFor(t))
		go func() {
			for relay.RequestLines() < 2 { // the P and the find
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		quickly(t, "a cancelled get", func() {
			if _, err := emp.Find(ctx, hs.Where(hs.GE, hs.Int(1)).WithLimit(3)); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled find: %v, want Canceled", err)
			}
		})
		relay.Release()
		equal(t, "next get", must(emp.Get(ctxFor(t), hs.Int(7)))(t).Strings(), []string{"CLARK"})
		equal(t, "connections", relay.Accepted(), 2)
	})
}

func TestCancelledWriteIsUnconfirmed(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		hits := open(t, c, s, "counter", "PRIMARY", "hits")
		counter := open(t, c, s, "counter", "PRIMARY", "id,hits,score")
		key := keys(t)()
		must(counter.Insert(ctxFor(t), hs.Int(key), hs.Int(0), hs.Int(0)))(t)
		relay.Hold()
		short, cancel := context.WithTimeout(ctxFor(t), 100*time.Millisecond)
		defer cancel()
		quickly(t, "a write with a held answer", func() {
			_, err := hits.Increment(short, hs.Eq(hs.Int(key)), hs.Int(1))
			var wu *hs.WriteUnconfirmedError
			if !errors.As(err, &wu) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("increment past its deadline: %v (%T), want WriteUnconfirmedError wrapping DeadlineExceeded", err, err)
			}
		})
		relay.Release()
		// The write reached the server: applied once, never sent again.
		equal(t, "read back", must(hits.Get(ctxFor(t), hs.Int(key)))(t).Strings(), []string{"1"})
		equal(t, "stored", sqlOne(t, s, fmt.Sprintf("SELECT hits FROM counter WHERE id = %d", key)), []string{"1"})
	})
}

func TestWaitForABusyConnectionHonoursTheContext(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		relay.Hold()
		busy := make(chan error, 1)
		go func() {
			row, err := emp.Get(ctxFor(t), hs.Int(2))
			if err == nil && row.Str(0) != "ALLEN" {
				err = fmt.Errorf("got %v", row)
			}
			busy <- err
		}()
		for relay.RequestLines() < 2 {
			time.Sleep(time.Millisecond)
		}
		short, cancel := context.WithTimeout(ctxFor(t), 50*time.Millisecond)
		defer cancel()
		quickly(t, "waiting for the connection", func() {
			if _, err := emp.Get(short, hs.Int(3)); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("get while the connection is busy: %v, want DeadlineExceeded", err)
			}
		})
		equal(t, "the waiting get sent nothing", relay.RequestLines(), 2)
		relay.Release()
		check(t, <-busy)
		equal(t, "connections", relay.Accepted(), 1)
	})
}

func TestCancelledContextSendsNothing(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		done, cancel := context.WithCancel(ctxFor(t))
		cancel()
		if _, err := emp.Get(done, hs.Int(1)); !errors.Is(err, context.Canceled) {
			t.Fatalf("get with a cancelled context: %v", err)
		}
		if _, err := emp.Insert(done, hs.Str("x")); !errors.Is(err, context.Canceled) {
			t.Fatalf("insert with a cancelled context: %v", err)
		}
		if _, err := hs.Dial(done, s.writeAddr, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Dial with a cancelled context: %v", err)
		}
		equal(t, "lines", relay.RequestLines(), 1)
		equal(t, "get", must(emp.Get(ctxFor(t), hs.Int(1)))(t).Strings(), []string{"SMITH"})
	})
}

func TestReadTimeoutOption(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), &hs.Options{ReadTimeout: 100 * time.Millisecond})
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		relay.Hold()
		quickly(t, "a get past ReadTimeout", func() {
			_, err := emp.Get(ctxFor(t), hs.Int(1))
			var ne *hs.NetworkError
			if !errors.As(err, &ne) || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("get past ReadTimeout: %v (%T), want a NetworkError wrapping os.ErrDeadlineExceeded", err, err)
			}
		})
		equal(t, "a read is tried twice", relay.Accepted(), 2)
		relay.Release()
		equal(t, "after", must(emp.Get(ctxFor(t), hs.Int(9)))(t).Strings(), []string{"KING"})
	})
}

func TestCloseCutsACallOff(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		relay := newRelay(t, s.writeAddr)
		c := dialAddr(t, relay.Addr(), nil)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		relay.Hold()
		go func() {
			for relay.RequestLines() < 2 {
				time.Sleep(time.Millisecond)
			}
			c.Close()
		}()
		quickly(t, "a get on a closed connection", func() {
			if _, err := emp.Get(ctxFor(t), hs.Int(1)); !errors.Is(err, hs.ErrClosed) {
				t.Fatalf("get cut off by Close: %v", err)
			}
		})
		if _, err := emp.Get(ctxFor(t), hs.Int(1)); !errors.Is(err, hs.ErrClosed) {
			t.Fatalf("get after Close: %v", err)
		}
		relay.Release()
	})
}
