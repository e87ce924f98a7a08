// Package download serves a body the way slow and broken links serve files: throttled to a
// rate, paused between chunks, cut off with the connection closed, or under a Content-Length
// that is not the truth. Only successful answers are shaped, so a ranged request made to resume
// a cut download is answered — and shaped — like any other. It also answers as broken networks
// and proxies do (broken.go): a reset, a body cut short, JSON broken off, a gateway's page.
package download

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// Sleep waits d, or less when ctx ends first; it reports whether the whole wait happened. The
// server passes one that waits in real time; tests pass one that only adds up.
type Sleep func(ctx context.Context, d time.Duration) bool

// ErrCut is returned by a write once the body has been cut off.
var ErrCut = errors.New("download cut off on purpose")

// defaultChunk is the chunk size when neither a size nor a rate gives one.
const defaultChunk = 16 << 10

// Writer shapes the body written through it. Call Finish once the handler has written it all.
type Writer struct {
	http.ResponseWriter
	ctx      context.Context
	shape    scenario.Download
	sleep    Sleep
	chunk    int
	status   int
	shaped   bool  // a 2xx answer: its body is shaped
	declared int64 // the Content-Length sent when it was changed, else -1
	sent     int64 // body bytes sent
	inChunk  int
	chunks   int
	cut      bool
}

// New wraps w for the request r; sleep paces the body.
func New(w http.ResponseWriter, r *http.Request, shape scenario.Download, sleep Sleep) *Writer {
	chunk := shape.ChunkBytes
	if chunk <= 0 {
		chunk = defaultChunk
		if shape.BytesPerSecond > 0 {
			// A tenth of a second's bytes: the rate is even at any scale a client measures.
			chunk = min(max(shape.BytesPerSecond/10, 1), 64<<10)
		}
	}
	return &Writer{ResponseWriter: w, ctx: r.Context(), shape: shape, sleep: sleep, chunk: chunk, declared: -1}
}

// WriteHeader changes the Content-Length of a successful answer by the shape's LengthDelta.
func (w *Writer) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	w.shaped = status >= 200 && status < 300
	if d := w.shape.LengthDelta; d != 0 && w.shaped {
		if n, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64); err == nil {
			w.declared = max(n+int64(d), 0)
			w.Header().Set("Content-Length", strconv.FormatInt(w.declared, 10))
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

// Write sends b at the shape's pace, up to its cut.
func (w *Writer) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.shaped {
		return w.ResponseWriter.Write(b)
	}
	if w.cut {
		return 0, ErrCut
	}
	total := len(b)
	if w.declared >= 0 && w.shape.LengthDelta < 0 {
		// A Content-Length below the truth: the bytes past it never go out, and the client
		// reads a body that looks whole.
		b = b[:max(min(int64(len(b)), w.declared-w.sent), 0)]
	}
	paced := w.shape.BytesPerSecond > 0 || w.shape.Pause > 0
	for len(b) > 0 {
		n := min(len(b), w.chunk-w.inChunk)
		if w.shape.CutAfter > 0 {
			n = int(min(int64(n), int64(w.shape.CutAfter)-w.sent))
		}
		wait := time.Duration(0)
		if w.inChunk == 0 && w.chunks > 0 {
			wait += time.Duration(w.shape.Pause)
		}
		if bps := w.shape.BytesPerSecond; bps > 0 {
			// Each piece takes its share of a second to arrive, as over a link of that rate.
			wait += time.Duration(int64(n) * int64(time.Second) / int64(bps))
		}
		if wait > 0 && !w.sleep(w.ctx, wait) {
			return total - len(b), w.ctx.Err()
		}
		m, err := w.ResponseWriter.Write(b[:n])
		w.sent += int64(m)
		w.inChunk += m
		if err != nil {
			return total - len(b) + m, err
		}
		if w.inChunk >= w.chunk {
			w.inChunk = 0
			w.chunks++
		}
		if paced {
			_ = http.NewResponseController(w.ResponseWriter).Flush()
		}
		if w.shape.CutAfter > 0 && w.sent >= int64(w.shape.CutAfter) {
			w.close()
			return total - len(b) + m, ErrCut
		}
		b = b[n:]
	}
	return total, nil
}

// Finish ends a body that was promised longer than it is by closing the connection, so the
// client reads an early end rather than waiting for bytes that never come.
func (w *Writer) Finish() {
	if w.shaped && !w.cut && w.declared > w.sent {
		w.close()
	}
}

// Sent is how many body bytes went out.
func (w *Writer) Sent() int64 { return w.sent }

// close sends what is buffered and closes the connection. Where the connection cannot be taken
// (HTTP/2, a recorder), the answer simply ends short, which the server reports as an error.
func (w *Writer) close() {
	w.cut = true
	rc := http.NewResponseController(w.ResponseWriter)
	if rc.Flush() != nil {
		return
	}
	if conn, _, err := rc.Hijack(); err == nil {
		_ = conn.Close()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
