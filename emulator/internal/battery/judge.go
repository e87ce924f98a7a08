package battery

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// Facts are what a case's run left behind, read once the adapter ended: how it ended, the
// tenant's verdict (judged without the exit status) and report, its jobs, the journal entries
// with the codes the case forbids, and the files the adapter saved.
type Facts struct {
	// Got is Success (exit 0), Failure (any other exit) or Timeout.
	Got string
	// Exit is the adapter's exit status; -1 when it did not end by itself.
	Exit int
	// Verdict is the tenant's verdict, judged without the exit status.
	Verdict api.Verdict
	// Findings are the report's findings of every severity.
	Findings []api.Finding
	// Jobs are the tenant's jobs, newest first, as GET /_emulator/jobs lists them.
	Jobs []api.ControlJob
	// Answered holds, for each code of the case's NeverAnswered, the journal seqs of the
	// answers that carried it.
	Answered map[string][]uint64
	// Files are the regular files of the output folder, by name.
	Files []File
	// Unstruck describes the plan's perturbations that strike a request or a job and struck
	// none.
	Unstruck []string
	// Keys are the Idempotency-Keys the adapter sent, in the order the journal first shows
	// each: a reason that quotes one names it by its place, since the adapter makes them
	// afresh on every run.
	Keys []string
}

// File is a file the adapter saved.
type File struct {
	Name string // its path in the output folder, with forward slashes
	Size int64  // in bytes
}

// Judge says why a case's run did not pass, in a stable order: the exit status first, then
// the verdict's failures as it lists them, then the case's forbidden findings and its checks.
// No failure means the case passed. A reason quoting an Idempotency-Key of Facts.Keys says
// "<key N>" instead, so the same run of the same adapter gives the same reasons.
func Judge(c Case, f Facts) []api.VerdictFailure {
	var out []api.VerdictFailure
	if f.Got != c.Expect {
		r := api.VerdictFailure{Kind: api.FailureExit, Rule: "expected-" + c.Expect}
		switch f.Got {
		case Timeout:
			r.Reason = fmt.Sprintf("the adapter did not end in time; the case expects %s", c.Expect)
		default:
			r.Reason = fmt.Sprintf("the adapter exited %d (%s); the case expects %s", f.Exit, f.Got, c.Expect)
		}
		out = append(out, r)
	}
	reported := map[string]bool{}
	for _, v := range f.Verdict.Failures {
		if v.Kind == api.FailureExit {
			continue // judged above, against the case's expectation
		}
		out = append(out, v)
		reported[v.Kind+" "+v.Rule] = true
	}
	for _, fi := range f.Findings {
		if !slices.Contains(c.Absent, fi.Rule) || reported[api.FailureFinding+" "+fi.Rule] {
			continue
		}
		reported[api.FailureFinding+" "+fi.Rule] = true
		entries := make([]int64, len(fi.Entries))
		for i, e := range fi.Entries {
			entries[i] = int64(e)
		}
		out = append(out, api.VerdictFailure{Kind: api.FailureFinding, Rule: fi.Rule, Severity: fi.Severity, Reason: fi.Reason, Entries: entries})
	}
	if len(f.Unstruck) > 0 {
		out = append(out, api.VerdictFailure{Kind: KindCheck, Rule: CheckPlanStruck,
			Reason: "the plan never struck (" + strings.Join(f.Unstruck, "; ") + "): the adapter did not reach the request the case is about"})
	}
	if c.MaxJobs > 0 && len(f.Jobs) > c.MaxJobs {
		out = append(out, api.VerdictFailure{Kind: KindCheck, Rule: CheckAtMostJobs,
			Reason: fmt.Sprintf("the tenant holds %d jobs (%s); the case allows at most %d", len(f.Jobs), jobList(f.Jobs), c.MaxJobs)})
	}
	if c.JobModel != "" {
		var other []string
		for _, j := range f.Jobs {
			if j.Model != c.JobModel {
				other = append(other, j.Model)
			}
		}
		switch {
		case len(f.Jobs) == 0:
			out = append(out, api.VerdictFailure{Kind: KindCheck, Rule: CheckJobsOfModel, Reason: "the tenant made no job; the case expects one of " + c.JobModel})
		case other != nil:
			out = append(out, api.VerdictFailure{Kind: KindCheck, Rule: CheckJobsOfModel,
				Reason: fmt.Sprintf("jobs of %s; the case expects every job of %s", strings.Join(other, ", "), c.JobModel)})
		}
	}
	for _, code := range c.NeverAnswered {
		seqs := f.Answered[code]
		if len(seqs) == 0 {
			continue
		}
		entries := make([]int64, len(seqs))
		for i, s := range seqs {
			entries[i] = int64(s)
		}
		out = append(out, api.VerdictFailure{Kind: KindCheck, Rule: CheckNeverAnswered, Entries: entries,
			Reason: fmt.Sprintf("%d answers carried %s; a correct client never provokes it", len(seqs), code)})
	}
	if f.Got == Success && c.Expect == Success {
		if r := outputsSaved(f); r != "" {
			out = append(out, api.VerdictFailure{Kind: KindCheck, Rule: CheckOutputsSaved, Reason: r})
		}
	}
	if len(f.Keys) > 0 {
		var pairs []string
		for i, k := range f.Keys {
			pairs = append(pairs, strconv.Quote(k), fmt.Sprintf("<key %d>", i+1))
		}
		r := strings.NewReplacer(pairs...)
		for i := range out {
			out[i].Reason = r.Replace(out[i].Reason)
		}
	}
	return out
}

// outputsSaved says what is missing from the output folder after a reported success: every
// output of the last succeeded job needs a file of exactly its size ("" when each has one).
func outputsSaved(f Facts) string {
	var last *api.ControlJob
	for i := range f.Jobs { // newest first, as the control API lists them
		if f.Jobs[i].Status == "succeeded" {
			last = &f.Jobs[i]
			break
		}
	}
	var sizes []int64
	for _, fi := range f.Files {
		if fi.Size > 0 {
			sizes = append(sizes, fi.Size)
		}
	}
	switch {
	case last == nil:
		return "the adapter reported success, but the tenant has no succeeded job"
	case len(sizes) == 0:
		return fmt.Sprintf("the adapter reported success, but the output folder holds no non-empty file (job %s has %d outputs)", last.ID, len(last.Outputs))
	}
	var missing []string
	for i, o := range last.Outputs {
		k := slices.Index(sizes, o.SizeBytes)
		if k < 0 {
			missing = append(missing, fmt.Sprintf("output %d (%d bytes)", i, o.SizeBytes))
			continue
		}
		sizes = slices.Delete(sizes, k, k+1)
	}
	if missing != nil {
		return fmt.Sprintf("no saved file has the size of %s of job %s: a download cut short, or not saved", strings.Join(missing, ", "), last.ID)
	}
	return ""
}

// jobList names jobs by id and status, for a reason.
func jobList(jobs []api.ControlJob) string {
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		parts[i] = j.ID + " " + j.Status
	}
	return strings.Join(parts, ", ")
}
