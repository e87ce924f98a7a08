package api

import "encoding/json"

// WebhookConfig is a tenant's webhook (PUT and GET /_emulator/webhooks, a scenario's
// webhooks section, a snapshot's). Secret is only ever sent, never shown: answers and snapshots
// carry SecretSet instead; a scenario, which is shown and snapshotted, takes none.
type WebhookConfig struct {
	URL    string `json:"url" yaml:"url"`
	Secret string `json:"secret,omitempty" yaml:"-"`
	// Events are the events sent; left out, a job's end: job.succeeded, job.failed,
	// job.canceled and job.expired.
	Events []string `json:"events,omitempty" yaml:"events"`
	// Audit sends, beside the real deliveries, one with a wrong signature and one with a stale
	// timestamp, and judges how the receiver answers (the report's webhook rules).
	Audit bool          `json:"audit,omitempty" yaml:"audit"`
	Chaos *WebhookChaos `json:"chaos,omitempty" yaml:"chaos"`
	// SecretSet says whether a secret is set; a configuration without one sends nothing.
	SecretSet bool `json:"secret_set" yaml:"-"`
	// Source says who set it: control, scenario, flag or snapshot.
	Source string `json:"source,omitempty" yaml:"-"`
}

// WebhookChaos are the seeded knobs that make deliveries misbehave as real senders do.
type WebhookChaos struct {
	Duplicate float64 `json:"duplicate,omitempty" yaml:"duplicate"`   // chance a delivered delivery is sent again
	Reorder   float64 `json:"reorder,omitempty" yaml:"reorder"`       // chance a delivery waits for the next one
	Delay     string  `json:"delay,omitempty" yaml:"delay"`           // postpones every first attempt, e.g. "30s"
	AfterPoll bool    `json:"after_poll,omitempty" yaml:"after_poll"` // a job's end waits until it was polled
}

// Webhooks is GET /_emulator/webhooks: the configuration, if any, and its deliveries' summary.
type Webhooks struct {
	Config     *WebhookConfig `json:"config"`
	Deliveries WebhookSummary `json:"deliveries"`
	Schedule   []string       `json:"schedule"` // the delay before each attempt
}

// WebhookSummary counts a tenant's deliveries and attempts.
type WebhookSummary struct {
	Pending   int   `json:"pending"`   // waiting for an attempt
	InFlight  int   `json:"in_flight"` // an attempt under way
	Delivered int64 `json:"delivered"` // answered 2xx
	GaveUp    int64 `json:"gave_up"`   // not answered 2xx by the last attempt
	Dropped   int64 `json:"dropped"`   // events past the pending bounds
	Attempts  int64 `json:"attempts"`
	Failures  int64 `json:"failures"` // attempts not answered 2xx
}

// WebhookAttempt is one attempt of a delivery (GET /_emulator/webhooks/deliveries), a note of
// the tenant's journal.
type WebhookAttempt struct {
	// Seq is the attempt's number in the journal, shared with its requests: the report's webhook
	// findings cite it.
	Seq     uint64 `json:"seq"`
	ID      string `json:"id"` // the webhook-id, the same on every attempt of a delivery
	Event   string `json:"event"`
	Job     string `json:"job"`
	Attempt int    `json:"attempt"` // from 1
	// Kind is delivery, duplicate (the chaos knob), audit_signature or audit_timestamp.
	Kind string `json:"kind"`
	At   string `json:"at"` // on the tenant's clock
	// Status is the receiver's HTTP status, 0 when none came.
	Status    int     `json:"status"`
	LatencyMS float64 `json:"latency_ms"`
	// Error says why an attempt failed without a status: timeout, refused, not_allowed,
	// too_large or network.
	Error string `json:"error,omitempty"`
	// Outcome is delivered, retrying (another attempt is due at Next), gave_up, or for the
	// audit and duplicates accepted or refused.
	Outcome string `json:"outcome"`
	Next    string `json:"next,omitempty"`
}

// WebhookDeliveries is GET /_emulator/webhooks/deliveries: attempts, oldest first.
type WebhookDeliveries struct {
	Data []WebhookAttempt `json:"data"`
	// Dropped counts attempts the journal's bounds let go, oldest first.
	Dropped int64 `json:"dropped"`
}

// WebhookEvent is the body of a delivery.
type WebhookEvent struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      Job    `json:"data"`
}

// SnapshotWebhooks is a tenant's webhook in a snapshot: the configuration without its secret
// (a restored one sends nothing until a secret is PUT) and the deliveries still due.
type SnapshotWebhooks struct {
	Config  *WebhookConfig     `json:"config"`
	Pending []SnapshotDelivery `json:"pending"`
}

// SnapshotDelivery is a delivery still due: its id, body, attempts made and next attempt.
type SnapshotDelivery struct {
	ID       string          `json:"id"`
	Event    string          `json:"event"`
	Job      string          `json:"job"`
	Kind     string          `json:"kind"`
	Attempts int             `json:"attempts"`
	Due      string          `json:"due"`
	Body     json.RawMessage `json:"body"`
}
