package sim

import (
	"slices"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evolve"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// The one place a job becomes the answer a client sees: /v1, the control API, the dashboard
// and webhook deliveries all take it from here, so a member or status that changes how a job
// looks is added once.

// Audience is whom a job is shown to. The forward-compatibility mode's undocumented status is
// shown to clients of /v1 alone: the control API, the dashboard and deliveries show what the
// job documentedly is.
type Audience uint8

// The audiences of a job.
const (
	// ToClient is a /v1 answer.
	ToClient Audience = iota
	// Documented is the control API, the dashboard and webhook deliveries.
	Documented
)

// PresentJob is a job as it is shown now to whoever reaches the emulator at base (a scheme and
// host, so output URLs work behind port mapping). Each call gives signed links afresh, from the
// world's clock now; once outputs expire their URLs answer 410.
func (w *World) PresentJob(v jobs.View, base string, to Audience) api.Job {
	outputs := make([]api.Output, len(v.Outputs))
	links := w.OutputLinks(v)
	for i, o := range v.Outputs {
		outputs[i] = o.Output
		outputs[i].URL = base + links[i].Path
		outputs[i].ExpiresAt = Timestamp(v.OutputsExpireAt)
		if !links[i].ExpiresAt.IsZero() {
			outputs[i].URLExpiresAt = Timestamp(links[i].ExpiresAt)
		}
	}
	if to == ToClient {
		w.inlineOutputs(v, outputs) // a model that delivers inline: its /v1 answers carry the files
	}
	var jerr *api.JobError
	if v.Error != nil {
		jerr = &api.JobError{Code: v.Error.Code, Message: v.Error.Message}
	}
	body := api.Job{
		ID: v.ID, Model: v.Model, Status: string(v.Status), QuoteID: v.QuoteID, Credits: v.Credits,
		CreditStatus: v.CreditStatus, Input: v.Input, CreatedAt: Timestamp(v.CreatedAt),
		StartedAt: NullableTime(v.StartedAt), FinishedAt: NullableTime(v.FinishedAt),
		Progress: v.Progress, Outputs: outputs, Error: jerr, QueuePosition: v.QueuePosition,
	}
	// A partial result says so once it is shown: what was filtered out, and what it cost.
	if v.Status == jobs.Succeeded && v.Plan.Filtered > 0 {
		body.FilteredOutputs, body.CreditsCharged = v.Plan.Filtered, &v.Charged
	}
	if to == ToClient && w.Preparing(v) {
		// Not yet started, no progress: only how the job is shown changes (Preparing counted it).
		body.Status, body.StartedAt, body.Progress = evolve.Status, nil, 0
	}
	return body
}

// PresentControlJob is a job as the control API and the dashboard show it: as documented, with
// its account, its model's output type and phase.
func (w *World) PresentControlJob(v jobs.View, base string) api.ControlJob {
	out := api.ControlJob{Job: w.PresentJob(v, base, Documented), Account: v.Account}
	if m, ok := w.cfg.Catalog.Model(v.Model); ok {
		out.OutputType = m.OutputType
	}
	if p := w.Phase(v.Model); p.Retired {
		out.ModelPhase = "retired"
	} else if p.Deprecated {
		out.ModelPhase = "deprecated"
	}
	return out
}

// PresentPlan is the course a job was given, as the control API shows it.
func PresentPlan(v jobs.View) *api.JobPlan {
	p := v.Plan
	out := &api.JobPlan{Queue: p.Queue.String(), Run: p.Run.String(), DecidedBy: "draw", Directive: p.Forced, Perturbation: p.Struck, EndedByControl: v.Forced, Filtered: p.Filtered}
	if p.QueueTimeout > 0 {
		t := p.QueueTimeout.String()
		out.QueueTimeout = &t
	}
	if p.Forced != "" {
		out.DecidedBy = "directive"
	}
	e := p.Ending
	out.Ending.Status, out.Ending.Code, out.Ending.Message, out.Ending.InQueue = string(e.Status), e.Code, e.Message, e.InQueue
	if e.Status == jobs.Failed && !e.InQueue {
		out.Ending.At = e.At
	}
	return out
}

// NullableTime is a timestamp as the API writes one, or null for the zero time.
func NullableTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := Timestamp(t)
	return &s
}

