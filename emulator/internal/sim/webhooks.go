package sim

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// DefaultBase is the address a delivery's output URLs name until a request shows the one
// clients reach the emulator by.
const DefaultBase = "http://localhost"

// newHub builds a world's webhook hub on its clock and ids, with the run's configuration or,
// when the scenario has one, the scenario's.
func (w *World) newHub() *webhooks.Hub {
	sender := w.cfg.WebhookSender
	if sender == nil {
		sender = nowhere{}
	}
	h := webhooks.New(webhooks.Options{
		Clock: w.clock, Sender: sender, IDs: w.ids,
		Render: func(v jobs.View) ([]byte, error) {
			// A delivery's data is the job exactly as GET /v1/jobs/{id} shows it, less the
			// evolution mode's status, on the address clients last reached the emulator by.
			base, _ := w.base.Load().(string)
			if base == "" {
				base = DefaultBase
			}
			return json.Marshal(w.PresentJob(v, base, Documented))
		},
		OnAttempt: func(at time.Time, a api.WebhookAttempt, audited bool) {
			w.journal.AddNote(evidence.Note{Kind: evidence.WebhookAttempt, Time: at, Job: a.Job, Status: a.Status, Webhook: &a, Audited: audited}, 0)
			w.coverage.Webhook(a.Kind, a.Outcome)
			w.Changed(PartWebhooks)
		},
	})
	h.Configure(w.cfg.Webhook)
	return h
}

// nowhere is the sender of a world built without one: every attempt refused, nothing sent.
type nowhere struct{}

func (nowhere) Send(_ context.Context, _ webhooks.Attempt) webhooks.Result {
	return webhooks.Result{Err: webhooks.ErrNotAllowed}
}

// Webhooks is the world's webhook hub.
func (w *World) Webhooks() *webhooks.Hub { return w.hooks }

// SetWebhook puts a webhook configuration in force, or none (nil).
func (w *World) SetWebhook(c *webhooks.Config) {
	w.hooks.Configure(c)
	w.Changed(PartWebhooks)
}

// SeenBase remembers the scheme and host a client reached the emulator by, so the output URLs
// in deliveries are ones it can reach.
func (w *World) SeenBase(base string) {
	if cur, _ := w.base.Load().(string); cur != base {
		w.base.Store(base)
	}
}

// withRunSecret is a scenario's configuration, which holds no secret, signed with the run's
// (--webhook-secret), if any.
func (w *World) withRunSecret(c *webhooks.Config) *webhooks.Config {
	out := *c
	out.Source = "scenario"
	if !out.Secret.Set() {
		out.Secret = w.cfg.WebhookSecret
	}
	return &out
}
