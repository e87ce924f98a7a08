package emulator

import (
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

func (s *Server) getWebhooks() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: worldOf(r).PresentWebhooks()}, nil
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
		hooks, err := worldOf(r).ChangeWebhook(in, baseURL(r))
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: hooks}, nil
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
		return reply{status: http.StatusOK, body: worldOf(r).PresentWebhookAttempts()}, nil
	}
}
