package evidence

import "github.com/mediagen/mediagen-emulator/emulator/api"

// The report's rules about a webhook receiver: the webhook audit judges them from the
// deliveries it made, not from the log, so they are not among Rules.
const (
	WebhookSignatureUnchecked = "webhook-signature-unchecked"
	WebhookTimestampUnchecked = "webhook-timestamp-unchecked"
	WebhookSlowAck            = "webhook-slow-ack"
	WebhookValidRefused       = "webhook-valid-refused"
)

// WebhookRules are the webhook audit's rules, as the report lists them.
var WebhookRules = []api.Rule{
	{ID: WebhookSignatureUnchecked, Severity: api.SeverityError, Title: "A webhook receiver accepted a delivery with a wrong signature"},
	{ID: WebhookTimestampUnchecked, Severity: api.SeverityError, Title: "A webhook receiver accepted a delivery whose timestamp is older than 5 minutes"},
	{ID: WebhookSlowAck, Severity: api.SeverityWarning, Title: "A webhook receiver took longer than 2 s to answer a delivery"},
	{ID: WebhookValidRefused, Severity: api.SeverityWarning, Title: "A webhook receiver answered a valid delivery with a status other than 2xx"},
}

// AllRules are every rule a report lists: those judged from the log, then the webhook audit's.
var AllRules = append(append([]api.Rule{}, Rules...), WebhookRules...)

// Severity is a rule's severity, by id.
func Severity(rule string) string { return severity[rule] }

// GroupWebhooks holds the outcomes of webhook deliveries.
const GroupWebhooks = "webhooks"

// Webhook counts an attempt of a webhook delivery as the case "webhook KIND OUTCOME": a
// delivery delivered, retrying or gave_up; a duplicate (the chaos knob) accepted or refused;
// the audit's audit_signature and audit_timestamp accepted or refused. They are counted as
// cases beyond the contract's list, shown once seen, since a run without a webhook has none.
func (c *Counts) Webhook(kind, outcome string) {
	c.hitExtra("webhook "+kind+" "+outcome, GroupWebhooks)
}
