package scenario

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// Webhooks is a scenario's webhook: where a tenant's job events go. It holds no secret (a
// scenario document is shown and carried in snapshots): deliveries are signed with the run's
// --webhook-secret, and without one nothing is sent until PUT /_emulator/webhooks sets one.
type Webhooks struct {
	URL    string        `yaml:"url"`
	Events []string      `yaml:"events"`
	Audit  bool          `yaml:"audit"`
	Chaos  *WebhookChaos `yaml:"chaos"`

	parsed *webhooks.Config
}

// WebhookChaos are a scenario's webhook chaos knobs (see webhooks.Chaos).
type WebhookChaos struct {
	Duplicate float64 `yaml:"duplicate"`
	Reorder   float64 `yaml:"reorder"`
	Delay     string  `yaml:"delay"`
	AfterPoll bool    `yaml:"after_poll"`
}

// Webhook is the scenario's webhook configuration, without a secret, or nil.
func (s *Scenario) Webhook() *webhooks.Config {
	if s.Webhooks == nil {
		return nil
	}
	return s.Webhooks.parsed
}

// checkWebhooks checks the webhooks section as PUT /_emulator/webhooks would.
func checkWebhooks(r *catalog.Reporter, root *yaml.Node, s *Scenario) {
	wh := s.Webhooks
	if wh == nil {
		return
	}
	in := api.WebhookConfig{URL: wh.URL, Events: wh.Events, Audit: wh.Audit}
	if c := wh.Chaos; c != nil {
		in.Chaos = &api.WebhookChaos{Duplicate: c.Duplicate, Reorder: c.Reorder, Delay: c.Delay, AfterPoll: c.AfterPoll}
	}
	cfg, err := webhooks.Parse(in, false)
	if p := problem.As(err); p != nil {
		for _, fe := range p.Errors {
			r.Node(nodeOf(root, "webhooks"), "webhooks.%s: %s", strings.ReplaceAll(strings.TrimPrefix(fe.Pointer, "/"), "/", "."), fe.Message)
		}
		return
	}
	cfg.Source = "scenario"
	wh.parsed = cfg
}
