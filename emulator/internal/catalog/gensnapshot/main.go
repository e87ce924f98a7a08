// Command gensnapshot writes the snapshot of a catalog file that the emulator embeds, so that
// it starts without parsing the catalog; it fails, listing every problem, if the catalog does
// not load. Run through `go generate ./fixtures`.
//
//	go run ./emulator/internal/catalog/gensnapshot CATALOG.yaml SNAPSHOT.json
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: gensnapshot CATALOG.yaml SNAPSHOT.json")
	}
	source, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	snapshot, err := catalog.BuildSnapshot(filepath.Base(args[0]), source)
	if err != nil {
		return err
	}
	return os.WriteFile(args[1], snapshot, 0o644)
}
