package explore

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// strikesGenerate is a client that fails whenever anything strikes its generation.
func strikesGenerate(_ string, p api.Plan) bool {
	for _, q := range p.Perturbations {
		if strings.HasPrefix(q.At, "POST /v1/generate#") {
			return true
		}
	}
	return false
}

type result struct {
	code           int
	stdout, stderr string
}

func runMain(t *testing.T, args ...string) result {
	t.Helper()
	var out, errs bytes.Buffer
	noStart := func(context.Context, int64) (string, func(), error) {
		t.Fatal("explore started an emulator though given one")
		return "", nil, nil
	}
	code := Main(context.Background(), args, func(string) string { return "" }, &out, &errs, noStart)
	return result{code, out.String(), errs.String()}
}

// okClient is a client that does nothing and exits 0: a shell, which starts in a few
// milliseconds, where the race-built test binary takes a second.
var okClient = []string{"sh", "-c", "echo done"}

// TestMainFindsShrinksAndReplays: explore finds the plan the client fails under, shrinks it
// to one perturbation of POST /v1/generate, the mildest, confirms it, writes its bundle and
// exits 1; the same seed prints the same bytes; the bundle replays failing; a client that
// survives every plan passes.
func TestMainFindsShrinksAndReplays(t *testing.T) {
	t.Parallel()
	f, target := newFake(t)
	f.fails = strikesGenerate
	out := filepath.Join(t.TempDir(), "bundle.json")
	client := okClient // the fake decides what fails: the client only has to run
	args := append([]string{"--emulator", target.URL, "--admin-token", "tok", "--seed", "7", "--runs", "50", "--out", out, "--"}, client...)
	r := runMain(t, args...)
	if r.code != 1 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"run 1: no perturbations\n",
		"failure (seed 7, run ",
		"on 5 of 5 re-runs, under this plan:\n  POST /v1/generate#1 error 500 internal_error\nfailed: finding retry-new-key (journal entries 2, 4)\n",
		"bundle written to " + out,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "tenant explore-") || !strings.Contains(r.stderr, "retried POST /v1/generate with a new Idempotency-Key") {
		t.Errorf("the reasons go to stderr, not stdout:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "run 2/50: 0 failures so far") {
		t.Errorf("no progress on stderr:\n%s", r.stderr)
	}
	if again := runMain(t, args...); again.stdout != r.stdout || again.code != 1 {
		t.Errorf("the same seed printed\n%s\nthen\n%s", r.stdout, again.stdout)
	}

	b, err := ReadBundle(out)
	if err != nil {
		t.Fatal(err)
	}
	if b.Seed != 7 || Log(b.Plan) != "POST /v1/generate#1 error 500 internal_error" || strings.Join(b.Command, " ") != strings.Join(client, " ") {
		t.Errorf("bundle: seed %d, plan %s, command %q", b.Seed, Log(b.Plan), b.Command)
	}
	r = runMain(t, "--emulator", target.URL, "--replay", out, "--confirm", "3")
	if r.code != 1 || !strings.Contains(r.stdout, "failed 3 of 3 runs\n") {
		t.Errorf("replay: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	f.mu.Lock()
	f.fails = nil
	f.mu.Unlock()
	if r = runMain(t, "--emulator", target.URL, "--replay", out); r.code != 0 || !strings.Contains(r.stdout, "passed 1 of 1 runs\n") {
		t.Errorf("replay of a fixed client: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runMain(t, append([]string{"--emulator", target.URL, "--runs", "20", "--out", out, "--"}, client...)...)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "no failure in 20 runs\n") || strings.Count(r.stdout, "\nrun ") != 19 {
		t.Errorf("a client surviving all: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.plans) != 0 {
		t.Errorf("tenants left behind: %d", len(f.plans))
	}
}

// TestMainFlaky: a failure that does not come back on every re-run is reported flaky, and the
// search goes on to the end.
func TestMainFlaky(t *testing.T) {
	t.Parallel()
	f, target := newFake(t)
	f.fails = func(tenant string, p api.Plan) bool {
		return strikesGenerate(tenant, p) && !strings.HasSuffix(tenant, "-c2")
	}
	r := runMain(t, append([]string{"--emulator", target.URL, "--runs", "10", "--out", filepath.Join(t.TempDir(), "b.json"), "--"}, okClient...)...)
	if r.code != 1 || !strings.Contains(r.stdout, "  flaky under this plan: failed 4 of 5 re-runs: POST /v1/generate#1 error 500 internal_error\n") ||
		!strings.Contains(r.stdout, "no failure confirmed in 10 runs; ") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestMainBaselineFails: a client that fails under no plan at all is reported so.
func TestMainBaselineFails(t *testing.T) {
	t.Parallel()
	_, target := newFake(t)
	out := filepath.Join(t.TempDir(), "b.json")
	r := runMain(t, append([]string{"--emulator", target.URL, "--confirm", "2", "--out", out, "--"}, append(self(t), "explore-test-client", "env")...)...)
	want := "run 1: no perturbations\n  fails with no adversity at all\n  failed: exit status 3\nfailure (seed 1, run 1), on 2 of 2 re-runs, under this plan:\n  no perturbations: the client fails with no adversity\nfailed: exit status 3\n"
	if r.code != 1 || !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stderr, "the command exited 3") || !strings.Contains(r.stderr, "to stderr") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestMainMisuse: no command, bad flags, a bundle that does not read, an --out that cannot be
// written: exit 2, naming the problem.
func TestMainMisuse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notBundle := filepath.Join(dir, "not.json")
	if err := os.WriteFile(notBundle, []byte(`{"format":"something/1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"format":`), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyCmd, _ := json.Marshal(api.Bundle{Format: api.BundleFormat, Seed: 1})
	noCommand := filepath.Join(dir, "nocommand.json")
	if err := os.WriteFile(noCommand, emptyCmd, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--runs", "5"}, "no command"},
		{[]string{"--runs", "0", "--", "true"}, "--runs must be at least 1"},
		{[]string{"--confirm", "0", "--", "true"}, "--confirm must be at least 1"},
		{[]string{"--timeout", "0s", "--", "true"}, "--timeout must be positive"},
		{[]string{"--runs", "many", "--", "true"}, "invalid value"},
		{[]string{"--replay", filepath.Join(dir, "missing.json"), "--", "true"}, "missing.json: no such file or directory"},
		{[]string{"--replay", notBundle, "--", "true"}, `not.json: format "something/1", want "mediagen-explore-bundle/1"`},
		{[]string{"--replay", broken, "--", "true"}, "broken.json: not a bundle"},
		{[]string{"--replay", noCommand}, "no command"},
		{[]string{"--out", dir, "--", "true"}, "a folder, not a file"},
		{[]string{"--out", filepath.Join(dir, "no", "such.json"), "--", "true"}, "does not exist"},
	} {
		r := runMain(t, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	_, target := newFake(t)
	if r := runMain(t, "--emulator", target.URL, "--", "/nonexistent/client"); r.code != 2 || !strings.Contains(r.stderr, "cannot run /nonexistent/client") {
		t.Errorf("a command that cannot start: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestMainInterrupted: an explore whose context ends stops with status 2 and says so.
func TestMainInterrupted(t *testing.T) {
	t.Parallel()
	_, target := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errs bytes.Buffer
	code := Main(ctx, append([]string{"--emulator", target.URL, "--out", filepath.Join(t.TempDir(), "b.json"), "--"}, self(t)...), func(string) string { return "" }, &out, &errs, nil)
	if code != 2 || !strings.Contains(errs.String(), "explore: interrupted") {
		t.Errorf("exit %d, stderr %q", code, errs.String())
	}
}
