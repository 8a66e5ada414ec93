// Indexes: IndexSpec names what an open_index (P) opens, the registry gives
// each spec its id for good, and Index is the handle whose methods are the
// finds and writes on one opened index, on a Conn or on a Pool.

package handlersocket

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// IndexSpec names an index to open and the columns to read and write.
type IndexSpec struct {
	DB    string
	Table string
	// Index is the index's name (PRIMARY when empty), or its position in
	// the table's index list as a decimal number ("0" is PRIMARY).
	Index string
	// Columns are what finds return and writes set, in this order.
	Columns []string
	// FilterColumns are what filters may name.
	FilterColumns []string
}

func (s *IndexSpec) indexName() string {
	if s.Index == "" {
		return "PRIMARY"
	}
	return s.Index
}

// String is db.table.index(columns).
func (s *IndexSpec) String() string {
	return s.DB + "." + s.Table + "." + s.indexName() + "(" + strings.Join(s.Columns, ",") + ")"
}

// key is the spec as a map key: the same spec always gets the same id.
func (s *IndexSpec) key() string {
	return strings.Join([]string{s.DB, s.Table, s.indexName(), strings.Join(s.Columns, ","), strings.Join(s.FilterColumns, ",")}, "\x00")
}

func (s *IndexSpec) check() error {
	if s.DB == "" || s.Table == "" {
		return argErrorf("open_index: database and table must not be empty")
	}
	for _, n := range []struct{ what, name string }{{"database", s.DB}, {"table", s.Table}, {"index", s.Index}} {
		if err := checkName(n.what, n.name, false); err != nil {
			return err
		}
	}
	for _, c := range s.Columns {
		if err := checkName("column", c, true); err != nil {
			return err
		}
	}
	for _, c := range s.FilterColumns {
		if err := checkName("filter column", c, true); err != nil {
			return err
		}
	}
	return nil
}

// registry gives every spec opened through one Conn, or through all the
// connections of one Pool, an id of its own: the id it is opened under on
// every connection, after every reconnect.
type registry struct {
	mu    sync.Mutex
	ids   map[string]int
	specs []*Index
}

func newRegistry() *registry { return &registry{ids: map[string]int{}} }

// index is the handle of spec, with the id it has or a new one.
func (g *registry) index(spec IndexSpec, r runner) *Index {
	spec.Columns = slices.Clone(spec.Columns)
	spec.FilterColumns = slices.Clone(spec.FilterColumns)
	k := spec.key()
	g.mu.Lock()
	defer g.mu.Unlock()
	id, ok := g.ids[k]
	if !ok {
		id = len(g.specs)
		g.ids[k] = id
		g.specs = append(g.specs, &Index{id: id, spec: spec, reg: g})
	}
	idx := *g.specs[id]
	idx.r = r
	return &idx
}

// runner runs requests: a Conn on its socket, a Pool on a borrowed Conn.
type runner interface {
	roundTrip(ctx context.Context, reqs []*request) error
	registry() *registry
}

// Index is an opened index, on a Conn or on a Pool. Its methods may be
// called from many goroutines. Keys and values are []byte, nil being NULL.
type Index struct {
	r    runner
	reg  *registry
	id   int
	spec IndexSpec
}

// ID is the index id this index is opened under on every connection.
func (x *Index) ID() int { return x.id }

// Spec is what was opened.
func (x *Index) Spec() IndexSpec {
	s := x.spec
	s.Columns = slices.Clone(s.Columns)
	s.FilterColumns = slices.Clone(s.FilterColumns)
	return s
}

// run checks one request, runs it and returns its error.
func (x *Index) run(ctx context.Context, r *request) error {
	if err := r.check(); err != nil {
		return err
	}
	if err := x.r.roundTrip(ctx, []*request{r}); err != nil {
		return err
	}
	return r.err
}

// Get is the row whose key equals key, or nil when there is none.
func (x *Index) Get(ctx context.Context, key ...[]byte) (Row, error) {
	r := &request{idx: x, q: Query{Op: EQ, Key: key, Limit: 1}, single: true}
	if err := x.run(ctx, r); err != nil {
		return nil, err
	}
	if len(r.rows) == 0 {
		return nil, nil
	}
	return r.rows[0], nil
}

