package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
