// Pipelines: many requests queued, written at once by Exec, their answers
// read back in order, in one round trip. Each queued call returns a result
// to read after Exec.

package handlersocket

import "context"

// Pipeline queues requests on a Conn or a Pool (which lends one connection
// for the whole pipeline). A Pipeline is for one goroutine; after Exec it
// is empty and can queue again.
type Pipeline struct {
	r    runner
	reqs []*request
}

// Len is the number of queued requests.
func (p *Pipeline) Len() int { return len(p.reqs) }

func (p *Pipeline) add(r *request) *request {
	p.reqs = append(p.reqs, r)
	return r
}

// Get queues a get: RowResult.Row is the row, or nil.
func (p *Pipeline) Get(x *Index, key ...[]byte) *RowResult {
	return &RowResult{p.add(&request{idx: x, q: Query{Op: EQ, Key: key, Limit: 1}, single: true})}
}

// Find queues a find.
func (p *Pipeline) Find(x *Index, q Query) *RowsResult {
	return &RowsResult{p.add(&request{idx: x, q: q})}
}

// Insert queues an insert: InsertResult.ID is the auto-increment id.
func (p *Pipeline) Insert(x *Index, values ...[]byte) *InsertResult {
	return &InsertResult{p.add(&request{kind: kindInsert, idx: x, values: values})}
}

// Update queues an update (see Index.Update).
func (p *Pipeline) Update(x *Index, q Query, values ...[]byte) *CountResult {
	return &CountResult{p.add(&request{idx: x, q: q, modify: 'U', values: values})}
}

// UpdateReturning queues an update answering the rows as they were.
func (p *Pipeline) UpdateReturning(x *Index, q Query, values ...[]byte) *RowsResult {
	return &RowsResult{p.add(&request{idx: x, q: q, modify: 'U', values: values, returning: true})}
}

// Delete queues a delete.
func (p *Pipeline) Delete(x *Index, q Query) *CountResult {
	return &CountResult{p.add(&request{idx: x, q: q, modify: 'D'})}
}

// DeleteReturning queues a delete answering the rows deleted.
func (p *Pipeline) DeleteReturning(x *Index, q Query) *RowsResult {
	return &RowsResult{p.add(&request{idx: x, q: q, modify: 'D', returning: true})}
}

// Increment queues an increment (see Index.Increment).
func (p *Pipeline) Increment(x *Index, q Query, deltas ...[]byte) *CountResult {
	return &CountResult{p.add(&request{idx: x, q: q, modify: '+', values: deltas})}
}

// IncrementReturning queues an increment answering the rows as they were.
func (p *Pipeline) IncrementReturning(x *Index, q Query, deltas ...[]byte) *RowsResult {
	return &RowsResult{p.add(&request{idx: x, q: q, modify: '+', values: deltas, returning: true})}
}

// Decrement queues a decrement (see Index.Decrement).
func (p *Pipeline) Decrement(x *Index, q Query, deltas ...[]byte) *CountResult {
	return &CountResult{p.add(&request{idx: x, q: q, modify: '-', values: deltas})}
}

// DecrementReturning queues a decrement answering the rows as they were.
func (p *Pipeline) DecrementReturning(x *Index, q Query, deltas ...[]byte) *RowsResult {
	return &RowsResult{p.add(&request{idx: x, q: q, modify: '-', values: deltas, returning: true})}
}

// Exec sends every queued request at once and reads every answer, then
// returns the first error among them (each result keeps its own; the
// connection stays usable after error answers). When a request is refused
// before sending (ErrInvalid, an index of another connection), nothing is
// sent. A pipeline that holds any write is never sent twice; one of reads
// only is sent once more on a new connection when the first fails on the
// network.
func (p *Pipeline) Exec(ctx context.Context) error {
	reqs := p.reqs
	p.reqs = nil
	if len(reqs) == 0 {
		return nil
	}
	fail := func(err error) error {
		for _, r := range reqs {
			if !r.done {
				r.fail(err)
			}
		}
		return err
	}
	for _, r := range reqs {
		if r.idx != nil && r.idx.reg != p.r.registry() {
			return fail(argErrorf("%s: the index was opened on another connection or pool", describe(r)))
		}
		if err := r.check(); err != nil {
			return fail(err)
		}
	}
	if err := p.r.roundTrip(ctx, reqs); err != nil {
		return fail(err)
	}
	for _, r := range reqs {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// result is what every result type shares: the request it reads.
type result struct{ r *request }

// Err is the request's error, ErrNotExecuted before Exec.
func (res result) Err() error {
	if !res.r.done {
		return ErrNotExecuted
	}
	return res.r.err
}

// RowResult is a queued get.
type RowResult struct{ r *request }

// Row is the row found, nil when there was none.
func (res *RowResult) Row() (Row, error) {
	if err := (result{res.r}).Err(); err != nil {
		return nil, err
	}
	if len(res.r.rows) == 0 {
		return nil, nil
	}
	return res.r.rows[0], nil
}

// Err is the get's error, ErrNotExecuted before Exec.
func (res *RowResult) Err() error { return result{res.r}.Err() }

// RowsResult is a queued find, or a modify answering rows.
type RowsResult struct{ r *request }

// Rows are the rows found (or, for a modify, the rows as they were).
func (res *RowsResult) Rows() ([]Row, error) {
	if err := (result{res.r}).Err(); err != nil {
		return nil, err
	}
	return res.r.rows, nil
}

// Err is the request's error, ErrNotExecuted before Exec.
func (res *RowsResult) Err() error { return result{res.r}.Err() }

// CountResult is a queued update, delete, increment or decrement.
type CountResult struct{ r *request }

// Count is the number of rows changed.
func (res *CountResult) Count() (int, error) {
	if err := (result{res.r}).Err(); err != nil {
		return 0, err
	}
	return int(min(res.r.num, uint64(maxCount))), nil
}

// Err is the request's error, ErrNotExecuted before Exec.
func (res *CountResult) Err() error { return result{res.r}.Err() }

// InsertResult is a queued insert.
type InsertResult struct{ r *request }

// ID is the auto-increment id of the new row (0 when there is none).
func (res *InsertResult) ID() (uint64, error) {
	if err := (result{res.r}).Err(); err != nil {
		return 0, err
	}
	return res.r.num, nil
}

// Err is the insert's error, ErrNotExecuted before Exec.
func (res *InsertResult) Err() error { return result{res.r}.Err() }
