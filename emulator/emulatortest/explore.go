package emulatortest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/explore"
)

// PlanEnv names the environment variable that makes Explore replay a bundle: with
// MEDIAGEN_PLAN=FILE, Explore runs its function once, under the plan of FILE.
const PlanEnv = "MEDIAGEN_PLAN"

// ExploreOutEnv names the environment variable that holds where Explore writes a failure's
// bundle when WithExploreOut names no folder.
const ExploreOutEnv = "MEDIAGEN_EXPLORE_OUT"

// maxShrinkRuns bounds the runs one shrink makes, so that a flaky test cannot shrink for ever.
const maxShrinkRuns = 100

// WithExploreSeed is the seed Explore draws its plans from (default 1): the same seed draws the
// same plans, run after run.
func WithExploreSeed(seed int64) Option {
	return func(s *settings) { s.exploreSeed = seed }
}

// WithExploreOut is the folder Explore writes a failure's bundle to (default
// $MEDIAGEN_EXPLORE_OUT, else mediagen-explore in the system's temporary folder).
func WithExploreOut(dir string) Option {
	return func(s *settings) { s.exploreOut = dir }
}

// Explore runs fn runs times, each as a subtest in a fresh tenant of one emulator under an
// adversity plan drawn from the seed (WithExploreSeed), as `mediagen-emulator explore` does for a
// command: run 1 under no plan, each later run under a plan that favours the cases earlier runs
// did not reach, striking the routes the first run took. A run fails when fn fails t (as a
// command's non-zero exit) or when the emulator's verdict does: an error-severity finding of the
// report, or a broken ledger invariant. At the first failure Explore shrinks the plan greedily
// (each candidate is a subtest of its own, so the failures of the search show), writes the
// bundle of the smallest failing plan to a file, and fails t with the plan, the finding and the
// file; MEDIAGEN_PLAN=FILE go test -run 'TestX$' replays it. The emulator is started in this
// process with opts, or attached to at $MEDIAGEN_EMULATOR_URL.
//
//	func TestClientUnderAdversity(t *testing.T) {
//		emulatortest.Explore(t, 50, func(t *testing.T, emu *emulatortest.Emulator) {
//			if _, err := mediagen.NewClient(emu.URL, emu.Keys.All).Render(ctx, req); err != nil {
//				t.Fatal(err)
//			}
//		})
//	}
func Explore(t *testing.T, runs int, fn func(t *testing.T, emu *Emulator), opts ...Option) {
	t.Helper()
	s := settings{exploreSeed: 1}
	for _, o := range opts {
		o(&s)
	}
	x := &explorer{t: t, fn: fn, seed: s.exploreSeed, out: s.exploreOut, reached: map[string]bool{}}
	if u := os.Getenv(URLEnv); u != "" {
		x.emu = Attach(t, u)
	} else {
		x.emu = Start(t, opts...)
	}
	if path := os.Getenv(PlanEnv); path != "" {
		x.replay(path)
		return
	}
	x.explore(runs)
}

// explorer is one Explore call: the emulator, the function, and what the runs reached.
type explorer struct {
	t       *testing.T
	emu     *Emulator
	fn      func(*testing.T, *Emulator)
	seed    int64
	out     string
	reached map[string]bool
	routes  map[string]int
}

// exploreRun is what one run gave: its tenant, the verdict, and the bundle when it failed.
type exploreRun struct {
	tenant  string
	plan    api.Plan
	verdict api.Verdict
	bundle  json.RawMessage
	judged  bool
}

