package sim

import (
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evolve"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// Evolution is the forward-compatibility mode of the scenario in force: its kinds, and the
// additions drawn from the world's seed (0 when unseeded), which a snapshot carries; nil
// additions when no kind is on.
func (w *World) Evolution() (scenario.Evolution, *evolve.Kit) {
	ev := w.inForce().Evolves()
	if !ev.Any() {
		return ev, nil
	}
	return ev, w.evolutionKit()
}

// evolutionKit draws the world's additions once.
func (w *World) evolutionKit() *evolve.Kit {
	e := &w.evolution
	e.once.Do(func() {
		e.kit = evolve.New(w.ids.State().Seed)
		if w.cfg.Catalog != nil {
			e.evolved = e.kit.Model(w.cfg.Catalog)
		}
	})
	return e.kit
}

// Preparing reports whether a job shows the mode's undocumented status now: a running job in
// the first part of its run (evolve.Prepare), on the tenant's clock. Its credits, its plan and
// when it ends do not change; only how it is shown does.
func (w *World) Preparing(v jobs.View) bool {
	if v.Status != jobs.Running || !w.inForce().Evolves().Status {
		return false
	}
	if !w.clock.Now().Before(v.StartedAt.Add(evolve.Prepare(v.Plan.Run))) {
		return false
	}
	w.Coverage().Hit(evidence.EvolutionStatus)
	return true
}

// prepared is when a job of the account shown as preparing turns running; ok is false when
// it is not shown so.
func (w *World) prepared(account, id string) (time.Time, bool) {
	if !w.inForce().Evolves().Status {
		return time.Time{}, false
	}
	v, ok := w.jobs.Get(account, id)
	if !ok || v.Status != jobs.Running {
		return time.Time{}, false
	}
	end := v.StartedAt.Add(evolve.Prepare(v.Plan.Run))
	return end, w.clock.Now().Before(end)
}

// EvolvedModel is the model of an undocumented output type when the mode lists one, else nil.
func (w *World) EvolvedModel() *catalog.Model {
	if !w.inForce().Evolves().OutputType {
		return nil
	}
	w.evolutionKit()
	return w.evolution.evolved
}

// evolvedErr refuses to quote or generate the model of an undocumented output type: it is
// listed so that clients meet it, not used.
func (w *World) evolvedErr(id string) error {
	m := w.EvolvedModel()
	if m == nil || m.ID != id {
		return nil
	}
	return problem.New(problem.ModelUnavailable, "model %q makes %s outputs, which this API version does not document; it is listed to test that clients tolerate it, and cannot be quoted or generated", id, m.OutputType)
}
