package cli

import (
	"context"
	"io"
	"net"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/internal/battery"
)

// Conformance runs the conformance command with its arguments and returns the process exit
// status: 0 every case passed, 1 a case failed, 2 a usage error or a battery that could not run.
func Conformance(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return battery.Main(ctx, args, getenv, stdout, stderr, conformanceEmulator)
}

// conformanceEmulator is the emulator a conformance run without --emulator uses: the embedded
// catalog and default scenario on a skipping clock (a case's waits take no real time) with
// seed 1 (every run makes the same ids, so two runs write the same results), listening on a
// free loopback port with its control API open to this process alone.
func conformanceEmulator(ctx context.Context) (string, string, func(), error) {
	s, err := emulator.NewServer(emulator.Config{SkipClock: true, Seeded: true, Seed: 1})
	if err != nil {
		return "", "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = s.Close()
		return "", "", nil, err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(ctx, ln, emulator.ServeLimits{})
	}()
	stop := func() {
		cancel()
		<-done
		_ = s.Close()
	}
	return "http://" + ln.Addr().String(), "", stop, nil
}
