// The wire format without a server: request lines byte for byte, escaping
// both ways, answers parsed, and bad answers from a fake server turned into
// ProtocolError (never a panic, never a connection left out of step).

package handlersocket

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func testIndex(columns, filters []string) *Index {
	return &Index{id: 3, spec: IndexSpec{DB: "db", Table: "t", Columns: columns, FilterColumns: filters}}
}

func TestRequestLines(t *testing.T) {
	x := testIndex([]string{"a", "b"}, []string{"f", "g"})
	cases := []struct {
		r    *request
		want string
	}{
		{&request{kind: kindOpen, idx: x}, "P\t3\tdb\tt\tPRIMARY\ta,b\tf,g\n"},
		{&request{kind: kindOpen, idx: &Index{id: 0, spec: IndexSpec{DB: "d", Table: "t", Index: "k"}}}, "P\t0\td\tt\tk\t\n"},
		{&request{kind: kindAuth, secret: []byte("s\x01")}, "A\t1\ts\x01\x41\n"},
		{&request{idx: x, q: Eq(Int(5))}, "3\t=\t1\t5\t1\t0\n"},
		{&request{idx: x, q: Where(GE, Str("a"), nil).WithLimit(10).WithOffset(2)}, "3\t>=\t2\ta\t\x00\t10\t2\n"},
		{&request{idx: x, q: Eq().WithIn(1, Str("p"), Str("q"))}, "3\t=\t2\tp\tp\t1\t0\t@\t1\t2\tp\tq\n"},
		{&request{idx: x, q: Eq(Str("")).WithFilter(F("g", "!=", nil), W("f", "<", Int(3)))}, "3\t=\t1\t\t1\t0\tF\t!=\t1\t\x00\tW\t<\t0\t3\n"},
		{&request{idx: x, q: Eq(Int(1)), modify: 'U', values: [][]byte{Str("x\ty"), nil}}, "3\t=\t1\t1\t1\t0\tU\tx\x01\x49y\t\x00\n"},
		{&request{idx: x, q: Eq(Int(1)), modify: 'D', returning: true}, "3\t=\t1\t1\t1\t0\tD?\n"},
		{&request{idx: x, q: Eq(Int(1)), modify: '+', values: [][]byte{Int(0), Int(-2)}}, "3\t=\t1\t1\t1\t0\t+\t0\t-2\n"},
		{&request{kind: kindInsert, idx: x, values: [][]byte{{0}, {}}}, "3\t+\t2\t\x01\x40\t\n"},
	}
	for _, c := range cases {
		if err := c.r.check(); err != nil {
			t.Fatalf("%q: %v", c.want, err)
		}
		if got := string(appendRequest(nil, c.r)); got != c.want {
			t.Errorf("got %q\nwant %q", got, c.want)
		}
	}
}

func TestEscapingRoundTrip(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, v := range [][]byte{all, {}, {0}, {1}, []byte("\x01\x01"), []byte("plain")} {
		tok := appendValue(nil, v)
		for _, b := range tok {
			if b == '\t' || b == '\n' || b == 0 {
				t.Fatalf("%q escapes to %q, holding a separator", v, tok)
			}
		}
		if got := unescapeInPlace(tok); !bytes.Equal(got, v) {
			t.Fatalf("%q: round trip gave %q", v, got)
		}
	}
	if got := appendValue(nil, nil); !bytes.Equal(got, []byte{0}) {
		t.Fatalf("NULL is %q", got)
	}
	if got := unescapeInPlace([]byte("ab\x01")); string(got) != "ab" {
		t.Fatalf("a trailing 0x01: %q", got)
	}
}

