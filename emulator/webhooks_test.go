package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

const (
	hookSecret = "whsec_c2VjcmV0LWtleS1mb3ItdGhlLXdlYmhvb2stdGVzdHM="
	hookB64    = "c2VjcmV0LWtleS1mb3ItdGhlLXdlYmhvb2stdGVzdHM="
)

// TestWebhookControl: PUT checks every field and answers the webhook without its secret; GET
// shows it; DELETE removes it.
func TestWebhookControl(t *testing.T) {
	s := flowServer(t)
	for _, tc := range []struct {
		body any
		ptrs string
	}{
		{map[string]any{}, "[/url /secret]"},
		{map[string]any{"url": "http://127.0.0.1:9/", "secret": "plain"}, "[/secret]"},
		{map[string]any{"url": "javascript:alert(1)", "secret": hookSecret, "events": []string{"job.done"}}, "[/url /events/0]"},
		{map[string]any{"url": "http://127.0.0.1:9/", "secret": hookSecret, "chaos": map[string]any{"duplicate": 3}}, "[/chaos/duplicate]"},
		{map[string]any{"url": "http://127.0.0.1:9/", "secret": hookSecret, "extra": 1}, "[/extra]"},
		{map[string]any{"url": 12, "secret": hookSecret}, "[/url]"},
		{`[1]`, "[]"},
	} {
		rec := call(t, s, http.MethodPut, "/_emulator/webhooks", "", tc.body)
		p := decode[problemJSON](t, rec)
		var ptrs []string
		for _, e := range p.Errors {
			ptrs = append(ptrs, e.Pointer)
		}
		if (rec.Code != 422 && rec.Code != 400) || fmt.Sprint(ptrs) != tc.ptrs || strings.Contains(rec.Body.String(), hookB64) {
			t.Errorf("PUT %v: %d %s, want pointers %s", tc.body, rec.Code, rec.Body, tc.ptrs)
		}
	}
	if got := decode[api.Webhooks](t, call(t, s, http.MethodGet, "/_emulator/webhooks", "", nil)); got.Config != nil || len(got.Schedule) != 7 {
		t.Fatalf("before PUT: %+v", got)
	}
	rec := call(t, s, http.MethodPut, "/_emulator/webhooks", "", map[string]any{"url": "http://127.0.0.1:9/hook", "secret": hookSecret, "events": []string{"job.running"}})
	got := decode[api.Webhooks](t, rec)
	if rec.Code != 200 || got.Config == nil || !got.Config.SecretSet || got.Config.Secret != "" || got.Config.Source != "control" || fmt.Sprint(got.Config.Events) != "[job.running]" {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	if rec := call(t, s, http.MethodDelete, "/_emulator/webhooks", "", nil); rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", rec.Code)
	}
	if got := decode[api.Webhooks](t, call(t, s, http.MethodGet, "/_emulator/webhooks", "", nil)); got.Config != nil {
		t.Fatalf("after DELETE: %+v", got.Config)
	}
}

