package cli

import (
	"context"
	"io"
	"net"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/internal/explore"
)

// Explore runs the explore command with its arguments and returns the process exit status: 0
// nothing failed (a replay passed), 1 a failure found (a replay failed), 2 misuse.
func Explore(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return explore.Main(ctx, args, getenv, stdout, stderr, exploreEmulator)
}

// exploreEmulator is the emulator explore runs a client against when given none: the embedded
// catalog and the default scenario, on the skip clock (a client waiting on a job moves time on
// instead of waiting) and seeded, on a free loopback port.
func exploreEmulator(ctx context.Context, seed int64) (string, func(), error) {
	srv, err := emulator.NewServer(emulator.Config{SkipClock: true, Seeded: true, Seed: seed})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		return "", nil, err
	}
	<-srv.Ready()
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(serveCtx, ln, emulator.ServeLimits{})
	}()
	stop := func() {
		cancel()
		<-served
		_ = srv.Close()
	}
	return "http://" + ln.Addr().String(), stop, nil
}
