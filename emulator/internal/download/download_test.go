package download

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// serve writes body through a Writer shaped as shape, with a sleep that only adds up the time
// it was asked to wait: the shape's pace, measured without a clock.
func serve(t *testing.T, shape scenario.Download, body []byte) (*httptest.ResponseRecorder, time.Duration, []time.Duration) {
	t.Helper()
	var waited time.Duration
	var waits []time.Duration
	sleep := func(_ context.Context, d time.Duration) bool {
		waited += d
		waits = append(waits, d)
		return true
	}
	rec := httptest.NewRecorder()
	w := New(rec, httptest.NewRequest("GET", "/files/j/0.png", nil), shape, sleep)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	for rest := body; len(rest) > 0; { // as io.Copy writes: 32 KiB at a time
		n := min(len(rest), 32<<10)
		if _, err := w.Write(rest[:n]); err != nil {
			break
		}
		rest = rest[n:]
	}
	w.Finish()
	return rec, waited, waits
}

func TestThrottleKeepsItsRate(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("x"), 300_001)
	for _, bps := range []int{1_000, 65_536, 250_000} {
		rec, waited, waits := serve(t, scenario.Download{BytesPerSecond: bps}, body)
		if !bytes.Equal(rec.Body.Bytes(), body) {
			t.Fatalf("%d B/s: the body changed (%d bytes)", bps, rec.Body.Len())
		}
		rate := float64(len(body)) / waited.Seconds()
		if rate < float64(bps)*0.9 || rate > float64(bps)*1.1 {
			t.Errorf("%d B/s: %d bytes took %v, %.0f B/s", bps, len(body), waited, rate)
		}
		// Paced in chunks of about a tenth of a second, not in one wait at the end.
		if longest := slicesMax(waits); longest > 110*time.Millisecond || len(waits) < 10 {
			t.Errorf("%d B/s: %d waits, the longest %v", bps, len(waits), longest)
		}
	}
}

func slicesMax(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func TestPausesComeBetweenChunks(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("y"), 10_000)
	rec, waited, waits := serve(t, scenario.Download{ChunkBytes: 1_000, Pause: api.Duration(200 * time.Millisecond)}, body)
	if rec.Body.Len() != len(body) || waited != 9*200*time.Millisecond || len(waits) != 9 {
		t.Errorf("%d bytes, %d pauses adding up to %v; want 10,000 bytes and 9 pauses of 200ms", rec.Body.Len(), len(waits), waited)
	}
}

func TestCutAndWrongLength(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("z"), 5_000)
	rec, _, _ := serve(t, scenario.Download{CutAfter: 1_234}, body)
	if rec.Body.Len() != 1_234 || rec.Header().Get("Content-Length") != "5000" {
		t.Errorf("cut: %d bytes under Content-Length %s; want 1234 under the true 5000", rec.Body.Len(), rec.Header().Get("Content-Length"))
	}
	rec, _, _ = serve(t, scenario.Download{LengthDelta: 100}, body)
	if rec.Body.Len() != 5_000 || rec.Header().Get("Content-Length") != "5100" {
		t.Errorf("longer: %d bytes under Content-Length %s", rec.Body.Len(), rec.Header().Get("Content-Length"))
	}
	rec, _, _ = serve(t, scenario.Download{LengthDelta: -100}, body)
	if rec.Body.Len() != 4_900 || rec.Header().Get("Content-Length") != "4900" {
		t.Errorf("shorter: %d bytes under Content-Length %s", rec.Body.Len(), rec.Header().Get("Content-Length"))
	}
}

// TestErrorsAreNotShaped: a 404 or 416 answer goes out whole and at once.
func TestErrorsAreNotShaped(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	w := New(rec, httptest.NewRequest("GET", "/files/x", nil), scenario.Download{CutAfter: 3, BytesPerSecond: 1},
		func(context.Context, time.Duration) bool { t.Error("an error answer was paced"); return true })
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"code":"not_found"}`))
	if rec.Body.String() != `{"code":"not_found"}` {
		t.Errorf("body %q", rec.Body)
	}
}
