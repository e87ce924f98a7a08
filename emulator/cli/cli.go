// Package cli holds the command line's subcommands other than serving (validate, import,
// drift, parity, explore), which main calls. What a version promises of it is its command line, the
// flags, output and exit statuses of mediagen-emulator; its Go API may change in any version.
package cli

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
	"github.com/mediagen/mediagen-emulator/emulator/internal/parity"
)

// Import runs the import or drift command (command is "import" or "drift") with its arguments
// and returns the process exit status: 0 done (drift: no drift), 1 drift found, 2 a usage, file
// or connection error.
func Import(ctx context.Context, command string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return importer.Main(ctx, command, args, getenv, stdout, stderr, driftReference)
}

// driftReference is the emulator drift --spend compares the live service with: the catalog
// being checked, served with the default scenario on a manual clock (the comparison advances it
// instead of waiting) and seeded, so its answers are the same on every run.
func driftReference(name string, data []byte) (http.Handler, func(), error) {
	s, err := emulator.NewServer(emulator.Config{Catalog: &emulator.Source{Name: name, Data: data}, ManualClock: true, Seeded: true, Seed: 1})
	if err != nil {
		return nil, nil, err
	}
	return s, func() { _ = s.Close() }, nil
}

// Parity runs the parity command with its arguments and returns the process exit status: 0 no
// new difference, 1 a new difference, 2 a usage or connection error.
func Parity(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return parity.Main(ctx, args, getenv, stdout, stderr, parityReference)
}

// parityReference is the emulator parity compares the live service with: the catalog in use,
// the default scenario, a manual clock (nothing a parity run sends waits on time) and a seed,
// so its answers are the same on every run.
func parityReference(catalogFile string) (http.Handler, *catalog.Catalog, string, func(), error) {
	s, err := emulator.NewServer(emulator.Config{CatalogFile: catalogFile, ManualClock: true, Seeded: true, Seed: 1})
	if err != nil {
		return nil, nil, "", nil, err
	}
	<-s.Ready()
	c := s.Catalog()
	if c == nil {
		_ = s.Close()
		return nil, nil, "", nil, errors.New("the embedded catalog failed to load")
	}
	name := catalogFile
	if name == "" {
		name = emulator.DefaultCatalogName
	}
	return s, c, name, func() { _ = s.Close() }, nil
}
