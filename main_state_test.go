package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator"
)

// --state-on-exit writes the default tenant at a clean shutdown, and --state goes on from it
// after a restart; a bad state file stops the start with exit 2, naming the file.
func TestStateAcrossARestart(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "world.json")
	first := serve(t, nil, "--addr", "127.0.0.1:0", "--clock", "manual", "--seed", "4", "--state-on-exit", file)
	if code, _ := first.do(t, "PUT", "/_emulator/accounts/acct_all", `{"credits": 321}`); code != 200 {
		t.Fatalf("set credits: %d", code)
	}
	if code, _ := first.do(t, "POST", "/_emulator/clock", `{"advance": "90s"}`); code != 200 {
		t.Fatalf("advance: %d", code)
	}
	if err := first.stop(t); err != nil {
		t.Fatalf("clean shutdown: %v\n%s", err, first.stderr)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("--state-on-exit wrote nothing: %v", err)
	}

	// Past 64 MiB, as the state of a busy tenant is: the file is read up to the memory budget,
	// which bounds what a tenant's state holds.
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(bytes.Repeat([]byte(" "), 65<<20))
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	second := serve(t, map[string]string{"MEDIAGEN_STATE": file}, "--addr", "127.0.0.1:0", "--clock", "manual")
	_, clock := second.get(t, "/_emulator/clock")
	if clock["now"] != "2026-01-01T00:01:30Z" {
		t.Errorf("clock after the restart: %v", clock)
	}
	_, accounts := second.get(t, "/_emulator/accounts")
	if !strings.Contains(strings.Join(strings.Fields(fmtAny(accounts)), ""), "available:321") {
		t.Errorf("accounts after the restart: %v", accounts)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format": 1, "clock": `), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(t.TempDir(), "missing.json")} {
		r := runSync(t, nil, "--addr", "127.0.0.1:0", "--state", path)
		if r.code != 2 || !strings.Contains(r.stderr, "--state "+path) || strings.Contains(r.stdout, "listening") {
			t.Errorf("--state %s: exit %d\nstdout %s\nstderr %s", path, r.code, r.stdout, r.stderr)
		}
	}
}

func fmtAny(v any) string { return strings.ReplaceAll(fmt.Sprint(v), " ", "") }

// --memory-budget holds the heap to the budget plus the fixed overhead: it sets the garbage
// collector's soft limit, unless GOMEMLIMIT is set. Not parallel: the limit is the process's.
func TestMemoryBudgetSetsTheSoftLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--memory-budget", "64MiB")
	if got, want := debug.SetMemoryLimit(-1), int64(64<<20)+emulator.MemoryOverhead; got != want {
		t.Errorf("soft memory limit %d, want %d (the budget and the overhead)", got, want)
	}
	in.stop(t)
	debug.SetMemoryLimit(before)
	in = serve(t, map[string]string{"GOMEMLIMIT": "3GiB"}, "--addr", "127.0.0.1:0", "--memory-budget", "64MiB")
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set the limit moved to %d", got)
	}
	in.stop(t)
}
