package battery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/explore"
)

// DefaultTimeout is how long one case's adapter may run before it is killed and the case
// judged a timeout: a correct client waits out a few one-second Retry-Afters and polls.
const DefaultTimeout = 60 * time.Second

// Options are what a battery's run needs: the emulator, the adapter and where progress goes.
type Options struct {
	// Target is the emulator the cases run on.
	Target explore.Target
	// Command is the adapter's command line, its program first.
	Command []string
	// Timeout bounds each case's adapter (DefaultTimeout when 0).
	Timeout time.Duration
	// Keep leaves each case's tenant in place once it is judged, for its journal to be read.
	Keep bool
	// Progress, when set, gets a line per case as it ends.
	Progress io.Writer
}

// Run runs every case of the battery, one after another, each in a fresh tenant named after
// it, and returns their results. An error means the battery could not be run (the emulator
// unreachable, a plan refused, the adapter not startable), not that a case failed.
func Run(ctx context.Context, b *Battery, o Options) (*Results, error) {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	var cases []CaseResult
	for i, c := range b.Cases {
		r, output, err := runCase(ctx, b, c, o)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
		cases = append(cases, r)
		if o.Progress != nil {
			verdict := "pass"
			if !r.Passed {
				verdict = "FAIL"
			}
			fmt.Fprintf(o.Progress, "case %d of %d %s: %s (expected %s, got %s)\n", i+1, len(b.Cases), c.Name, verdict, r.Expected, r.Got)
			if !r.Passed {
				// What the adapter said is where a client's mistake shows first; it changes
				// from run to run, so it goes here rather than into the results.
				for _, line := range lastLines(output, outputLines) {
					fmt.Fprintf(o.Progress, "    | %s\n", line)
				}
			}
		}
	}
	return NewResults(b, cases), nil
}

// outputLines is how many of its last lines of output a failed case's adapter is shown with.
const outputLines = 20

// lastLines is the last n lines of text, without their line ends.
func lastLines(text []byte, n int) []string {
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines[max(0, len(lines)-n):]
}

// runCase runs one case: a fresh tenant, its scenario and plan, the adapter with its task,
// then the facts read and judged. It returns the adapter's output beside the result.
func runCase(ctx context.Context, b *Battery, c Case, o Options) (CaseResult, []byte, error) {
	tenant := b.Tenant(c)
	res := CaseResult{Name: c.Name, Description: c.Description, Tenant: tenant, Expected: c.Expect}
	t := o.Target
	// The tenant is named by the case, not by the run, so a tenant an earlier run left on a
	// shared emulator is dropped first: the case starts from the configured start.
	if err := t.DropTenant(ctx, tenant); err != nil {
		return res, nil, err
	}
	if !o.Keep {
		defer func() { _ = t.DropTenant(context.WithoutCancel(ctx), tenant) }()
	}
	// Whatever clock the emulator was started with, a case runs on the skipping clock: a
	// correct client's waits for jobs take no real time, and a manual clock, which no client
	// moves, cannot hold a case up.
	mode, err := json.Marshal(api.ClockChange{Mode: "skip"})
	if err != nil {
		return res, nil, err
	}
	if err := t.Call(ctx, http.MethodPost, "/_emulator/clock", tenant, mode, nil); err != nil {
		return res, nil, fmt.Errorf("putting tenant %s on the skipping clock: %w", tenant, err)
	}
	if c.Scenario != nil {
		body, err := json.Marshal(map[string]json.RawMessage{"scenario": c.Scenario})
		if err != nil {
			return res, nil, err
		}
		if err := t.Call(ctx, http.MethodPut, "/_emulator/scenario", tenant, body, nil); err != nil {
			return res, nil, fmt.Errorf("giving tenant %s its scenario: %w", tenant, err)
		}
	}
	dir, err := os.MkdirTemp("", "mediagen-conformance-")
	if err != nil {
		return res, nil, err
	}
	defer os.RemoveAll(dir)
	task, err := json.Marshal(Task{Model: c.Model, Input: c.Input, OutputDir: dir})
	if err != nil {
		return res, nil, err
	}
	out, err := t.Run(ctx, explore.RunSpec{Tenant: tenant, Plan: c.Plan, Command: o.Command,
		Env: []string{TaskVariable + "=" + string(task)}, Timeout: o.Timeout, Keep: true})
	if err != nil {
		return res, nil, err
	}
	f, err := facts(ctx, t, tenant, c, out, dir)
	if err != nil {
		return res, nil, err
	}
	res.Got = f.Got
	res.Failures = Judge(c, f)
	res.Passed = len(res.Failures) == 0
	return res, out.Output, nil
}

