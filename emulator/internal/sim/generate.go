package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/idempotency"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
	"github.com/mediagen/mediagen-emulator/emulator/internal/pricing"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/quotes"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted, in characters.
const MaxIdempotencyKey = 255

// Quote is a price quote as the API returns it.
type Quote struct {
	ID        string
	Model     string
	Credits   int64
	ExpiresAt time.Time
}

// Quote prices an input for a model on behalf of an account.
func (w *World) Quote(account, model string, input map[string]any) (Quote, error) {
	if m, ok := w.cfg.Catalog.Model(model); ok {
		if err := w.retiredErr(m); err != nil {
			return Quote{}, err
		}
	}
	m, err := w.validInput(model, input)
	if err != nil {
		return Quote{}, err
	}
	if ptr, outcome := findToken(input, "/input"); outcome != "" && !scenario.ValidOutcome(outcome) {
		return Quote{}, badToken(ptr, outcome)
	}
	if !m.Ready() {
		return Quote{}, problem.New(problem.ModelUnavailable, "model %q is %s and does not take quotes", m.ID, m.Status)
	}
	w.gate.RLock()
	defer w.gate.RUnlock()
	now := w.clock.Now()
	q := quotes.Quote{
		ID:        w.ids.UUID("quote", account, strconv.FormatUint(w.nextQuote(account), 10)),
		Account:   account,
		Model:     m.ID,
		Input:     jsonvalue.Canonical(input),
		Credits:   pricing.Credits(m, input),
		CreatedAt: now,
		ExpiresAt: now.Add(w.quoteTTL(m)),
	}
	if err := w.admit(quotes.Size(q)); err != nil {
		return Quote{}, err
	}
	if err := w.quotes.Add(q); err != nil {
		var limit *quotes.LimitError
		if !errors.As(err, &limit) {
			return Quote{}, err
		}
		return Quote{}, &problem.Error{Code: problem.TooManyQuotes, RetryAfter: max(1, int(math.Ceil(limit.RetryAt.Sub(now).Seconds()))),
			Detail: limit.Error() + "; the oldest expires at " + Timestamp(limit.RetryAt)}
	}
	return Quote{ID: q.ID, Model: q.Model, Credits: q.Credits, ExpiresAt: q.ExpiresAt}, nil
}

// Generation is a request to generate: what was asked, and how the request steers the job.
type Generation struct {
	Account string
	// Key is the API key the request came with, which a concurrency limit may count by.
	Key            string
	IdempotencyKey string
	Model          string
	QuoteID        string
	Input          map[string]any
	// Scenario names a scenario for this job alone (X-Emulator-Scenario); empty for none.
	Scenario string
	// Outcome forces the job's outcome (X-Emulator-Outcome, or a perturbation); empty for none.
	Outcome string
	// OutcomeCode is the failure code of a forced fail; empty for generation_failed.
	OutcomeCode string
	// Perturbation names the perturbation that forced the outcome, if one did.
	Perturbation string
	// Base is the scheme and host the client reached the emulator by, which tells the
	// emulator's own upload and file URLs among the inputs (media_inputs.go).
	Base string

	media *mediaInputs // what its media inputs were found to be, when inputs are fetched
}

