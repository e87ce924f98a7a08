// Package webhooks sends a tenant's job events to a receiver as Standard Webhooks
// (standardwebhooks.com) describe them: a POST signed with HMAC-SHA256 over
// "webhook-id.webhook-timestamp.body", retried on the tenant's clock with the same id until it
// is answered 2xx or the schedule runs out. A Hub holds one tenant's configuration and its queue
// of deliveries due (package due, on the tenant's clock), and knows no HTTP; what each attempt
// met goes to the tenant's journal, where the report judges the receiver (package evidence). A
// Sender (transport.go) is the one piece that talks to the network, and the emulator has one
// for all its tenants.
package webhooks

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// Event names a status a job reached, as a delivery's type.
type Event string

// The events a job emits, one per status.
const (
	Queued    Event = "job.queued"
	Running   Event = "job.running"
	Succeeded Event = "job.succeeded"
	Failed    Event = "job.failed"
	Canceled  Event = "job.canceled"
	Expired   Event = "job.expired"
)

// Events are every event, in lifecycle order.
var Events = []Event{Queued, Running, Succeeded, Failed, Canceled, Expired}

// DefaultEvents are the events sent when a configuration names none: a job's end.
var DefaultEvents = []Event{Succeeded, Failed, Canceled, Expired}

// EventOf is the event of a job status.
func EventOf(s jobs.Status) Event { return Event("job." + string(s)) }

// Schedule is the delay before each attempt of a delivery after the previous attempt was due
// (the first goes out when its event happens): seven attempts over 1 h 42 min 35 s of the
// tenant's clock. A delivery answered 2xx is done; one that is not after the last is given up.
var Schedule = []time.Duration{0, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour}

// Bounds and limits, per tenant unless said otherwise.
const (
	// AttemptTimeout bounds one attempt in real time: connecting, sending and the answer's
	// status line. A receiver that takes longer has timed out, and the attempt failed.
	AttemptTimeout = 10 * time.Second
	// SlowAck is the slowest answer the audit accepts to a valid delivery: a receiver should
	// acknowledge first and work afterwards, or senders time out and retry.
	SlowAck = 2 * time.Second
	// StaleAge is how old the audit's stale delivery's timestamp is; receivers should refuse
	// any older than 5 minutes.
	StaleAge = 10 * time.Minute
	// MaxPending and MaxPendingBytes bound the deliveries waiting to go out (bodies counted);
	// an event past them is dropped and counted as dropped.
	MaxPending      = 1000
	MaxPendingBytes = 16 << 20
	// MaxInFlight bounds one tenant's attempts under way at once.
	MaxInFlight = 4
	// MaxAnswerBytes is as much of a receiver's answer as is read, then the connection is
	// closed.
	MaxAnswerBytes = 64 << 10
	// ReorderHold is the longest the reorder knob holds a delivery back for a later one to
	// overtake it; PollHold the longest the after_poll knob waits for the job to be polled.
	ReorderHold = time.Minute
	PollHold    = 10 * time.Minute
	// maxURL bounds a receiver's URL.
	maxURL = 2048
	// maxSecret bounds a secret's decoded bytes.
	maxSecret = 64
)

// Secret is the key deliveries are signed with: the bytes a "whsec_<base64>" secret decodes
// to. It never prints or marshals.
type Secret struct{ key []byte }

