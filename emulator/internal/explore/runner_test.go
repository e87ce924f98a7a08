package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// The test binary doubles as the command a run starts: with EXPLORE_TEST_CLIENT set, or run as
// "explore-test-client MODE", it acts as that client and exits.
func TestMain(m *testing.M) {
	mode := os.Getenv("EXPLORE_TEST_CLIENT")
	if len(os.Args) > 2 && os.Args[1] == "explore-test-client" {
		mode = os.Args[2]
	}
	switch mode {
	case "":
		os.Exit(m.Run())
	case "env":
		for _, k := range []string{"MEDIAGEN_EMULATOR_URL", "MEDIAGEN_API_KEY", "MEDIAGEN_TENANT", "MEDIAGEN_ADMIN_TOKEN", "EXTRA"} {
			fmt.Printf("%s=%s\n", k, os.Getenv(k))
		}
		fmt.Fprintln(os.Stderr, "to stderr")
		os.Exit(3)
	case "hang":
		fmt.Println("hanging")
		select {}
	case "ok":
		fmt.Println("done")
		os.Exit(0)
	case "loud":
		chunk := strings.Repeat("x", 1023) + "\n"
		for range 100 {
			fmt.Print(chunk)
		}
		fmt.Print("the end\n")
		os.Exit(0)
	}
}

// fakeControl is an emulator control API that records what a run asks of it.
type fakeControl struct {
	mu    sync.Mutex
	plans map[string]api.Plan
	asked []string // "METHOD path tenant token"
	// fails, when set, makes the verdict of a tenant under a plan fail with a finding.
	fails func(tenant string, p api.Plan) bool
}

