package explore

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/internal/atomicfile"
)

// Starter starts an emulator for the command to run against, seeded with seed, on the skip
// clock and a loopback port, and returns its base URL and a function that stops it.
type Starter func(ctx context.Context, seed int64) (url string, stop func(), err error)

// Defaults of the explore command's flags.
const (
	DefaultRuns    = 100
	DefaultConfirm = 5
	DefaultTimeout = 60 * time.Second
	DefaultOut     = "mediagen-explore.json"
)

// maxShrinkRuns bounds the runs one failure's shrinking takes: a plan of three perturbations
// rarely needs twenty.
const maxShrinkRuns = 64

// maxBundleFile bounds a bundle file --replay reads.
const maxBundleFile = 512 << 20

const usage = `Usage: mediagen-emulator explore [--runs N] [--seed S] [--out FILE] [--terminal] [--emulator URL] [--admin-token T] [--confirm K] [--timeout D] -- CMD [ARGS...]
       mediagen-emulator explore --replay FILE [--confirm K] [--emulator URL] [--timeout D] [-- CMD [ARGS...]]

Runs CMD again and again, each run in a fresh tenant under an adversity plan drawn from the
seed (the first run under none), favouring cases earlier runs did not reach. CMD finds the
emulator in MEDIAGEN_EMULATOR_URL, a key bound to its tenant in MEDIAGEN_API_KEY and the
tenant's name in MEDIAGEN_TENANT (and MEDIAGEN_ADMIN_TOKEN when one is given). A run fails when
CMD exits non-zero (not judged under a plan forcing a failed, expired or refused job), when
the tenant's report has an error-severity finding, or when a ledger invariant breaks. A
failing plan is shrunk to the smallest that still fails, confirmed on K of K re-runs (else it
is reported flaky and the search goes on), printed with the failure, and written as a bundle
to --out, which --replay runs again (once, or K times with --confirm).

Without --emulator an emulator is started in-process on 127.0.0.1, on the skip clock, seeded
with the seed. Progress goes to standard error; the plans to standard output, the same bytes
for the same seed and client.

Exit status: 0 when nothing failed, 1 when a failure was found (or a replay failed), 2 on
misuse.

Flags:
`

// Main runs the explore command and returns its exit status.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, start Starter) int {
	fs := flag.NewFlagSet("mediagen-emulator explore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	var e explorer
	fs.IntVar(&e.runs, "runs", DefaultRuns, "how many runs to make")
	fs.Int64Var(&e.seed, "seed", 1, "seed the plans (and an in-process emulator) are drawn from")
	fs.StringVar(&e.out, "out", DefaultOut, "file the bundle of a failure is written to")
	fs.BoolVar(&e.terminal, "terminal", false, "draw outcomes no client turns into success too: failed, expired and refused jobs")
	emulatorURL := fs.String("emulator", "", "base URL of a running emulator to use (default: one started in-process)")
	fs.StringVar(&e.target.AdminToken, "admin-token", getenv("MEDIAGEN_ADMIN_TOKEN"), "the emulator's admin token (default $MEDIAGEN_ADMIN_TOKEN)")
	fs.IntVar(&e.confirm, "confirm", DefaultConfirm, "re-runs a shrunk failure must fail on, all of them, to be reported")
	fs.DurationVar(&e.timeout, "timeout", DefaultTimeout, "longest one run of CMD may take; it is then killed and the run fails")
	replay := fs.String("replay", "", "bundle FILE whose plan CMD is run under")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	e.command = fs.Args()
	e.stdout, e.stderr = stdout, stderr
	misuse := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mediagen-emulator explore: %s\n", fmt.Sprintf(format, a...))
		return 2
	}
	confirmGiven := false
	fs.Visit(func(f *flag.Flag) { confirmGiven = confirmGiven || f.Name == "confirm" })
	switch {
	case e.runs < 1:
		return misuse("--runs must be at least 1")
	case e.confirm < 1:
		return misuse("--confirm must be at least 1")
	case e.timeout <= 0:
		return misuse("--timeout must be positive")
	}
	var bundle api.Bundle
	if *replay != "" {
		b, err := ReadBundle(*replay)
		if err != nil {
			return misuse("--replay %s: %v", *replay, err)
		}
		bundle = b
		if len(e.command) == 0 {
			e.command = b.Command
		}
		e.seed = b.Seed
		if !confirmGiven {
			e.confirm = 1
		}
	} else if err := checkOut(e.out); err != nil {
		return misuse("--out %s: %v", e.out, err)
	}
	if len(e.command) == 0 {
		return misuse("no command: give it after --, as in explore -- python3 client.py")
	}
	// A control call that never answers must not hang explore: --timeout bounds the command only.
	e.target.Client = &http.Client{Timeout: time.Minute}
	e.target.URL = strings.TrimSuffix(*emulatorURL, "/")
	if e.target.URL == "" {
		url, stop, err := start(ctx, e.seed)
		if err != nil {
			return misuse("cannot start an emulator: %v", err)
		}
		defer stop()
		e.target.URL = url
	}
	if *replay != "" {
		return e.replay(ctx, bundle)
	}
	return e.explore(ctx)
}