func TestParseAnswers(t *testing.T) {
	a, err := parseAnswer([]byte("0\t2\t1\t\x00\t\t\x01\x40x"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := a.rows()
	if err != nil || len(rows) != 2 || rows[0].String() != `["1" NULL]` || rows[1].String() != `["" "\x00x"]` {
		t.Fatalf("rows %v, %v", rows, err)
	}
	if rows[1][0] == nil {
		t.Fatal("the empty string came back as NULL")
	}
	a, _ = parseAnswer([]byte("1\t1\t121"))
	if a.code != 1 || a.reason() != "121" {
		t.Fatalf("%+v", a)
	}
	a, _ = parseAnswer([]byte("0\t1"))
	if n, ok, err := a.number(); n != 0 || ok || err != nil {
		t.Fatalf("no number: %d %v %v", n, ok, err)
	}
	for _, bad := range []string{"", "x", "0", "0\tx", "-1\t1", "01234567890\t1", "\t1"} {
		if _, err := parseAnswer([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	a, _ = parseAnswer([]byte("0\t2\t1\t2\t3"))
	if _, err := a.rows(); err == nil {
		t.Error("3 values for 2 columns made rows")
	}
	a, _ = parseAnswer([]byte("0\t0\t1"))
	if _, err := a.rows(); err == nil {
		t.Error("values for 0 columns made rows")
	}
	a, _ = parseAnswer([]byte("0\t1\t99999999999999999999999"))
	if _, _, err := a.number(); err == nil {
		t.Error("a number beyond 64 bits parsed")
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, seed := range []string{"0\t1", "0\t2\ta\t\x00", "1\t1\t121", "0\t1\t\x01", "0\t3\t\x01\x01\t\t"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		a, err := parseAnswer(line)
		if err != nil {
			return
		}
		a.rows()
		a.number()
		a.reason()
	})
}

// fakeServer answers each request line it reads with the next of answers
// (raw bytes, LF included), then closes.
func fakeServer(t *testing.T, answers ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for _, a := range answers {
					if _, err := br.ReadBytes('\n'); err != nil {
						return
					}
					c.Write([]byte(a))
				}
				br.ReadBytes('\n') // wait for the client to go
			}()
		}
	}()
	return ln.Addr().String()
}

func TestBadAnswersAreProtocolErrors(t *testing.T) {
	cases := []struct {
		answers []string
		call    func(ctx context.Context, x *Index) error
	}{
		{[]string{"0\t1\n", "0\t2\ta\n"}, func(ctx context.Context, x *Index) error { _, err := x.Get(ctx, Int(1)); return err }},
		{[]string{"0\t1\n", "what\n"}, func(ctx context.Context, x *Index) error { _, err := x.Find(ctx, Eq(Int(1))); return err }},
		{[]string{"0\t1\n", "0\t1\tmany\n"}, func(ctx context.Context, x *Index) error { _, err := x.Delete(ctx, Eq(Int(1))); return err }},
		{[]string{"0\t1\n", "0\t1\n"}, func(ctx context.Context, x *Index) error { _, err := x.Update(ctx, Eq(Int(1)), Str("v")); return err }},
		{[]string{"0\t1\n", "0\t1\ta\t1\tb\n"}, func(ctx context.Context, x *Index) error { _, err := x.Get(ctx, Int(1)); return err }},
	}
	for _, c := range cases {
		addr := fakeServer(t, c.answers...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := Dial(ctx, addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		x, err := conn.OpenIndex(ctx, IndexSpec{DB: "d", Table: "t", Columns: []string{"v"}})
		if err != nil {
			t.Fatal(err)
		}
		err = c.call(ctx, x)
		var pe *ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("answers %q: %v (%T), want a ProtocolError", c.answers, err, err)
		}
		if conn.nc != nil {
			t.Errorf("answers %q: the connection was kept after a bad answer", c.answers)
		}
		conn.Close()
		cancel()
	}
}

func TestLongAnswerLine(t *testing.T) {
	long := strings.Repeat("x", 3*readBufferSize+17)
	addr := fakeServer(t, "0\t1\n", "0\t1\t"+long+"\n")
	ctx := context.Background()
	conn, err := Dial(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	x, err := conn.OpenIndex(ctx, IndexSpec{DB: "d", Table: "t", Columns: []string{"v"}})
	if err != nil {
		t.Fatal(err)
	}
	row, err := x.Get(ctx, Int(1))
	if err != nil || row.Str(0) != long {
		t.Fatalf("%d bytes, %v", len(row.Str(0)), err)
	}
}
