// Looking at an idle socket on platforms without a non-blocking peek: the
// socket is taken as usable, and a write on a dead one fails as
// WriteUnconfirmedError.

//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package handlersocket

import "net"

func peekSocket(net.Conn) socketState { return socketIdle }