// checkOut says why a bundle could not be written to path, before any run is made.
func checkOut(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("a folder, not a file")
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("its folder %s does not exist", filepath.Dir(path))
	}
	return nil
}

// ReadBundle reads a bundle file explore wrote.
func ReadBundle(path string) (api.Bundle, error) {
	var b api.Bundle
	f, err := os.Open(path)
	if err != nil {
		return b, errors.Unwrap(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBundleFile+1))
	if err != nil {
		return b, errors.Unwrap(err)
	}
	if len(data) > maxBundleFile {
		return b, fmt.Errorf("over %d bytes, more than a bundle holds", maxBundleFile)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("not a bundle: %v", err)
	}
	if b.Format != api.BundleFormat {
		return b, fmt.Errorf("format %q, want %q", b.Format, api.BundleFormat)
	}
	if n := len(b.Plan.Perturbations); n > MaxPlan {
		return b, fmt.Errorf("a plan of %d perturbations, more than %d", n, MaxPlan)
	}
	return b, nil
}

// explorer is one explore command's settings and what its runs have found so far.
type explorer struct {
	target   Target
	command  []string
	runs     int
	seed     int64
	out      string
	terminal bool
	confirm  int
	timeout  time.Duration

	stdout, stderr io.Writer

	reached map[string]bool
	routes  map[string]int
}

// run runs the command once under a plan in the tenant; an error means the run could not be
// made or judged.
func (e *explorer) run(ctx context.Context, tenant string, plan api.Plan, keep bool) (Outcome, error) {
	// A tenant of the same name left by an earlier explore (a run interrupted, a bundle's
	// tenant kept) would lend this run its jobs and journal: each run starts afresh.
	_ = e.target.DropTenant(ctx, tenant)
	return e.target.Run(ctx, RunSpec{Tenant: tenant, Plan: plan, Command: e.command, Timeout: e.timeout, JudgeExit: !Terminal(plan), Keep: keep})
}

