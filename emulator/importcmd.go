package emulator

import (
	"context"
	"io"

	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// ImportCommand runs the import or drift command (command is "import" or "drift") with its
// arguments and returns the process exit status: 0 done (drift: no drift), 1 drift found, 2 a
// usage, file or connection error.
func ImportCommand(ctx context.Context, command string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return importer.Main(ctx, command, args, getenv, stdout, stderr)
}
