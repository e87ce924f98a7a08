package emulator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/emulator/internal/serve"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// What the command line needs to run the emulator as a process: its log, and an HTTP server
// whose connections are bounded in time.

// NewLogger returns the emulator's log, slog's text or JSON lines (json) written to w by a
// goroutine of its own, and the function that writes what is pending and stops that goroutine.
// In JSON, durations are milliseconds under a key suffixed _ms ("limit_ms": 60000). A text
// value is cut as the journal cuts it, so a request with a 60 KB path writes a short line.
func NewLogger(w io.Writer, json bool) (*slog.Logger, func()) { return serve.NewLogger(w, json) }

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
	guard := serve.NewBodyGuard(limits.BodyTimeout)
	hs := serve.NewServer(guard.Wrap(s), s.log)
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
	guard.Stop()
	drainCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := hs.Stop(drainCtx)
	if err != nil {
		_ = hs.Close()
		err = fmt.Errorf("shutdown: requests still running after %v were cut off", drain)
	}
	<-served // the accept loop has returned too, so nothing of the server is left running
	return err
}
