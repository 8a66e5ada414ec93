// Finds on the emp table: every operator, limit and offset, composite keys,
// IN, F and W filters, NULL and empty values; the same calls and the same
// expected rows on hsd (both stores) and the original plugin.

package handlersocket_test

import (
	"fmt"
	"testing"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
)

func TestGetAndMissing(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, false), s, "emp", "PRIMARY", "id,ename|dept,sal,note")
		equal(t, "get 9", must(emp.Get(ctx, hs.Int(9)))(t).String(), `["9" "KING"]`)
		equal(t, "find = 5", show(must(emp.Find(ctx, hs.Eq(hs.Int(5))))(t)), []string{`["5" "MARTIN"]`})
		if row := must(emp.Get(ctx, hs.Int(99)))(t); row != nil {
			t.Fatalf("get 99: %v, want nil", row)
		}
		if rows := must(emp.Find(ctx, hs.Eq(hs.Int(99))))(t); len(rows) != 0 {
			t.Fatalf("find = 99: %v, want none", rows)
		}
	})
}

func TestEveryOperator(t *testing.T) {
	cases := []struct {
		op   hs.Op
		key  int64
		want []string
	}{
		{hs.GT, 5, []string{"6", "7", "8"}},
		{hs.GE, 5, []string{"5", "6", "7"}},
		{hs.LT, 5, []string{"4", "3", "2"}},
		{hs.LE, 5, []string{"5", "4", "3"}},
		{hs.LT, 100, []string{"14", "13", "12"}},
		{hs.GT, 14, []string{}},
		{hs.LT, 1, []string{}},
		{hs.EQ, 3, []string{"3"}},
	}
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, false), s, "emp", "PRIMARY", "id,ename")
		for _, c := range cases {
			rows := must(emp.Find(ctx, hs.Where(c.op, hs.Int(c.key)).WithLimit(3)))(t)
			equal(t, fmt.Sprintf("%s %d", c.op, c.key), col(rows, 0), c.want)
		}
	})
}

func TestLimitAndOffset(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, false), s, "emp", "PRIMARY", "id")
		equal(t, "default limit", col(must(emp.Find(ctx, hs.Where(hs.GE, hs.Int(1))))(t), 0), []string{"1"})
		equal(t, "limit 0 means 1", col(must(emp.Find(ctx, hs.Where(hs.GE, hs.Int(1)).WithLimit(0)))(t), 0), []string{"1"})
		equal(t, "limit 2 offset 2", col(must(emp.Find(ctx, hs.Where(hs.GE, hs.Int(5)).WithLimit(2).WithOffset(2)))(t), 0), []string{"7", "8"})
		all := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14"}
		equal(t, "everything", col(must(emp.Find(ctx, hs.Where(hs.GE, hs.Int(0)).WithLimit(100)))(t), 0), all)
		equal(t, "offset past the end", col(must(emp.Find(ctx, hs.Where(hs.GE, hs.Int(0)).WithLimit(5).WithOffset(20)))(t), 0), []string{})
	})
}

func TestCompositeIndex(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		byDept := open(t, dial(t, s, false), s, "emp", "emp_dept_sal", "ename")
		find := func(q hs.Query) []string { return col(must(byDept.Find(ctx, q))(t), 0) }
		equal(t, "prefix", find(hs.Eq(hs.Int(30)).WithLimit(10)), []string{"JAMES", "WARD", "MARTIN", "TURNER", "ALLEN", "BLAKE"})
		equal(t, "whole key", find(hs.Eq(hs.Int(30), hs.Int(1250)).WithLimit(10)), []string{"WARD", "MARTIN"})
		equal(t, "> prefix", find(hs.Where(hs.GT, hs.Int(20)).WithLimit(2)), []string{"JAMES", "WARD"})
		equal(t, "< whole key", find(hs.Where(hs.LT, hs.Int(20), hs.Int(3000)).WithLimit(3)), []string{"JONES", "ADAMS", "SMITH"})
		equal(t, "<= whole key", find(hs.Where(hs.LE, hs.Int(20), hs.Int(3000)).WithLimit(3)), []string{"FORD", "SCOTT", "JONES"})
		equal(t, "<= prefix", find(hs.Where(hs.LE, hs.Int(20)).WithLimit(2)), []string{"FORD", "SCOTT"})
	})
}

