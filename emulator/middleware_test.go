package emulator

import (
	"net/http"
	"testing"
	"time"
	"unsafe"
)

// TestHTTPDate: a Date header is the time's second in UTC, as net/http writes it, however the
// times before it went.
func TestHTTPDate(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 23, 6, 30, 0, 0, time.UTC)
	for _, at := range []time.Time{base, base.Add(400 * time.Millisecond), base.Add(time.Second), base, base.In(time.FixedZone("X", 3600)), base.Add(100 * 365 * 24 * time.Hour)} {
		if got, want := httpDate(at), at.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("httpDate(%v) = %q; want %q", at, got, want)
		}
	}
}

// TestRecorderKeepsItsSizeClass: the recorder is the one allocation every request makes for
// its evidence. With the 8-byte header the allocator gives objects of over 512 bytes that hold
// pointers, 632 bytes is the most that stays in the 640-byte size class; a field more moves
// every request up to 704.
func TestRecorderKeepsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(recorder{}); size > 632 {
		t.Errorf("recorder is %d bytes, over the 632 of its size class: pack the new field with others, or drop one", size)
	}
}
