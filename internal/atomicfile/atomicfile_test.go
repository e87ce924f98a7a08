package atomicfile

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestWriteReplaces: Write replaces a file with the new data and the permissions asked for,
// whatever the old file had, and leaves nothing else in the folder.
func TestWriteReplaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old and longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("the file holds %q, %v; want %q", got, err, "new")
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("the folder holds %v; want the file alone", names)
	}
}

// TestCommitFailsCleanly: when the rename fails (the path is a folder), the folder is left as it
// was and the temporary file is gone.
func TestCommitFailsCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "taken")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "inside"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("data"), 0o644); err == nil {
		t.Fatal("Write over a folder that is not empty succeeded")
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "taken" {
		t.Errorf("the folder holds %v; want only what it held", names)
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Errorf("the folder at the path is gone: %v", err)
	}
}

// TestCreateInAMissingFolder: Create fails at once when the folder does not exist.
func TestCreateInAMissingFolder(t *testing.T) {
	t.Parallel()
	if f, err := Create(filepath.Join(t.TempDir(), "missing", "state.json")); err == nil {
		f.Discard()
		t.Fatal("Create in a missing folder succeeded")
	}
}

// TestDiscard: Discard removes the temporary file and leaves the path alone; after Commit it
// removes nothing.
func TestDiscard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.yaml")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("after Create the folder holds %v; want one temporary file", names)
	}
	if err := f.Discard(); err != nil {
		t.Fatal(err)
	}
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("after Discard the folder holds %v; want nothing", names)
	}

	f, err = Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Commit([]byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Discard(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "x" {
		t.Errorf("after Commit and Discard the file holds %q, %v", got, err)
	}
}
