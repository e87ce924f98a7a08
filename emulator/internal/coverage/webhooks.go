package coverage

// GroupWebhooks holds the outcomes of webhook deliveries.
const GroupWebhooks = "webhooks"

// WebhookOutcomes are the cases of webhook deliveries, each "kind outcome": a delivery
// delivered, retried or given up; a duplicate (the chaos knob) accepted or refused; the
// audit's wrong signature and stale timestamp accepted or refused.
var WebhookOutcomes = []string{
	"delivery delivered", "delivery retrying", "delivery gave_up",
	"duplicate accepted", "duplicate refused",
	"audit_signature accepted", "audit_signature refused",
	"audit_timestamp accepted", "audit_timestamp refused",
}

var byWebhook = map[string]Index{}

// The cases are listed after the faults: this file's init runs after coverage.go's.
func init() {
	for _, o := range WebhookOutcomes {
		byWebhook[o] = add("webhook "+o, GroupWebhooks)
	}
}

// Webhook counts an attempt of a webhook delivery: its kind and outcome.
func (c *Counts) Webhook(kind, outcome string) {
	if i, ok := byWebhook[kind+" "+outcome]; ok {
		c.Hit(i)
		return
	}
	c.hitExtra("webhook "+kind+" "+outcome, GroupWebhooks)
}