// Generate checks a generation in the contract's order, holds the credits and creates the job.
// A repeat of an earlier generation (same account, key and request) returns that generation's
// job with replayed set; a repeat that arrives while the first is still being decided waits for
// it, or gives up with ctx.
func (w *World) Generate(ctx context.Context, g Generation) (v jobs.View, replayed bool, err error) {
	key := g.IdempotencyKey
	if err := CheckIdempotencyKey(key); err != nil {
		return jobs.View{}, false, err
	}
	m, err := w.quotedInput(g)
	if err != nil {
		return jobs.View{}, false, err
	}
	if g.media, err = w.readInputs(ctx, g, m); err != nil {
		return jobs.View{}, false, err
	}
	if err := ctx.Err(); err != nil && g.media != nil {
		return jobs.View{}, false, err // the client left while an input was fetched: make no job
	}
	for {
		entry, leader, err := w.idem.Begin(g.Account, key, g.fingerprint())
		if errors.Is(err, idempotency.ErrReused) {
			return jobs.View{}, false, problem.New(problem.IdempotencyKeyReused, "Idempotency-Key %q was used with a different request; use a new key for a new generation", key)
		}
		if !leader {
			select {
			case <-entry.Done():
			case <-ctx.Done():
				return jobs.View{}, false, ctx.Err()
			}
			if entry.JobID == "" {
				continue // the first request failed and left the key free
			}
			view, ok := w.jobs.Get(g.Account, entry.JobID)
			if !ok {
				return jobs.View{}, false, problem.New(problem.JobNotFound, "the job Idempotency-Key %q created is no longer kept", key)
			}
			return view, true, nil
		}
		return w.lead(g, m, entry)
	}
}

// lead makes the job of a generation whose key it holds, and settles the key. A snapshot
// sees the job and its key together, or neither.
func (w *World) lead(g Generation, m *catalog.Model, entry *idempotency.Entry) (jobs.View, bool, error) {
	w.gate.RLock()
	defer w.gate.RUnlock()
	// Directives steer a new job; a replay returns the job as it was made.
	steer, err := w.directives(g, g.Input)
	steer.media = g.media
	steer.described = w.describeInputs(g, m, g.media)
	var view jobs.View
	if err == nil {
		view, err = w.startJob(g.Account, g.Key, g.QuoteID, m, g.Input, steer)
	}
	if err != nil {
		w.idem.Abort(g.Account, g.IdempotencyKey, entry)
		return jobs.View{}, false, err
	}
	w.idem.Finish(g.Account, g.IdempotencyKey, entry, view.ID)
	return view, false, nil
}

// fingerprint identifies the whole request for idempotency: its body as a canonical value, so
// members reordered or spaced otherwise are the same request.
func (g Generation) fingerprint() []byte {
	return jsonvalue.Canonical(map[string]any{"input": g.Input, "model": g.Model, "quote_id": g.QuoteID})
}

// InputDigest names an input by its value, as the journal compares generations: members
// reordered or spaced otherwise are the same input.
func InputDigest(input map[string]any) string { return evidence.Digest(jsonvalue.Canonical(input)) }

// CheckIdempotencyKey refuses a missing, blank or overlong Idempotency-Key. The contract checks
// it before the body, so the transport calls it first; Generate checks it again.
func CheckIdempotencyKey(key string) error {
	if strings.TrimSpace(key) == "" || utf8.RuneCountInString(key) > MaxIdempotencyKey {
		return problem.New(problem.MissingIdempotencyKey, "send an Idempotency-Key header of 1 to %d characters; a retry with the same key returns the same job", MaxIdempotencyKey)
	}
	return nil
}

// quotedInput is validInput, less the schema's check when the generation's quote was made in
// this run for this very model and input: that input was validated when it was quoted, against
// the same catalog, and the check is the costliest part of a generation.
func (w *World) quotedInput(g Generation) (*catalog.Model, error) {
	if q, ok := w.quotes.Find(g.Account, g.QuoteID); ok && q.Checked && q.Model == g.Model {
		if m, ok := w.cfg.Catalog.Model(g.Model); ok && q.SameInput(jsonvalue.Canonical(g.Input)) {
			return m, nil
		}
	}
	return w.validInput(g.Model, g.Input)
}

// validInput finds the model and validates the input against its schema.
func (w *World) validInput(id string, input map[string]any) (*catalog.Model, error) {
	m, ok := w.cfg.Catalog.Model(id)
	if !ok {
		if err := w.evolvedErr(id); err != nil {
			return nil, err
		}
		return nil, problem.New(problem.ModelNotFound, "no model %q; GET /v1/models lists them", id)
	}
	if err := m.Validate(input); err != nil {
		vs := schema.Violations(err)
		e := &problem.Error{Code: problem.InvalidInput, Detail: "the input does not match the schema of " + m.ID + ": " + describeViolations(vs)}
		for _, v := range vs {
			e.Errors = append(e.Errors, problem.FieldError{Pointer: "/input" + v.Pointer, Message: v.Message})
		}
		return nil, e
	}
	return m, nil
}

