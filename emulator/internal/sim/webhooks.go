package sim

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"

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

// WebhookRun is the run's webhook: the configuration and secret of the command line, and the
// one transport every tenant's deliveries go through.
type WebhookRun struct {
	Config    *webhooks.Config
	Secret    webhooks.Secret
	Transport *webhooks.Transport
}

// NewWebhookRun checks the webhook settings, and makes the transport whose requests carry
// userAgent.
func NewWebhookRun(cfg config.Settings, userAgent string) (WebhookRun, error) {
	var run WebhookRun
	guard, err := webhooks.ParseAllow(cfg.WebhookAllow)
	if err != nil {
		return run, err
	}
	if cfg.WebhookSecret != "" {
		if run.Secret, err = webhooks.ParseSecret(cfg.WebhookSecret); err != nil {
			return run, errors.New("--webhook-secret: " + err.Error())
		}
	}
	if cfg.WebhookURL != "" {
		if !run.Secret.Set() {
			return run, errors.New("--webhook needs --webhook-secret, a whsec_ secret its deliveries are signed with")
		}
		run.Config, err = webhooks.Parse(api.WebhookConfig{URL: cfg.WebhookURL, Secret: cfg.WebhookSecret, Events: cfg.WebhookEvents}, true)
		if p := problem.As(err); p != nil {
			msg := "--webhook"
			for _, fe := range p.Errors {
				msg += "; " + fe.Pointer[1:] + ": " + fe.Message
			}
			return run, errors.New(msg)
		}
		run.Config.Source = "flag"
	}
	run.Transport = webhooks.NewTransport(guard, userAgent)
	return run, nil
}

// PresentWebhooks is the tenant's webhook as GET /_emulator/webhooks shows it: its
// configuration, its deliveries' summary and the retry schedule.
func (w *World) PresentWebhooks() api.Webhooks {
	out := api.Webhooks{Deliveries: w.hooks.Summary()}
	if c := w.hooks.Config(); c != nil {
		wire := c.Wire()
		out.Config = &wire
	}
	for _, d := range webhooks.Schedule {
		out.Schedule = append(out.Schedule, d.String())
	}
	return out
}

// ChangeWebhook puts a webhook of the control API's in force, replacing any other; its
// deliveries' output URLs name base, where the control caller reached the emulator.
func (w *World) ChangeWebhook(in api.WebhookConfig, base string) (api.Webhooks, error) {
	cfg, err := webhooks.Parse(in, true)
	if err != nil {
		return api.Webhooks{}, err
	}
	cfg.Source = "control"
	w.SeenBase(base)
	w.SetWebhook(cfg)
	return w.PresentWebhooks(), nil
}

// PresentWebhookAttempts is every webhook attempt the journal holds, oldest first, and how
// many it let go.
func (w *World) PresentWebhookAttempts() api.WebhookDeliveries {
	data, dropped := w.journal.WebhookAttempts()
	return api.WebhookDeliveries{Data: data, Dropped: dropped}
}
