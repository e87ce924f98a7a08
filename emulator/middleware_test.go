package emulator

import (
	"net/http"
	"testing"
	"time"
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
