package emulator

import (
	"context"
	"io"
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// ImportCommand runs the import or drift command (command is "import" or "drift") with its
// arguments and returns the process exit status: 0 done (drift: no drift), 1 drift found, 2 a
// usage, file or connection error.
func ImportCommand(ctx context.Context, command string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return importer.Main(ctx, command, args, getenv, stdout, stderr, driftReference)
}

// driftReference is the emulator drift --spend compares the live service with: the catalog
// being checked, served with the default scenario on a manual clock (the comparison advances it
// instead of waiting) and seeded, so its answers are the same on every run.
func driftReference(name string, data []byte) (http.Handler, func(), error) {
	s, err := NewServer(Config{Catalog: &Source{Name: name, Data: data}, ManualClock: true, Seeded: true, Seed: 1})
	if err != nil {
		return nil, nil, err
	}
	return s, func() { _ = s.Close() }, nil
}
