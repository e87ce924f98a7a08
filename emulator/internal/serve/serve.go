// Package serve runs a handler as the emulator's process serves it: an HTTP server whose
// connections are bounded in time and whose stop answers what is in flight, and the log its
// lines go to, written by a goroutine of its own.
package serve

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/linewriter"
)

// Limits of the HTTP server beyond those its caller sets.
const (
	// headerTimeout bounds how long a request line and headers may take to arrive.
	headerTimeout = 10 * time.Second
	// maxHeaderBytes bounds a request line and headers together (Go's default is 1 MB).
	maxHeaderBytes = 64 << 10
)

// NewLogger returns the emulator's log, slog's text or JSON lines (json) written to w by a
// goroutine of its own, and the function that writes what is pending and stops that goroutine.
// In JSON, durations are milliseconds under a key suffixed _ms ("limit_ms": 60000). A text
// value is cut as the journal cuts it, so a request with a 60 KB path writes a short line.
func NewLogger(w io.Writer, json bool) (*slog.Logger, func()) {
	lw := linewriter.New(w, linewriter.MaxPending)
	var h slog.Handler
	if json {
		h = slog.NewJSONHandler(lw, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			return millis(groups, cutLong(groups, a))
		}})
	} else {
		h = slog.NewTextHandler(lw, &slog.HandlerOptions{ReplaceAttr: cutLong})
	}
	return slog.New(h), func() { _ = lw.Close() }
}

// cutLong cuts a text value longer than the journal keeps, the way the journal cuts it.
func cutLong(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindString && len(a.Value.String()) > evidence.MaxString {
		return slog.String(a.Key, evidence.Cut(a.Value.String(), evidence.MaxString))
	}
	return a
}

// millis renders durations in JSON logs as milliseconds, the key suffixed _ms, rather than as
// bare nanoseconds.
func millis(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key+"_ms", math.Round(float64(a.Value.Duration())/1e3)/1e3)
	}
	return a
}

// Server is an http.Server that knows which of its connections have not sent a request yet.
// http.Server.Shutdown counts such a connection as busy until it is five seconds old, in case a
// request is on its way; a client's transport opens spare connections when requests run side by
// side (a wait=true generation beside another request) and may never use them, so a shutdown
// would wait those five seconds out. Once the emulator stops no request is worth waiting for,
// so shutdown closes them at once.
type Server struct {
	*http.Server
	mu      sync.Mutex
	fresh   map[net.Conn]struct{}      // connections in http.StateNew
	closing bool                       // set by shutdown: a new connection is closed as it comes
	ending  map[net.Conn]chan struct{} // closed by shutdown; each channel closes once net/http let go
}

// NewServer returns the server that runs handler, its faults logged to errorLog.
func NewServer(handler http.Handler, errorLog *slog.Logger) *Server {
	hs := &Server{fresh: map[net.Conn]struct{}{}, ending: map[net.Conn]chan struct{}{}}
	hs.Server = &http.Server{
		Handler: handler,
		// No WriteTimeout: it runs from the request's arrival, so it would cut a wait=true
		// generation, which may wait --max-wait. The body has its own deadline (BodyGuard),
		// lifted once the body has been read, so a long wait afterwards is not cut either.
		ReadHeaderTimeout: headerTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(errorLog.Handler(), slog.LevelWarn),
		ConnState:         hs.connState,
	}
	return hs
}

// connState keeps the set of connections that have not sent a request. It runs before a new
// connection is served, so one accepted during shutdown is closed before it can start a request.
func (hs *Server) connState(c net.Conn, state http.ConnState) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	switch {
	case state == http.StateNew && hs.closing:
		_ = c.Close()
	case state == http.StateNew:
		hs.fresh[c] = struct{}{}
	default:
		delete(hs.fresh, c)
		if done, ok := hs.ending[c]; ok && (state == http.StateClosed || state == http.StateHijacked) {
			close(done)
			delete(hs.ending, c)
		}
	}
}

// Stop closes the connections that never sent a request, waits until net/http has let go
// of them (it stops counting a connection only once its own goroutine has seen it close), then
// shuts down as http.Server.Shutdown does: no new connections, idle ones closed, requests in
// flight awaited.
func (hs *Server) Stop(ctx context.Context) error {
	hs.mu.Lock()
	hs.closing = true
	var ending []chan struct{}
	for c := range hs.fresh {
		done := make(chan struct{})
		hs.ending[c] = done
		ending = append(ending, done)
		_ = c.Close()
		delete(hs.fresh, c)
	}
	hs.mu.Unlock()
	for _, done := range ending {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	return hs.Shutdown(ctx)
}

// BodyGuard bounds how long each request's body may take to arrive, with a read deadline that
// holds while the body is read and is lifted once it has been (so a long wait=true afterwards
// is not cut), and cuts every body still arriving when the server stops.
type BodyGuard struct {
	timeout time.Duration
	mu      sync.Mutex
	reading map[*guardedBody]struct{}
	closing bool
}

// NewBodyGuard bounds each body to timeout.
func NewBodyGuard(timeout time.Duration) *BodyGuard {
	return &BodyGuard{timeout: timeout, reading: map[*guardedBody]struct{}{}}
}

// Wrap guards the bodies of the requests next handles.
func (g *BodyGuard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b := &guardedBody{ReadCloser: r.Body, rc: http.NewResponseController(w), g: g}
		g.mu.Lock()
		deadline := time.Now().Add(g.timeout)
		if g.closing {
			deadline = time.Now()
		}
		_ = b.rc.SetReadDeadline(deadline) // not every connection supports deadlines
		g.reading[b] = struct{}{}
		g.mu.Unlock()
		defer b.finish(false)
		r.Body = b
		next.ServeHTTP(w, r)
	})
}

// Stop cuts the bodies still arriving, so their handlers answer at once.
func (g *BodyGuard) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closing = true
	for b := range g.reading {
		_ = b.rc.SetReadDeadline(time.Now())
	}
}

// guardedBody is a request body under a read deadline until it ends.
type guardedBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	g        *BodyGuard
	finished bool
}

// Read reads the body; at its end the deadline is lifted.
func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

// finish stops guarding the body. The deadline is lifted only when the body was read to its
// end: a body cut short or left unread keeps it, so the server, which reads what is left of a
// body after the handler, cannot wait on it for ever.
func (b *guardedBody) finish(complete bool) {
	b.g.mu.Lock()
	defer b.g.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	delete(b.g.reading, b)
	if complete && !b.g.closing {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}
