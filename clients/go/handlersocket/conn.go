// Conn: one HandlerSocket connection, re-established when it breaks. This
// file holds the exchange every call goes through: write the requests at
// once, read one answer each, in order; reconnect, authenticate again and
// re-open indexes under their ids; send reads once more on a new
// connection, never a write; honour the context, and never reuse a
// connection whose answers were cut off.

package handlersocket

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Conn or the connections of a Pool. The zero value is
// plain TCP, no secret, a 10 s dial timeout and no other time limit than
// each call's context.
type Options struct {
	// DialTimeout bounds connecting (TCP, TLS handshake); 0 is 10 s.
	DialTimeout time.Duration
	// ReadTimeout bounds the wait for the answers of one call or pipeline;
	// 0 is no bound but the context's.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing the requests of one call or pipeline;
	// 0 is no bound but the context's.
	WriteTimeout time.Duration
	// Secret, when not empty, is sent (A 1 <secret>) on every new connection.
	Secret string
	// TLS, when set, makes every connection TLS with this configuration.
	// An empty ServerName is taken from the address's host.
	TLS *tls.Config
}

const (
	defaultDialTimeout = 10 * time.Second
	readBufferSize     = 64 << 10
)

// Conn is a connection to one port of a HandlerSocket server (the read
// port serves finds; the write port everything). It may be used by many
// goroutines: each call has the connection to itself for its exchange.
//
// When the connection breaks, the next call opens a new one, sends the
// secret again and re-opens the indexes it needs under their ids, so Index
// handles stay valid. A call that only reads is sent once more on a new
// connection when the first fails on the network; a call that writes is
// never sent twice: WriteUnconfirmedError says its answer was lost.
type Conn struct {
	addr string
	opts Options
	tls  *tls.Config
	reg  *registry

	// sem is held by the goroutine running an exchange; everything below
	// it is that goroutine's, except where mu is named.
	sem chan struct{}
	// mu guards nc against Close, and closed.
	mu     sync.Mutex
	nc     net.Conn
	closed bool

	br        *bufio.Reader
	wbuf      []byte
	opened    []bool // index ids opened on nc
	secret    []byte // sent on every new connection when hasSecret
	hasSecret bool
	deadlines bool // nc has a deadline set that the next exchange must clear

	connects atomic.Int64
}

// Dial connects to addr ("host:port") and authenticates when opts has a
// secret, so that a wrong address or secret fails here. opts may be nil.
func Dial(ctx context.Context, addr string, opts *Options) (*Conn, error) {
	c := newConn(addr, opts, newRegistry())
	if err := c.Connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func newConn(addr string, opts *Options, reg *registry) *Conn {
	c := &Conn{addr: addr, reg: reg, sem: make(chan struct{}, 1)}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.DialTimeout <= 0 {
		c.opts.DialTimeout = defaultDialTimeout
	}
	if c.opts.TLS != nil {
		c.tls = c.opts.TLS.Clone()
		if c.tls.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				c.tls.ServerName = host
			}
		}
	}
	if c.opts.Secret != "" {
		c.secret, c.hasSecret = []byte(c.opts.Secret), true
	}
	return c
}

// Addr is the address the connection dials.
func (c *Conn) Addr() string { return c.addr }

// Connects is how many times a network connection was opened.
func (c *Conn) Connects() int { return int(c.connects.Load()) }

// Connect connects now (and authenticates) unless already connected.
func (c *Conn) Connect(ctx context.Context) error {
	return c.roundTrip(ctx, nil)
}

// Close closes the connection; calls after it fail with ErrClosed. A call
// running meanwhile is cut off.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.nc != nil {
		return c.nc.Close()
	}
	return nil
}

// OpenIndex opens an index (P) and returns its handle. Opening the same
// spec again returns a handle with the same id and sends nothing.
func (c *Conn) OpenIndex(ctx context.Context, spec IndexSpec) (*Index, error) {
	return openIndex(ctx, c, spec)
}