func TestIndexByNameAndPosition(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, false)
		byName := open(t, c, s, "emp", "emp_empno", "ename")
		byPos := open(t, c, s, "emp", "1", "ename")
		equal(t, "by name", must(byName.Get(ctx, hs.Int(7788)))(t).String(), `["SCOTT"]`)
		equal(t, "by position", must(byPos.Get(ctx, hs.Int(7788)))(t).String(), `["SCOTT"]`)
		if byName.ID() == byPos.ID() {
			t.Fatalf("two specs share id %d", byName.ID())
		}
		again := open(t, c, s, "emp", "emp_empno", "ename")
		if again.ID() != byName.ID() {
			t.Fatalf("the same spec opened again got id %d, had %d", again.ID(), byName.ID())
		}
	})
}

func TestIn(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		c := dial(t, s, false)
		emp := open(t, c, s, "emp", "PRIMARY", "ename")
		byDept := open(t, c, s, "emp", "emp_dept_sal", "ename")
		find := func(x *hs.Index, q hs.Query) []string { return col(must(x.Find(ctx, q))(t), 0) }
		// One row per value, in the values' order; 99 finds nothing.
		equal(t, "IN on primary", find(emp, hs.Eq().WithIn(0, hs.Int(3), hs.Int(99), hs.Int(1), hs.Int(7)).WithLimit(10)), []string{"WARD", "SMITH", "CLARK"})
		equal(t, "limit and offset across values", find(emp, hs.Eq().WithIn(0, hs.Int(1), hs.Int(2), hs.Int(3), hs.Int(4)).WithLimit(2).WithOffset(1)), []string{"ALLEN", "WARD"})
		equal(t, "IN with a key given", find(emp, hs.Eq(hs.Int(1)).WithIn(0, hs.Int(14), hs.Int(13)).WithLimit(5)), []string{"MILLER", "FORD"})
		// (30, 1250) holds WARD and MARTIN; an IN seek takes the first only.
		equal(t, "IN on the second key column", find(byDept, hs.Eq(hs.Int(30)).WithIn(1, hs.Int(1250), hs.Int(1600), hs.Int(42)).WithLimit(10)), []string{"WARD", "ALLEN"})
		equal(t, "IN with >=", find(emp, hs.Where(hs.GE).WithIn(0, hs.Int(5), hs.Int(10)).WithLimit(10)), []string{"MARTIN", "TURNER"})
		equal(t, "IN with <", find(emp, hs.Where(hs.LT).WithIn(0, hs.Int(5), hs.Int(10)).WithLimit(10)), []string{"JONES", "KING"})
		// A position beyond the key leaves it unchanged: the same row once per value.
		q := hs.Eq(hs.Int(30)).WithLimit(10)
		q.In = &hs.In{Column: 1, Values: hs.Values(hs.Int(1250), hs.Int(1600))}
		equal(t, "IN beyond the key", find(byDept, q), []string{"JAMES", "JAMES"})
	})
}

func TestFilterOperators(t *testing.T) {
	cases := []struct {
		op    string
		value int64
		want  []string
	}{
		{"=", 3000, []string{"8", "13"}},
		{"!=", 3000, []string{"1", "2", "3", "4", "5", "6", "7", "9", "10", "11", "12", "14"}},
		{">", 3000, []string{"9"}},
		{">=", 3000, []string{"8", "9", "13"}},
		{"<", 1000, []string{"1", "12"}},
		{"<=", 950, []string{"1", "12"}},
	}
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, false), s, "emp", "PRIMARY", "id,ename|dept,sal,note")
		all := hs.Where(hs.GE, hs.Int(0)).WithLimit(100)
		for _, c := range cases {
			rows := must(emp.Find(ctx, all.WithFilter(hs.F("sal", c.op, hs.Int(c.value)))))(t)
			equal(t, "sal "+c.op, col(rows, 0), c.want)
		}
		both := all.WithFilter(hs.F("dept", "=", hs.Int(30)), hs.F("sal", "<", hs.Int(1500)))
		equal(t, "two filters", col(must(emp.Find(ctx, both))(t), 1), []string{"WARD", "MARTIN", "JAMES"})
		// Rows that F skips are not counted by offset and limit.
		dept30 := hs.Where(hs.GE, hs.Int(0)).WithLimit(2).WithOffset(1).WithFilter(hs.F("dept", "=", hs.Int(30)))
		equal(t, "filter before offset", col(must(emp.Find(ctx, dept30))(t), 0), []string{"3", "5"})
	})
}

