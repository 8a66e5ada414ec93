// Queries: which rows a find, update, delete, increment or decrement
// reaches (operator, key, limit, offset, IN, filters), and the request
// each call becomes, checked before anything is sent.

package handlersocket

import (
	"math"
	"slices"
)

// Op is a find operator: the direction and start of the scan.
type Op string

// The find operators. EQ reads rows equal to the key; GT and GE go up the
// index from the key, LT and LE down.
const (
	EQ Op = "="
	GT Op = ">"
	GE Op = ">="
	LT Op = "<"
	LE Op = "<="
)

// Query selects the rows of a find or a modify.
type Query struct {
	// Op is the operator, EQ when empty.
	Op Op
	// Key holds values for the first len(Key) columns of the index (at
	// least one); nil is NULL, which sorts first.
	Key [][]byte
	// Limit is how many rows to take at most; 0 is the protocol's default, 1.
	Limit int
	// Offset is how many rows to skip first (after filters).
	Offset int
	// In, when set, seeks once per value, at key column In.Column.
	In *In
	// Filters skip rows (F) or end the scan (W); rows skipped by F are
	// not counted by Offset and Limit.
	Filters []Filter
}

// In is an IN clause: for each value in order, the key with that value at
// position Column is sought once and at most the row it lands on is taken.
// Limit, Offset and Filters apply across all values. Values are never NULL.
type In struct {
	Column int
	Values [][]byte
}

// FilterKind says what a filter does with a row whose condition is false.
type FilterKind byte

const (
	// Skip ('F') leaves the row out and goes on.
	Skip FilterKind = 'F'
	// Stop ('W') ends the scan at the row.
	Stop FilterKind = 'W'
)

// Filter is a condition on one of the index's filter columns, the row's
// value on the left: `Column Op Value`. NULL equals NULL and sorts below
// every other value.
type Filter struct {
	Kind   FilterKind
	Column string // a name from IndexSpec.FilterColumns
	Op     string // = != < <= > >=
	Value  []byte
}

// Where is a query from op and the key: Where(GE, Int(100)).
func Where(op Op, key ...[]byte) Query { return Query{Op: op, Key: key} }

// Eq is a query for rows equal to the key: Eq(Str("a")).
func Eq(key ...[]byte) Query { return Query{Op: EQ, Key: key} }

// WithLimit returns q taking at most limit rows.
func (q Query) WithLimit(limit int) Query { q.Limit = limit; return q }

// WithOffset returns q skipping offset rows first.
func (q Query) WithOffset(offset int) Query { q.Offset = offset; return q }

// WithIn returns q seeking once per value at key column column. When the
// key does not reach that column yet it is extended with the first value
// (a placeholder each value replaces), so Eq().WithIn(0, a, b) works.
func (q Query) WithIn(column int, values ...[]byte) Query {
	if len(values) > 0 && column >= 0 && column < 4096 {
		for len(q.Key) <= column {
			q.Key = append(slices.Clip(q.Key), values[0])
		}
	}
	q.In = &In{Column: column, Values: values}
	return q
}

// WithFilter returns q with more filters.
func (q Query) WithFilter(f ...Filter) Query {
	q.Filters = append(slices.Clip(q.Filters), f...)
	return q
}

// F is a filter that skips the rows where `column op value` is false.
func F(column, op string, value []byte) Filter {
	return Filter{Kind: Skip, Column: column, Op: op, Value: value}
}

// W is a filter that ends the scan at the first row where `column op value`
// is false.
func W(column, op string, value []byte) Filter {
	return Filter{Kind: Stop, Column: column, Op: op, Value: value}
}

func (q *Query) op() Op {
	if q.Op == "" {
		return EQ
	}
	return q.Op
}

type requestKind uint8

const (
	kindFind requestKind = iota // a find, or a find and modify (request.modify)
	kindInsert
	kindOpen   // open_index (P), sent by the connection when a request needs it
	kindEnsure // OpenIndex: settled by the kindOpen the connection sends, or sends nothing
	kindAuth   // A 1 <secret>
)

// request is one request line and, once answered, its result.
type request struct {
	kind      requestKind
	idx       *Index
	q         Query
	filterPos []int    // the position of each filter's column
	modify    byte     // 'U', 'D', '+', '-', or 0 for a plain find
	returning bool     // modify with ?: the rows as they were
	values    [][]byte // insert values, or the values of U, + and -
	secret    []byte
	single    bool // a get: at most one row wanted

	// The result.
	done  bool
	err   error
	rows  []Row
	num   uint64 // rows changed, or the insert's id
	hasID bool
}

