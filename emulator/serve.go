package emulator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/linewriter"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// What the command line needs to run the emulator as a process: its log, and an HTTP server
// whose connections are bounded in time.

// Limits of the HTTP server beyond ServeLimits.
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

// MemoryOverhead is what the process holds beyond its memory budget, at most about: the cache
// of made output files (256 MiB), the catalog with its compiled schemas, the Go runtime and
// what requests in flight hold before their stores count it. The command line sets the
// garbage collector's soft memory limit to the budget plus this, so the heap is collected
// harder as it nears that sum instead of growing to twice what is live.
const MemoryOverhead = sim.FileCacheBytes + 256<<20

// ServeLimits bound the connections Serve accepts. A limit at zero or below takes its default.
type ServeLimits struct {
	// BodyTimeout bounds how long a request's body may take to arrive (default
	// config.DefaultBodyTimeout).
	BodyTimeout time.Duration
	// IdleTimeout bounds how long a keep-alive connection may wait for its next request
	// (default config.DefaultIdleTimeout).
	IdleTimeout time.Duration
	// DrainTimeout bounds a graceful stop (default config.DefaultDrainTimeout): requests in
	// flight when it starts have this long to finish before their connections are closed.
	DrainTimeout time.Duration
}

// WithDefaults returns the limits with every one left out filled in, as Serve takes them.
func (l ServeLimits) WithDefaults() ServeLimits {
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = config.DefaultBodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = config.DefaultIdleTimeout
	}
	if l.DrainTimeout <= 0 {
		l.DrainTimeout = config.DefaultDrainTimeout
	}
	return l
}

// Serve answers the connections ln accepts until ctx is canceled, then stops gracefully:
// waiting generations answer the job as it stands, bodies still arriving answer 400, and the
// requests in flight have DrainTimeout to finish. It returns nil after a clean stop.
func (s *Server) Serve(ctx context.Context, ln net.Listener, limits ServeLimits) error {
	limits = limits.WithDefaults()
	guard := newBodyGuard(limits.BodyTimeout)
	hs := newHTTPServer(guard.wrap(s), s.log)
	hs.IdleTimeout = limits.IdleTimeout
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	drain := limits.DrainTimeout
	s.log.Info("shutting down: finishing the requests in flight", slog.Duration("limit", drain))
	// A stop wakes waiting generations (they answer the job as it is) and cuts bodies still
	// arriving (they answer 400), so what is in flight is answered rather than dropped. Both run
	// here rather than as RegisterOnShutdown hooks, whose goroutines nothing waits for.
	s.Shutdown()
	guard.shutdown()
	drainCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := hs.shutdown(drainCtx)
	if err != nil {
		_ = hs.Close()
		err = fmt.Errorf("shutdown: requests still running after %v were cut off", drain)
	}
	<-served // the accept loop has returned too, so nothing of the server is left running
	return err
}

// httpServer is an http.Server that knows which of its connections have not sent a request yet.
// http.Server.Shutdown counts such a connection as busy until it is five seconds old, in case a
// request is on its way; a client's transport opens spare connections when requests run side by
// side (a wait=true generation beside another request) and may never use them, so a shutdown
// would wait those five seconds out. Once the emulator stops no request is worth waiting for,
// so shutdown closes them at once.
type httpServer struct {
	*http.Server
	mu      sync.Mutex
	fresh   map[net.Conn]struct{}      // connections in http.StateNew
	closing bool                       // set by shutdown: a new connection is closed as it comes
	ending  map[net.Conn]chan struct{} // closed by shutdown; each channel closes once net/http let go
}

// newHTTPServer returns the server Serve runs handler on, its faults logged to errorLog.
func newHTTPServer(handler http.Handler, errorLog *slog.Logger) *httpServer {
	hs := &httpServer{fresh: map[net.Conn]struct{}{}, ending: map[net.Conn]chan struct{}{}}
	hs.Server = &http.Server{
		Handler: handler,
		// No WriteTimeout: it runs from the request's arrival, so it would cut a wait=true
		// generation, which may wait --max-wait. The body has its own deadline (bodyGuard),
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
func (hs *httpServer) connState(c net.Conn, state http.ConnState) {
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

// shutdown closes the connections that never sent a request, waits until net/http has let go
// of them (it stops counting a connection only once its own goroutine has seen it close), then
// shuts down as http.Server.Shutdown does: no new connections, idle ones closed, requests in
// flight awaited.
func (hs *httpServer) shutdown(ctx context.Context) error {
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

// bodyGuard bounds how long each request's body may take to arrive, with a read deadline that
// holds while the body is read and is lifted once it has been (so a long wait=true afterwards
// is not cut), and cuts every body still arriving when the server stops.
type bodyGuard struct {
	timeout time.Duration
	mu      sync.Mutex
	reading map[*guardedBody]struct{}
	closing bool
}

func newBodyGuard(timeout time.Duration) *bodyGuard {
	return &bodyGuard{timeout: timeout, reading: map[*guardedBody]struct{}{}}
}

// wrap guards the bodies of the requests next handles.
func (g *bodyGuard) wrap(next http.Handler) http.Handler {
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

// shutdown cuts the bodies still arriving, so their handlers answer at once.
func (g *bodyGuard) shutdown() {
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
	g        *bodyGuard
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
