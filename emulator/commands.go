package emulator

import "github.com/mediagen/mediagen-emulator/emulator/internal/catalog"

// What the command line's subcommands (package cli) take from the server.

// ReadCatalog reads a catalog or scenario file, or the embedded default catalog when path is
// empty, with the name its problems are reported under; an error says in a line what failed.
func ReadCatalog(path string) (name string, data []byte, err error) { return readCatalog(path) }

// Catalog is the catalog s serves once Ready, or nil if it failed to load; parity plans its
// requests from it.
func (s *Server) Catalog() *catalog.Catalog { return s.catalog }