func describeViolations(vs []schema.Violation) string {
	if len(vs) == 1 {
		where := vs[0].Pointer
		if where == "" {
			where = "the input"
		}
		return where + " " + vs[0].Message
	}
	return strconv.Itoa(len(vs)) + " problems; see errors"
}

// startJob runs the checks that follow idempotency, in the contract's order, then holds the
// credits and creates the job. Nothing changes unless every check passes.
func (w *World) startJob(account, key, quoteID string, m *catalog.Model, input map[string]any, steer directives) (jobs.View, error) {
	if err := w.retiredErr(m); err != nil {
		return jobs.View{}, err
	}
	q, ok := w.quotes.Find(account, quoteID)
	if !ok {
		return jobs.View{}, problem.New(problem.QuoteNotFound, "no quote %q for this account; POST /v1/quotes makes one", quoteID)
	}
	canonical := jsonvalue.Canonical(input)
	if q.Model != m.ID {
		return jobs.View{}, problem.New(problem.QuoteMismatch, "quote %s is for model %q, not %q", q.ID, q.Model, m.ID)
	}
	if !q.SameInput(canonical) {
		return jobs.View{}, problem.New(problem.QuoteMismatch, "quote %s was made for another input; quote this input first", q.ID)
	}
	// A quote is valid until its expires_at and invalid after it: at the instant it still buys.
	if w.clock.Now().After(q.ExpiresAt) {
		return jobs.View{}, problem.New(problem.QuoteExpired, "quote %s expired at %s", q.ID, Timestamp(q.ExpiresAt))
	}
	if q.UsedBy != "" {
		return jobs.View{}, problem.New(problem.QuoteAlreadyUsed, "quote %s already paid for job %s; a quote buys one generation", q.ID, q.UsedBy)
	}
	if !m.Ready() {
		return jobs.View{}, problem.New(problem.ModelUnavailable, "model %q is %s and does not generate", m.ID, m.Status)
	}
	// The tenant's jobs are numbered here, as they pass the quote's checks, for a plan's job#N.
	if p, id, ok := w.faults.PickJob(steer.outcome != ""); ok {
		steer.outcome, steer.code, steer.struck = p.Outcome, p.Code, id
	}
	if err := w.refusal(m, input, canonical, steer); err != nil {
		return jobs.View{}, err
	}
	slot, reject := concurrencySlot(steer.scenario, m, account, key)
	if reject != nil {
		if at, busy := w.jobs.Busy(slot); busy {
			return jobs.View{}, w.concurrencyLimited(reject, at)
		}
	}
	if err := w.admit(jobs.Size(jobs.New{Input: canonical})); err != nil {
		return jobs.View{}, err
	}
	jobID := w.ids.UUID("job", account, q.ID)
	if _, ok := w.quotes.Use(account, q.ID, jobID); !ok {
		return jobs.View{}, problem.New(problem.QuoteAlreadyUsed, "quote %s already paid for another job; a quote buys one generation", q.ID)
	}
	if err := w.ledger.Hold(account, q.Credits); err != nil {
		w.quotes.Release(account, q.ID, jobID)
		if errors.Is(err, ledger.ErrInsufficient) {
			b, _ := w.ledger.Balance(account)
			return jobs.View{}, &problem.Error{Code: problem.InsufficientCredits,
				Detail: "the quote costs " + strconv.FormatInt(q.Credits, 10) + " credits and the account has " + strconv.FormatInt(b.Available, 10) + " available",
				Extra:  map[string]any{"credits_required": q.Credits, "credits_available": b.Available}}
		}
		return jobs.View{}, err
	}
	raw, _ := json.Marshal(input)
	outputs, err := w.describeOutputs(m, input, jobID)
	if err != nil {
		w.ledger.Release(account, q.Credits) // no job was made: nothing was bought, nothing refunded
		w.quotes.Release(account, q.ID, jobID)
		return jobs.View{}, err
	}
	plan := w.plan(m, input, jobID, steer)
	plan.MediaInputs = steer.described
	if outputs, err = w.applyInputs(m, input, steer.media, outputs, &plan); err != nil {
		w.ledger.Release(account, q.Credits)
		w.quotes.Release(account, q.ID, jobID)
		return jobs.View{}, err
	}
	outputs = w.filter(m, jobID, steer, &plan, outputs)
	n := jobs.New{
		Remade:    w.remade(m, raw, jobID, outputs),
		ID:        jobID,
		Account:   account,
		Model:     m.ID,
		QuoteID:   q.ID,
		Credits:   q.Credits,
		Input:     raw,
		Plan:      plan,
		OutputTTL: w.outputTTL(steer.scenario, m),
		Outputs:   outputs,
		Slot:      slot,
	}
	if reject == nil {
		v := w.jobs.Create(n)
		if v.QueuePosition > 0 {
			w.Coverage().Hit(evidence.QueuedBehind)
		}
		return v, nil
	}
	v, err := w.jobs.TryCreate(n)
	var limit *jobs.LimitError
	if errors.As(err, &limit) {
		// Another generation took the last slot since the check above: nothing stays held.
		w.ledger.Release(account, q.Credits)
		w.quotes.Release(account, q.ID, jobID)
		return jobs.View{}, w.concurrencyLimited(reject, limit.RetryAt)
	}
	return v, err
}

