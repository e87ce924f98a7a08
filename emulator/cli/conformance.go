package cli

import (
	"context"
	"io"

	"github.com/mediagen/mediagen-emulator/emulator/internal/battery"
)

// Conformance runs the conformance command with its arguments and returns the process exit
// status: 0 every case passed, 1 a case failed, 2 a usage error or a battery that could not run.
func Conformance(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return battery.Main(ctx, args, getenv, stdout, stderr, conformanceEmulator)
}

// conformanceEmulator is the emulator a conformance run uses when given none: explore's, with
// seed 1, so every run makes the same ids and two runs write the same results. Its control API
// is open to this machine's loopback alone, with no admin token.
func conformanceEmulator(ctx context.Context) (string, string, func(), error) {
	url, stop, err := exploreEmulator(ctx, 1)
	return url, "", stop, err
}
