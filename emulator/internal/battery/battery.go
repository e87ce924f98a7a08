// Package battery is the conformance battery: named, versioned sets of cases, each a fixed
// adversity plan, a task for a client's adapter and what the adapter must make of it. The
// conformance command runs every case of a battery in a fresh tenant, judges it by the adapter's
// exit status, the tenant's verdict and the case's own checks, and writes a score a client
// project can publish (JSON, a markdown table, an SVG badge).
//
// A battery's cases never change once it is published: a new case, or a case changed, makes a
// new version, so "conformance v1 | 24/24" means the same thing for every client that shows it.
package battery

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// What an adapter may report for a case: it exits 0 when its client reported success with the
// outputs saved, anything else when the client reported failure.
const (
	Success = "success"
	Failure = "failure"
	// Timeout is what the adapter got when it did not end within the case's time.
	Timeout = "timeout"
)

// Check kinds: what a case requires beyond the verdict and the exit status, judged from the
// tenant's jobs, its journal and the output folder. They are a failure's Rule when they break.
const (
	// CheckOutputsSaved: after a reported success, the output folder holds, for every output
	// of the tenant's last succeeded job, a non-empty file of exactly its size.
	CheckOutputsSaved = "outputs-saved"
	// CheckAtMostJobs: the tenant holds at most Case.MaxJobs jobs (a failed generation is not
	// made again blindly).
	CheckAtMostJobs = "at-most-jobs"
	// CheckJobsOfModel: the tenant made at least one job, and every job is of Case.JobModel.
	CheckJobsOfModel = "jobs-of-model"
	// CheckNeverAnswered: the journal holds no answer with one of Case.NeverAnswered's codes.
	CheckNeverAnswered = "never-answered"
	// CheckPlanStruck: every perturbation of the plan that strikes a request or a job struck
	// one; a client that never reached it was not put in the case's situation.
	CheckPlanStruck = "plan-struck"
)

// KindCheck is the Kind of a failure that a case's own check found; the other kinds are the
// verdict's (api.FailureExit for an exit status the case did not expect, api.FailureFinding,
// api.FailureInvariant).
const KindCheck = "check"

// Battery is a named, versioned list of cases.
type Battery struct {
	Name    string // what --battery names, such as "v1"
	Version int    // bumped with every change to the cases
	Cases   []Case
}

// Case is one fixed situation an adapter is put in.
type Case struct {
	// Name is the case's stable id, such as "retry-ambiguous-5xx-same-key"; its tenant is
	// named after it.
	Name string
	// Description says in one line what the case does and what a correct client does.
	Description string
	// Model and Input are the task: the adapter generates Input with Model.
	Model string
	Input json.RawMessage
	// Plan is the adversity the tenant is put under before the adapter starts.
	Plan api.Plan
	// Scenario, when set, is a scenario document (JSON, as PUT /_emulator/scenario takes it
	// under "scenario") the tenant is given before the plan: for what a plan cannot say, such
	// as a model's lifecycle.
	Scenario json.RawMessage
	// Expect is Success or Failure: what a correct client reports.
	Expect string
	// Absent are report rules and ledger invariants that must not show, whatever their
	// severity: a warning such as retry-unchanged fails the case although it fails no verdict.
	Absent []string
	// MaxJobs, when positive, is the most jobs the tenant may hold once the adapter ends.
	MaxJobs int
	// JobModel, when set, is the model every job of the tenant must be of.
	JobModel string
	// NeverAnswered are problem codes no answer of the tenant may carry.
	NeverAnswered []string
}

// Task is what the adapter is given in MEDIAGEN_TASK, as JSON: the model, its input, and the
// folder (made by the runner, empty) to save the outputs in.
type Task struct {
	Model     string          `json:"model"`
	Input     json.RawMessage `json:"input"`
	OutputDir string          `json:"output_dir"`
}

// TaskVariable is the environment variable the task is passed in.
const TaskVariable = "MEDIAGEN_TASK"

// Tenant is the tenant a case runs in: named by the battery and the case, so two runs name the
// same tenants and nothing run-dependent reaches the results.
func (b *Battery) Tenant(c Case) string {
	return "conformance-" + b.Name + "-" + c.Name
}

// Case returns the battery's case of that name.
func (b *Battery) Case(name string) (Case, bool) {
	i := slices.IndexFunc(b.Cases, func(c Case) bool { return c.Name == name })
	if i < 0 {
		return Case{}, false
	}
	return b.Cases[i], true
}

// batteries are the published batteries, by name.
var batteries = map[string]*Battery{"v1": v1}

// Names lists the published batteries' names, sorted.
func Names() []string {
	var names []string
	for n := range batteries {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the published battery of that name.
func Lookup(name string) (*Battery, error) {
	if b, ok := batteries[name]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("no battery %q (batteries: %s)", name, strings.Join(Names(), ", "))
}

// tenantName is the most a tenant name may hold, [A-Za-z0-9_-]{1,64}.
const tenantName = 64

// Problems lists what is wrong with the battery's table itself: a case without a name, a
// description, a task or an expectation, a name twice, a name its tenant cannot carry. Plans
// are checked apart, by the emulator's own plan checker (see the package's tests).
func (b *Battery) Problems() []string {
	var out []string
	seen := map[string]bool{}
	for i, c := range b.Cases {
		where := fmt.Sprintf("case %d (%s)", i+1, c.Name)
		switch {
		case c.Name == "":
			out = append(out, where+": no name")
		case seen[c.Name]:
			out = append(out, where+": the name is used twice")
		case len(b.Tenant(c)) > tenantName || strings.Trim(c.Name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "":
			out = append(out, where+": the name must be lower-case letters, digits and dashes, short enough for its tenant "+b.Tenant(c))
		}
		seen[c.Name] = true
		if c.Description == "" || strings.Contains(c.Description, "\n") {
			out = append(out, where+": the description must be one line")
		}
		if c.Model == "" || !json.Valid(c.Input) || !strings.HasPrefix(strings.TrimSpace(string(c.Input)), "{") {
			out = append(out, where+": the task needs a model and an input object")
		}
		if c.Expect != Success && c.Expect != Failure {
			out = append(out, where+": expect must be success or failure")
		}
		if c.Scenario != nil && !json.Valid(c.Scenario) {
			out = append(out, where+": the scenario is not JSON")
		}
	}
	return out
}