// Auth authenticates with secret (A 1 <secret>). A secret the server
// accepts is sent again on every new connection. On a refusal (ErrAuth)
// the previous secret is kept and the socket closed: the next call opens
// a new one.
func (c *Conn) Auth(ctx context.Context, secret string) error {
	r := &request{kind: kindAuth, secret: []byte(secret)}
	if secret == "" {
		r.secret = []byte{}
	}
	if err := c.roundTrip(ctx, []*request{r}); err != nil {
		return err
	}
	return r.err
}

// Pipeline queues requests for this connection; Exec writes them at once.
func (c *Conn) Pipeline() *Pipeline { return &Pipeline{r: c} }

func (c *Conn) registry() *registry { return c.reg }

// errNetwork marks a failure of the socket (as opposed to a server error
// answer or a bad answer) inside an exchange.
type errNetwork struct{ err error }

func (e errNetwork) Error() string { return e.err.Error() }

// roundTrip runs one exchange: the requests' answers (or errors) are set
// in them; the error returned is the exchange's own (network, context,
// bad answer, closed).
func (c *Conn) roundTrip(ctx context.Context, reqs []*request) error {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-c.sem }()
	writes := false
	for _, r := range reqs {
		writes = writes || r.writes()
	}
	for attempt := 1; ; attempt++ {
		if c.isClosed() {
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		written, err := c.try(ctx, reqs, writes)
		var ne errNetwork
		if err == nil || !errors.As(err, &ne) {
			return err
		}
		cause, final := ne.err, attempt == 2
		if ctxOver(ctx) {
			cause, final = context.Cause(ctx), true
			if cause == nil { // the socket's deadline, the context's, came first
				cause = context.DeadlineExceeded
			}
		} else if c.isClosed() {
			cause, final = ErrClosed, true
		}
		if written {
			return &WriteUnconfirmedError{Addr: c.addr, Err: cause}
		}
		if final {
			return &NetworkError{Addr: c.addr, Err: cause}
		}
	}
}