// Wait blocks until the job is terminal, the wait limit passes (on the world's clock or in real
// time, whichever comes first, so a manual clock cannot hang a request), ctx ends (the client
// left), the world is retired, or stop is closed (the server shuts down). Each wake-up comes
// from a change, not a poll; it returns the job as it is then.
func (w *World) Wait(ctx context.Context, view jobs.View, stop <-chan struct{}) jobs.View {
	if view = w.settle(view); view.Status.Terminal() || w.clock.Mode() == clock.Skip {
		return view
	}
	w.addWaiting(1)
	defer w.addWaiting(-1)
	limit := make(chan struct{})
	timer := w.clock.AfterFunc(w.clock.Now().Add(w.cfg.MaxWait), func() { close(limit) })
	defer timer.Stop()
	wall := time.NewTimer(w.cfg.MaxWait)
	defer wall.Stop()
	for {
		v, changed, ok := w.jobs.Watch("", view.ID)
		if !ok {
			return view
		}
		view = v
		if view.Status.Terminal() {
			return view
		}
		select {
		case <-changed:
			continue
		case <-limit:
		case <-wall.C:
		case <-ctx.Done():
		case <-w.gone:
		case <-stop:
		}
		if v, _, ok := w.jobs.Watch("", view.ID); ok {
			view = v
		}
		return view
	}
}

// Job is an account's job as a poll finds it: a poll waits on the job, so a skipping clock
// first moves on to the job's next transition.
func (w *World) Job(account, id string) (jobs.View, error) {
	w.skipAhead(context.Background(), account, id, 1, clock.Latest)
	v, ok := w.jobs.Get(account, id)
	if !ok {
		return jobs.View{}, problem.New(problem.JobNotFound, "no job %q for this account", id)
	}
	if account != "" && v.Status.Terminal() {
		w.hooks.Polled(id) // a client saw it end: the after_poll knob lets its webhook go
	}
	return v, nil
}

// JobAny returns a job of any account, as the control API sees it: looking, not waiting, so
// no clock moves.
func (w *World) JobAny(id string) (jobs.View, error) {
	v, ok := w.jobs.Get("", id)
	if !ok {
		return jobs.View{}, problem.New(problem.JobNotFound, "no job %q for this account", id)
	}
	return v, nil
}

