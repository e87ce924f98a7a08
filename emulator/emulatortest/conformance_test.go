package emulatortest_test

import (
	"os"
	"testing"

	"github.com/mediagen/mediagen-emulator/docs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/conformance"
)

// TestMain checks every answer the emulators these tests start give against the published
// OpenAPI document; one that does not conform fails the run.
func TestMain(m *testing.M) {
	os.Exit(conformance.Run(m, docs.OpenAPI))
}