// explore makes the runs until one fails for sure.
func (e *explorer) explore(ctx context.Context) int {
	e.reached = map[string]bool{}
	failures, flaky := 0, 0
	for k := 1; k <= e.runs; k++ {
		plan := api.Plan{Perturbations: []api.Perturbation{}}
		if k > 1 {
			plan = Draw(api.DrawRequest{Seed: e.seed, Run: k, Terminal: e.terminal, Reached: slices.Sorted(maps.Keys(e.reached)), Routes: e.routes}).Plan
		}
		fmt.Fprintf(e.stderr, "run %d/%d: %d failures so far\n", k, e.runs, failures)
		fmt.Fprintf(e.stdout, "run %d: %s\n", k, Log(plan))
		out, err := e.run(ctx, e.tenant(k, ""), plan, false)
		if err != nil {
			return e.broken(err)
		}
		for _, c := range out.Verdict.Reached {
			e.reached[c] = true
		}
		if k == 1 {
			e.routes = out.Verdict.Routes
		}
		if !out.Verdict.Failed {
			continue
		}
		failures++
		if k == 1 {
			fmt.Fprintln(e.stdout, "  fails with no adversity at all")
		}
		e.printFailures(out, "  ")
		small, err := e.shrink(ctx, k, plan)
		if err != nil {
			return e.broken(err)
		}
		fails, last, err := e.confirmRuns(ctx, k, small)
		if err != nil {
			return e.broken(err)
		}
		if fails < e.confirm {
			flaky++
			fmt.Fprintf(e.stdout, "  flaky under this plan: failed %d of %d re-runs: %s\n", fails, e.confirm, Log(small))
			continue
		}
		return e.report(ctx, k, small, last)
	}
	fmt.Fprintf(e.stderr, "done: %d runs, %d failures, none confirmed\n", e.runs, failures)
	if flaky > 0 {
		// Runs failed under drawn adversity, if not every time: a failure was found.
		fmt.Fprintf(e.stdout, "no failure confirmed in %d runs; %d flaky\n", e.runs, flaky)
		return 1
	}
	fmt.Fprintf(e.stdout, "no failure in %d runs\n", e.runs)
	return 0
}

// tenant names the tenant of run k, or of one of its shrink or confirm runs (suffix "s3",
// "c1").
func (e *explorer) tenant(k int, suffix string) string {
	t := "explore-" + strconv.FormatInt(e.seed, 10) + "-" + strconv.Itoa(k)
	if suffix != "" {
		t += "-" + suffix
	}
	return t
}

// shrink makes the failing plan smaller greedily: the first candidate that still fails
// replaces it, until none does (or the shrink runs run out).
func (e *explorer) shrink(ctx context.Context, k int, plan api.Plan) (api.Plan, error) {
	tries := 0
	for {
		shrunk := false
		for _, c := range Candidates(plan) {
			if tries == maxShrinkRuns {
				fmt.Fprintf(e.stderr, "  shrinking stopped after %d runs\n", tries)
				return plan, nil
			}
			tries++
			fmt.Fprintf(e.stderr, "  shrink %d: trying %s\n", tries, Log(c))
			out, err := e.run(ctx, e.tenant(k, "s"+strconv.Itoa(tries)), c, false)
			if err != nil {
				return plan, err
			}
			if out.Verdict.Failed {
				fmt.Fprintf(e.stdout, "  shrunk: %s\n", Log(c))
				plan, shrunk = c, true
				break
			}
		}
		if !shrunk {
			return plan, nil
		}
	}
}

// confirmRuns re-runs the plan e.confirm times and says how many failed, with the first
// failing run's outcome, whose tenant is kept for its bundle.
func (e *explorer) confirmRuns(ctx context.Context, k int, plan api.Plan) (int, *Outcome, error) {
	fails := 0
	var first *Outcome
	for j := 1; j <= e.confirm; j++ {
		fmt.Fprintf(e.stderr, "  confirm %d/%d: %s\n", j, e.confirm, Log(plan))
		out, err := e.run(ctx, e.tenant(k, "c"+strconv.Itoa(j)), plan, true)
		if err != nil {
			if first != nil {
				_ = e.target.DropTenant(ctx, first.Tenant)
			}
			return fails, nil, err
		}
		if out.Verdict.Failed {
			fails++
			if first == nil {
				first = &out
				continue
			}
		}
		_ = e.target.DropTenant(ctx, out.Tenant)
	}
	if fails < e.confirm && first != nil {
		_ = e.target.DropTenant(ctx, first.Tenant)
		first = nil
	}
	return fails, first, nil
}

