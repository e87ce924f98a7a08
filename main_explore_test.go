package main

import (
	"os"
	"strings"
	"testing"
)

// TestExploreDispatch: explore is a command of its own, with its exit statuses: 2 for misuse,
// 0 for a client that never fails, and its flags listed by -h.
func TestExploreDispatch(t *testing.T) {
	t.Parallel()
	if r := runSync(t, nil, "explore", "--runs", "3"); r.code != 2 || !strings.Contains(r.stderr, "no command") {
		t.Errorf("explore without a command: exit %d, stderr %q", r.code, r.stderr)
	}
	// The test binary running no test is a client that sends nothing and exits 0.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if r := runSync(t, nil, "explore", "--runs", "2", "--out", t.TempDir()+"/b.json", "--", exe, "-test.run=^$"); r.code != 0 || !strings.HasSuffix(r.stdout, "no failure in 2 runs\n") {
		t.Errorf("explore of a client sending nothing: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runSync(t, nil, "explore", "-h"); r.code != 0 || !strings.Contains(r.stderr, "--replay FILE") || !strings.Contains(r.stderr, "-confirm") {
		t.Errorf("explore -h: exit %d, stderr %q", r.code, r.stderr)
	}
}
