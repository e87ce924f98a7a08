// Package atomicfile writes a file whole or not at all: the data goes to a temporary file in the
// same folder, synced to the disk, which then takes the file's name, so neither a reader nor a
// crash ever meets half of it.
package atomicfile

import (
	"os"
	"path/filepath"
)

// File is a temporary file in the folder of the path it is to replace.
type File struct {
	f    *os.File
	path string
	done bool
}

// Create opens the temporary file for path now, so that a folder that cannot be written fails
// before the work whose result the file will hold. Commit or Discard it.
func Create(path string) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &File{f: f, path: path}, nil
}

// Commit writes data with the permissions perm, syncs it and moves it over the path. On an error
// the temporary file is removed and the path is left as it was.
func (t *File) Commit(data []byte, perm os.FileMode) error {
	t.done = true
	_, err := t.f.Write(data)
	if err == nil {
		err = t.f.Chmod(perm)
	}
	if err == nil {
		err = t.f.Sync()
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(t.f.Name(), t.path)
	}
	if err != nil {
		_ = os.Remove(t.f.Name())
		return err
	}
	// The rename is made durable too, where the folder can be synced.
	if d, err := os.Open(filepath.Dir(t.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Discard removes the temporary file unless Commit has taken it, so it may be deferred right
// after Create.
func (t *File) Discard() error {
	if t.done {
		return nil
	}
	t.done = true
	t.f.Close()
	return os.Remove(t.f.Name())
}

// Write writes data to path whole or not at all, with the permissions perm.
func Write(path string, data []byte, perm os.FileMode) error {
	t, err := Create(path)
	if err != nil {
		return err
	}
	return t.Commit(data, perm)
}