// writes reports whether the request changes data (never sent twice).
func (r *request) writes() bool { return r.kind == kindInsert || r.modify != 0 }

// sent reports whether the request is a line on the wire: OpenIndex's
// request is settled by the P the connection sends before the requests
// that need the index, or by the index being open already.
func (r *request) sent() bool { return r.kind != kindEnsure }

const maxCount = math.MaxUint32

// check refuses what the protocol cannot say or would read otherwise
// than meant, before anything is sent.
func (r *request) check() error {
	if r.kind == kindAuth {
		return nil
	}
	if r.idx == nil {
		return argErrorf("no index")
	}
	switch r.kind {
	case kindInsert:
		if len(r.values) == 0 {
			return argErrorf("insert into %s: no values", r.idx.spec.String())
		}
		if len(r.values) > len(r.idx.spec.Columns) {
			return argErrorf("insert into %s: %d values for %d columns", r.idx.spec.String(), len(r.values), len(r.idx.spec.Columns))
		}
		return nil
	case kindFind:
	default:
		return nil
	}
	q := &r.q
	switch q.op() {
	case EQ, GT, GE, LT, LE:
	default:
		return argErrorf("find operator %q is not one of = > >= < <=", string(q.Op))
	}
	if len(q.Key) == 0 {
		return argErrorf("%s: a query needs at least one key value", describe(r))
	}
	if q.Limit < 0 || q.Offset < 0 || q.Limit > maxCount || q.Offset > maxCount {
		return argErrorf("%s: limit %d and offset %d must be 0 to %d", describe(r), q.Limit, q.Offset, uint32(maxCount))
	}
	if in := q.In; in != nil {
		if len(in.Values) == 0 {
			return argErrorf("%s: IN needs at least one value", describe(r))
		}
		if in.Column < 0 || in.Column > math.MaxInt32 {
			return argErrorf("%s: IN column %d is out of range", describe(r), in.Column)
		}
		for _, v := range in.Values {
			if v == nil {
				return argErrorf("%s: an IN value cannot be NULL", describe(r))
			}
		}
	}
	r.filterPos = make([]int, len(q.Filters))
	for i, f := range q.Filters {
		if f.Kind != Skip && f.Kind != Stop {
			return argErrorf("%s: filter kind %q is not F (Skip) or W (Stop)", describe(r), rune(f.Kind))
		}
		switch f.Op {
		case "=", "!=", "<", "<=", ">", ">=":
		default:
			return argErrorf("%s: filter operator %q is not one of = != < <= > >=", describe(r), f.Op)
		}
		pos := slices.Index(r.idx.spec.FilterColumns, f.Column)
		if pos < 0 {
			return argErrorf("%s: %q is not one of the filter columns %q", describe(r), f.Column, r.idx.spec.FilterColumns)
		}
		r.filterPos[i] = pos
	}
	if r.modify == 'U' || r.modify == '+' || r.modify == '-' {
		if len(r.values) != len(r.idx.spec.Columns) {
			return argErrorf("%s: %d values for %d columns (one per opened column)", describe(r), len(r.values), len(r.idx.spec.Columns))
		}
	}
	return nil
}

// settle turns the answer into the request's result.
func (r *request) settle(a answer) error {
	r.done = true
	if a.code != 0 {
		r.err = &ServerError{Code: a.code, Reason: a.reason(), Request: describe(r)}
		return nil
	}
	var err error
	switch {
	case r.kind == kindAuth || r.kind == kindOpen || r.kind == kindEnsure:
	case r.kind == kindInsert:
		r.num, r.hasID, err = a.number()
	case r.modify != 0 && !r.returning:
		var ok bool
		r.num, ok, err = a.number()
		if err == nil && !ok {
			err = protocolErrorf("%s: no count in the answer", describe(r))
		}
	default:
		r.rows, err = a.rows()
		if err == nil && r.single && len(r.rows) > 1 {
			err = protocolErrorf("%s: %d rows for a limit of 1", describe(r), len(r.rows))
		}
	}
	return err
}

// fail gives the request an error instead of an answer.
func (r *request) fail(err error) {
	r.done = true
	r.err = err
}
