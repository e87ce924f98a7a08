package battery

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/explore"
)

// startEmulator serves an emulator as the conformance command starts one: the skipping clock,
// seed 1. It is an Emulator for Main.
func startEmulator(t *testing.T) Emulator {
	return func(context.Context) (string, string, func(), error) {
		s, err := emulator.NewServer(emulator.Config{SkipClock: true, Seeded: true, Seed: 1})
		if err != nil {
			return "", "", nil, err
		}
		srv := httptest.NewServer(s)
		return srv.URL, "", func() { srv.Close(); _ = s.Close() }, nil
	}
}

// runBattery runs the battery with the test adapter given the bug, on an emulator of its own;
// nil when it could not run (said with t.Error, so it may run in a goroutine).
func runBattery(t *testing.T, b *Battery, bug string) *Results {
	t.Helper()
	url, _, stop, err := startEmulator(t)(context.Background())
	if err != nil {
		t.Error(err)
		return nil
	}
	defer stop()
	var progress bytes.Buffer
	res, err := Run(context.Background(), b, Options{Target: explore.Target{URL: url}, Command: adapterCommand(bug), Progress: &progress})
	if err != nil {
		t.Errorf("%v\n%s", err, progress.String())
	}
	return res
}

// mainRun is what a conformance command run gave: its exit status, output and conformance.json.
type mainRun struct {
	code           int
	stdout, stderr string
	json           []byte
}

// runMain runs the conformance command with the test adapter given the bug, writing into out,
// on an in-process emulator of its own; it may run in a goroutine.
func runMain(t *testing.T, out, bug string) mainRun {
	var stdout, stderr bytes.Buffer
	cmd := adapterCommand(bug)
	code := Main(context.Background(), []string{"--out", out, "--", cmd[0], cmd[1]}, func(string) string { return "" }, &stdout, &stderr, startEmulator(t))
	r := mainRun{code: code, stdout: stdout.String(), stderr: stderr.String()}
	for _, name := range []string{MarkdownFile, BadgeFile} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, JSONFile))
	if err != nil {
		t.Error(err)
	}
	r.json = data
	return r
}

// failed names the cases that did not pass.
func failed(r *Results) []string {
	var names []string
	for _, c := range r.Cases {
		if !c.Passed {
			names = append(names, c.Name)
		}
	}
	return names
}