func (f *fakeControl) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tenant := r.Header.Get(headerTenant)
	f.asked = append(f.asked, r.Method+" "+r.URL.RequestURI()+" "+tenant+" "+r.Header.Get(headerAdminToken))
	switch {
	case r.Method == http.MethodPut && r.URL.Path == "/_emulator/plan":
		var p api.Plan
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &p); err != nil || p.Perturbations == nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"detail":"bad plan %s"}`, data)
			return
		}
		f.plans[tenant] = p
		_ = json.NewEncoder(w).Encode(api.PlanInForce{Perturbations: []api.Fault{}})
	case r.Method == http.MethodGet && r.URL.Path == "/_emulator/verdict":
		v := api.Verdict{Failures: []api.VerdictFailure{}, Reached: []string{"fault reset"}, Routes: map[string]int{"POST /v1/generate": 1}}
		if e := r.URL.Query().Get("exit"); e != "" && e != "0" {
			v.Failed = true
			v.Failures = append(v.Failures, api.VerdictFailure{Kind: api.FailureExit, Reason: "the command exited " + e})
		}
		if f.fails != nil && f.fails(tenant, f.plans[tenant]) {
			v.Failed = true
			v.Failures = append(v.Failures, api.VerdictFailure{Kind: api.FailureFinding, Rule: "retry-new-key", Severity: "error",
				Reason: "tenant " + tenant + " retried POST /v1/generate with a new Idempotency-Key", Entries: []int64{2, 4}})
		}
		_ = json.NewEncoder(w).Encode(v)
	case r.Method == http.MethodGet && r.URL.Path == "/_emulator/bundle":
		seed, _ := strconv.ParseInt(r.URL.Query().Get("seed"), 10, 64)
		run, _ := strconv.Atoi(r.URL.Query().Get("run"))
		_ = json.NewEncoder(w).Encode(api.Bundle{Format: api.BundleFormat, Seed: seed, Run: run, Plan: f.plans[tenant], Snapshot: json.RawMessage(`{}`)})
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/_emulator/tenants/"):
		if _, ok := f.plans[strings.TrimPrefix(r.URL.Path, "/_emulator/tenants/")]; !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		delete(f.plans, strings.TrimPrefix(r.URL.Path, "/_emulator/tenants/"))
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func newFake(t *testing.T) (*fakeControl, Target) {
	t.Helper()
	f := &fakeControl{plans: map[string]api.Plan{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, Target{URL: srv.URL, AdminToken: "tok", Client: srv.Client()}
}

func self(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe}
}

// TestRunSetsEnvAndJudgesExit: the command sees the tenant's URL, key, name and token, its
// output is kept, the plan reaches the tenant, the exit status is judged, and the tenant is
// dropped once judged.
func TestRunSetsEnvAndJudgesExit(t *testing.T) {
	t.Parallel()
	f, target := newFake(t)
	plan := api.Plan{Perturbations: []api.Perturbation{{At: "POST /v1/generate#1", Action: api.FaultReset}}}
	out, err := target.Run(context.Background(), RunSpec{
		Tenant: "explore-1-1", Plan: plan, Command: self(t), JudgeExit: true,
		Env: []string{"EXPLORE_TEST_CLIENT=env", "EXTRA=yes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MEDIAGEN_EMULATOR_URL=" + target.URL + "\n", "MEDIAGEN_API_KEY=mg_test_all.explore-1-1\n",
		"MEDIAGEN_TENANT=explore-1-1\n", "MEDIAGEN_ADMIN_TOKEN=tok\n", "EXTRA=yes\n", "to stderr\n"} {
		if !strings.Contains(string(out.Output), want) {
			t.Errorf("output lacks %q:\n%s", want, out.Output)
		}
	}
	if out.ExitCode != 3 || out.TimedOut || !out.Verdict.Failed || out.Verdict.Failures[0].Reason != "the command exited 3" {
		t.Errorf("outcome = %+v", out)
	}
	if out.Tenant != "explore-1-1" || !slices.Equal(out.Verdict.Reached, []string{"fault reset"}) {
		t.Errorf("outcome = %+v", out)
	}
	want := []string{
		"PUT /_emulator/plan explore-1-1 tok",
		"GET /_emulator/verdict?exit=3 explore-1-1 tok",
		"DELETE /_emulator/tenants/explore-1-1  tok",
	}
	if !slices.Equal(f.asked, want) {
		t.Errorf("asked:\n%s\nwant:\n%s", strings.Join(f.asked, "\n"), strings.Join(want, "\n"))
	}
	if len(f.plans) != 0 {
		t.Errorf("tenants left: %v", f.plans)
	}
}

// TestRunUnjudgedExitKeptTenantBundle: without JudgeExit the verdict is asked without the
// exit status; a kept tenant stays for its bundle, which carries the plan applied.
func TestRunUnjudgedExitKeptTenantBundle(t *testing.T) {
	t.Parallel()
	f, target := newFake(t)
	plan := api.Plan{Perturbations: []api.Perturbation{{At: "job#1", Outcome: "fail", Code: "generation_failed"}}}
	out, err := target.Run(context.Background(), RunSpec{
		Tenant: "explore-2-5", Plan: plan, Command: self(t), Env: []string{"EXPLORE_TEST_CLIENT=env"}, Keep: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 3 || out.Verdict.Failed {
		t.Errorf("outcome = %+v", out)
	}
	b, err := target.Bundle(context.Background(), "explore-2-5", 2, 5, NoExit)
	if err != nil {
		t.Fatal(err)
	}
	if b.Seed != 2 || b.Run != 5 || len(b.Plan.Perturbations) != 1 || b.Plan.Perturbations[0].Outcome != "fail" {
		t.Errorf("bundle = %+v", b)
	}
	if err := target.DropTenant(context.Background(), "explore-2-5"); err != nil {
		t.Fatal(err)
	}
	if err := target.DropTenant(context.Background(), "explore-2-5"); err != nil {
		t.Errorf("dropping a tenant gone: %v", err)
	}
	want := []string{
		"PUT /_emulator/plan explore-2-5 tok",
		"GET /_emulator/verdict explore-2-5 tok",
		"GET /_emulator/bundle?run=5&seed=2 explore-2-5 tok",
		"DELETE /_emulator/tenants/explore-2-5  tok",
		"DELETE /_emulator/tenants/explore-2-5  tok",
	}
	if !slices.Equal(f.asked, want) {
		t.Errorf("asked:\n%s\nwant:\n%s", strings.Join(f.asked, "\n"), strings.Join(want, "\n"))
	}
}

// TestRunTimeout: a command that hangs is killed at the timeout and fails the run, even when
// its exit status is not judged. (What it printed before is not asserted: a slow start may be
// killed before it prints.)
func TestRunTimeout(t *testing.T) {
	t.Parallel()
	_, target := newFake(t)
	out, err := target.Run(context.Background(), RunSpec{
		Tenant: "explore-1-2", Command: self(t), Env: []string{"EXPLORE_TEST_CLIENT=hang"}, Timeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out.TimedOut || out.ExitCode != TimedOutExit || !out.Verdict.Failed {
		t.Fatalf("outcome = %+v", out)
	}
	if got := out.Verdict.Failures[0]; got.Kind != api.FailureExit || got.Reason != "timed out after 300ms" {
		t.Errorf("failure = %+v", got)
	}
}

// TestRunOutputBounded: only the last MaxOutput bytes of a loud command are kept.
func TestRunOutputBounded(t *testing.T) {
	t.Parallel()
	_, target := newFake(t)
	out, err := target.Run(context.Background(), RunSpec{Tenant: "explore-1-3", Command: self(t), Env: []string{"EXPLORE_TEST_CLIENT=loud"}, JudgeExit: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Output) != MaxOutput || !strings.HasSuffix(string(out.Output), "x\nthe end\n") || out.Verdict.Failed {
		t.Errorf("kept %d bytes ending %q; verdict %+v", len(out.Output), out.Output[max(0, len(out.Output)-20):], out.Verdict)
	}
}

// TestRunErrors: a plan the emulator refuses, and a command that cannot start, are errors of
// the run, not failures of the client.
func TestRunErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"detail":"perturbation 0: at is not a route"}`)
	}))
	defer srv.Close()
	_, err := Target{URL: srv.URL}.Run(context.Background(), RunSpec{Tenant: "t", Command: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "400: perturbation 0: at is not a route") {
		t.Errorf("refused plan: %v", err)
	}
	_, target := newFake(t)
	_, err = target.Run(context.Background(), RunSpec{Tenant: "t2", Command: []string{"/nonexistent/client"}})
	if err == nil || !strings.Contains(err.Error(), "cannot run /nonexistent/client") {
		t.Errorf("missing command: %v", err)
	}
	if _, err := target.Run(context.Background(), RunSpec{Tenant: "t3"}); err == nil {
		t.Error("no command: no error")
	}
}

// TestTailBuffer keeps the newest bytes whatever the sizes of the writes.
func TestTailBuffer(t *testing.T) {
	t.Parallel()
	b := &tailBuffer{max: 5}
	for _, w := range []string{"ab", "cd", "efg", "", "hijklmn", "o"} {
		_, _ = b.Write([]byte(w))
	}
	if got := string(b.Bytes()); got != "klmno" {
		t.Errorf("kept %q", got)
	}
}
