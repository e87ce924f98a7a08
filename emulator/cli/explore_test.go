package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/explore"
)

// The test binary doubles as the client explore runs: run as "explore-client MODE" it acts as
// that client against MEDIAGEN_EMULATOR_URL and exits.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "explore-client" {
		os.Exit(exploreClient(os.Args[2]))
	}
	os.Exit(m.Run())
}

// exploreClient is a client of the service: "strict" quotes, generates waiting for the job
// and reads it once more, and gives up (exit 1) at the first answer that is not a success;
// it exits 1 too when the job did not succeed. "idle" sends nothing.
func exploreClient(mode string) int {
	if mode == "idle" {
		return 0
	}
	base, key := os.Getenv("MEDIAGEN_EMULATOR_URL"), os.Getenv("MEDIAGEN_API_KEY")
	send := func(method, path string, body any, header ...string) (map[string]any, error) {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var v map[string]any
		err = json.NewDecoder(resp.Body).Decode(&v)
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("%s %s: %d", method, path, resp.StatusCode)
		}
		return v, err
	}
	input := map[string]any{"prompt": "a lighthouse"}
	q, err := send("POST", "/v1/quotes", map[string]any{"model": "fal-ai/flux/schnell", "input": input})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	job, err := send("POST", "/v1/generate?wait=true", map[string]any{"model": "fal-ai/flux/schnell", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "key-1")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if job, err = send("GET", "/v1/jobs/"+fmt.Sprint(job["id"]), nil); err != nil {
		fmt.Println(err)
		return 1
	}
	if job["status"] != "succeeded" {
		fmt.Println("the job ended", job["status"])
		return 1
	}
	return 0
}

type exploreResult struct {
	code           int
	stdout, stderr string
}

func runExplore(t *testing.T, args ...string) exploreResult {
	t.Helper()
	var out, errs bytes.Buffer
	code := Explore(context.Background(), args, func(string) string { return "" }, &out, &errs)
	return exploreResult{code, out.String(), errs.String()}
}

func client(t *testing.T, mode string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "explore-client", mode}
}

// TestExploreEndToEnd: on an emulator explore starts, a client that gives up at the first
// failed answer is found out, its plan shrunk to one perturbation of the mildest kind,
// confirmed and written as a bundle (exit 1); the same seed prints the same bytes; --replay
// fails as often as asked; a client that survives every plan passes (exit 0).
func TestExploreEndToEnd(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "bundle.json")
	args := append([]string{"--seed", "3", "--runs", "30", "--confirm", "3", "--out", out, "--"}, client(t, "strict")...)
	r := runExplore(t, args...)
	if r.code != 1 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "run 1: no perturbations\nrun 2: ") || !strings.Contains(r.stdout, "on 3 of 3 re-runs, under this plan:\n  ") ||
		!strings.Contains(r.stdout, "\nfailed: exit status 1\n") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	b, err := explore.ReadBundle(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Plan.Perturbations) != 1 || b.Seed != 3 || !b.Verdict.Failed || len(b.Snapshot) == 0 || b.Report.Tenant == "" {
		t.Errorf("bundle: plan %s, seed %d, verdict %+v, report tenant %q", explore.Log(b.Plan), b.Seed, b.Verdict, b.Report.Tenant)
	}
	if !strings.Contains(r.stdout, "under this plan:\n  "+explore.Describe(b.Plan.Perturbations[0])+"\n") {
		t.Errorf("the plan printed is not the bundle's %s:\n%s", explore.Log(b.Plan), r.stdout)
	}
	// One step milder still fails this client: shrinking stopped at a plan none of whose
	// candidates is milder in kind.
	for _, c := range explore.Candidates(b.Plan) {
		if p := c.Perturbations[0]; p.Status == 500 && b.Plan.Perturbations[0].Status != 500 {
			t.Errorf("shrinking stopped at %s though %s is milder", explore.Log(b.Plan), explore.Log(c))
		}
	}
	if again := runExplore(t, args...); again.stdout != r.stdout {
		t.Errorf("the same seed printed\n%s\nthen\n%s", r.stdout, again.stdout)
	}
	rep := runExplore(t, "--replay", out, "--confirm", "2")
	if rep.code != 1 || !strings.Contains(rep.stdout, "failed 2 of 2 runs\n") {
		t.Errorf("replay: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
	idle := runExplore(t, append([]string{"--runs", "5", "--out", out, "--"}, client(t, "idle")...)...)
	if idle.code != 0 || !strings.HasSuffix(idle.stdout, "no failure in 5 runs\n") {
		t.Errorf("idle client: exit %d\n%s%s", idle.code, idle.stdout, idle.stderr)
	}
	if rep := runExplore(t, append([]string{"--replay", out, "--"}, client(t, "idle")...)...); rep.code != 0 {
		t.Errorf("replay with a client that sends nothing: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
}

// TestExploreTerminal: a plan forcing a failed job does not judge the client's exit status, so
// a client that reports the failure (exit 1) is not failed for it.
func TestExploreTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bundle := filepath.Join(dir, "b.json")
	plan := api.Plan{Perturbations: []api.Perturbation{{At: "job#1", Outcome: "fail", Code: "generation_failed"}}}
	data, _ := json.Marshal(api.Bundle{Format: api.BundleFormat, Seed: 1, Plan: plan, Command: client(t, "strict")})
	if err := os.WriteFile(bundle, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runExplore(t, "--replay", bundle)
	if r.code != 0 || !strings.Contains(r.stdout, "passed 1 of 1 runs\n") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
