package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// The judge of a run: whether a client run in the world failed, and why, from the command's
// exit status (when given), the report's error findings and three invariants of the ledger
// that hold for a client that survives the adversity a plan draws. What the run reached
// (coverage cases, routes) comes with it, for explore to aim its next plan elsewhere.

// maxListed bounds the jobs one failure's reason names; its count says how many there are.
const maxListed = 5

// Verdict judges the world's run as GET /_emulator/verdict answers it. exit is the client
// command's exit status, nil when not known (then it is not judged). It reads the world as it
// stands, at one instant, as a snapshot does.
func (w *World) Verdict(exit *int) api.Verdict {
	w.gate.Lock()
	release := w.clock.Hold()
	balances := w.ledger.Balances()
	all, _ := w.jobs.ListAll(jobs.Filter{}, 0, max(w.jobs.Len(), 1))
	log, dropped := w.journal.Log()
	_, findings := w.Judge()
	cases := w.coverage.Snapshot()
	release()
	w.gate.Unlock()

	slices.Reverse(all) // oldest first
	r := readRun(log)
	v := api.Verdict{Failures: []api.VerdictFailure{}, Reached: []string{}, Routes: r.routes}
	if exit != nil && *exit != 0 {
		v.Failures = append(v.Failures, api.VerdictFailure{Kind: api.FailureExit, Reason: fmt.Sprintf("the command exited with status %d", *exit)})
	}
	for _, f := range findings {
		if f.Severity == api.SeverityError {
			v.Failures = append(v.Failures, api.VerdictFailure{Kind: api.FailureFinding, Rule: f.Rule, Severity: f.Severity, Reason: f.Reason, Entries: seqs(f.Entries)})
		}
	}
	v.Failures = append(v.Failures, r.nothingHeld(balances, all)...)
	v.Failures = append(v.Failures, r.oneCharge(all)...)
	for _, j := range all {
		// A job made before the journal let events go may have been seen in an entry gone.
		if charged(j) && !r.told[j.ID] && !r.blind[j.Account] && (dropped.IsZero() || j.CreatedAt.After(dropped)) {
			v.Failures = append(v.Failures, api.VerdictFailure{Kind: api.FailureInvariant, Rule: api.InvariantChargedUnseen,
				Reason: fmt.Sprintf("job %s was charged %d credits, but no answer the client read showed it succeeded (no poll, wait=true or replay it did not hang up on, no webhook delivery its receiver acknowledged): a client that loses track of a job it paid for loses the outputs",
					j.ID, j.Charged), Entries: r.cite(j)})
		}
	}
	slices.SortStableFunc(v.Failures, func(a, b api.VerdictFailure) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Rule, b.Rule), cmp.Compare(first(a.Entries), first(b.Entries)), cmp.Compare(a.Reason, b.Reason))
	})
	v.Failed = len(v.Failures) > 0
	for _, c := range cases {
		if c.Count > 0 {
			v.Reached = append(v.Reached, c.ID)
		}
	}
	return v
}

// run is what the verdict reads of the log: which generations made each job and the input
// they asked for, which jobs the client was told succeeded, and the routes it took.
type run struct {
	madeBy map[string]int64  // job -> the generation that made it (later ones replayed it)
	digest map[string]string // job -> the canonical input digest of its generation
	told   map[string]bool   // jobs an answer the client read showed succeeded
	// blind are the accounts a page of the job list was read for that the journal kept cut:
	// what it showed is not known, so none of their jobs is held unseen.
	blind  map[string]bool
	routes map[string]int
}

// readRun reads a log (evidence.Journal.Log) for the verdict.
func readRun(log []evidence.Event) *run {
	r := &run{madeBy: map[string]int64{}, digest: map[string]string{}, told: map[string]bool{}, blind: map[string]bool{}, routes: map[string]int{}}
	for _, ev := range log {
		switch {
		case ev.Request != nil:
			r.request(ev.Request)
		case ev.Note != nil && ev.Note.Kind == evidence.Download:
			r.routes[evidence.FilesRoute]++
		case ev.Note != nil && ev.Note.Webhook != nil:
			a := ev.Note.Webhook
			if webhooks.Event(a.Event) == webhooks.Succeeded && (a.Kind == webhooks.KindDelivery || a.Kind == webhooks.KindDuplicate) && a.Status/100 == 2 {
				r.told[a.Job] = true // the receiver acknowledged the news
			}
		}
	}
	return r
}

