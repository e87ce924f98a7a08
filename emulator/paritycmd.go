package emulator

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/parity"
)

// ParityCommand runs the parity command with its arguments and returns the process exit status:
// 0 no new difference, 1 a new difference, 2 a usage or connection error.
func ParityCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return parity.Main(ctx, args, getenv, stdout, stderr, parityReference)
}

// parityReference is the emulator parity compares the live service with: the catalog in use,
// the default scenario, a manual clock (nothing a parity run sends waits on time) and a seed,
// so its answers are the same on every run.
func parityReference(catalogFile string) (http.Handler, *catalog.Catalog, string, func(), error) {
	s, err := NewServer(Config{CatalogFile: catalogFile, ManualClock: true, Seeded: true, Seed: 1})
	if err != nil {
		return nil, nil, "", nil, err
	}
	<-s.Ready()
	if s.catalog == nil {
		_ = s.Close()
		return nil, nil, "", nil, errors.New("the embedded catalog failed to load")
	}
	name := catalogFile
	if name == "" {
		name = DefaultCatalogName
	}
	return s, s.catalog, name, func() { _ = s.Close() }, nil
}
