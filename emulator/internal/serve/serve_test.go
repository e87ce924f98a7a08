package serve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestShutdownClosesConnectionsThatSentNothing holds a connection that never sends a request
// (as a transport's spare connection does) and shuts down. http.Server.Shutdown alone would
// count it busy for five seconds and close it only then; Serve must have closed it, and
// net/http have let go of it, before Shutdown begins.
func TestShutdownClosesConnectionsThatSentNothing(t *testing.T) {
	hs := NewServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	accepted := make(chan struct{}, 1)
	var silentClosed atomic.Bool
	track := hs.ConnState
	hs.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			silentClosed.Store(true) // the test's connection is the only one; noted before the harness hears of it
		}
		track(c, s)
		if s == http.StateNew {
			accepted <- struct{}{}
		}
	}
	closedAtShutdown := make(chan bool, 1)
	hs.RegisterOnShutdown(func() { closedAtShutdown <- silentClosed.Load() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	<-accepted

	if err := hs.Stop(context.Background()); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	<-served
	if !<-closedAtShutdown {
		t.Error("the silent connection was still open when http.Server.Shutdown began")
	}
	if n, err := conn.Read(make([]byte, 1)); err == nil {
		t.Errorf("the silent connection is still open: read %d bytes", n)
	}
}

// TestShutdownClosesConnectionsAcceptedLate checks that a connection the server accepts once
// shutdown has begun is closed before it is served.
func TestShutdownClosesConnectionsAcceptedLate(t *testing.T) {
	hs := NewServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	if err := hs.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	server, client := net.Pipe()
	defer client.Close()
	hs.ConnState(server, http.StateNew)
	// A pipe refuses a deadline once either end is closed, so this asks without blocking.
	if err := client.SetReadDeadline(time.Time{}); err != io.ErrClosedPipe {
		t.Errorf("a connection accepted during shutdown is still open (%v)", err)
	}
}
