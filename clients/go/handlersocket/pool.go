// Pool: a fixed number of connections to one server port, shared by many
// goroutines. An Index opened on the pool runs each call on whichever
// connection is free; every connection opens it, when first needed, under
// the same id.

package handlersocket

import (
	"context"
	"sync"
)

// Pool holds up to Size connections to addr, each connecting on first use
// (as database/sql does), reconnecting as a Conn does. It is safe for many
// goroutines. Indexes opened on the pool, and on connections taken from it,
// share their ids.
type Pool struct {
	addr string
	opts *Options
	reg  *registry
	size int

	idle chan *Conn
	done chan struct{}

	mu       sync.Mutex
	closed   bool
	borrowed map[*Conn]bool
}

// DefaultPoolSize is the size of a pool made with size 0.
const DefaultPoolSize = 8

// NewPool makes a pool of size connections (DefaultPoolSize when 0) to
// addr. Nothing is dialled until a call needs a connection. opts may be nil.
func NewPool(addr string, size int, opts *Options) (*Pool, error) {
	if size == 0 {
		size = DefaultPoolSize
	}
	if size < 0 {
		return nil, argErrorf("pool size %d", size)
	}
	if opts != nil {
		copied := *opts
		opts = &copied
	}
	p := &Pool{
		addr:     addr,
		opts:     opts,
		reg:      newRegistry(),
		size:     size,
		idle:     make(chan *Conn, size),
		done:     make(chan struct{}),
		borrowed: map[*Conn]bool{},
	}
	for range size {
		p.idle <- p.fresh()
	}
	return p, nil
}

func (p *Pool) fresh() *Conn {
	return newConn(p.addr, p.opts, p.reg)
}

// Size is the most connections the pool holds.
func (p *Pool) Size() int { return p.size }

// Get takes a connection for the caller alone, waiting for one to be free
// as long as ctx allows. Give it back with Put.
func (p *Pool) Get(ctx context.Context) (*Conn, error) {
	select {
	case <-p.done:
		return nil, ErrClosed
	default:
	}
	select {
	case c := <-p.idle:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.closed {
			c.Close()
			return nil, ErrClosed
		}
		p.borrowed[c] = true
		return c, nil
	case <-p.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Put gives back a connection taken with Get. It keeps its socket, secret
// and opened indexes for the next taker; a connection the caller closed is
// replaced by a new one. Putting anything else does nothing.
func (p *Pool) Put(c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c == nil || !p.borrowed[c] {
		return
	}
	delete(p.borrowed, c)
	if p.closed {
		c.Close()
		return
	}
	if c.isClosed() {
		c = p.fresh()
	}
	p.idle <- c // never blocks: the pool never holds more than size
}

// Do runs fn with a connection of the pool and gives it back after.
func (p *Pool) Do(ctx context.Context, fn func(*Conn) error) error {
	c, err := p.Get(ctx)
	if err != nil {
		return err
	}
	defer p.Put(c)
	return fn(c)
}

// OpenIndex opens an index for the pool's connections: once now, on one
// connection (so that an unknown table or column fails here), and on each
// other connection when it first runs a call on it.
func (p *Pool) OpenIndex(ctx context.Context, spec IndexSpec) (*Index, error) {
	return openIndex(ctx, p, spec)
}

// Pipeline queues requests to run on one connection of the pool.
func (p *Pool) Pipeline() *Pipeline { return &Pipeline{r: p} }

// Close closes the idle connections now and the taken ones when they come
// back; calls after it fail with ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	for {
		select {
		case c := <-p.idle:
			c.Close()
		default:
			return nil
		}
	}
}

func (p *Pool) registry() *registry { return p.reg }

func (p *Pool) roundTrip(ctx context.Context, reqs []*request) error {
	c, err := p.Get(ctx)
	if err != nil {
		return err
	}
	defer p.Put(c)
	return c.roundTrip(ctx, reqs)
}
