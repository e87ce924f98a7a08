package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/faults"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// The control API's changes and answers, as the core makes them: the edge decodes a body, makes
// one of these calls, and encodes what comes back.

// PresentHealth is GET /_emulator/health of a tenant's world: the emulator's version, the
// clock, whether the control API is on, how many models the catalog has (every one, listed or
// not), and how many generations wait.
func (w *World) PresentHealth(tenant, version string) api.Health {
	return api.Health{Clock: w.clock.Mode().String(), Control: !w.cfg.ControlDisabled, Models: len(w.cfg.Catalog.Models),
		Now: Timestamp(w.Now()), Scenario: w.Scenario().Name, Seeded: w.cfg.Seeded, Status: "ok", Tenant: tenant,
		Version: version, Waiting: w.Waiting()}
}

// PresentClock is the clock as the control API shows it, with the next job transition due.
func (w *World) PresentClock() api.Clock {
	c := api.Clock{Mode: w.clock.Mode().String(), Now: Timestamp(w.Now())}
	if id, at, from, ok := w.NextDue(); ok {
		c.NextDue = &api.NextDue{At: Timestamp(at), JobID: id, Status: string(from)}
	}
	return c
}

// ChangeClock changes the clock's mode, moves it (an advance or a set, not both), or both, and
// answers the clock once everything that fell due has happened: job transitions in order,
// quote, output and key expiry. The move waits for the webhook deliveries it made due at most
// clock.MoveBudget, and not once ctx ends (the client hung up); what it did not wait for goes
// out after it. Nothing changes when the change is refused.
func (w *World) ChangeClock(ctx context.Context, c api.ClockChange) (api.Clock, error) {
	hasAdvance, hasSet, hasMode := c.Advance != "", c.Set != "", c.Mode != ""
	mode, modeOK := clock.ParseMode(c.Mode)
	switch {
	case hasAdvance && hasSet || !hasAdvance && !hasSet && !hasMode:
		return api.Clock{}, problem.New(problem.ConflictingControlInput, `send {"mode": "real|manual|skip"}, {"advance": "90s"} or {"set": "<RFC 3339 time>"}; a mode may come with one of the others`)
	case hasMode && !modeOK:
		return api.Clock{}, problem.New(problem.InvalidClockChange, "mode %q: want real, manual or skip", c.Mode)
	}
	var d time.Duration
	var t time.Time
	var err error
	if hasAdvance {
		if d, err = ParseAdvance(c.Advance); err != nil {
			return api.Clock{}, problem.New(problem.InvalidClockChange, "advance %q: %v", c.Advance, err)
		}
	}
	if hasSet {
		if t, err = time.Parse(time.RFC3339Nano, c.Set); err != nil {
			return api.Clock{}, problem.New(problem.InvalidClockChange, "set %q is not an RFC 3339 time such as 2026-01-01T00:10:00Z", c.Set)
		}
	}
	if hasMode {
		w.SetClockMode(mode)
	}
	switch {
	case hasAdvance:
		if err := w.advance(ctx, d); err != nil {
			return api.Clock{}, problem.New(problem.InvalidClockChange, "advance %q: %v", c.Advance, err)
		}
	case hasSet:
		if err := w.setTime(ctx, t); errors.Is(err, clock.ErrBackwards) {
			return api.Clock{}, problem.New(problem.InvalidClockChange, "set %s is before the emulator's time %s; the clock only moves forward (POST /_emulator/reset starts it over)", c.Set, Timestamp(w.Now()))
		} else if err != nil {
			return api.Clock{}, problem.New(problem.InvalidClockChange, "set %s: %v", c.Set, err)
		}
	}
	return w.PresentClock(), nil
}

// ParseAdvance reads a Go duration ("90s", "1h30m") or plain seconds ("90"); it must not be
// negative and at most a year.
func ParseAdvance(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, err2 := strconv.ParseFloat(v, 64)
		if err2 != nil {
			return 0, errors.New("want a duration such as 90s or 5m")
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, errors.New("the clock only moves forward")
	}
	if d > 366*24*time.Hour {
		return 0, errors.New("advance at most a year at a time")
	}
	return d, nil
}

// PresentScenario is the scenario in force as the control API shows it, with the scenarios a
// tenant may switch to and the scenario's faults still in force.
func (w *World) PresentScenario() api.Scenario {
	body := w.Scenario().Describe()
	body.Available = ScenarioNames(w.cfg.Scenarios)
	body.Faults = 0 // those still in force: DELETE /_emulator/faults?source=all removes them
	for _, r := range w.faults.List() {
		if r.Source == "scenario" {
			body.Faults++
		}
	}
	return body
}