// facts reads what the case's run left: the report, the jobs, the forbidden codes' entries,
// what the plan struck and the saved files, beside the outcome the runner gave.
func facts(ctx context.Context, t explore.Target, tenant string, c Case, out explore.Outcome, dir string) (Facts, error) {
	f := Facts{Exit: out.ExitCode, Verdict: out.Verdict, Answered: map[string][]uint64{}}
	switch {
	case out.TimedOut:
		f.Got, f.Exit = Timeout, -1
	case out.ExitCode == 0:
		f.Got = Success
	default:
		f.Got = Failure
	}
	var rep api.Report
	if err := t.Call(ctx, http.MethodGet, "/_emulator/report", tenant, nil, &rep); err != nil {
		return f, fmt.Errorf("reading the report of tenant %s: %w", tenant, err)
	}
	f.Findings = rep.Findings
	// A case's adapter makes a job or two; a page of the most a page holds is every one.
	var jobs api.Page[api.ControlJob]
	if err := t.Call(ctx, http.MethodGet, "/_emulator/jobs?limit=500", tenant, nil, &jobs); err != nil {
		return f, fmt.Errorf("reading the jobs of tenant %s: %w", tenant, err)
	}
	f.Jobs = jobs.Data
	for _, code := range c.NeverAnswered {
		body, err := json.Marshal(api.RequestPattern{Code: code})
		if err != nil {
			return f, err
		}
		var v api.Verification
		if err := t.Call(ctx, http.MethodPost, "/_emulator/verify", tenant, body, &v); err != nil {
			return f, fmt.Errorf("verifying tenant %s: %w", tenant, err)
		}
		f.Answered[code] = v.Matches
	}
	var plan api.PlanInForce
	if err := t.Call(ctx, http.MethodGet, "/_emulator/plan", tenant, nil, &plan); err != nil {
		return f, fmt.Errorf("reading the plan of tenant %s: %w", tenant, err)
	}
	for _, p := range plan.Perturbations {
		if p.Source == "api" && p.Set == nil && p.Fired == 0 {
			f.Unstruck = append(f.Unstruck, explore.Describe(p.Perturbation))
		}
	}
	// A case's adapter sends a few requests; a page of the most a page holds is every one.
	var journal api.Page[api.JournalEntry]
	if err := t.Call(ctx, http.MethodGet, "/_emulator/requests?limit=500", tenant, nil, &journal); err != nil {
		return f, fmt.Errorf("reading the journal of tenant %s: %w", tenant, err)
	}
	for _, e := range journal.Data {
		if e.IdempotencyKey != "" && !slices.Contains(f.Keys, e.IdempotencyKey) {
			f.Keys = append(f.Keys, e.IdempotencyKey)
		}
	}
	files, err := savedFiles(dir)
	if err != nil {
		return f, err
	}
	f.Files = files
	return f, nil
}

// savedFiles lists the regular files under the output folder, by path relative to it.
func savedFiles(dir string) ([]File, error) {
	var out []File
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, File{Name: filepath.ToSlash(rel), Size: info.Size()})
		return nil
	})
	return out, err
}
