package sim

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// Phase is a model's place in the lifecycle of the scenario in force, on the tenant's clock;
// the zero Phase for an unknown model or one no lifecycle rule names.
func (w *World) Phase(modelID string) scenario.Phase {
	m, ok := w.cfg.Catalog.Model(modelID)
	if !ok {
		return scenario.Phase{}
	}
	return w.phase(m)
}

func (w *World) phase(m *catalog.Model) scenario.Phase {
	sc := w.inForce()
	if len(sc.Lifecycle) == 0 {
		return scenario.Phase{}
	}
	p := sc.PhaseOf(m, w.clock.Now())
	switch {
	case p.Retired:
		w.Coverage().Hit(evidence.ModelRetired)
	case p.Deprecated:
		w.Coverage().Hit(evidence.ModelDeprecated)
	}
	return p
}

// retiredErr refuses a model past its sunset: 410 model_retired, naming the replacement.
func (w *World) retiredErr(m *catalog.Model) error {
	p := w.phase(m)
	if !p.Retired {
		return nil
	}
	e := problem.New(problem.ModelRetired, "model %q was retired at %s", m.ID, Timestamp(p.Sunset))
	if p.Replacement != "" {
		e.Detail += "; use " + p.Replacement
		e.Extra = map[string]any{"replacement": p.Replacement}
	}
	return e
}

// CheckRetired answers 410 model_retired for a model past its sunset; nil otherwise.
func (w *World) CheckRetired(modelID string) error {
	m, ok := w.cfg.Catalog.Model(modelID)
	if !ok {
		return nil
	}
	return w.retiredErr(m)
}

// deprecatedAt says when the scenario in force deprecates a model, for the report.
func (w *World) deprecatedAt(modelID string) (time.Time, bool) {
	m, ok := w.cfg.Catalog.Model(modelID)
	if !ok {
		return time.Time{}, false
	}
	return w.inForce().DeprecatedAt(m)
}

// refusal refuses a generation as a service's moderation does at request time, before anything
// is held: when the request forces refuse, or the rule's refusal_rate draws it. The draw is named
// by the model and the input, so under a seed the same input is refused every time it is sent.
func (w *World) refusal(m *catalog.Model, input map[string]any, canonical []byte, steer directives) error {
	switch steer.outcome {
	case scenario.OutcomeRefuse:
	case "":
		if !steer.scenario.Effective(m).Refuses(w.ids.Float64("draw", "refuse", m.ID, string(canonical))) {
			return nil
		}
	default:
		return nil
	}
	w.Coverage().Hit(evidence.Refused)
	ptr := steer.ptr
	if ptr == "" {
		ptr = flaggedField(input)
	}
	return &problem.Error{Code: problem.ContentPolicyViolation,
		Detail: "the request was refused by the content policy of " + m.ID + "; nothing was held and the quote is still unused",
		Errors: []problem.FieldError{{Pointer: ptr, Message: "flagged by the content policy"}}}
}

// flaggedField is where a refusal points: the prompt, else the first text field in key order,
// else the whole input.
func flaggedField(input map[string]any) string {
	if s, ok := input["prompt"].(string); ok && s != "" {
		return "/input/prompt"
	}
	for _, k := range slices.Sorted(maps.Keys(input)) {
		if _, ok := input[k].(string); ok {
			return "/input/" + schema.EscapePointer(k)
		}
	}
	return "/input"
}

// filter drops some outputs of a job that makes several and is planned to succeed, when the
// request forces partial or the rule's filter_rate draws it: from one to all but one, drawn.
func (w *World) filter(m *catalog.Model, jobID string, steer directives, plan *jobs.Plan, outputs []jobs.Output) []jobs.Output {
	n := len(outputs)
	if n < 2 || plan.Ending.Status != jobs.Succeeded {
		return outputs
	}
	switch steer.outcome {
	case scenario.OutcomePartial:
	case "":
		if !steer.scenario.Effective(m).Filters(w.ids.Float64("draw", jobID, "filter")) {
			return outputs
		}
	default:
		return outputs
	}
	k := min(n-1, 1+int(w.ids.Float64("draw", jobID, "filtered")*float64(n-1)))
	plan.Filtered = k
	w.Coverage().Hit(evidence.Partial)
	return outputs[:n-k]
}

// concurrencySlot is the slot group a new job of the model counts against under the
// scenario's first concurrency rule that matches it (the zero Slot when none does), and the
// rule when it refuses a job over its limit instead of queueing it.
func concurrencySlot(sc *scenario.Scenario, m *catalog.Model, account, key string) (jobs.Slot, *scenario.Concurrency) {
	i, c, ok := sc.ConcurrencyFor(m)
	if !ok {
		return jobs.Slot{}, nil
	}
	if c.Over != scenario.OverReject {
		c = nil
	}
	return sc.Concurrency[i].Slot(account, key), c
}

// concurrencyLimited refuses a generation over a concurrency limit that rejects: 429, with a
// Retry-After until the first of the group's jobs is planned to end (at least a second).
func (w *World) concurrencyLimited(c *scenario.Concurrency, freeAt time.Time) error {
	wait := max(1, int(math.Ceil(freeAt.Sub(w.clock.Now()).Seconds())))
	jobsWord := " jobs"
	if c.Limit == 1 {
		jobsWord = " job"
	}
	return &problem.Error{Code: problem.ConcurrencyLimited, RetryAfter: min(wait, scenario.MaxRetryAfter),
		Detail: "this " + c.Scope + " runs at most " + strconv.Itoa(c.Limit) + jobsWord + " of this kind at once, and has that many; nothing was held and the quote is still unused",
		Extra:  map[string]any{"limit": c.Limit}}
}
