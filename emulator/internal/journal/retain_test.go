package journal

import (
	"bytes"
	"testing"
)

// TestLongBodiesAreNotHeld: of a body over the bound the journal keeps a copy of the bytes it
// shows, not the whole body it was handed (which the byte bound would not count).
func TestLongBodiesAreNotHeld(t *testing.T) {
	t.Parallel()
	j := NewBounded(10, DefaultMaxBytes)
	huge := bytes.Repeat([]byte("x"), 1<<20)
	small := []byte(`{"ok":true}`)
	j.Add(Entry{Path: "/v1/quotes", RequestBody: huge, ResponseBody: small})
	e := j.at(0)
	if len(e.RequestBody) != MaxBody+1 || cap(e.RequestBody) > 2*(MaxBody+1) {
		t.Errorf("a 1 MiB body is held as %d bytes of a %d-byte array; want %d of an array about as long", len(e.RequestBody), cap(e.RequestBody), MaxBody+1)
	}
	if &e.RequestBody[0] == &huge[0] {
		t.Error("the journal holds the caller's 1 MiB array")
	}
	if &e.ResponseBody[0] != &small[0] {
		t.Error("a body within the bound was copied")
	}
}
