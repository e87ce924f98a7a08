package sim

import (
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evolve"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
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
	out := &api.JobPlan{Queue: p.Queue.String(), Run: p.Run.String(), DecidedBy: "draw", Directive: p.Forced, EndedByControl: v.Forced, Filtered: p.Filtered}
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
