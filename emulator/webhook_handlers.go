package emulator

import (
	"errors"
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// webhookRun is the run's webhook: the configuration and secret of the command line, and the
// one transport every tenant's deliveries go through.
type webhookRun struct {
	config    *webhooks.Config
	secret    webhooks.Secret
	transport *webhooks.Transport
}

// newWebhookRun checks the webhook settings of a Config.
func newWebhookRun(cfg Config) (webhookRun, error) {
	var run webhookRun
	guard, err := webhooks.ParseAllow(cfg.WebhookAllow)
	if err != nil {
		return run, err
	}
	if cfg.WebhookSecret != "" {
		if run.secret, err = webhooks.ParseSecret(cfg.WebhookSecret); err != nil {
			return run, errors.New("--webhook-secret: " + err.Error())
		}
	}
	if cfg.WebhookURL != "" {
		if !run.secret.Set() {
			return run, errors.New("--webhook needs --webhook-secret, a whsec_ secret its deliveries are signed with")
		}
		run.config, err = webhooks.Parse(api.WebhookConfig{URL: cfg.WebhookURL, Secret: cfg.WebhookSecret, Events: cfg.WebhookEvents}, true)
		if p := problem.As(err); p != nil {
			msg := "--webhook"
			for _, fe := range p.Errors {
				msg += "; " + fe.Pointer[1:] + ": " + fe.Message
			}
			return run, errors.New(msg)
		}
		run.config.Source = "flag"
	}
	run.transport = webhooks.NewTransport(guard, "mediagen-emulator/"+Version)
	return run, nil
}

// webhooksBody is GET /_emulator/webhooks.
func webhooksBody(w *sim.World) api.Webhooks {
	out := api.Webhooks{Deliveries: w.Webhooks().Summary()}
	if c := w.Webhooks().Config(); c != nil {
		wire := c.Wire()
		out.Config = &wire
	}
	for _, d := range webhooks.Schedule {
		out.Schedule = append(out.Schedule, d.String())
	}
	return out
}

func (s *Server) getWebhooks() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: webhooksBody(worldOf(r))}, nil
	}
}

// putWebhooks puts the tenant's webhook in force: {"url", "secret", "events", "audit",
// "chaos"}, replacing any other.
func (s *Server) putWebhooks() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		var in api.WebhookConfig
		if err := s.decodeInto(w, r, &in, members{}); err != nil {
			return reply{}, err
		}
		cfg, err := webhooks.Parse(in, true)
		if err != nil {
			return reply{}, err
		}
		cfg.Source = "control"
		world := worldOf(r)
		world.SeenBase(baseURL(r))
		world.SetWebhook(cfg)
		return reply{status: http.StatusOK, body: webhooksBody(world)}, nil
	}
}

// deleteWebhooks turns the tenant's webhook off; deliveries still due are dropped.
func (s *Server) deleteWebhooks() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		worldOf(r).SetWebhook(nil)
		return noContent, nil
	}
}

// listWebhookDeliveries is GET /_emulator/webhooks/deliveries: every attempt the journal
// holds, oldest first.
func (s *Server) listWebhookDeliveries() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		data, dropped := worldOf(r).Journal().WebhookAttempts()
		return reply{status: http.StatusOK, body: api.WebhookDeliveries{Data: data, Dropped: dropped}}, nil
	}
}
