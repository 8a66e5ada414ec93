// Errors: what the server answered (ServerError, matched with errors.Is
// against the Err* kinds), what the network did (NetworkError,
// WriteUnconfirmedError), and the client's own refusals (ErrInvalid...).

package handlersocket

import (
	"errors"
	"fmt"
)

// Kinds of server answers, for errors.Is. A *ServerError matches every kind
// that describes it: a duplicate key is both ErrDuplicateKey and ErrStorage.
var (
	// ErrStorage: code 1, the storage refused the request or the table could
	// not be opened (the reason is a handler error number or open_table).
	ErrStorage = errors.New("handlersocket: storage error")
	// ErrDuplicateKey: `1 1 121`, a row with the same unique key exists.
	ErrDuplicateKey = errors.New("handlersocket: duplicate key")
	// ErrOpenTable: `1 1 open_table`, no such database or table.
	ErrOpenTable = errors.New("handlersocket: table cannot be opened")
	// ErrRequest: code 2, the request was refused (idxnum, fld, kpnum,
	// filterfld, readonly...).
	ErrRequest = errors.New("handlersocket: request refused")
	// ErrReadOnly: `2 1 readonly`, a write sent to the read-only port.
	ErrReadOnly = errors.New("handlersocket: write sent to the read-only port")
	// ErrAuth: code 3, authentication missing, wrong, or of an unknown type.
	ErrAuth = errors.New("handlersocket: authentication failed")
)

// Client-side errors.
var (
	// ErrInvalid wraps every refusal of a call before anything is sent
	// (an unknown operator, a wrong number of values, a bad name...).
	ErrInvalid = errors.New("handlersocket: invalid call")
	// ErrClosed: the Conn or Pool was closed.
	ErrClosed = errors.New("handlersocket: closed")
	// ErrNotExecuted: a pipeline result read before Exec.
	ErrNotExecuted = errors.New("handlersocket: pipeline not executed yet")
)

// DuplicateKey is the storage error number of a duplicate key (MySQL's
// HA_ERR_FOUND_DUPP_KEY), the reason of `1 1 121`.
const DuplicateKey = 121

// ServerError is an error answer `<code> 1 <reason>`. It stays on the
// connection's side of the line: the connection remains usable.
type ServerError struct {
	Code   int    // 1 storage, 2 request, 3 authentication
	Reason string // 121, open_table, stmtnum, fld, readonly, unauth...
	// Request names the request that was refused, for the message.
	Request string
}

// meanings explains the protocol's short reasons in error messages.
var meanings = map[string]string{
	"cmd":         "not a request",
	"stmtnum":     "index id not opened on this connection",
	"op":          "unknown find operator",
	"klen":        "bad number of key values",
	"kpnum":       "more key values than the index has columns",
	"invalueslen": "IN needs at least one value",
	"filtertype":  "filter kind is not F or W",
	"filterfld":   "filter column out of range",
	"filterblob":  "cannot filter on a BLOB/TEXT column",
	"modop":       "unknown modify operator",
	"readonly":    "write sent to the read-only port",
	"idxnum":      "no such index",
	"fld":         "no such column",
	"open_table":  "table cannot be opened",
	"unauth":      "not authenticated (missing or wrong secret)",
	"authtype":    "unknown authentication type",
	"121":         "duplicate key",
	"1153":        "answer too large",
	"1969":        "statement timed out",
}

func (e *ServerError) Error() string {
	msg := fmt.Sprintf("handlersocket: server answered %q", fmt.Sprintf("%d 1 %s", e.Code, e.Reason))
	if m, ok := meanings[e.Reason]; ok {
		msg += ": " + m
	}
	if e.Request != "" {
		msg += " (" + e.Request + ")"
	}
	return msg
}

// Is reports whether target is one of the kinds this answer belongs to.
func (e *ServerError) Is(target error) bool {
	switch target {
	case ErrStorage:
		return e.Code == 1
	case ErrDuplicateKey:
		return e.Code == 1 && e.Reason == "121"
	case ErrOpenTable:
		return e.Code == 1 && e.Reason == "open_table"
	case ErrRequest:
		return e.Code == 2
	case ErrReadOnly:
		return e.Code == 2 && e.Reason == "readonly"
	case ErrAuth:
		return e.Code == 3
	}
	return false
}

// Errno is the storage error number of a code 1 answer (121 for a
// duplicate key), or 0 when the reason is not a number.
func (e *ServerError) Errno() int {
	if e.Code != 1 || e.Reason == "" || len(e.Reason) > 9 {
		return 0
	}
	n := 0
	for i := 0; i < len(e.Reason); i++ {
		c := e.Reason[i]
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// NetworkError: connecting failed or the connection broke. Reads were
// already sent once more on a new connection when it is returned. It wraps
// the cause: errors.Is(err, context.DeadlineExceeded) and the like work.
type NetworkError struct {
	Addr string
	Err  error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("handlersocket: connection to %s: %v", e.Addr, e.Err)
}

func (e *NetworkError) Unwrap() error { return e.Err }

// WriteUnconfirmedError: a request that writes was sent (or may have been),
// and its answer never came: the write may or may not have been applied.
// The client never sends it again. It wraps the cause, as NetworkError does.
type WriteUnconfirmedError struct {
	Addr string
	Err  error
}

func (e *WriteUnconfirmedError) Error() string {
	return fmt.Sprintf("handlersocket: connection to %s lost before a write was answered (it may or may not have been applied): %v", e.Addr, e.Err)
}

func (e *WriteUnconfirmedError) Unwrap() error { return e.Err }

// ProtocolError: the server's answer is not HandlerSocket. The connection
// that read it is closed.
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string { return "handlersocket: bad answer: " + e.Msg }

func protocolErrorf(format string, args ...any) error {
	return &ProtocolError{Msg: fmt.Sprintf(format, args...)}
}

func argErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