// ListJobs returns an account's jobs, newest first, that pass the filter, and how many match.
func (w *World) ListJobs(account string, f jobs.Filter, offset, limit int) ([]jobs.View, int) {
	return w.jobs.List(account, f, offset, limit)
}

// Cancel ends an account's queued or running job as canceled, refunding its credits.
func (w *World) Cancel(account, id string) (jobs.View, error) {
	w.gate.RLock()
	defer w.gate.RUnlock()
	v, err := w.jobs.Cancel(account, id)
	return v, jobChangeError(id, v, err)
}

// Force ends a job now: status Succeeded makes it succeed with real outputs, Failed makes it
// fail as failure says (its code generation_failed and the code's own message where it leaves
// them out, as it may whole).
func (w *World) Force(id string, status jobs.Status, failure *api.JobFailure) (jobs.View, error) {
	var jerr *jobs.Error
	if status == jobs.Failed {
		var f api.JobFailure
		if failure != nil {
			f = *failure
		}
		code := cmp.Or(f.Code, "generation_failed")
		jerr = &jobs.Error{Code: code, Message: cmp.Or(f.Message, scenario.DefaultMessage(code))}
	}
	w.gate.RLock()
	defer w.gate.RUnlock()
	v, err := w.jobs.Force(id, status, jerr)
	return v, jobChangeError(id, v, err)
}

// jobChangeError classifies why a job could not be canceled or forced.
func jobChangeError(id string, v jobs.View, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jobs.ErrNotFound):
		return problem.New(problem.JobNotFound, "no job %q for this account", id)
	case errors.Is(err, jobs.ErrTerminal):
		return &problem.Error{Code: problem.JobNotCancelable, Detail: "job " + id + " already ended as " + string(v.Status),
			Extra: map[string]any{"job_status": string(v.Status)}}
	}
	return err
}

// outcomeToken finds [emulator:<outcome>] inside a string of the input.
var outcomeToken = regexp.MustCompile(`\[emulator:([a-z_]+)\]`)

// directives is how a request steers its generation: a scenario for it alone and a forced
// outcome. They are read before anything changes, so a bad one fails the request cleanly.
type directives struct {
	scenario *scenario.Scenario
	outcome  string
	code     string // a forced fail's failure code, if the perturbation gave one
	struck   string // the perturbation that forced the outcome, if one did
	ptr      string // where in the input the outcome token is, if a token chose it
	media    *mediaInputs
	// described is what the control API shows of the media inputs (input_records.go).
	described []api.MediaInput
}

// Request headers that steer one generation, named in problems about them.
const (
	headerOutcome  = "X-Emulator-Outcome"
	headerScenario = "X-Emulator-Scenario"
)

// directives reads the scenario and outcome a generation asks for and the [emulator:...]
// tokens of its input. An asked-for outcome beats a token; the first token in key order wins
// over later ones.
func (w *World) directives(g Generation, input map[string]any) (directives, error) {
	d := directives{scenario: w.inForce()}
	if name := g.Scenario; name != "" {
		sc, ok := w.cfg.Scenarios[name]
		if !ok && name == d.scenario.Name {
			sc, ok = d.scenario, true
		}
		if !ok {
			return d, paramError(headerScenario, "%s: no scenario %q (embedded: %s)", headerScenario, name, strings.Join(ScenarioNames(w.cfg.Scenarios), ", "))
		}
		d.scenario = sc
	}
	if v := g.Outcome; v != "" {
		if !scenario.ValidOutcome(v) {
			return d, paramError(headerOutcome, "%s: %q is not one of %s", headerOutcome, v, scenario.OutcomeNames)
		}
		d.outcome, d.code, d.struck = v, g.OutcomeCode, g.Perturbation
		return d, nil
	}
	ptr, outcome := findToken(input, "/input")
	if outcome == "" {
		return d, nil
	}
	if !scenario.ValidOutcome(outcome) {
		return d, badToken(ptr, outcome)
	}
	d.outcome, d.ptr = outcome, ptr
	return d, nil
}

