package evidence

// GroupWebhooks holds the outcomes of webhook deliveries.
const GroupWebhooks = "webhooks"

// Webhook counts an attempt of a webhook delivery as the case "webhook KIND OUTCOME": a
// delivery delivered, retrying or gave_up; a duplicate (the chaos knob) accepted or refused;
// the audit's audit_signature and audit_timestamp accepted or refused. They are counted as
// cases beyond the contract's list, shown once seen, since a run without a webhook has none.
func (c *Counts) Webhook(kind, outcome string) {
	c.hitExtra("webhook "+kind+" "+outcome, GroupWebhooks)
}