// request reads one journal entry.
func (r *run) request(e *evidence.Entry) {
	route := evidence.Route(e.Method, e.Path)
	if route != "" {
		r.routes[route]++
	}
	if _, seen := r.madeBy[e.JobID]; route == "POST /v1/generate" && e.JobID != "" && !seen {
		r.madeBy[e.JobID], r.digest[e.JobID] = int64(e.Seq), e.InputDigest
	}
	// What the client read: an answer it waited for, that the service made, that went out.
	if e.ClientLeft || e.Status/100 != 2 || evidence.Garbled(e) {
		return
	}
	if e.JobID != "" && e.JobStatus == string(jobs.Succeeded) {
		r.told[e.JobID] = true
	}
	if route == "GET /v1/jobs" {
		var page struct {
			Data []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"data"`
		}
		if json.Unmarshal(e.ResponseBody, &page) != nil {
			r.blind[e.Account] = true // cut to fit the journal
			return
		}
		for _, j := range page.Data {
			if j.Status == string(jobs.Succeeded) {
				r.told[j.ID] = true
			}
		}
	}
}

// charged reports whether a job's success cost its account credits.
func charged(j jobs.View) bool { return j.Status == jobs.Succeeded && j.Charged > 0 }

// nothingHeld judges nothing-held: once the run ends no account holds credits, as every job a
// client starts ends (it waits for it, or cancels it). One failure per account that holds.
func (r *run) nothingHeld(balances []api.Balance, all []jobs.View) []api.VerdictFailure {
	var out []api.VerdictFailure
	for _, b := range balances {
		if b.Held == 0 {
			continue
		}
		var live []string
		var entries []int64
		for _, j := range all {
			if j.Account == b.Account && !j.Status.Terminal() {
				live = append(live, fmt.Sprintf("%s (%s, %d credits)", j.ID, j.Status, j.Credits))
				entries = append(entries, r.cite(j)...)
			}
		}
		out = append(out, api.VerdictFailure{Kind: api.FailureInvariant, Rule: api.InvariantNothingHeld,
			Reason: fmt.Sprintf("account %s holds %d credits once the run ends, for %d job(s) still live: %s; wait for every job started to end, or cancel it",
				b.Account, b.Held, len(live), listed(live)), Entries: sorted(entries)})
	}
	return out
}

// oneCharge judges one-charge-per-generation: at most one charged job per intended generation
// (the same account, model and canonical input), which a retry under a new key breaks.
func (r *run) oneCharge(all []jobs.View) []api.VerdictFailure {
	groups := map[string][]jobs.View{}
	var order []string
	for _, j := range all {
		if !charged(j) {
			continue
		}
		k := j.Account + "\x00" + j.Model + "\x00" + r.inputOf(j)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], j)
	}
	var out []api.VerdictFailure
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		var ids []string
		var entries []int64
		credits := int64(0)
		for _, j := range g {
			ids = append(ids, j.ID)
			entries = append(entries, r.cite(j)...)
			credits += j.Charged
		}
		out = append(out, api.VerdictFailure{Kind: api.FailureInvariant, Rule: api.InvariantOneCharge,
			Reason: fmt.Sprintf("%d jobs of account %s were charged %d credits together for one intended generation (model %s, the same input): %s; a retry with the same Idempotency-Key returns the job the first attempt made",
				len(g), g[0].Account, credits, g[0].Model, listed(ids)), Entries: sorted(entries)})
	}
	return out
}

// cite is the journal entry of the generation that made a job, none when the journal no longer
// holds it.
func (r *run) cite(j jobs.View) []int64 {
	if seq, ok := r.madeBy[j.ID]; ok {
		return []int64{seq}
	}
	return nil
}

// inputOf is the digest of the input a job was made for: its generation's, as journaled, or
// the job's own input when the journal no longer holds that generation.
func (r *run) inputOf(j jobs.View) string {
	if d := r.digest[j.ID]; d != "" {
		return d
	}
	var input map[string]any
	if jsonvalue.Decode(j.Input, &input) != nil {
		return "job " + j.ID // unreadable: the same as no other
	}
	return InputDigest(input)
}

// listed names at most maxListed items, and says how many more there are.
func listed(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

// seqs are journal seqs as a verdict cites them.
func seqs(in []uint64) []int64 {
	if len(in) == 0 {
		return nil
	}
	out := make([]int64, len(in))
	for i, s := range in {
		out[i] = int64(s)
	}
	return out
}

// sorted puts entries in order without repeats; nil when none.
func sorted(entries []int64) []int64 {
	if len(entries) == 0 {
		return nil
	}
	slices.Sort(entries)
	return slices.Compact(entries)
}

// first is a failure's first entry, 0 when it cites none, for ordering.
func first(entries []int64) int64 {
	if len(entries) == 0 {
		return 0
	}
	return entries[0]
}

// APIPlan is the plan the control API put in force in the world (its perturbations, source
// api), as explore replays it: each as it was given, without what the emulator adds to it
// (id, remaining, fired).
func (w *World) APIPlan() api.Plan {
	p := api.Plan{Perturbations: []api.Perturbation{}}
	for _, r := range w.faults.List() {
		if r.Source == "api" {
			p.Perturbations = append(p.Perturbations, r.Fault)
		}
	}
	return p
}