// run runs fn once as the subtest name, in a fresh tenant under plan, and judges it.
func (x *explorer) run(name string, k int, plan api.Plan) exploreRun {
	res := exploreRun{plan: plan}
	x.t.Run(name, func(t *testing.T) {
		emu := x.emu.Tenant(t)
		res.tenant = emu.TenantName
		emu.SetPlan(t, plan)
		// Registered after Tenant's, so it runs first: the tenant still exists.
		t.Cleanup(func() {
			exit := 0
			if t.Failed() {
				exit = 1
			}
			res.verdict, res.judged = emu.Verdict(t, &exit), true
			if !res.verdict.Failed {
				return
			}
			for _, f := range res.verdict.Failures {
				if f.Kind != api.FailureExit {
					t.Errorf("mediagen-emulator verdict: %s", failureLine(f))
				}
			}
			res.bundle = emu.Bundle(t, x.seed, k, &exit)
		})
		x.fn(t, emu)
	})
	return res
}

// explore makes the runs until one fails, then shrinks and reports it.
func (x *explorer) explore(runs int) {
	x.t.Helper()
	for k := 1; k <= runs; k++ {
		plan := api.Plan{Perturbations: []api.Perturbation{}}
		if k > 1 {
			plan = explore.Draw(api.DrawRequest{Seed: x.seed, Run: k, Reached: slices.Sorted(maps.Keys(x.reached)), Routes: x.routes}).Plan
		}
		res := x.run("run-"+strconv.Itoa(k), k, plan)
		if !res.judged {
			x.t.Fatalf("emulatortest: explore run %d could not be judged", k)
			return
		}
		for _, c := range res.verdict.Reached {
			x.reached[c] = true
		}
		if k == 1 {
			x.routes = res.verdict.Routes
		}
		if res.verdict.Failed {
			small, tries := x.shrink(k, res)
			x.report(k, runs, small, tries)
			return
		}
	}
	x.t.Logf("mediagen-emulator explore: %d runs under plans drawn from seed %d: none failed", runs, x.seed)
}

// shrink makes the failing run's plan smaller greedily: the first candidate that still fails
// replaces it, until none does.
func (x *explorer) shrink(k int, failed exploreRun) (exploreRun, int) {
	tries := 0
	for {
		shrunk := false
		for _, c := range explore.Candidates(failed.plan) {
			if tries == maxShrinkRuns {
				return failed, tries
			}
			tries++
			res := x.run(fmt.Sprintf("run-%d-shrink-%d", k, tries), k, c)
			if res.judged && res.verdict.Failed {
				failed, shrunk = res, true
				break
			}
		}
		if !shrunk {
			return failed, tries
		}
	}
}

// report fails t with the smallest plan, why it failed and the bundle that replays it.
func (x *explorer) report(k, runs int, small exploreRun, tries int) {
	x.t.Helper()
	path, err := x.writeBundle(small.bundle)
	where := path
	if err != nil {
		where = "(the bundle was not written: " + err.Error() + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mediagen-emulator explore: run %d of %d (seed %d) failed; the smallest plan that still fails (after %d shrink runs):\n",
		k, runs, x.seed, tries)
	if len(small.plan.Perturbations) == 0 {
		b.WriteString("  no perturbations: the test fails with no adversity at all\n")
	}
	for _, p := range small.plan.Perturbations {
		fmt.Fprintf(&b, "  %s\n", explore.Describe(p))
	}
	fmt.Fprintf(&b, "why it failed (tenant %s):\n", small.tenant)
	for _, f := range small.verdict.Failures {
		fmt.Fprintf(&b, "  %s\n", failureLine(f))
	}
	fmt.Fprintf(&b, "the plan and the failing tenant are in %s; replay it: %s=%s go test -run '^%s$'", where, PlanEnv, where, x.t.Name())
	x.t.Error(b.String())
}

// replay runs fn once under the plan of a bundle (or plan) file.
func (x *explorer) replay(path string) {
	x.t.Helper()
	plan, err := readPlan(path)
	if err != nil {
		x.t.Fatalf("emulatortest: %s=%s: %v", PlanEnv, path, err)
		return
	}
	res := x.run("replay", 1, plan)
	if res.judged && res.verdict.Failed {
		var b strings.Builder
		fmt.Fprintf(&b, "mediagen-emulator: the test fails under the plan of %s (tenant %s):", path, res.tenant)
		for _, f := range res.verdict.Failures {
			fmt.Fprintf(&b, "\n  %s", failureLine(f))
		}
		x.t.Error(b.String())
	}
}

