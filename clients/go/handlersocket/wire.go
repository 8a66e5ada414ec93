// The HandlerSocket wire format: escaping values, writing request lines and
// reading answer lines. Pure computation on bytes, no I/O: conn.go moves the
// bytes, this file decides what they are.
//
// A line is TAB-separated tokens ending in LF. A token is NULL (the single
// byte 0x00) or bytes in which every byte below 0x10 travels as 0x01
// followed by the byte plus 0x40 (docs/protocol.md, section 1).

package handlersocket

import (
	"bytes"
	"fmt"
	"strconv"
)

// appendValue appends one value as a token: nil is NULL, anything else is
// escaped (so []byte{} is the empty string and []byte{0} is one zero byte).
func appendValue(dst, v []byte) []byte {
	if v == nil {
		return append(dst, 0)
	}
	for _, b := range v {
		if b < 0x10 {
			dst = append(dst, 0x01, b+0x40)
		} else {
			dst = append(dst, b)
		}
	}
	return dst
}

// appendName appends a name token (db, table, index or column list) as is:
// names are checked by checkName and never escaped, as the server reads
// them raw.
func appendName(dst []byte, s string) []byte { return append(dst, s...) }

// unescapeInPlace decodes an escaped token into its own storage (decoding
// never makes it longer) and returns the decoded bytes. A trailing lone
// 0x01 is dropped; the servers never send one.
func unescapeInPlace(tok []byte) []byte {
	i := bytes.IndexByte(tok, 0x01)
	if i < 0 {
		return tok
	}
	w := i
	for r := i; r < len(tok); r++ {
		b := tok[r]
		if b == 0x01 {
			r++
			if r == len(tok) {
				break
			}
			b = tok[r] - 0x40
		}
		tok[w] = b
		w++
	}
	return tok[:w]
}

// checkName refuses a name the request line could not carry: control bytes
// (TAB and LF among them) and, in a column list, commas.
func checkName(what, s string, column bool) error {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || (column && s[i] == ',') {
			return argErrorf("%s %q holds a control character or a comma", what, s)
		}
	}
	return nil
}

// answer is one parsed answer line: its code, its column count and the
// decoded values after them (nil for NULL).
type answer struct {
	code   int
	ncols  int
	values [][]byte
}

// parseAnswer parses one answer line (without its LF). The values are
// decoded into a private copy of the line, so the caller may reuse line.
func parseAnswer(line []byte) (answer, error) {
	code, rest, ok := cutNumber(line)
	if !ok {
		return answer{}, protocolErrorf("answer does not start with a code: %q", clip(line))
	}
	ncols, rest, ok := cutNumber(rest)
	if !ok {
		return answer{}, protocolErrorf("answer has no column count: %q", clip(line))
	}
	a := answer{code: code, ncols: ncols}
	if rest == nil {
		return a, nil
	}
	data := make([]byte, len(rest))
	copy(data, rest)
	n := bytes.Count(data, []byte{'\t'}) + 1
	a.values = make([][]byte, 0, n)
	for {
		tok := data
		i := bytes.IndexByte(data, '\t')
		if i >= 0 {
			tok = data[:i:i]
		}
		if len(tok) == 1 && tok[0] == 0 {
			a.values = append(a.values, nil)
		} else {
			a.values = append(a.values, unescapeInPlace(tok))
		}
		if i < 0 {
			break
		}
		data = data[i+1:]
	}
	return a, nil
}

// cutNumber reads the decimal number at the start of a line and the TAB
// after it. rest is nil when the line ends after the number.
func cutNumber(line []byte) (n int, rest []byte, ok bool) {
	end := bytes.IndexByte(line, '\t')
	tok := line
	if end >= 0 {
		tok, rest = line[:end], line[end+1:]
	}
	if len(tok) == 0 || len(tok) > 9 {
		return 0, nil, false
	}
	for _, b := range tok {
		if b < '0' || b > '9' {
			return 0, nil, false
		}
		n = n*10 + int(b-'0')
	}
	return n, rest, true
}

// reason is an error answer's reason (121, open_table, stmtnum...).
func (a answer) reason() string {
	if len(a.values) == 0 || a.values[0] == nil {
		return ""
	}
	return string(a.values[0])
}

// rows splits a successful find answer into rows of ncols values.
func (a answer) rows() ([]Row, error) {
	if len(a.values) == 0 {
		return nil, nil
	}
	if a.ncols <= 0 || len(a.values)%a.ncols != 0 {
		return nil, protocolErrorf("%d values do not make rows of %d columns", len(a.values), a.ncols)
	}
	rows := make([]Row, len(a.values)/a.ncols)
	for i := range rows {
		lo, hi := i*a.ncols, (i+1)*a.ncols
		rows[i] = Row(a.values[lo:hi:hi])
	}
	return rows, nil
}

