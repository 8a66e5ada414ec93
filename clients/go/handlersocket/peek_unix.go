// Looking at an idle socket without reading from it (Linux, macOS, BSDs):
// has the server closed it, or sent bytes no request asked for? Asked
// before a write goes out, so that a write is not lost on a dead socket.

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package handlersocket

import (
	"crypto/tls"
	"net"
	"syscall"
)

// peekSocket peeks at one byte without blocking and without taking it.
func peekSocket(nc net.Conn) socketState {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return socketIdle
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return socketGone
	}
	state := socketIdle
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK || err == syscall.EINTR:
			state = socketIdle
		case err != nil, n == 0:
			state = socketGone // reset, or end of stream
		default:
			state = socketPending
		}
		return true // never wait
	})
	if err != nil {
		return socketGone
	}
	return state
}
