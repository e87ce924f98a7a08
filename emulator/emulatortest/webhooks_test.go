package emulatortest_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

// TestWebhookCarriesTheJob: a job's end is delivered, verified by the spec's rules, with the
// job exactly as GET /v1/jobs/{id} answers it.
func TestWebhookCarriesTheJob(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t, emulatortest.WithSeed(7))
	hooks := emu.Webhooks(t, emulatortest.WebhookOptions{Events: []string{"job.queued", "job.running", "job.succeeded"}})
	c := newClient(t, emu, emu.Keys.All)
	job := c.generate(fox(), "k1").str("id")
	emu.Advance(time.Second)
	done := hooks.Await(t, job, "job.succeeded")
	var polled map[string]any
	raw, _ := json.Marshal(c.job(job).body)
	_ = json.Unmarshal(raw, &polled)
	var data map[string]any
	var ev struct {
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(done.Body, &ev)
	_ = json.Unmarshal(ev.Data, &data)
	if !reflect.DeepEqual(data, polled) {
		t.Errorf("delivered data\n%v\nGET /v1/jobs/{id}\n%v", data, polled)
	}
	if ts := emulatortest.WebhookTolerance; done.Event.Timestamp == "" || ts == 0 {
		t.Errorf("event %+v", done.Event)
	}
	hooks.Await(t, job, "job.queued")
	hooks.Await(t, job, "job.running")
	for _, d := range hooks.Deliveries() {
		if d.Err != nil {
			t.Errorf("delivery %s: %v", d.ID, d.Err)
		}
	}
}

// TestWebhookRetriedWithTheSameID: a receiver that answers 500 once gets the same delivery
// again when the schedule says, not before, and the log shows both attempts.
func TestWebhookRetriedWithTheSameID(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	hooks := emu.Webhooks(t, emulatortest.WebhookOptions{})
	answered := 0
	hooks.Answer = func(emulatortest.Delivery) int {
		answered++
		if answered == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	c := newClient(t, emu, emu.Keys.All)
	job := c.generate(fox(), "k1").str("id")
	emu.Advance(time.Second)
	if got := hooks.Deliveries(); len(got) != 1 {
		t.Fatalf("%d deliveries after the job ended, want 1", len(got))
	}
	emu.Advance(4 * time.Second)
	if got := hooks.Deliveries(); len(got) != 1 {
		t.Fatalf("%d deliveries 4s later, want 1 (the retry is due after 5s)", len(got))
	}
	emu.Advance(time.Second)
	got := hooks.Deliveries()
	if len(got) != 2 || got[0].ID != got[1].ID || got[1].Timestamp-got[0].Timestamp != 5 {
		t.Fatalf("deliveries %+v, want the same id 5 s apart", got)
	}
	log := emu.WebhookDeliveries()
	if len(log) != 2 || log[0].Outcome != "retrying" || log[0].Status != 500 || log[1].Outcome != "delivered" || log[0].Job != job {
		t.Fatalf("log %+v", log)
	}
}

// TestAuditFindsAReceiverThatChecksNothing: a receiver that accepts anything is reported for
// the wrong signature and the stale timestamp; one that verifies is not.
func TestAuditFindsAReceiverThatChecksNothing(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)

	careless := emu.Tenant(t)
	accepts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(accepts.Close)
	srv := accepts.URL
	careless.SetWebhook(api.WebhookConfig{URL: srv, Secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("any secret at all")), Audit: true})
	cc := newClient(t, careless, careless.Key(emu.Keys.All))
	cc.generate(fox(), "k1")
	careless.Advance(time.Second)
	rep := careless.Report(t, "tenant")
	rules := findingRules(rep)
	if !strings.Contains(rules, "webhook-signature-unchecked") || !strings.Contains(rules, "webhook-timestamp-unchecked") {
		t.Errorf("careless receiver: findings %s", rules)
	}
	// Each finding cites the journal seq of the attempt that shows it, as the deliveries list it.
	kinds := map[uint64]string{}
	for _, a := range careless.WebhookDeliveries() {
		kinds[a.Seq] = a.Kind
	}
	for _, f := range rep.Findings {
		if want := map[string]string{"webhook-signature-unchecked": "audit_signature", "webhook-timestamp-unchecked": "audit_timestamp"}[f.Rule]; want != "" &&
			(len(f.Entries) != 1 || kinds[f.Entries[0]] != want) {
			t.Errorf("%s cites %v, want the %s attempt of %v", f.Rule, f.Entries, want, kinds)
		}
	}

	hooks := emu.Webhooks(t, emulatortest.WebhookOptions{Audit: true})
	c.generate(fox(), "k2")
	emu.Advance(time.Second)
	if n := len(hooks.Deliveries()); n != 3 {
		t.Fatalf("%d deliveries, want the real one and two audit ones", n)
	}
	if rules := findingRules(emu.Report(t, "tenant")); strings.Contains(rules, "webhook-") {
		t.Errorf("careful receiver: findings %s", rules)
	}
	cov := emu.Coverage(t, "tenant")
	seen := map[string]int64{}
	for _, cs := range cov.Cases {
		seen[cs.ID] = cs.Count
	}
	for _, id := range []string{"webhook delivery delivered", "webhook audit_signature refused", "webhook audit_timestamp refused"} {
		if seen[id] != 1 {
			t.Errorf("coverage %s = %d, want 1", id, seen[id])
		}
	}
}