// ModelRecord is a model as an answer shows it: the record the catalog encoded once when it
// loaded, and the members the scenario in force adds after it (nil when it adds none), which
// the encoder lays in.
type ModelRecord struct {
	Record    []byte
	Lifecycle *api.ModelLifecycle
}

// lifecycleOf is what a phase adds to a model's record: nothing unless it is deprecated.
func lifecycleOf(p scenario.Phase) *api.ModelLifecycle {
	if !p.Deprecated {
		return nil
	}
	lc := &api.ModelLifecycle{Deprecated: true, DeprecatedAt: Timestamp(p.DeprecatedAt), Replacement: p.Replacement}
	if !p.Sunset.IsZero() {
		lc.SunsetAt = Timestamp(p.Sunset)
	}
	return lc
}

// KnownCategory reports whether a category names models a listing can show: the catalog's,
// and the undocumented output type's while the evolution mode lists it.
func (w *World) KnownCategory(category string) bool {
	if w.cfg.categories[category] {
		return true
	}
	return w.EvolvedModel() != nil && category == evolve.Category
}

// PresentModels shows each model of a page of GET /v1/models, for a lower-cased search and a
// category (either empty for all), from offset, at most limit, and says how many match and
// whether the page shows the model of an undocumented output type. It hands each record to
// each rather than making a slice of them: a page is on the hot path.
func (w *World) PresentModels(search, category string, offset, limit int, each func(ModelRecord)) (total int, evolved bool) {
	matches := w.cfg.Catalog.Find(search, category)
	if m := w.EvolvedModel(); m != nil && (category == "" || category == m.Category) && (search == "" ||
		strings.Contains(strings.ToLower(m.ID), search) || strings.Contains(strings.ToLower(m.Name), search) ||
		strings.Contains(strings.ToLower(m.Description), search)) {
		matches = append(matches[:len(matches):len(matches)], m) // listed last, as a catalog model would be
	}
	from := min(offset, len(matches))
	to := min(from+limit, len(matches))
	for _, m := range matches[from:to] {
		evolved = evolved || m.OutputType == evolve.OutputType
		each(ModelRecord{Record: m.ListItem, Lifecycle: lifecycleOf(w.Phase(m.ID))})
	}
	return len(matches), evolved
}

// PresentModel is a model's detail as GET /v1/models/{id} shows it, its phase (whose
// deprecation the answer's headers announce, retired or not), and whether it is the model of
// an undocumented output type. A retired model's error comes with its phase.
func (w *World) PresentModel(id string) (ModelRecord, scenario.Phase, bool, error) {
	m, ok := w.cfg.Catalog.Model(id)
	if !ok {
		if em := w.EvolvedModel(); em != nil && em.ID == id {
			return ModelRecord{Record: em.Detail}, scenario.Phase{}, true, nil
		}
		return ModelRecord{}, scenario.Phase{}, false, problem.New(problem.ModelNotFound, "no model %q; GET /v1/models lists them", id)
	}
	p := w.phase(m)
	if err := w.retiredErr(m); err != nil {
		return ModelRecord{}, p, false, err
	}
	return ModelRecord{Record: m.Detail, Lifecycle: lifecycleOf(p)}, p, false, nil
}

// PresentCategories are the categories GET /v1/models/categories lists, and whether they show
// the undocumented output type's, which comes last.
func (w *World) PresentCategories() ([]api.Category, bool) {
	all := w.cfg.Catalog.Categories()
	m := w.EvolvedModel()
	if m == nil {
		return all, false
	}
	return append(slices.Clip(all), api.Category{ID: m.Category, OutputType: m.OutputType, ModelCount: 1}), true
}
