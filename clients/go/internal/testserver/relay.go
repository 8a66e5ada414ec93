// A TCP relay between a client and a real server, for breaking connections
// the way a server restart or a network fault does: cut every connection,
// refuse new ones, let requests through and drop the answers, or hold the
// answers back until released.

package testserver

import (
	"bytes"
	"net"
	"sync"
)

// Relay forwards connections to 127.0.0.1:Port on to a server, byte for byte.
type Relay struct {
	Port   int
	target string
	ln     net.Listener

	mu           sync.Mutex
	accepted     int
	requestLines int
	refuse       bool
	dropAnswers  bool
	gate         chan struct{} // closed while answers flow
	pairs        map[net.Conn]net.Conn
	closed       bool
}

// NewRelay listens on a free port of 127.0.0.1 and forwards to target.
func NewRelay(target string) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{Port: ln.Addr().(*net.TCPAddr).Port, target: target, ln: ln,
		gate: make(chan struct{}), pairs: map[net.Conn]net.Conn{}}
	close(r.gate)
	go r.accept()
	return r, nil
}

// Addr is the relay's host:port, for the client.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

func (r *Relay) accept() {
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.accepted++
		refuse := r.refuse || r.closed
		r.mu.Unlock()
		if refuse {
			client.Close()
			continue
		}
		upstream, err := net.Dial("tcp", r.target)
		if err != nil {
			client.Close()
			continue
		}
		r.mu.Lock()
		r.pairs[client] = upstream
		r.mu.Unlock()
		go r.pump(client, upstream, false)
		go r.pump(upstream, client, true)
	}
}

func (r *Relay) pump(src, dst net.Conn, answers bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			data := buf[:n]
			if answers {
				r.mu.Lock()
				drop, gate := r.dropAnswers, r.gate
				r.mu.Unlock()
				if drop {
					break
				}
				<-gate
			} else {
				r.mu.Lock()
				r.requestLines += bytes.Count(data, []byte{'\n'})
				r.mu.Unlock()
			}
			if _, werr := dst.Write(data); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	r.closePair(src, dst)
}

func (r *Relay) closePair(a, b net.Conn) {
	r.mu.Lock()
	delete(r.pairs, a)
	delete(r.pairs, b)
	r.mu.Unlock()
	a.Close()
	b.Close()
}

// Accepted is the number of connections the relay accepted so far.
func (r *Relay) Accepted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted
}

// RequestLines is the number of request lines clients sent so far.
func (r *Relay) RequestLines() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requestLines
}

// Refuse makes the relay close new connections at once (or not).
func (r *Relay) Refuse(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse = on
}

// DropAnswers makes the relay close a connection instead of forwarding an
// answer (or not): the request reached the server, its answer is lost.
func (r *Relay) DropAnswers(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropAnswers = on
}

// Hold keeps answers back until Release.
func (r *Relay) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.gate:
		r.gate = make(chan struct{})
	default:
	}
}

// Release lets held answers go on.
func (r *Relay) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.gate:
	default:
		close(r.gate)
	}
}

// Cut closes every forwarded connection, on both sides.
func (r *Relay) Cut() {
	r.mu.Lock()
	var conns []net.Conn
	for a, b := range r.pairs {
		conns = append(conns, a, b)
	}
	r.pairs = map[net.Conn]net.Conn{}
	r.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Close stops listening, releases held answers and cuts every connection.
func (r *Relay) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.ln.Close()
	r.Release()
	r.Cut()
}