// number is the single number a modify (rows changed) or an insert
// (auto-increment id) answers; ok is false when the answer holds none.
func (a answer) number() (n uint64, ok bool, err error) {
	if len(a.values) == 0 {
		return 0, false, nil
	}
	if a.values[0] == nil {
		return 0, false, protocolErrorf("a NULL where a number was expected")
	}
	n, err = strconv.ParseUint(string(a.values[0]), 10, 64)
	if err != nil {
		return 0, false, protocolErrorf("%q where a number was expected", clip(a.values[0]))
	}
	return n, true, nil
}

// clip shortens a line for an error message.
func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// appendRequest appends the line of one request, LF included.
func appendRequest(dst []byte, r *request) []byte {
	switch r.kind {
	case kindAuth:
		dst = append(dst, "A\t1\t"...)
		dst = appendValue(dst, r.secret)
	case kindOpen:
		dst = appendOpen(dst, r.idx.id, &r.idx.spec)
	case kindInsert:
		dst = strconv.AppendInt(dst, int64(r.idx.id), 10)
		dst = append(dst, "\t+\t"...)
		dst = strconv.AppendInt(dst, int64(len(r.values)), 10)
		for _, v := range r.values {
			dst = append(dst, '\t')
			dst = appendValue(dst, v)
		}
	default: // a find, or a find and modify
		dst = appendFind(dst, r)
	}
	return append(dst, '\n')
}

// appendOpen appends `P <id> <db> <table> <index> <columns> [<fcolumns>]`.
func appendOpen(dst []byte, id int, s *IndexSpec) []byte {
	dst = append(dst, "P\t"...)
	dst = strconv.AppendInt(dst, int64(id), 10)
	for _, name := range []string{s.DB, s.Table, s.indexName()} {
		dst = append(dst, '\t')
		dst = appendName(dst, name)
	}
	dst = append(dst, '\t')
	dst = appendList(dst, s.Columns)
	if len(s.FilterColumns) > 0 {
		dst = append(dst, '\t')
		dst = appendList(dst, s.FilterColumns)
	}
	return dst
}

func appendList(dst []byte, names []string) []byte {
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendName(dst, name)
	}
	return dst
}

// appendFind appends `<id> <op> <n> <keys> <limit> <offset> [IN] [filters]
// [<modify> <values>]` (docs/protocol.md, sections 4 and 5). Limit and
// offset always go out, so that what follows them is read as intended.
func appendFind(dst []byte, r *request) []byte {
	q := &r.q
	dst = strconv.AppendInt(dst, int64(r.idx.id), 10)
	dst = append(dst, '\t')
	dst = append(dst, q.op()...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(len(q.Key)), 10)
	for _, k := range q.Key {
		dst = append(dst, '\t')
		dst = appendValue(dst, k)
	}
	limit := q.Limit
	if limit == 0 {
		limit = 1
	}
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(limit), 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(q.Offset), 10)
	if q.In != nil {
		dst = append(dst, "\t@\t"...)
		dst = strconv.AppendInt(dst, int64(q.In.Column), 10)
		dst = append(dst, '\t')
		dst = strconv.AppendInt(dst, int64(len(q.In.Values)), 10)
		for _, v := range q.In.Values {
			dst = append(dst, '\t')
			dst = appendValue(dst, v)
		}
	}
	for i, f := range q.Filters {
		dst = append(dst, '\t')
		dst = append(dst, byte(f.Kind))
		dst = append(dst, '\t')
		dst = append(dst, f.Op...)
		dst = append(dst, '\t')
		dst = strconv.AppendInt(dst, int64(r.filterPos[i]), 10)
		dst = append(dst, '\t')
		dst = appendValue(dst, f.Value)
	}
	if r.modify != 0 {
		dst = append(dst, '\t', r.modify)
		if r.returning {
			dst = append(dst, '?')
		}
		for _, v := range r.values {
			dst = append(dst, '\t')
			dst = appendValue(dst, v)
		}
	}
	return dst
}

// describe names a request for error messages: its command and index.
func describe(r *request) string {
	switch r.kind {
	case kindAuth:
		return "auth"
	case kindOpen, kindEnsure:
		return fmt.Sprintf("open_index %d (%s)", r.idx.id, r.idx.spec.String())
	case kindInsert:
		return fmt.Sprintf("insert into %s", r.idx.spec.String())
	}
	what := "find"
	switch r.modify {
	case 'U':
		what = "update"
	case 'D':
		what = "delete"
	case '+':
		what = "increment"
	case '-':
		what = "decrement"
	}
	return fmt.Sprintf("%s on %s", what, r.idx.spec.String())
}