// TestWebhookSecretNeverShown: after a PUT and a delivery attempt, neither the journal, the
// log, a snapshot, the control API nor the event stream's sources hold the secret.
func TestWebhookSecretNeverShown(t *testing.T) {
	var logs bytes.Buffer
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, Seeded: true, Seed: 7,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if rec := call(t, s, http.MethodPut, "/_emulator/webhooks", "", map[string]any{"url": "http://127.0.0.1:1/hook", "secret": hookSecret}); rec.Code != 200 {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	generate(t, s, "key_a", "k1", q, pixelInput, "")
	call(t, s, http.MethodPost, "/_emulator/clock", "", map[string]any{"advance": "1h"})
	var seen strings.Builder
	for _, path := range []string{"/_emulator/webhooks", "/_emulator/webhooks/deliveries", "/_emulator/requests", "/_emulator/snapshot?journal=true", "/_emulator/report", "/_emulator/scenario"} {
		seen.WriteString(call(t, s, http.MethodGet, path, "", nil).Body.String())
	}
	seen.WriteString(logs.String())
	if strings.Contains(seen.String(), hookB64) || strings.Contains(seen.String(), "secret-key-for") {
		t.Fatal("the secret is shown")
	}
	log := decode[api.WebhookDeliveries](t, call(t, s, http.MethodGet, "/_emulator/webhooks/deliveries", "", nil))
	if len(log.Data) == 0 || log.Data[0].Error != "refused" {
		t.Fatalf("deliveries: %+v", log)
	}
}

// TestWebhookFlags: the run's webhook needs a secret and a sound URL; once set, every tenant
// starts with it.
func TestWebhookFlags(t *testing.T) {
	for _, cfg := range []Config{
		{WebhookURL: "http://127.0.0.1:9/"},
		{WebhookURL: "nope", WebhookSecret: hookSecret},
		{WebhookSecret: "whsec_***"},
		{WebhookAllow: []string{"host:0"}},
		{WebhookURL: "http://127.0.0.1:9/", WebhookSecret: hookSecret, WebhookEvents: []string{"job.finished"}},
	} {
		if _, err := NewServer(cfg); err == nil || strings.Contains(err.Error(), hookB64) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, WebhookURL: "http://127.0.0.1:9/", WebhookSecret: hookSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	got := decode[api.Webhooks](t, call(t, s, http.MethodGet, "/_emulator/webhooks", "", nil, "X-Emulator-Tenant", "other"))
	if got.Config == nil || got.Config.Source != "flag" || !got.Config.SecretSet {
		t.Fatalf("%+v", got.Config)
	}
}

// TestScenarioWebhook: a scenario's webhooks section puts a webhook in force, signed with the
// run's secret, or sending nothing without one; its problems name the field.
func TestScenarioWebhook(t *testing.T) {
	doc := map[string]any{"name": "hooked", "webhooks": map[string]any{"url": "http://127.0.0.1:9/h", "events": []string{"job.failed"}, "chaos": map[string]any{"delay": "5s"}}}
	for _, secret := range []string{"", hookSecret} {
		s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, WebhookSecret: secret})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if rec := call(t, s, http.MethodPut, "/_emulator/scenario", "", map[string]any{"scenario": doc}); rec.Code != 200 {
			t.Fatalf("PUT scenario: %d %s", rec.Code, rec.Body)
		}
		got := decode[api.Webhooks](t, call(t, s, http.MethodGet, "/_emulator/webhooks", "", nil))
		if got.Config == nil || got.Config.Source != "scenario" || got.Config.SecretSet != (secret != "") || got.Config.Chaos == nil || got.Config.Chaos.Delay != "5s" {
			t.Fatalf("secret %q: %+v", secret, got.Config)
		}
	}
	s := flowServer(t)
	for _, tc := range []struct {
		webhooks map[string]any
		want     string
	}{
		{map[string]any{"url": "http://127.0.0.1:9/", "secret": hookSecret}, `unknown field \"secret\"`},
		{map[string]any{"url": "ftp://x", "events": []string{"job.done"}}, "webhooks.events.0: not an event"},
		{map[string]any{"url": "ftp://x"}, "webhooks.url: an absolute http or https URL"},
	} {
		rec := call(t, s, http.MethodPut, "/_emulator/scenario", "", map[string]any{"scenario": map[string]any{"name": "bad", "webhooks": tc.webhooks}})
		if rec.Code != 422 || !strings.Contains(rec.Body.String(), tc.want) || strings.Contains(rec.Body.String(), hookB64) {
			t.Errorf("%v: %d %s, want %s", tc.webhooks, rec.Code, rec.Body, tc.want)
		}
	}
}

// TestWebhookNotSentOffTheMachine: a webhook pointed at an address off the machine (TEST-NET)
// is accepted, but every attempt is refused before a connection, as not_allowed, and retried on
// the schedule like any failure.
func TestWebhookNotSentOffTheMachine(t *testing.T) {
	s := flowServer(t)
	if rec := call(t, s, http.MethodPut, "/_emulator/webhooks", "", map[string]any{"url": "http://192.0.2.1:9/hook", "secret": hookSecret}); rec.Code != 200 {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	generate(t, s, "key_a", "k1", q, pixelInput, "")
	call(t, s, http.MethodPost, "/_emulator/clock", "", map[string]any{"advance": "3m"})
	log := decode[api.WebhookDeliveries](t, call(t, s, http.MethodGet, "/_emulator/webhooks/deliveries", "", nil))
	if len(log.Data) < 3 {
		t.Fatalf("%d attempts in 3 minutes, want at least 3", len(log.Data))
	}
	for _, a := range log.Data {
		if a.Error != "not_allowed" || a.Status != 0 || a.LatencyMS > 1000 {
			t.Fatalf("attempt %+v, want not_allowed at once", a)
		}
	}
}

// TestRestoredWebhookTakesTheRunSecret: a snapshot carries a webhook without its secret; a run
// started with one signs the restored webhook with it at once, and a run without one waits for
// a PUT.
func TestRestoredWebhookTakesTheRunSecret(t *testing.T) {
	src, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	if rec := call(t, src, http.MethodPut, "/_emulator/webhooks", "", map[string]any{"url": "http://127.0.0.1:9/h", "secret": hookSecret}); rec.Code != 200 {
		t.Fatalf("PUT webhooks: %d %s", rec.Code, rec.Body)
	}
	doc := call(t, src, http.MethodGet, "/_emulator/snapshot", "", nil).Body.String()
	for _, secret := range []string{"", hookSecret} {
		s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, WebhookSecret: secret})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if rec := call(t, s, http.MethodPut, "/_emulator/snapshot", "", doc); rec.Code != 200 {
			t.Fatalf("PUT snapshot: %d %s", rec.Code, rec.Body)
		}
		got := decode[api.Webhooks](t, call(t, s, http.MethodGet, "/_emulator/webhooks", "", nil))
		if got.Config == nil || got.Config.URL != "http://127.0.0.1:9/h" || got.Config.SecretSet != (secret != "") {
			t.Errorf("run secret %q: restored %+v", secret, got.Config)
		}
	}
}