// ChangeScenario puts in force an embedded scenario by name, or a whole scenario document
// inline, and answers the scenario as PresentScenario shows it.
func (w *World) ChangeScenario(c api.ScenarioChange) (api.Scenario, error) {
	if (c.Name == "") == (c.Scenario == nil) {
		return api.Scenario{}, problem.New(problem.InvalidRequest, `send {"name": "<embedded scenario>"} or {"scenario": {<scenario document>}}`)
	}
	sc, ok := w.cfg.Scenarios[c.Name]
	if c.Name != "" && !ok {
		return api.Scenario{}, problem.New(problem.ScenarioNotFound, "no scenario %q (embedded: %s)", c.Name, strings.Join(ScenarioNames(w.cfg.Scenarios), ", "))
	}
	if c.Scenario != nil {
		// JSON is YAML, so the inline document goes through the same strict loader; indented,
		// with its members in order, so each problem's line points into the document as
		// printed back in the answer.
		var inline any
		_ = jsonvalue.Decode(c.Scenario, &inline) // the edge's strict decode has read it once

		raw, _ := json.MarshalIndent(inline, "", "  ")
		var err error
		if sc, err = scenario.Parse("request body", raw); err != nil {
			return api.Scenario{}, invalidScenario(err)
		}
		if sc.Name == "request body" {
			sc.Name = "inline"
		}
		n := inlineScenarioBytes(sc)
		for _, f := range sc.Plan {
			n += faults.RuleBytes(f)
		}
		if err := w.admit(n); err != nil {
			return api.Scenario{}, err
		}
	}
	if err := w.useScenario(sc, true); err != nil {
		return api.Scenario{}, err
	}
	return w.PresentScenario(), nil
}

// invalidScenario reports the problems of a scenario sent in a request body, one entry each,
// with the line of the body indented two spaces per level, and a JSON Pointer to the field
// when the problem names one.
func invalidScenario(err error) error {
	e := &problem.Error{Code: problem.InvalidRequest, Detail: "the scenario is not valid: " + err.Error()}
	var ps catalog.Problems
	if errors.As(err, &ps) {
		e.Detail = fmt.Sprintf("the scenario has %d problems; see errors (lines count in the body indented two spaces per level)", len(ps))
		if len(ps) == 1 {
			e.Detail = fmt.Sprintf("the scenario is not valid: line %d: %s (lines count in the body indented two spaces per level)", ps[0].Line, ps[0].Message)
		}
		for _, p := range ps {
			fe := problem.FieldError{Message: fmt.Sprintf("line %d: %s", p.Line, p.Message)}
			if ptr := scenario.Pointer(p.Message, false); ptr != "" {
				fe.Pointer = "/scenario" + ptr
			}
			e.Errors = append(e.Errors, fe)
		}
	}
	return e
}

// PresentFaults are the fault rules in force, as the control API lists them.
func (w *World) PresentFaults() []api.Fault { return faultViews(w.faults.List()) }

// faultViews shows fault rules as the control API lists them.
func faultViews(rules []faults.Rule) []api.Fault {
	out := []api.Fault{}
	for _, r := range rules {
		v := r.Fault
		v.Count = 0 // remaining says what is left of it
		out = append(out, api.Fault{ID: r.ID, Source: r.Source, Remaining: r.Remaining, Fired: r.Fired, Seen: r.Seen, Perturbation: v})
	}
	return out
}

// AddFault puts a perturbation of the control API's in force, once it is checked as a
// scenario's would be.
func (w *World) AddFault(f api.Perturbation) (api.Fault, error) {
	if err := checkPerturbation(&f, ""); err != nil {
		return api.Fault{}, err
	}
	// Admitted before the set's lock: the budget may count the world, which reads the rules.
	if err := w.admit(faults.RuleBytes(f)); err != nil {
		return api.Fault{}, err
	}
	r, err := w.faults.AddWithin("api", f)
	if err != nil {
		return api.Fault{}, faultsFull()
	}
	w.retune()
	return faultViews([]faults.Rule{r})[0], nil
}

// checkPerturbation checks a perturbation sent to the control API, the problem's pointer under
// at (the perturbation's place in a plan's body).
func checkPerturbation(f *api.Perturbation, at string) error {
	err := scenario.CheckPerturbation(f)
	if err == nil {
		return nil
	}
	e := &problem.Error{Code: problem.InvalidRequest, Detail: "the perturbation is not valid: " + err.Error()}
	if ptr := scenario.Pointer(err.Error(), true); ptr != "" || at != "" {
		e.Errors = []problem.FieldError{{Pointer: at + ptr, Message: err.Error()}}
	}
	return e
}