// ParseSecret reads a "whsec_<base64>" secret.
func ParseSecret(s string) (Secret, error) {
	b64, ok := strings.CutPrefix(s, "whsec_")
	if !ok {
		return Secret{}, fmt.Errorf("a secret is whsec_ followed by base64 (for example whsec_ and the output of openssl rand -base64 32)")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	if err != nil || len(key) == 0 || len(key) > maxSecret {
		return Secret{}, fmt.Errorf("after whsec_ a secret is 1 to %d bytes in standard base64", maxSecret)
	}
	return Secret{key: key}, nil
}

// Set reports whether the secret holds a key.
func (s Secret) Set() bool { return len(s.key) > 0 }

// String hides the secret from every log and format.
func (s Secret) String() string { return "[secret]" }

// GoString hides the secret from %#v.
func (s Secret) GoString() string { return "webhooks.Secret{[secret]}" }

// MarshalJSON hides the secret from every document.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"[secret]"`), nil }

// Chaos are the seeded knobs that make deliveries misbehave as real senders do, for a
// receiver's own tests.
type Chaos struct {
	// Duplicate is the chance a delivery answered 2xx is sent once more, same id.
	Duplicate float64
	// Reorder is the chance a delivery is held back until the next delivery has gone out
	// (ReorderHold at most).
	Reorder float64
	// Delay postpones every delivery's first attempt.
	Delay time.Duration
	// AfterPoll holds a job's end until a client has polled the job and seen it ended
	// (PollHold at most).
	AfterPoll bool
}

// Config is one tenant's webhook: where to send which events, signed with what.
type Config struct {
	URL    string
	Secret Secret
	Events []Event
	Audit  bool
	Chaos  Chaos
	// Source says who set it: "control", "scenario", "flag" or "snapshot".
	Source string
}

// Wants reports whether the configuration sends an event.
func (c *Config) Wants(e Event) bool { return slices.Contains(c.Events, e) }

// Wire is the configuration as the control API and snapshots show it: the secret never, only
// whether one is set.
func (c *Config) Wire() api.WebhookConfig {
	out := api.WebhookConfig{URL: c.URL, Events: make([]string, len(c.Events)), Audit: c.Audit, SecretSet: c.Secret.Set(), Source: c.Source}
	for i, e := range c.Events {
		out.Events[i] = string(e)
	}
	if c.Chaos != (Chaos{}) {
		out.Chaos = &api.WebhookChaos{Duplicate: c.Chaos.Duplicate, Reorder: c.Chaos.Reorder, AfterPoll: c.Chaos.AfterPoll}
		if c.Chaos.Delay > 0 {
			out.Chaos.Delay = c.Chaos.Delay.String()
		}
	}
	return out
}

// Parse checks a configuration as sent (PUT /_emulator/webhooks, a scenario, a snapshot) and
// returns it, or an invalid_request problem listing every field at fault. A secret is needed
// unless needSecret is false (a snapshot's configuration, which holds none).
func Parse(in api.WebhookConfig, needSecret bool) (*Config, error) {
	var errs []problem.FieldError
	bad := func(ptr, msg string) { errs = append(errs, problem.FieldError{Pointer: ptr, Message: msg}) }
	c := &Config{URL: in.URL, Audit: in.Audit}
	if err := CheckURL(in.URL); err != nil {
		bad("/url", err.Error())
	}
	switch {
	case in.Secret != "":
		s, err := ParseSecret(in.Secret)
		if err != nil {
			bad("/secret", err.Error())
		}
		c.Secret = s
	case needSecret:
		bad("/secret", "a secret is required: whsec_ followed by base64")
	}
	if in.Events == nil {
		c.Events = slices.Clone(DefaultEvents)
	}
	for i, e := range in.Events {
		switch {
		case !slices.Contains(Events, Event(e)):
			bad("/events/"+strconv.Itoa(i), "not an event; events are job.queued, job.running, job.succeeded, job.failed, job.canceled and job.expired")
		case !c.Wants(Event(e)):
			c.Events = append(c.Events, Event(e))
		}
	}
	if ch := in.Chaos; ch != nil {
		c.Chaos = Chaos{Duplicate: ch.Duplicate, Reorder: ch.Reorder, AfterPoll: ch.AfterPoll}
		if ch.Duplicate < 0 || ch.Duplicate > 1 {
			bad("/chaos/duplicate", "a probability from 0 to 1")
		}
		if ch.Reorder < 0 || ch.Reorder > 1 {
			bad("/chaos/reorder", "a probability from 0 to 1")
		}
		if ch.Delay != "" {
			d, err := time.ParseDuration(ch.Delay)
			if err != nil || d < 0 || d > PollHold {
				bad("/chaos/delay", "a duration such as 30s, at most "+PollHold.String())
			}
			c.Chaos.Delay = d
		}
	}
	if len(errs) > 0 {
		return nil, &problem.Error{Code: problem.InvalidRequest, Detail: "the webhook configuration is not valid", Errors: errs}
	}
	return c, nil
}

// CheckURL accepts an http or https URL with a host, no user information and no fragment.
// Whether its address may be reached is decided when it is dialled (see Guard).
func CheckURL(s string) error {
	if s == "" {
		return fmt.Errorf("a url is required, such as http://127.0.0.1:9000/webhooks")
	}
	if len(s) > maxURL {
		return fmt.Errorf("at most %d characters", maxURL)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("an absolute http or https URL, such as http://127.0.0.1:9000/webhooks")
	}
	if u.User != nil {
		return fmt.Errorf("user information is not sent; put credentials in the secret's place, the signature")
	}
	if u.Fragment != "" {
		return fmt.Errorf("a URL without a fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("the port must be 1 to 65535")
		}
	}
	if u.Hostname() == "" {
		return fmt.Errorf("the URL has no usable host")
	}
	return nil
}