// TestWebhookAttemptsGoThroughASnapshot: the attempts are notes of the journal, so a snapshot
// carries them with their seqs and a restored tenant lists the same deliveries, and numbers its
// next request past them.
func TestWebhookAttemptsGoThroughASnapshot(t *testing.T) {
	s := flowServer(t)
	if rec := call(t, s, http.MethodPut, "/_emulator/webhooks", "", map[string]any{"url": "http://192.0.2.1:9/hook", "secret": hookSecret}); rec.Code != 200 {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	generate(t, s, "key_a", "k1", q, pixelInput, "")
	call(t, s, http.MethodPost, "/_emulator/clock", "", map[string]any{"advance": "1m"})
	before := call(t, s, http.MethodGet, "/_emulator/webhooks/deliveries", "", nil).Body.String()
	doc := call(t, s, http.MethodGet, "/_emulator/snapshot", "", nil).Body.String()
	log := decode[api.WebhookDeliveries](t, call(t, s, http.MethodGet, "/_emulator/webhooks/deliveries", "", nil))
	if len(log.Data) < 3 || log.Data[0].Seq <= 2 || log.Data[1].Seq != log.Data[0].Seq+1 {
		t.Fatalf("deliveries %+v: want attempts numbered after the quote and the generation", log.Data)
	}

	back := flowServer(t)
	if rec := call(t, back, http.MethodPut, "/_emulator/snapshot", "", doc); rec.Code != 200 {
		t.Fatalf("PUT snapshot: %d %s", rec.Code, rec.Body)
	}
	if after := call(t, back, http.MethodGet, "/_emulator/webhooks/deliveries", "", nil).Body.String(); after != before {
		t.Fatalf("restored deliveries\n%s\nwant\n%s", after, before)
	}
	// A body edited in the document is not what the restored tenant holds to sign and send.
	var forged api.Snapshot
	if err := json.Unmarshal([]byte(doc), &forged); err != nil || forged.Webhooks == nil || len(forged.Webhooks.Pending) == 0 {
		t.Fatalf("no delivery due in the snapshot (%v)", err)
	}
	// A webhook put in force shows the tenant the address its clients reach it by, which the
	// restored deliveries' output URLs then name.
	if rec := call(t, back, http.MethodPut, "/_emulator/webhooks", "", map[string]any{"url": "http://192.0.2.1:9/hook", "secret": hookSecret}); rec.Code != 200 {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	want := string(forged.Webhooks.Pending[0].Body)
	forged.Webhooks.Pending[0].Body = json.RawMessage(`{"type":"` + forged.Webhooks.Pending[0].Event + `","data":{"id":"forged"}}`)
	if rec := call(t, back, http.MethodPut, "/_emulator/snapshot", "", forged); rec.Code != 200 {
		t.Fatalf("PUT the edited snapshot: %d %s", rec.Code, rec.Body)
	}
	held := decode[api.Snapshot](t, call(t, back, http.MethodGet, "/_emulator/snapshot", "", nil))
	if held.Webhooks == nil || len(held.Webhooks.Pending) == 0 || string(held.Webhooks.Pending[0].Body) != want {
		t.Fatalf("after restoring an edited body, the delivery due holds %s, want the body %s", held.Webhooks.Pending[0].Body, want)
	}
	call(t, back, http.MethodGet, "/v1/models", "key_a", nil)
	entries := decode[api.Page[api.JournalEntry]](t, call(t, back, http.MethodGet, "/_emulator/requests", "", nil))
	if last := log.Data[len(log.Data)-1].Seq; len(entries.Data) == 0 || entries.Data[len(entries.Data)-1].Seq <= last {
		t.Fatalf("a request after the restore: %+v, want a seq past %d", entries.Data, last)
	}
}