// PresentAdversity is the adversity plan in force: every perturbation, the scenario's and the
// control API's, in the order they are tried.
func (w *World) PresentAdversity() api.PlanInForce {
	return api.PlanInForce{Perturbations: w.PresentFaults()}
}

// ChangePlan puts a plan in place of the control API's perturbations; nothing changes unless
// every perturbation is valid and the plan fits the tenant's bounds.
func (w *World) ChangePlan(p api.Plan) (api.PlanInForce, error) {
	var n int64
	for i := range p.Perturbations {
		if err := checkPerturbation(&p.Perturbations[i], "/perturbations/"+strconv.Itoa(i)); err != nil {
			return api.PlanInForce{}, err
		}
		n += faults.RuleBytes(p.Perturbations[i])
	}
	if err := w.admit(n); err != nil {
		return api.PlanInForce{}, err
	}
	if err := w.faults.ReplaceSource("api", p.Perturbations, true); err != nil {
		return api.PlanInForce{}, faultsFull()
	}
	w.retune()
	w.Changed(PartScenario)
	return w.PresentAdversity(), nil
}

// faultsFull is the problem for a fault rule, or a scenario's rules, past the bounds of a
// tenant's rules.
func faultsFull() error {
	return problem.New(problem.InvalidRequest, "a tenant holds at most %d fault rules of at most %d bytes together, the scenario's and the control API's; DELETE /_emulator/faults removes the API's", faults.MaxRules, faults.MaxBytes)
}

// RemoveFaults removes the control API's fault rules, and with all the scenario's too.
func (w *World) RemoveFaults(all bool) {
	w.faults.RemoveSource("api")
	if all {
		w.faults.RemoveSource("scenario")
	}
	w.retune()
	w.Changed(PartScenario)
}

// RemoveFault removes one fault rule.
func (w *World) RemoveFault(id string) error {
	if !w.faults.Remove(id) {
		return problem.New(problem.NotFound, "no fault %q", id)
	}
	w.retune()
	w.Changed(PartScenario)
	return nil
}

// Balances are every account's credits, as the control API lists them.
func (w *World) Balances() []api.Balance { return w.ledger.Balances() }

// accountError is a ledger's refusal as the control API answers it.
func accountError(account string, err error) error {
	if errors.Is(err, ledger.ErrNoAccount) {
		return problem.New(problem.AccountNotFound, "no account %q", account)
	}
	return err
}

// Requests is a page of the tenant's journal whose entries match a filter given as query
// parameters (method, path, account, model, code and status, as a request pattern takes them),
// each naming the tenant. A client that leaves ends the scan with ctx's error.
func (w *World) Requests(ctx context.Context, q url.Values, tenant string, offset, limit int) ([]evidence.Entry, int, error) {
	obj := map[string]any{}
	for _, name := range [...]string{"method", "path", "account", "model", "code", "status"} {
		if v := q.Get(name); v != "" {
			obj[name] = v
			if name == "status" {
				obj[name] = json.Number(v)
			}
		}
	}
	filter, errs := evidence.Parse(obj)
	if errs != nil {
		name := strings.TrimPrefix(errs[0].Pointer, "/")
		return nil, 0, paramError(name, "%s %s", name, errs[0].Message)
	}
	entries, total, err := w.journal.List(ctx, filter, offset, limit)
	for i := range entries {
		entries[i].Tenant = tenant
	}
	return entries, total, err
}

// ClearRequests empties the tenant's journal.
func (w *World) ClearRequests() { w.journal.Clear() }

// Verify counts the journal entries that match a pattern and, when none does, shows the
// closest, each naming the tenant. A client that leaves ends the scan with ctx's error.
func (w *World) Verify(ctx context.Context, p *evidence.Pattern, tenant string) (api.Verification, error) {
	v, err := w.journal.Verify(ctx, p)
	for i := range v.NearMisses {
		v.NearMisses[i].Entry.Tenant = tenant
	}
	return v, err
}

// Unexpected is a page of the tenant's error answers that no expected pattern covers, each
// naming the tenant. A client that leaves ends the scan with ctx's error.
func (w *World) Unexpected(ctx context.Context, tenant string, offset, limit int) (api.UnexpectedErrors, error) {
	u, err := w.journal.Unexpected(ctx, w.Expected(), offset, limit)
	for i := range u.Data {
		u.Data[i].Entry.Tenant = tenant
	}
	return u, err
}