// readPlan reads the plan of a bundle file, or of a file that holds a plan alone.
func readPlan(path string) (api.Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return api.Plan{}, err
	}
	var doc struct {
		Plan          *api.Plan          `json:"plan"`
		Perturbations []api.Perturbation `json:"perturbations"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return api.Plan{}, fmt.Errorf("not a bundle: %v", err)
	}
	switch {
	case doc.Plan != nil:
		return *doc.Plan, nil
	case doc.Perturbations != nil:
		return api.Plan{Perturbations: doc.Perturbations}, nil
	}
	return api.Plan{}, fmt.Errorf("holds no plan: a bundle or {\"perturbations\": [...]} was expected")
}

// writeBundle writes a failure's bundle to NAME-seedS.json in the explore folder; the same
// test's next failure replaces it.
func (x *explorer) writeBundle(bundle json.RawMessage) (string, error) {
	if len(bundle) == 0 {
		return "", fmt.Errorf("the emulator gave no bundle")
	}
	dir := x.out
	if dir == "" {
		dir = os.Getenv(ExploreOutEnv)
	}
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "mediagen-explore")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := safeName(x.t.Name())
	if len(name) > 100 {
		name = name[:100]
	}
	path := filepath.Join(dir, name+"-seed"+strconv.FormatInt(x.seed, 10)+".json")
	return path, os.WriteFile(path, append(bundle, '\n'), 0o644)
}

// failureLine is one failure of a verdict: its rule (or kind), reason and journal entries.
func failureLine(f api.VerdictFailure) string {
	what := f.Rule
	if what == "" {
		what = f.Kind
	}
	line := what + ": " + f.Reason
	for _, e := range f.Entries {
		line += " #" + strconv.FormatInt(e, 10)
	}
	return line
}

// SetPlan puts an adversity plan in force for this handle's tenant (PUT /_emulator/plan), in
// place of the perturbations the control API added before, and returns every perturbation in
// force, the scenario's too.
func (e *Emulator) SetPlan(t TB, plan api.Plan) api.PlanInForce {
	t.Helper()
	if plan.Perturbations == nil {
		plan.Perturbations = []api.Perturbation{}
	}
	var got api.PlanInForce
	e.For(t).do(http.MethodPut, "/_emulator/plan", plan, http.StatusOK, &got)
	return got
}

// Verdict judges the run of a client in this handle's tenant (GET /_emulator/verdict): an
// error-severity finding of the report, a broken ledger invariant, and, when exit is not nil, a
// non-zero exit status each fail it.
func (e *Emulator) Verdict(t TB, exit *int) api.Verdict {
	t.Helper()
	var v api.Verdict
	e.For(t).do(http.MethodGet, "/_emulator/verdict"+exitQuery("?", exit), nil, http.StatusOK, &v)
	return v
}

// Bundle returns what replays the tenant's run and shows what happened in it (GET
// /_emulator/bundle): the plan in force, seed and run, the verdict, the report and the snapshot.
// It decodes into an api.Bundle; Explore writes it to a file as it comes.
func (e *Emulator) Bundle(t TB, seed int64, run int, exit *int) json.RawMessage {
	t.Helper()
	q := url.Values{"seed": {strconv.FormatInt(seed, 10)}, "run": {strconv.Itoa(run)}}
	var doc json.RawMessage
	e.For(t).do(http.MethodGet, "/_emulator/bundle?"+q.Encode()+exitQuery("&", exit), nil, http.StatusOK, &doc)
	return doc
}

// exitQuery is the exit parameter after sep, or nothing when exit is nil.
func exitQuery(sep string, exit *int) string {
	if exit == nil {
		return ""
	}
	return sep + "exit=" + strconv.Itoa(*exit)
}