// report prints the confirmed failure and writes its bundle.
func (e *explorer) report(ctx context.Context, k int, plan api.Plan, out *Outcome) int {
	defer func() { _ = e.target.DropTenant(context.WithoutCancel(ctx), out.Tenant) }()
	fmt.Fprintf(e.stdout, "failure (seed %d, run %d), on %d of %d re-runs, under this plan:\n", e.seed, k, e.confirm, e.confirm)
	if len(plan.Perturbations) == 0 {
		fmt.Fprintln(e.stdout, "  no perturbations: the client fails with no adversity")
	}
	for _, p := range plan.Perturbations {
		fmt.Fprintf(e.stdout, "  %s\n", Describe(p))
	}
	e.printFailures(*out, "")
	if tail := out.Output; len(tail) > 0 {
		fmt.Fprintf(e.stderr, "the command's output (its end):\n%s", tail)
		if tail[len(tail)-1] != '\n' {
			fmt.Fprintln(e.stderr)
		}
	}
	exit := NoExit
	if !Terminal(plan) || out.TimedOut {
		exit = out.ExitCode // a run that timed out failed, whatever its plan
	}
	b, err := e.target.Bundle(ctx, out.Tenant, e.seed, k, exit)
	if err != nil {
		fmt.Fprintf(e.stderr, "mediagen-emulator explore: no bundle written: %v\n", err)
		return 1
	}
	b.Command = e.command
	data, err := json.MarshalIndent(b, "", "  ")
	if err == nil {
		err = atomicfile.Write(e.out, append(data, '\n'), 0o644)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "mediagen-emulator explore: --out %s: %v\n", e.out, err)
		return 1
	}
	fmt.Fprintf(e.stdout, "bundle written to %s; replay it with: mediagen-emulator explore --replay %s\n", e.out, e.out)
	return 1
}

// printFailures writes why a run failed: each failure's kind, rule and journal entries to
// standard output, and its reason, which may name ids and times, to standard error.
func (e *explorer) printFailures(out Outcome, indent string) {
	for _, f := range out.Verdict.Failures {
		line := indent + "failed: " + f.Kind
		switch {
		case f.Rule != "":
			line += " " + f.Rule
		case f.Kind == api.FailureExit && out.TimedOut:
			line += " timed out"
		case f.Kind == api.FailureExit:
			line += " status " + strconv.Itoa(out.ExitCode)
		}
		if len(f.Entries) > 0 {
			seqs := make([]string, len(f.Entries))
			for i, s := range f.Entries {
				seqs[i] = strconv.FormatInt(s, 10)
			}
			line += " (journal entries " + strings.Join(seqs, ", ") + ")"
		}
		fmt.Fprintln(e.stdout, line)
		fmt.Fprintf(e.stderr, "%s  %s: %s\n", indent, f.Kind, f.Reason)
	}
}

// replay runs the command under a bundle's plan e.confirm times.
func (e *explorer) replay(ctx context.Context, b api.Bundle) int {
	fmt.Fprintf(e.stdout, "replay (seed %d, run %d): %s\n", b.Seed, b.Run, Log(b.Plan))
	fails := 0
	for j := 1; j <= e.confirm; j++ {
		fmt.Fprintf(e.stderr, "replay %d/%d: %d failures so far\n", j, e.confirm, fails)
		out, err := e.run(ctx, e.tenant(b.Run, "r"+strconv.Itoa(j)), b.Plan, false)
		if err != nil {
			return e.broken(err)
		}
		if out.Verdict.Failed {
			fails++
			if fails == 1 {
				e.printFailures(out, "  ")
			}
		}
	}
	switch {
	case fails == 0:
		fmt.Fprintf(e.stdout, "passed %d of %d runs\n", e.confirm, e.confirm)
		return 0
	case fails < e.confirm:
		fmt.Fprintf(e.stdout, "flaky under this plan: failed %d of %d runs\n", fails, e.confirm)
		return 1
	}
	fmt.Fprintf(e.stdout, "failed %d of %d runs\n", fails, e.confirm)
	return 1
}

// broken reports a run that could not be made or judged, or an interrupted explore.
func (e *explorer) broken(err error) int {
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(e.stderr, "mediagen-emulator explore: interrupted")
		return 2
	}
	fmt.Fprintf(e.stderr, "mediagen-emulator explore: %v\n", err)
	return 2
}