func TestStopFilter(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, false), s, "emp", "PRIMARY", "id|dept,sal")
		up := hs.Where(hs.GE, hs.Int(1)).WithLimit(100).WithFilter(hs.W("sal", "<", hs.Int(2000)))
		equal(t, "W going up", col(must(emp.Find(ctx, up))(t), 0), []string{"1", "2", "3"})
		down := hs.Where(hs.LE, hs.Int(14)).WithLimit(100).WithFilter(hs.W("dept", "!=", hs.Int(20)))
		equal(t, "W going down", col(must(emp.Find(ctx, down))(t), 0), []string{"14"})
	})
}

func TestFiltersWithNullAndEmpty(t *testing.T) {
	// notes of emp 1..14: NULL equals NULL and sorts below everything; ''
	// is a value below 'boss' and 'sales'.
	notes := []*string{nil, ptr("sales"), ptr("sales"), nil, ptr("sales"), nil, nil, ptr(""), ptr("boss"), ptr("sales"), nil, nil, nil, nil}
	cmp := func(a, b *string) int {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		case b == nil:
			return 1
		case *a < *b:
			return -1
		case *a > *b:
			return 1
		}
		return 0
	}
	holds := map[string]func(int) bool{
		"=": func(c int) bool { return c == 0 }, "!=": func(c int) bool { return c != 0 },
		"<": func(c int) bool { return c < 0 }, "<=": func(c int) bool { return c <= 0 },
		">": func(c int) bool { return c > 0 }, ">=": func(c int) bool { return c >= 0 },
	}
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, false), s, "emp", "PRIMARY", "id|note")
		for _, op := range []string{"=", "!=", "<", "<=", ">", ">="} {
			for _, v := range []*string{nil, ptr(""), ptr("sales"), ptr("z")} {
				var value []byte
				if v != nil {
					value = hs.Str(*v)
				}
				want := []string{}
				for i, note := range notes {
					if holds[op](cmp(note, v)) {
						want = append(want, fmt.Sprint(i+1))
					}
				}
				rows := must(emp.Find(ctx, hs.Where(hs.GE, hs.Int(0)).WithLimit(100).WithFilter(hs.F("note", op, value))))(t)
				equal(t, fmt.Sprintf("note %s %v", op, hs.Row{value}), col(rows, 0), want)
			}
		}
	})
}

func ptr(s string) *string { return &s }

func TestNullAndEmptyComeBackDistinct(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		notes := open(t, dial(t, s, false), s, "emp", "PRIMARY", "note")
		rows := must(notes.GetMany(ctx, hs.Int(1), hs.Int(8), hs.Int(9), hs.Int(99)))(t)
		equal(t, "notes", []string{rows[0].String(), rows[1].String(), rows[2].String()}, []string{`[NULL]`, `[""]`, `["boss"]`})
		if rows[3] != nil || rows[0][0] != nil || rows[1][0] == nil || len(rows[1][0]) != 0 {
			t.Fatalf("NULL must be nil and '' a non-nil empty slice: %#v", rows)
		}
	})
}

func TestNullKeySortsFirstAndKeysAreConverted(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		emp := open(t, dial(t, s, false), s, "emp", "PRIMARY", "id")
		equal(t, "NULL key", col(must(emp.Find(ctx, hs.Where(hs.GE, nil).WithLimit(2)))(t), 0), []string{"1", "2"})
		equal(t, "key 5abc", col(must(emp.Find(ctx, hs.Eq(hs.Str("5abc"))))(t), 0), []string{"5"})
	})
}
