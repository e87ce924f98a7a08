// Package golden compares the documents the emulator's tests produce with golden files, and
// rewrites those files when the tests run with -update.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files instead of comparing with them")

// Check compares got with the file at path, or writes it there under -update. It returns what
// the file holds and whether it matches, so a caller can explain a difference its own way; a
// missing file fails the test.
func Check(t testing.TB, path string, got []byte) (want []byte, ok bool) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return got, true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	return want, bytes.Equal(got, want)
}
