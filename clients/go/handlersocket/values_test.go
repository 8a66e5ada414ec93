// Values end to end: escaping of control bytes, every byte in a binary
// column, NULL versus the empty string versus a zero byte, UTF-8 text,
// integers in decimal.

package handlersocket_test

import (
	"bytes"
	"fmt"
	"testing"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
)

func TestControlBytesRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		kv := open(t, dial(t, s, true), s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		value := []byte("tab\there\nnewline\x00nul\x01one\x0ffifteen\x10sixteen\r\n")
		must(kv.Insert(ctx, hs.Str(tg), value, hs.Int(1)))(t)
		row := must(kv.Get(ctx, hs.Str(tg)))(t)
		if row == nil || !bytes.Equal(row[1], value) {
			t.Fatalf("got %v, want %q", row, value)
		}
	})
}

func TestEveryByteInABinaryColumn(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		bin := open(t, dial(t, s, true), s, "bin", "PRIMARY", "k,v")
		next := keys(t)
		low, high := next(), next()
		lowBytes, highBytes := make([]byte, 128), make([]byte, 128)
		for i := range 128 {
			lowBytes[i], highBytes[i] = byte(i), byte(128+i)
		}
		must(bin.Insert(ctx, hs.Int(low), lowBytes))(t)
		must(bin.Insert(ctx, hs.Int(high), highBytes))(t)
		rows := must(bin.GetMany(ctx, hs.Int(low), hs.Int(high)))(t)
		if !bytes.Equal(rows[0][1], lowBytes) || !bytes.Equal(rows[1][1], highBytes) {
			t.Fatalf("got %v", rows)
		}
	})
}

func TestNullEmptyAndZeroByteAreThreeValues(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		kv := open(t, dial(t, s, true), s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		must(kv.Insert(ctx, hs.Str(tg+"null"), nil, nil))(t)
		must(kv.Insert(ctx, hs.Str(tg+"empty"), []byte{}, hs.Int(0)))(t)
		must(kv.Insert(ctx, hs.Str(tg+"nul"), []byte{0}, hs.Int(0)))(t)
		rows := must(kv.GetMany(ctx, hs.Str(tg+"null"), hs.Str(tg+"empty"), hs.Str(tg+"nul")))(t)
		equal(t, "rows", show(rows), []string{
			fmt.Sprintf("[%q NULL NULL]", tg+"null"),
			fmt.Sprintf("[%q \"\" \"0\"]", tg+"empty"),
			fmt.Sprintf("[%q \"\\x00\" \"0\"]", tg+"nul"),
		})
	})
}

func TestUTF8Text(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		kv := open(t, dial(t, s, true), s, "kv", "PRIMARY", "k,v")
		key := tag(t) + "é"
		text := "Zoë Ærø 日本語 🎉"
		must(kv.Insert(ctx, hs.Str(key), hs.Str(text)))(t)
		equal(t, "row", must(kv.Get(ctx, hs.Str(key)))(t).Strings(), []string{key, text})
		equal(t, "stored", sqlOne(t, s, fmt.Sprintf("SELECT v FROM kv WHERE k = '%s'", key)), []string{text})
	})
}

func TestIntegersInDecimal(t *testing.T) {
	each(t, func(t *testing.T, s *server) {
		ctx := ctxFor(t)
		kv := open(t, dial(t, s, true), s, "kv", "PRIMARY", "k,v,n")
		tg := tag(t)
		must(kv.Insert(ctx, hs.Str(tg), hs.Uint(12345678901), hs.Int(-42)))(t)
		row := must(kv.Get(ctx, hs.Str(tg)))(t)
		equal(t, "row", row.Strings(), []string{tg, "12345678901", "-42"})
		equal(t, "Int", must(row.Int(2))(t), int64(-42))
	})
}