// GetMany gets one row per key (of a one-column key) in one round trip:
// the requests are written at once and the answers read in order. A key
// with no row has a nil Row.
func (x *Index) GetMany(ctx context.Context, keys ...[]byte) ([]Row, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	reqs := make([]request, len(keys))
	ptrs := make([]*request, len(keys))
	for i := range reqs {
		reqs[i] = request{idx: x, q: Query{Op: EQ, Key: keys[i : i+1 : i+1], Limit: 1}, single: true}
		ptrs[i] = &reqs[i]
	}
	if err := x.r.roundTrip(ctx, ptrs); err != nil {
		return nil, err
	}
	out := make([]Row, len(keys))
	for i := range reqs {
		if reqs[i].err != nil {
			return nil, reqs[i].err
		}
		if len(reqs[i].rows) > 0 {
			out[i] = reqs[i].rows[0]
		}
	}
	return out, nil
}

// Find is the rows q selects.
func (x *Index) Find(ctx context.Context, q Query) ([]Row, error) {
	r := &request{idx: x, q: q}
	if err := x.run(ctx, r); err != nil {
		return nil, err
	}
	return r.rows, nil
}

// Insert adds a row, values filling the first opened columns in order, and
// returns its auto-increment id: 0 when the table has none, or when the
// id was given in values.
func (x *Index) Insert(ctx context.Context, values ...[]byte) (uint64, error) {
	r := &request{kind: kindInsert, idx: x, values: values}
	if err := x.run(ctx, r); err != nil {
		return 0, err
	}
	return r.num, nil
}

func (x *Index) modify(ctx context.Context, op byte, q Query, values [][]byte, returning bool) (*request, error) {
	r := &request{idx: x, q: q, modify: op, values: values, returning: returning}
	return r, x.run(ctx, r)
}

func (x *Index) count(ctx context.Context, op byte, q Query, values [][]byte) (int, error) {
	r, err := x.modify(ctx, op, q, values, false)
	if err != nil {
		return 0, err
	}
	return int(min(r.num, uint64(maxCount))), nil
}

func (x *Index) before(ctx context.Context, op byte, q Query, values [][]byte) ([]Row, error) {
	r, err := x.modify(ctx, op, q, values, true)
	if err != nil {
		return nil, err
	}
	return r.rows, nil
}

// Update sets the opened columns of the rows q selects to values (one per
// opened column) and returns how many rows it took.
func (x *Index) Update(ctx context.Context, q Query, values ...[]byte) (int, error) {
	return x.count(ctx, 'U', q, values)
}

// UpdateReturning is Update answering the rows as they were before.
func (x *Index) UpdateReturning(ctx context.Context, q Query, values ...[]byte) ([]Row, error) {
	return x.before(ctx, 'U', q, values)
}

// Delete deletes the rows q selects and returns how many.
func (x *Index) Delete(ctx context.Context, q Query) (int, error) {
	return x.count(ctx, 'D', q, nil)
}

// DeleteReturning is Delete answering the rows deleted.
func (x *Index) DeleteReturning(ctx context.Context, q Query) ([]Row, error) {
	return x.before(ctx, 'D', q, nil)
}

// Increment adds to each opened column of the rows q selects the integer
// given for it (NULL columns are left alone) and returns how many rows.
func (x *Index) Increment(ctx context.Context, q Query, deltas ...[]byte) (int, error) {
	return x.count(ctx, '+', q, deltas)
}

// IncrementReturning is Increment answering the rows as they were before.
func (x *Index) IncrementReturning(ctx context.Context, q Query, deltas ...[]byte) ([]Row, error) {
	return x.before(ctx, '+', q, deltas)
}

// Decrement subtracts from each opened column the integer given for it. A
// row where a column would change sign is left alone and not counted, as
// the original server does.
func (x *Index) Decrement(ctx context.Context, q Query, deltas ...[]byte) (int, error) {
	return x.count(ctx, '-', q, deltas)
}

// DecrementReturning is Decrement answering the rows as they were before.
func (x *Index) DecrementReturning(ctx context.Context, q Query, deltas ...[]byte) ([]Row, error) {
	return x.before(ctx, '-', q, deltas)
}

// openIndex opens spec through r: the P goes out unless the connection
// already has the index open.
func openIndex(ctx context.Context, r runner, spec IndexSpec) (*Index, error) {
	if err := spec.check(); err != nil {
		return nil, err
	}
	idx := r.registry().index(spec, r)
	req := &request{kind: kindEnsure, idx: idx}
	if err := r.roundTrip(ctx, []*request{req}); err != nil {
		return nil, err
	}
	if req.err != nil {
		return nil, req.err
	}
	return idx, nil
}
