package evidence

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
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

// TestLongRequestLinesAreNotHeld: net/http's method, path and query are pieces of the whole
// request line; entries made from them keep copies of what they show, so the live heap stays
// within the byte bound however long the lines were.
func TestLongRequestLinesAreNotHeld(t *testing.T) {
	// Not parallel: it reads the live heap.
	const bound = 1 << 20
	j := NewBounded(100_000, bound)
	before := liveHeap()
	for i := range 1000 {
		line := fmt.Sprintf("GET /v1/models/%s?q=%d HTTP/1.1", strings.Repeat("p", 60<<10), i)
		method, rest, _ := strings.Cut(line, " ")
		path, query, _ := strings.Cut(strings.TrimSuffix(rest, " HTTP/1.1"), "?")
		j.Add(Entry{Method: method, Path: path, Query: query, Status: 404})
	}
	for i := range j.n {
		if e := j.at(i); e.Method == "" || len(e.Path) != MaxString || !strings.HasSuffix(e.Path, Truncated) {
			t.Fatalf("entry %d is %q %d bytes of path; want the path cut to %d bytes", i, e.Method, len(e.Path), MaxString)
		}
	}
	if held := liveHeap() - before; held > 2*bound {
		t.Errorf("a journal bounded at %d bytes keeps %d bytes of heap alive (%d entries, counted %d bytes)", bound, held, j.n, j.Bytes())
	}
	runtime.KeepAlive(j)
}

// TestGrownBodyBuffersAreNotHeld: a body read into a buffer grown by doubling is copied, so the
// journal does not keep the unused half of the buffer, which its bound does not count.
func TestGrownBodyBuffersAreNotHeld(t *testing.T) {
	t.Parallel()
	j := NewBounded(10, DefaultMaxBytes)
	buf := make([]byte, 0, MaxBody)
	buf = append(buf, `{"a":1}`...)
	j.Add(Entry{RequestBody: buf})
	if e := j.at(0); &e.RequestBody[0] == &buf[0] {
		t.Errorf("the journal keeps a %d-byte body in its caller's %d-byte buffer", len(buf), cap(buf))
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