func findingRules(rep api.Report) string {
	var rules []string
	for _, f := range rep.Findings {
		rules = append(rules, f.Rule+"×"+strconv.Itoa(rep.Counts[f.Rule]))
	}
	return strings.Join(rules, " ")
}

// TestWebhookSnapshotCarriesRetries: a snapshot holds the webhook without its secret and the
// delivery due; the restored tenant sends nothing until a secret is PUT, then sends that
// delivery again with its id.
func TestWebhookSnapshotCarriesRetries(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	first := emu.Tenant(t)
	hooks := first.Webhooks(t, emulatortest.WebhookOptions{})
	hooks.Answer = func(emulatortest.Delivery) int { return http.StatusServiceUnavailable }
	c := newClient(t, first, first.Key(emu.Keys.All))
	c.generate(fox(), "k1")
	first.Advance(time.Second)
	sent := hooks.Deliveries()
	if len(sent) != 1 {
		t.Fatalf("%d deliveries, want 1", len(sent))
	}
	doc := first.Snapshot(t, true)
	if strings.Contains(string(doc), strings.TrimPrefix(hooks.Secret, "whsec_")) {
		t.Fatal("the snapshot holds the secret")
	}
	var snap api.Snapshot
	if err := json.Unmarshal(doc, &snap); err != nil || snap.Webhooks == nil || len(snap.Webhooks.Pending) != 1 || snap.Webhooks.Pending[0].Attempts != 1 || snap.Webhooks.Pending[0].ID != sent[0].ID {
		t.Fatalf("snapshot webhooks %+v", snap.Webhooks)
	}

	second := emu.Tenant(t)
	second.Restore(t, doc)
	var got api.Webhooks
	status, body, _ := rawGet(t, second, "/_emulator/webhooks")
	if err := json.Unmarshal(body, &got); err != nil || status != 200 || got.Config == nil || got.Config.SecretSet || got.Config.Source != "snapshot" || got.Deliveries.Pending != 1 {
		t.Fatalf("restored: %d %s", status, body)
	}
	second.Advance(time.Hour)
	if n := len(hooks.Deliveries()); n != 1 {
		t.Fatalf("a restored webhook without a secret sent %d", n-1)
	}
	again := second.Webhooks(t, emulatortest.WebhookOptions{})
	second.Advance(0)
	if d := again.Deliveries(); len(d) != 1 || d[0].ID != sent[0].ID || d[0].Err != nil {
		t.Fatalf("after the secret was PUT: %+v", d)
	}
}

func rawGet(t *testing.T, e *emulatortest.Emulator, path string) (int, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.URL+path, nil)
	for k, v := range e.Header() {
		req.Header[k] = v
	}
	res, err := e.HTTPClient().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}