// The battery through the test adapter, careful and with each bug planted, all at once (the
// runs mostly wait out one-second Retry-Afters, so they overlap):
//
//   - the careful adapter passes every case;
//   - one that does not follow a retired model's successor fails that case alone, with the exit
//     it gave and the job it did not make, and two runs of it write the same conformance.json;
//   - one that retries a generation with a fresh Idempotency-Key fails exactly the cases whose
//     first generation got an answer it could not know the outcome of (a 5xx, a reset, a broken
//     or cut answer), each with the finding and its journal entries; a 429 is an answer, and a
//     late answer is one too; two runs of it give the same results, although the keys it
//     makes differ.
func TestAdapters(t *testing.T) {
	dir := t.TempDir()
	var careful *Results
	var newKey [2]*Results
	var noSuccessor [2]mainRun
	var wg sync.WaitGroup
	wg.Go(func() { careful = runBattery(t, v1, bugNone) })
	for i := range newKey {
		wg.Go(func() { newKey[i] = runBattery(t, v1, bugNewKey) })
	}
	for i := range noSuccessor {
		wg.Go(func() { noSuccessor[i] = runMain(t, filepath.Join(dir, strconv.Itoa(i)), bugNoSuccessor) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Run("careful", func(t *testing.T) {
		if !careful.Passed() {
			t.Errorf("the careful adapter failed %q:\n%s", failed(careful), careful.JSON())
		}
	})
	t.Run(bugNoSuccessor, func(t *testing.T) {
		for _, r := range noSuccessor {
			if r.code != 1 || !strings.Contains(r.stdout, "conformance v1 | 26/27") || !strings.Contains(r.stdout, "FAIL retired-model-successor-followed") {
				t.Errorf("exit %d; want 1 and the failed case named\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			// The progress shows what the adapter said under its failed case.
			if !strings.Contains(r.stderr, "retired-model-successor-followed: FAIL (expected success, got failure)\n    | adapter: 410 model_retired") {
				t.Errorf("the progress does not show the adapter's output under its failed case:\n%s", r.stderr)
			}
		}
		if !bytes.Equal(noSuccessor[0].json, noSuccessor[1].json) {
			t.Errorf("two runs wrote different results:\n%s\n---\n%s", noSuccessor[0].json, noSuccessor[1].json)
		}
		res := readResults(t, noSuccessor[0].json)
		if got := failed(res); !slices.Equal(got, []string{"retired-model-successor-followed"}) {
			t.Fatalf("failed %q; want only retired-model-successor-followed", got)
		}
		c := res.Cases[slices.IndexFunc(res.Cases, func(c CaseResult) bool { return !c.Passed })]
		var rules []string
		for _, f := range c.Failures {
			rules = append(rules, f.Kind+" "+f.Rule)
		}
		if c.Got != Failure || !slices.Equal(rules, []string{"exit expected-success", "check jobs-of-model"}) {
			t.Errorf("the failed case: got %s, failures %q", c.Got, rules)
		}
	})
	t.Run(bugNewKey, func(t *testing.T) {
		want := []string{"retry-ambiguous-5xx-same-key", "retry-5xx-after-core-same-key", "retry-gateway-502-same-key",
			"retry-reset-before-core-same-key", "retry-reset-after-core-same-key", "retry-truncated-after-core-same-key",
			"retry-malformed-after-core-same-key", "retry-after-seconds-503", "retry-after-http-date-503"}
		if got := failed(newKey[0]); !slices.Equal(got, want) {
			t.Errorf("the new-key adapter failed %q; want %q", got, want)
		}
		// The reasons quote the keys the adapter made afresh, by their order: the same bytes.
		if a, b := newKey[0].JSON(), newKey[1].JSON(); !bytes.Equal(a, b) {
			t.Errorf("two runs gave different results:\n%s\n---\n%s", a, b)
		}
		for _, c := range newKey[0].Cases {
			if !c.Passed && !slices.ContainsFunc(c.Failures, func(f api.VerdictFailure) bool { return f.Rule == "new-key-on-retry" && len(f.Entries) > 0 }) {
				t.Errorf("%s failed without a new-key-on-retry finding citing entries: %+v", c.Name, c.Failures)
			}
		}
	})
}

// readResults reads conformance.json back.
func readResults(t *testing.T, data []byte) *Results {
	t.Helper()
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// A shared emulator started on any clock runs the cases alike: each case's tenant is put on
// the skipping clock, so a manual clock no client moves holds nothing up and a real one waits
// for nothing. The cases here wait on a job, on a link's expiry and on a quote's.
func TestCasesOnEveryClock(t *testing.T) {
	var cases []Case
	for _, name := range []string{"slow-job-waited-for", "expired-link-refreshed", "expired-quote-quoted-again", "failed-job-not-regenerated"} {
		c, ok := v1.Case(name)
		if !ok {
			t.Fatalf("no case %s", name)
		}
		cases = append(cases, c)
	}
	b := &Battery{Name: "clocks", Version: 1, Cases: cases}
	for _, clock := range []string{"real", "manual", "skip"} {
		t.Run(clock, func(t *testing.T) {
			t.Parallel()
			s, err := emulator.NewServer(emulator.Config{ManualClock: clock == "manual", SkipClock: clock == "skip", Seeded: true, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s)
			defer func() { srv.Close(); _ = s.Close() }()
			res, err := Run(context.Background(), b, Options{Target: explore.Target{URL: srv.URL}, Command: adapterCommand(bugNone)})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Passed() {
				t.Errorf("on the %s clock the careful adapter failed %q:\n%s", clock, failed(res), res.JSON())
			}
		})
	}
}

// oneCase is a battery of the one case of v1 named.
func oneCase(t *testing.T, name string) *Battery {
	t.Helper()
	c, ok := v1.Case(name)
	if !ok {
		t.Fatalf("no case %s", name)
	}
	return &Battery{Name: "one", Version: 1, Cases: []Case{c}}
}

// An adapter that does not end in its time is killed, and its case is a timeout; one that
// cannot be started stops the battery with an error, not a score.
func TestAdapterTimeoutAndMissing(t *testing.T) {
	url, _, stop, err := startEmulator(t)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	b := oneCase(t, "baseline-idempotency-key-sent")
	res, err := Run(context.Background(), b, Options{Target: explore.Target{URL: url}, Command: adapterCommand(bugHang), Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cases[0]
	if c.Passed || c.Got != Timeout || len(c.Failures) == 0 || c.Failures[0].Rule != "expected-success" || !strings.Contains(c.Failures[0].Reason, "did not end in time") {
		t.Errorf("a hanging adapter: %+v", c)
	}
	_, err = Run(context.Background(), b, Options{Target: explore.Target{URL: url}, Command: []string{filepath.Join(t.TempDir(), "no-such-adapter")}})
	if err == nil || !strings.Contains(err.Error(), "no-such-adapter") {
		t.Errorf("a missing adapter: %v; want an error naming it", err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"--emulator", url, "--out", t.TempDir(), "--adapter", "/no/such/adapter"},
		func(string) string { return "" }, &stdout, &stderr, nil); code != 2 || !strings.Contains(stderr.String(), "/no/such/adapter") {
		t.Errorf("a missing adapter through the command: exit %d, %s", code, stderr.String())
	}
}

// An emulator whose control API wants a token is run with the one given (here through
// $MEDIAGEN_ADMIN_TOKEN), and refuses a battery without it.
func TestAdminToken(t *testing.T) {
	s, err := emulator.NewServer(emulator.Config{SkipClock: true, Seeded: true, Seed: 1, AdminToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer func() { srv.Close(); _ = s.Close() }()
	b := oneCase(t, "retry-ambiguous-5xx-same-key")
	res, err := Run(context.Background(), b, Options{Target: explore.Target{URL: srv.URL, AdminToken: "s3cret"}, Command: adapterCommand(bugNone)})
	if err != nil || !res.Passed() {
		t.Fatalf("with the token: %v %s", err, res.JSON())
	}
	if _, err := Run(context.Background(), b, Options{Target: explore.Target{URL: srv.URL}, Command: adapterCommand(bugNone)}); err == nil {
		t.Fatal("without the token the battery ran")
	}
}

// An adapter that once sends a generation without its Idempotency-Key fails the baseline case,
// which names the answer it provoked.
func TestAdapterWithoutKeyFailsBaseline(t *testing.T) {
	url, _, stop, err := startEmulator(t)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	res, err := Run(context.Background(), oneCase(t, "baseline-idempotency-key-sent"), Options{Target: explore.Target{URL: url}, Command: adapterCommand(bugKeyLater)})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cases[0]
	if c.Passed || c.Got != Success || len(c.Failures) != 1 || c.Failures[0].Rule != CheckNeverAnswered || !slices.Equal(c.Failures[0].Entries, []int64{2}) {
		t.Errorf("the baseline case: %+v", c)
	}
}
