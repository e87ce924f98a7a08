package emulatortest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// WebhookTolerance is how far a delivery's webhook-timestamp may be from the receiver's clock,
// as Standard Webhooks recommend.
const WebhookTolerance = 5 * time.Minute

// Delivery is one request a Receiver got.
type Delivery struct {
	ID        string // webhook-id
	Timestamp int64  // webhook-timestamp
	Header    http.Header
	Body      []byte
	// Event is the body, when it verified and parsed.
	Event api.WebhookEvent
	// Err says why the delivery was refused, nil when it verified.
	Err error
	// Status is what the receiver answered.
	Status int
}

// Receiver is a webhook receiver for tests: it verifies every delivery as the Standard Webhooks
// specification says (the signature over "id.timestamp.body" with the secret's bytes, and a
// timestamp within WebhookTolerance of Now), collects them, and answers 204 to a valid one
// (or what Answer says) and 401 to any other. It listens on loopback.
type Receiver struct {
	// URL is where deliveries go.
	URL string
	// Secret is its whsec_ secret.
	Secret string
	// Now is the receiver's clock for the timestamp check; Emulator.Webhooks sets the
	// emulator's.
	Now func() time.Time
	// Answer, when set, decides the status of a valid delivery (a test of retries answers 500).
	Answer func(Delivery) int

	key     []byte
	srv     *http.Server
	mu      sync.Mutex
	got     []Delivery
	changed chan struct{}
}

// NewReceiver starts a receiver on a loopback port with a fresh secret; the test's cleanup
// stops it.
func NewReceiver(t TB) *Receiver {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("emulatortest: a webhook receiver cannot listen: %v", err)
		return nil
	}
	r := &Receiver{URL: "http://" + ln.Addr().String() + "/webhooks", Secret: "whsec_" + base64.StdEncoding.EncodeToString(key),
		Now: time.Now, key: key, changed: make(chan struct{})}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

// Verify checks a delivery's headers and body against the receiver's secret and clock.
func (r *Receiver) Verify(h http.Header, body []byte) error {
	return VerifyWebhook(r.Secret, h, body, r.Now())
}

// VerifyWebhook checks a delivery as the Standard Webhooks specification describes: the secret
// after "whsec_" is base64 of the HMAC-SHA256 key; the signed content is
// "{webhook-id}.{webhook-timestamp}.{body}"; webhook-signature lists space-separated
// "v1,<base64>" signatures, one of which must match; the timestamp is within
// WebhookTolerance of now.
func VerifyWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return errors.New("the secret is not whsec_ and base64")
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("webhook-id, webhook-timestamp or webhook-signature is missing")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("webhook-timestamp is not an integer")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > WebhookTolerance || d < -WebhookTolerance {
		return errors.New("webhook-timestamp is more than 5 minutes from now")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		if b64, ok := strings.CutPrefix(s, "v1,"); ok {
			if got, err := base64.StdEncoding.DecodeString(b64); err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return errors.New("no signature matches")
}

// ServeHTTP receives one delivery.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 8<<20))
	d := Delivery{ID: req.Header.Get("webhook-id"), Header: req.Header.Clone(), Body: body, Status: http.StatusNoContent}
	d.Timestamp, _ = strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
	if err == nil {
		d.Err = r.Verify(req.Header, body)
	} else {
		d.Err = err
	}
	if d.Err == nil {
		if err := json.Unmarshal(body, &d.Event); err != nil {
			d.Err = errors.New("the body is not a webhook event")
		}
	}
	if d.Err != nil {
		d.Status = http.StatusUnauthorized
	} else if r.Answer != nil {
		d.Status = r.Answer(d)
	}
	r.mu.Lock()
	r.got = append(r.got, d)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	w.WriteHeader(d.Status)
}

// Deliveries are every request received, in order, valid or not.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery{}, r.got...)
}

// Await returns the first valid delivery of a job's event (such as "job.succeeded"), waiting up
// to a minute of real time for it; the test fails without one. On a manual clock deliveries go
// out when the clock is advanced, so advance it before awaiting.
func (r *Receiver) Await(t TB, jobID, event string) Delivery {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for _, d := range r.got {
			if d.Err == nil && d.Event.Data.ID == jobID && d.Event.Type == event {
				r.mu.Unlock()
				return d
			}
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("emulatortest: no valid %s delivery for job %s within a minute; received %d requests", event, jobID, len(r.Deliveries()))
			return Delivery{}
		}
	}
}

// WebhookOptions are what Emulator.Webhooks configures beside the receiver's URL and secret.
type WebhookOptions struct {
	// Events default to a job's end.
	Events []string
	Audit  bool
	Chaos  *api.WebhookChaos
}

// Webhooks starts a Receiver and points this emulator's (or tenant's) webhook at it, its
// timestamps checked against the emulator's clock.
func (e *Emulator) Webhooks(t TB, o WebhookOptions) *Receiver {
	t.Helper()
	r := NewReceiver(t)
	r.Now = e.clockNow
	e.SetWebhook(api.WebhookConfig{URL: r.URL, Secret: r.Secret, Events: o.Events, Audit: o.Audit, Chaos: o.Chaos})
	return r
}

// SetWebhook puts a webhook configuration in force (PUT /_emulator/webhooks).
func (e *Emulator) SetWebhook(c api.WebhookConfig) api.Webhooks {
	e.t.Helper()
	var out api.Webhooks
	e.do(http.MethodPut, "/_emulator/webhooks", c, http.StatusOK, &out)
	return out
}

// WebhookDeliveries is the delivery log (GET /_emulator/webhooks/deliveries).
func (e *Emulator) WebhookDeliveries() []api.WebhookAttempt {
	e.t.Helper()
	var out api.WebhookDeliveries
	e.do(http.MethodGet, "/_emulator/webhooks/deliveries", nil, http.StatusOK, &out)
	return out.Data
}

// clockNow is the emulator's clock, read without failing a test from a receiver's goroutine.
func (e *Emulator) clockNow() time.Time {
	status, body, err := e.roundTrip(http.MethodGet, "/_emulator/clock", nil)
	var c api.Clock
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &c) != nil {
		return time.Now()
	}
	now, err := time.Parse(time.RFC3339Nano, c.Now)
	if err != nil {
		return time.Now()
	}
	return now
}
