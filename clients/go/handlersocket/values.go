// Values: a value is a []byte, nil is NULL and []byte{} the empty string.
// Rows come back as Row; the helpers here turn strings and integers into
// values and values back into strings and integers.

package handlersocket

import (
	"strconv"
	"strings"
)

// Row is one row of a find: a value per opened column, in the order of the
// index's Columns; a nil value is NULL, an empty one the empty string.
type Row [][]byte

// IsNull reports whether column i is NULL.
func (r Row) IsNull(i int) bool { return r[i] == nil }

// Str is column i as a string ("" for NULL: ask IsNull to tell them apart).
func (r Row) Str(i int) string { return string(r[i]) }

// Strings is the row as strings, NULL as "".
func (r Row) Strings() []string {
	out := make([]string, len(r))
	for i, v := range r {
		out[i] = string(v)
	}
	return out
}

// Int parses column i as a decimal integer.
func (r Row) Int(i int) (int64, error) {
	if r[i] == nil {
		return 0, argErrorf("column %d is NULL", i)
	}
	return strconv.ParseInt(string(r[i]), 10, 64)
}

// String shows the row as Go-quoted values, NULL as NULL:
// ["Ada" "" NULL].
func (r Row) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range r {
		if i > 0 {
			b.WriteByte(' ')
		}
		if v == nil {
			b.WriteString("NULL")
		} else {
			b.WriteString(strconv.Quote(string(v)))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// Str is a string as a value; Str("") is the empty string, never NULL.
func Str(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// Int is an integer as a value, in decimal.
func Int(n int64) []byte { return strconv.AppendInt(make([]byte, 0, 20), n, 10) }

// Uint is an unsigned integer as a value, in decimal.
func Uint(n uint64) []byte { return strconv.AppendUint(make([]byte, 0, 20), n, 10) }

// Strs is strings as values, for keys and the values of writes.
func Strs(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, v := range s {
		out[i] = Str(v)
	}
	return out
}

// Values collects values into a slice, for Query.Key and In.Values:
// Values(Int(30), Str("x"), nil).
func Values(v ...[]byte) [][]byte { return v }
