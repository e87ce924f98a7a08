package webhooks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// FuzzConfig: any configuration sent is refused with field problems or accepted, and an accepted
// one never shows its secret.
func FuzzConfig(f *testing.F) {
	f.Add(`{"url":"http://127.0.0.1:9/","secret":"` + testSecret + `"}`)
	f.Add(`{"url":"https://[::1]:443/x?y","secret":"whsec_AA==","events":["job.queued","job.queued"],"audit":true,"chaos":{"duplicate":0.5,"delay":"1s","after_poll":true}}`)
	f.Add(`{"url":"http://u@h/#f","secret":"whsec_","events":[""],"chaos":{"reorder":-1,"delay":"-1s"}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var in api.WebhookConfig
		if json.Unmarshal([]byte(doc), &in) != nil {
			return
		}
		cfg, err := Parse(in, true)
		if err != nil {
			return
		}
		wire, _ := json.Marshal(cfg.Wire())
		if b64 := strings.TrimPrefix(in.Secret, "whsec_"); len(b64) > 3 && strings.Contains(string(wire), b64) {
			t.Fatalf("the secret shows: %s", wire)
		}
	})
}

// FuzzImport: any snapshot webhook document restores within the bounds or is reported, never
// panics, and holds no secret afterwards.
func FuzzImport(f *testing.F) {
	f.Add(`{"config":{"url":"http://127.0.0.1:2/","events":["job.failed"]},"pending":[{"id":"msg_1","event":"job.failed","job":"j","kind":"delivery","attempts":1,"due":"2026-01-01T00:00:00Z","body":{"type":"job.failed"}}]}`)
	f.Add(`{"config":{"url":"x","secret":"whsec_AA=="},"pending":[{"id":"","event":"job.x","kind":"?","attempts":99,"due":"soon","body":1}]}`)
	f.Add(`{"config":null,"pending":[]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var in api.SnapshotWebhooks
		if json.Unmarshal([]byte(doc), &in) != nil {
			return
		}
		h := New(Options{Clock: clock.NewManual(start), IDs: ids.NewSeeded(1), Sender: senderFunc(ok200),
			Render: func(v jobs.View) ([]byte, error) { return []byte(`{}`), nil }})
		defer h.Close()
		h.Import(&in, func(id string) (jobs.View, bool) { return ended(id, start), id != "" }, func(string, string) {})
		if s := h.Summary(); s.Pending > MaxPending || h.Bytes() > MaxPendingBytes {
			t.Fatalf("past the bounds: %+v", s)
		}
		if c := h.Config(); c != nil && c.Secret.Set() {
			t.Fatal("a restored webhook holds a secret")
		}
	})
}