// paramError is an invalid_parameter problem about one named parameter or header.
func paramError(name, format string, args ...any) error {
	e := problem.New(problem.InvalidParameter, format, args...)
	e.Errors = []problem.FieldError{{Parameter: name, Message: e.Detail}}
	return e
}

// ScenarioNames lists scenario names in order.
func ScenarioNames(known map[string]*scenario.Scenario) []string {
	return slices.Sorted(maps.Keys(known))
}

// badToken reports an [emulator:...] token that names no outcome.
func badToken(ptr, outcome string) error {
	return &problem.Error{Code: problem.InvalidInput, Detail: "unknown outcome token [emulator:" + outcome + "]",
		Errors: []problem.FieldError{{Pointer: ptr, Message: "[emulator:" + outcome + "] is not one of " + scenario.OutcomeNames}}}
}

// findToken walks the input in a fixed order (object keys sorted) for the first outcome token.
func findToken(v any, ptr string) (string, string) {
	if !hasToken(v) {
		return "", "" // most inputs: no pointers built, no keys sorted
	}
	return locateToken(v, ptr)
}

// locateToken is findToken's walk, building the pointer as it goes.
func locateToken(v any, ptr string) (string, string) {
	switch x := v.(type) {
	case string:
		if m := outcomeToken.FindStringSubmatch(x); m != nil {
			return ptr, m[1]
		}
	case []any:
		for i, item := range x {
			if p, o := locateToken(item, ptr+"/"+strconv.Itoa(i)); o != "" {
				return p, o
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if p, o := locateToken(x[k], ptr+"/"+schema.EscapePointer(k)); o != "" {
				return p, o
			}
		}
	}
	return "", ""
}

// hasToken reports whether some string inside v may hold an outcome token.
func hasToken(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, "[emulator:")
	case []any:
		for _, item := range x {
			if hasToken(item) {
				return true
			}
		}
	case map[string]any:
		for _, item := range x {
			if hasToken(item) {
				return true
			}
		}
	}
	return false
}

// plan decides a new job's course: the catalog's timing for this input, shaped by the scenario
// in force and any forced outcome. Random draws come from the world's one source, named by the
// job id and the draw's label.
func (w *World) plan(m *catalog.Model, input map[string]any, jobID string, d directives) jobs.Plan {
	t := m.Timing
	run := t.Run
	if t.RunPerUnit != nil {
		v, ok := input[t.RunPerUnit.Field]
		if !ok {
			v = m.Properties[t.RunPerUnit.Field].Default
		}
		if n, ok := catalog.NumberOf(v); ok && n > 0 {
			run = scenario.Clamp(float64(run) + n*float64(t.RunPerUnit.Each))
		}
	}
	p := d.scenario.Effective(m).Plan(scenario.PlanInput{
		Model:   m,
		Queue:   t.Queue,
		Run:     run,
		Timeout: t.QueueTimeout,
		Forced:  d.outcome,
		Code:    d.code,
		MaxWait: w.cfg.MaxWait,
		Draw:    func(label string) float64 { return w.ids.Float64("draw", jobID, label) },
	})
	p.Forced, p.Struck = d.outcome, d.struck // shown by the control API: a forced ending, not a drawn one
	return p
}

// quoteTTL is how long a quote for the model lives under the scenario in force.
func (w *World) quoteTTL(m *catalog.Model) time.Duration {
	if ttl := w.inForce().Effective(m).QuoteTTL; ttl != nil {
		return *ttl
	}
	return w.cfg.QuoteTTL
}

// outputTTL is how long a job's outputs are served under a scenario.
func (w *World) outputTTL(sc *scenario.Scenario, m *catalog.Model) time.Duration {
	if ttl := sc.Effective(m).OutputTTL; ttl != nil {
		return *ttl
	}
	return w.cfg.OutputTTL
}