// ctxOver reports whether ctx is done or its deadline has passed (a
// socket deadline taken from it may fire before the context's own timer).
func ctxOver(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

func (c *Conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// try is one attempt of an exchange. written reports whether a request
// that writes may have reached the server.
func (c *Conn) try(ctx context.Context, reqs []*request, writes bool) (written bool, err error) {
	// Bytes no request asked for put the socket out of step; a write
	// also checks that the server has not closed the idle socket.
	if c.nc != nil && (c.br.Buffered() > 0 || writes && !c.alive()) {
		c.drop()
	}
	fresh := false
	if c.nc == nil {
		if err := c.dial(ctx); err != nil {
			return false, errNetwork{err}
		}
		fresh = true
	}
	setup := c.setupFor(reqs, fresh)
	sent := 0
	for _, r := range reqs {
		if r.sent() {
			sent++
		}
	}
	if len(setup) == 0 && sent == 0 {
		return false, nil
	}
	defer c.watch(ctx)()

	if writes && len(setup) > 0 {
		// The secret and the opens go first, on their own, so that a
		// failure there is known to have sent no write.
		if _, err := c.exchange(ctx, setup); err != nil {
			return false, err
		}
		if left, _ := c.applySetup(setup, reqs); !left {
			return false, nil
		}
		return c.exchange(ctx, reqs)
	}
	if wrote, err := c.exchange(ctx, append(setup, reqs...)); err != nil {
		return writes && wrote, err
	}
	if _, authErr := c.applySetup(setup, reqs); authErr != nil && len(reqs) == 0 {
		return false, authErr // Connect: a refused secret is its error
	}
	return false, nil
}

// setupFor lists the requests a socket needs before reqs: the secret on a
// new socket (unless reqs authenticate themselves), and a P for every index
// reqs use that the socket has not opened.
func (c *Conn) setupFor(reqs []*request, fresh bool) []*request {
	var setup []*request
	if fresh && c.hasSecret {
		own := false
		for _, r := range reqs {
			own = own || r.kind == kindAuth
		}
		if !own {
			setup = append(setup, &request{kind: kindAuth, secret: c.secret})
		}
	}
	for _, r := range reqs {
		if r.idx == nil || c.isOpen(r.idx.id) {
			continue
		}
		dup := false
		for _, s := range setup {
			dup = dup || (s.kind == kindOpen && s.idx.id == r.idx.id)
		}
		if !dup {
			setup = append(setup, &request{kind: kindOpen, idx: r.idx})
		}
	}
	return setup
}

func (c *Conn) isOpen(id int) bool { return id < len(c.opened) && c.opened[id] }

// applySetup records what the setup answers say and passes their failures
// on: a refused secret fails every request (the socket is already closed);
// a refused open fails the requests on that index. It reports whether any
// request is left unsettled, and the refusal of the secret.
func (c *Conn) applySetup(setup, reqs []*request) (left bool, authErr error) {
	var failed map[int]error
	for _, s := range setup {
		switch {
		case s.kind == kindAuth:
			authErr = s.err
		case s.err != nil:
			if failed == nil {
				failed = map[int]error{}
			}
			failed[s.idx.id] = s.err
		default:
			for len(c.opened) <= s.idx.id {
				c.opened = append(c.opened, false)
			}
			c.opened[s.idx.id] = true
		}
	}
	for _, r := range reqs {
		switch {
		case authErr != nil:
			r.fail(authErr)
		case r.idx != nil && failed[r.idx.id] != nil:
			r.fail(failed[r.idx.id])
		case r.kind == kindEnsure:
			r.done = true
		}
		left = left || !r.done
	}
	return left, authErr
}

// exchange writes the lines of the unsettled requests at once and reads
// one answer for each. On any failure the socket is closed: answers may
// still be on their way, and must never be read as another call's. wrote
// reports whether the lines may have reached the server.
func (c *Conn) exchange(ctx context.Context, reqs []*request) (wrote bool, err error) {
	buf := c.wbuf[:0]
	n := 0
	for _, r := range reqs {
		if r.sent() && !r.done {
			buf = appendRequest(buf, r)
			n++
		}
	}
	if cap(buf) <= 1<<20 {
		c.wbuf = buf // reused; a huge one is not kept for ever
	}
	if n == 0 {
		return false, nil
	}
	wd := c.deadline(ctx, c.opts.WriteTimeout)
	if !wd.IsZero() || c.deadlines {
		c.nc.SetWriteDeadline(wd)
	}
	// A cancellation between the context's check and here would have had
	// its cut-off overwritten: look again after setting the deadline.
	if ctx.Err() != nil {
		c.drop()
		return false, errNetwork{context.Cause(ctx)}
	}
	// A big batch is written while its first answers are read: a server
	// that stops reading while its answers wait would otherwise wait for
	// us as we wait for it.
	var written chan error
	if len(buf) > concurrentWriteAbove {
		written = make(chan error, 1)
		go func(nc net.Conn) {
			_, err := nc.Write(buf)
			if err != nil {
				nc.Close() // the reader fails at once
			}
			written <- err
		}(c.nc)
	} else if _, err := c.nc.Write(buf); err != nil {
		c.drop()
		return true, errNetwork{err}
	}
	err = c.readAnswers(ctx, reqs, wd)
	if written != nil {
		if werr := <-written; werr != nil {
			c.drop()
			if err == nil {
				err = errNetwork{werr}
			}
		}
	}
	return true, err
}

// concurrentWriteAbove is the size of a batch written by a goroutine of its
// own while the answers are read.
const concurrentWriteAbove = 256 << 10

// readAnswers reads one answer for each unsettled request of reqs.
func (c *Conn) readAnswers(ctx context.Context, reqs []*request, wd time.Time) error {
	rd := c.deadline(ctx, c.opts.ReadTimeout)
	if !rd.IsZero() || c.deadlines {
		c.nc.SetReadDeadline(rd)
	}
	c.deadlines = !wd.IsZero() || !rd.IsZero()
	if ctx.Err() != nil {
		c.drop()
		return errNetwork{context.Cause(ctx)}
	}
	refused := false
	for _, r := range reqs {
		if !r.sent() || r.done {
			continue
		}
		line, err := c.readLine()
		if err != nil {
			c.drop()
			return errNetwork{err}
		}
		a, err := parseAnswer(line)
		if err == nil {
			err = r.settle(a)
		}
		if err != nil {
			c.drop()
			return err
		}
		if r.kind == kindAuth {
			if r.err != nil {
				refused = true
			} else {
				c.secret, c.hasSecret = r.secret, true
			}
		}
	}
	if refused {
		c.drop() // never keep a socket the server did not authenticate
	}
	return nil
}

// readLine reads one answer line without its LF. The slice is valid until
// the next read.
func (c *Conn) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = c.br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the server closed the connection
		}
		return nil, err
	}
	return line[:len(line)-1], nil
}

