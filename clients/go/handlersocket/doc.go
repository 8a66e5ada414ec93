// Package handlersocket is a client for HandlerSocket servers: hsd (on its
// embedded store or on MySQL/MariaDB tables) and the original HandlerSocket
// plugin of MySQL/MariaDB. Standard library only.
//
// Dial connects to one port (the read port serves finds, the write port
// everything); OpenIndex opens an index and returns a handle whose methods
// find, insert, update, delete, increment and decrement rows:
//
//	conn, err := handlersocket.Dial(ctx, "127.0.0.1:9999", nil)
//	users, err := conn.OpenIndex(ctx, handlersocket.IndexSpec{
//		DB: "test", Table: "user", Index: "PRIMARY",
//		Columns: []string{"user_name", "user_email"},
//	})
//	row, err := users.Get(ctx, handlersocket.Int(101))
//	rows, err := users.Find(ctx, handlersocket.Where(handlersocket.GE, handlersocket.Int(100)).WithLimit(2))
//
// Values are []byte: nil is NULL, []byte{} the empty string. Str, Int and
// Row.Str convert. Every call takes a context and honours its deadline and
// cancellation; a call cut off mid-flight closes its connection, which the
// next call opens again.
//
// A Conn and a Pool may be used by many goroutines. A Pipeline writes many
// requests at once and reads the answers in order. Error answers are
// *ServerError, matched with errors.Is against ErrDuplicateKey,
// ErrReadOnly, ErrAuth, ErrRequest, ErrStorage and ErrOpenTable; failures
// of the network are *NetworkError, and *WriteUnconfirmedError for a write
// whose answer was lost (never sent again).
package handlersocket
