package evidence

import (
	"fmt"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// The report's rules about a webhook receiver, judged from the attempts the receiver audit
// watched (webhooks.Config.Audit): its deliveries with a wrong signature or a stale timestamp
// answered 2xx, and valid deliveries answered slowly or refused.
const (
	WebhookSignatureUnchecked = "webhook-signature-unchecked"
	WebhookTimestampUnchecked = "webhook-timestamp-unchecked"
	WebhookSlowAck            = "webhook-slow-ack"
	WebhookValidRefused       = "webhook-valid-refused"
)

// receiverFinding is a webhook rule's one finding and how many attempts showed it.
type receiverFinding struct{ finding, n int }

// webhook judges an attempt the audit watched: each rule makes one finding, naming the first
// attempt that showed it and citing up to maxSeqs of them, its reason counting the rest.
func (j *judge) webhook(n *Note) {
	a := n.Webhook
	ok := a.Error == "" && a.Status/100 == 2
	latency := time.Duration(a.LatencyMS * float64(time.Millisecond)).Round(time.Millisecond)
	var rule, reason string
	switch {
	case !n.Audited:
		return
	case ok && a.Kind == webhooks.KindSignature:
		rule, reason = WebhookSignatureUnchecked, fmt.Sprintf("answered %d to delivery %s, whose webhook-signature is wrong", a.Status, a.ID)
	case ok && a.Kind == webhooks.KindTimestamp:
		rule, reason = WebhookTimestampUnchecked, fmt.Sprintf("answered %d to delivery %s, whose webhook-timestamp is %s old", a.Status, a.ID, webhooks.StaleAge)
	case ok && a.Kind == webhooks.KindDelivery && a.LatencyMS > float64(webhooks.SlowAck/time.Millisecond):
		rule, reason = WebhookSlowAck, fmt.Sprintf("took %s to answer delivery %s (the limit is %s)", latency, a.ID, webhooks.SlowAck)
	case !ok && a.Status != 0 && a.Kind == webhooks.KindDelivery:
		rule, reason = WebhookValidRefused, fmt.Sprintf("answered %d to delivery %s, which was valid", a.Status, a.ID)
	default:
		return
	}
	if f, seen := j.receiver[rule]; seen {
		f.n++
		j.addSeq(f.finding, a.Seq)
		return
	}
	f := &receiverFinding{finding: j.add(rule, "the receiver "+reason, a.Seq), n: 1}
	j.receiver[rule] = f
	j.later = append(j.later, func() {
		if f.n > 1 {
			j.out[f.finding].Reason += fmt.Sprintf(" (and %d more)", f.n-1)
		}
	})
}

// GroupWebhooks holds the outcomes of webhook deliveries.
const GroupWebhooks = "webhooks"

// Webhook counts an attempt of a webhook delivery as the case "webhook KIND OUTCOME": a
// delivery delivered, retrying or gave_up; a duplicate (the chaos knob) accepted or refused;
// the audit's audit_signature and audit_timestamp accepted or refused. They are counted as
// cases beyond the contract's list, shown once seen, since a run without a webhook has none.
func (c *Counts) Webhook(kind, outcome string) {
	c.hitExtra("webhook "+kind+" "+outcome, GroupWebhooks)
}
