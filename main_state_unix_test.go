//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// --state-on-exit's file is checked at the start, so a run never finds out at its end that its
// state has nowhere to go; what is not a regular file (a folder, a symlink, a device) is never
// replaced. Each refusal is exit 2 naming the file, before the listening line.
func TestStateOnExitIsCheckedAtTheStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular.json")
	if err := os.WriteFile(regular, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, says string }{
		{filepath.Join(dir, "missing", "world.json"), "does not exist"},
		{dir, "a folder"},
		{link, "symbolic link"},
		{fifo, "not a regular file"},
		{"/dev/null", "not a regular file"},
	} {
		r := runSync(t, nil, "--addr", "127.0.0.1:0", "--state-on-exit", tc.path)
		if r.code != 2 || !strings.Contains(r.stderr, "--state-on-exit "+tc.path+": ") || !strings.Contains(r.stderr, tc.says) || strings.Contains(r.stdout, "listening") {
			t.Errorf("--state-on-exit %s: exit %d, want 2 saying %q\nstdout %s\nstderr %s", tc.path, r.code, tc.says, r.stdout, r.stderr)
		}
	}
	if got, err := os.ReadFile(regular); err != nil || string(got) != "{}" {
		t.Errorf("the file behind the symlink: %q, %v", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("the checks left files behind: %v", entries)
	}
}

// A path that turns into something else while the emulator runs is left as it is at exit, and
// the write leaves no temporary file behind; an existing regular file is replaced whole.
func TestStateOnExitNeverReplacesANonRegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "world.json")
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--state-on-exit", file)
	if err := os.Mkdir(file, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := in.stop(t); err == nil || !strings.Contains(err.Error(), "a folder") {
		t.Errorf("exit with a folder at the state's path: %v", err)
	}
	if fi, err := os.Stat(file); err != nil || !fi.IsDir() {
		t.Errorf("the folder was replaced: %v %v", fi, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}

	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	in = serve(t, nil, "--addr", "127.0.0.1:0", "--state-on-exit", other)
	if err := in.stop(t); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(other)
	if err != nil || !strings.HasPrefix(string(data), `{"format":`) {
		t.Errorf("the state file holds %.40q, %v", data, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left behind: %v", entries)
	}
}

// --state reads only a regular file, and at most the snapshot bound of it: a FIFO would block
// the start and /dev/zero would never end.
func TestStateReadsOnlyARegularFile(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", t.TempDir()} {
		r := runSync(t, nil, "--addr", "127.0.0.1:0", "--state", path)
		if r.code != 2 || !strings.Contains(r.stderr, "--state "+path+": ") || strings.Contains(r.stdout, "listening") {
			t.Errorf("--state %s: exit %d\nstdout %s\nstderr %s", path, r.code, r.stdout, r.stderr)
		}
	}
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<40); err != nil { // sparse: a terabyte that takes no disk
		t.Skip("no sparse files here:", err)
	}
	r := runSync(t, nil, "--addr", "127.0.0.1:0", "--state", big)
	if r.code != 2 || !strings.Contains(r.stderr, "over the limit") {
		t.Errorf("--state of a terabyte: exit %d\n%s", r.code, r.stderr)
	}
}
