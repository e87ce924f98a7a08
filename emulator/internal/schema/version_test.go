package schema

import (
	"os"
	"strings"
	"testing"
)

// The schema library and the version of it whose choice of format functions format.go copies.
const (
	libraryPath     = "github.com/santhosh-tekuri/jsonschema/v5"
	mirroredVersion = "v5.3.1"
	goModFile       = "../../../go.mod"
)

// TestLibraryIsTheMirroredVersion fails when go.mod pins (or replaces) the schema library with
// anything but the version format.go mirrors: a library that picked format functions another
// way would bypass the stricter checks silently.
func TestLibraryIsTheMirroredVersion(t *testing.T) {
	data, err := os.ReadFile(goModFile)
	if err != nil {
		t.Fatal(err)
	}
	var pinned []string
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		switch {
		case len(fields) >= 2 && fields[0] == libraryPath:
			pinned = append(pinned, fields[1])
		case len(fields) > 0 && fields[0] == "replace" && strings.Contains(line, libraryPath):
			pinned = append(pinned, "replaced: "+strings.TrimSpace(line))
		}
	}
	if len(pinned) != 1 || pinned[0] != mirroredVersion {
		t.Fatalf("go.mod pins %s as %q, but format.go mirrors %s.\n"+
			"Re-read how the library picks a format function (Compiler.Formats, then Formats); bring "+
			"format.go in line, then set mirroredVersion in version_test.go.", libraryPath, pinned, mirroredVersion)
	}
}
