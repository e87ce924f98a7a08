package schema

import (
	"os"
	"strings"
	"testing"
)

// The schema library and the version of it whose semantics the fast path (verdict.go) and the
// choice of format functions (format.go) copy.
const (
	libraryPath     = "github.com/santhosh-tekuri/jsonschema/v5"
	mirroredVersion = "v5.3.1"
	goModFile       = "../../../go.mod"
)

// TestLibraryIsTheMirroredVersion fails when go.mod pins (or replaces) the schema library with
// anything but the version the fast path mirrors: the fast path says "valid" on its own, so a
// library that changed what a keyword means would be contradicted silently.
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
		t.Fatalf("go.mod pins %s as %q, but the fast path mirrors %s.\n"+
			"Re-read the library's Schema.validate (schema.go), what its compiler.go loads for draft "+
			"2020-12, and how it picks a format function (Compiler.Formats, then Formats); bring "+
			"verdict.go and format.go in line, extend TestVerdictKeywords for whatever changed, then "+
			"set mirroredVersion in version_test.go.", libraryPath, pinned, mirroredVersion)
	}
}
