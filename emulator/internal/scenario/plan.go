package scenario

import (
	"maps"
	"slices"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// Outcomes a client can force on one generation.
const (
	OutcomeSucceed       = "succeed"
	OutcomeFail          = "fail"
	OutcomeContentPolicy = "content_policy"
	OutcomeExpire        = "expire"
	OutcomeSlow          = "slow"
)

// ValidOutcome reports whether s names an outcome.
func ValidOutcome(s string) bool {
	switch s {
	case OutcomeSucceed, OutcomeFail, OutcomeContentPolicy, OutcomeExpire, OutcomeSlow, OutcomeRefuse, OutcomePartial:
		return true
	}
	return false
}

// Effective is the rule that applies to one model: the defaults with every matching override
// laid over them in order.
func (s *Scenario) Effective(m *catalog.Model) Rule {
	r := s.Defaults
	for _, o := range s.Overrides {
		if o.Match.Matches(m) {
			r = r.overlay(o.Rule)
		}
	}
	return r
}

func (r Rule) overlay(o Rule) Rule {
	if o.Queue != nil {
		r.Queue = o.Queue
	}
	if o.Run != nil {
		r.Run = o.Run
	}
	if o.QueueTimeout != nil {
		r.QueueTimeout = o.QueueTimeout
	}
	if o.FailureRate != nil {
		r.FailureRate = o.FailureRate
	}
	if o.FailureCodes != nil {
		r.FailureCodes = o.FailureCodes
	}
	if o.FailureStage != nil {
		r.FailureStage = o.FailureStage
	}
	if o.FailureAt != nil {
		r.FailureAt = o.FailureAt
	}
	if o.ExpireRate != nil {
		r.ExpireRate = o.ExpireRate
	}
	if o.SlowRate != nil {
		r.SlowRate = o.SlowRate
	}
	if o.QuoteTTL != nil {
		r.QuoteTTL = o.QuoteTTL
	}
	if o.OutputTTL != nil {
		r.OutputTTL = o.OutputTTL
	}
	if o.Messages != nil {
		r.Messages = o.Messages
	}
	if o.Download != nil {
		r.Download = o.Download
	}
	r.Moderation = r.Moderation.overlay(o.Moderation)
	return r
}

// Draw gives a job's random numbers: each label (queue, run, outcome, ...) its own uniform value
// in [0, 1), a function of the seed and the job alone, so concurrency cannot reorder them.
type Draw func(label string) float64

// PlanInput is what a job's plan is decided from.
type PlanInput struct {
	Model   *catalog.Model
	Queue   time.Duration // the catalog's timing for this input
	Run     time.Duration
	Timeout time.Duration
	Forced  string        // a forced outcome, or ""
	Code    string        // a forced fail's failure code, or "" for generation_failed
	MaxWait time.Duration // a slow job outlasts it
	Draw    Draw
}

// slowMargin is how far past the wait limit a slow job runs.
const slowMargin = time.Minute

// Plan decides a job's course under the rule.
func (r Rule) Plan(in PlanInput) jobs.Plan {
	p := jobs.Plan{Queue: in.Queue, Run: in.Run, QueueTimeout: in.Timeout, Ending: jobs.Ending{Status: jobs.Succeeded}}
	if r.Queue != nil {
		p.Queue = r.Queue.Draw(in.Draw("queue"), in.Queue)
	}
	if r.Run != nil {
		p.Run = r.Run.Draw(in.Draw("run"), in.Run)
	}
	if r.QueueTimeout != nil {
		p.QueueTimeout = *r.QueueTimeout
	}
	outcome := in.Forced
	if outcome == "" {
		outcome = r.drawOutcome(in.Draw("outcome"))
	}
	switch outcome {
	case OutcomeFail:
		code := r.drawCode(in.Draw("code"))
		p.Ending = jobs.Ending{Status: jobs.Failed, Code: code, Message: r.message(code), At: 1}
		if r.FailureAt != nil {
			p.Ending.At = r.FailureAt.Draw(in.Draw("at"))
		}
		if r.FailureStage != nil && *r.FailureStage == "queued" {
			p.Ending.InQueue = true
		}
		if in.Forced == OutcomeFail {
			code := "generation_failed"
			if in.Code != "" {
				code = in.Code
			}
			p.Ending.Code, p.Ending.Message = code, r.message(code)
		}
	case OutcomeContentPolicy:
		// Moderation answers as the job starts: the run never produces anything.
		p.Ending = jobs.Ending{Status: jobs.Failed, Code: "content_policy_violation", Message: r.message("content_policy_violation"), At: 0}
	case OutcomeExpire:
		p.Ending = jobs.Ending{Status: jobs.Expired, Code: "queue_timeout", Message: "the job was not started within its queue time limit"}
	case OutcomeSlow:
		p.Run = max(p.Run, in.MaxWait+slowMargin)
	}
	return p
}

func (r Rule) drawOutcome(u float64) string {
	for _, c := range []struct {
		rate    *float64
		outcome string
	}{{r.ExpireRate, OutcomeExpire}, {r.FailureRate, OutcomeFail}, {r.SlowRate, OutcomeSlow}} {
		if c.rate == nil {
			continue
		}
		if u < *c.rate {
			return c.outcome
		}
		u -= *c.rate
	}
	return OutcomeSucceed
}

func (r Rule) drawCode(u float64) string {
	if len(r.FailureCodes) == 0 {
		return "generation_failed"
	}
	codes := slices.Sorted(maps.Keys(r.FailureCodes))
	total := 0
	for _, w := range r.FailureCodes {
		total += w
	}
	if total == 0 {
		return codes[0]
	}
	pick := int(u * float64(total))
	for _, code := range codes {
		pick -= r.FailureCodes[code]
		if pick < 0 {
			return code
		}
	}
	return codes[len(codes)-1]
}

func (r Rule) message(code string) string {
	if m, ok := r.Messages[code]; ok {
		return m
	}
	return DefaultMessage(code)
}

// Describe summarises a scenario for the control API; Available is left for the server, which
// knows the embedded scenarios, and Faults counts the scenario's own, in force or not.
func (s *Scenario) Describe() api.Scenario {
	d := api.Scenario{
		Name: s.Name, Description: s.Description, Source: s.Source, Overrides: len(s.Overrides),
		RateLimits: len(s.RateLimits), Faults: len(s.Plan), Latency: len(s.Latency),
		Concurrency: len(s.Concurrency), // present only when set, as evolution is
	}
	if ev := s.Evolves(); ev.Any() {
		e := api.Evolution(ev)
		d.Evolution = &e // present only when on, so a scenario without it reads as before
	}
	return d
}
