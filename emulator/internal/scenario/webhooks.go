package scenario

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// Webhooks is a scenario's webhooks section: the wire's WebhookConfig, one shape for a scenario
// file and the control API. It takes no secret (a scenario document is shown and carried in
// snapshots): deliveries are signed with the run's --webhook-secret, and without one nothing is
// sent until PUT /_emulator/webhooks sets one.
type Webhooks = api.WebhookConfig

// Webhook is the scenario's webhook configuration, without a secret, or nil.
func (s *Scenario) Webhook() *webhooks.Config { return s.webhook }

// checkWebhooks checks the webhooks section as PUT /_emulator/webhooks would, each problem at
// the line of the member it is about.
func checkWebhooks(r *catalog.Reporter, root *yaml.Node, s *Scenario) {
	if s.Webhooks == nil {
		return
	}
	cfg, err := webhooks.Parse(*s.Webhooks, false)
	if p := problem.As(err); p != nil {
		for _, fe := range p.Errors {
			n := nodeOf(root, "webhooks")
			for _, part := range strings.Split(fe.Pointer, "/")[1:] {
				next := nodeOf(n, part)
				if i, err := strconv.Atoi(part); err == nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
					next = n.Content[i]
				}
				if next == nil {
					break
				}
				n = next
			}
			r.Node(n, "webhooks.%s: %s", strings.ReplaceAll(fe.Pointer[1:], "/", "."), fe.Message)
		}
		return
	}
	cfg.Source = "scenario"
	s.webhook = cfg
}