// deadline is the earlier of the context's deadline and now + timeout;
// zero when there is neither.
func (c *Conn) deadline(ctx context.Context, timeout time.Duration) time.Time {
	d, _ := ctx.Deadline()
	if timeout > 0 {
		if t := time.Now().Add(timeout); d.IsZero() || t.Before(d) {
			d = t
		}
	}
	return d
}

// watch cuts the socket's I/O off when ctx is cancelled during the
// exchange; the returned func stops watching.
func (c *Conn) watch(ctx context.Context) func() {
	if ctx.Done() == nil {
		return func() {}
	}
	nc := c.nc
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		nc.SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired
			c.deadlines = true
		}
	}
}

// dial opens the socket (and the TLS session) within DialTimeout.
func (c *Conn) dial(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", c.addr)
	if err != nil {
		return err
	}
	if c.tls != nil {
		tc := tls.Client(nc, c.tls)
		if err := tc.HandshakeContext(dctx); err != nil {
			nc.Close()
			return err
		}
		nc = tc
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		nc.Close()
		return ErrClosed
	}
	c.nc = nc
	c.mu.Unlock()
	c.connects.Add(1)
	if c.br == nil {
		c.br = bufio.NewReaderSize(nc, readBufferSize)
	} else {
		c.br.Reset(nc)
	}
	c.opened = c.opened[:0]
	c.deadlines = false
	return nil
}

// drop closes the socket; the next exchange opens a new one.
func (c *Conn) drop() {
	c.mu.Lock()
	nc := c.nc
	c.nc = nil
	c.mu.Unlock()
	if nc != nil {
		nc.Close()
	}
	if c.br != nil {
		c.br.Reset(nil)
	}
	c.opened = c.opened[:0]
}

// alive reports whether the idle socket is still usable before a write is
// sent on it: not closed by the server, and holding no stray bytes.
func (c *Conn) alive() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	state := peekSocket(c.nc)
	if state == socketPending {
		// On TLS the bytes may be a session ticket or another post-handshake
		// message, which leaves nothing to read: read briefly to find out.
		tc, ok := c.nc.(*tls.Conn)
		if !ok {
			return false
		}
		tc.SetReadDeadline(time.Now().Add(time.Millisecond))
		c.deadlines = true
		var b [1]byte
		n, err := tc.Read(b[:])
		var te net.Error
		return n == 0 && errors.As(err, &te) && te.Timeout()
	}
	return state == socketIdle
}

type socketState int

const (
	socketIdle    socketState = iota // nothing to read: usable
	socketPending                    // bytes to read
	socketGone                       // closed by the peer, or failed
)
