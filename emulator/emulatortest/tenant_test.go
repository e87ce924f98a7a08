package emulatortest_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

// TestTenantsShareOneEmulator runs parallel tests on one emulator, each in its own tenant: each
// moves its own clock, adds its own fault, sets its own credits and resets, and sees only its
// own jobs.
func TestTenantsShareOneEmulator(t *testing.T) {
	shared := emulatortest.Start(t)
	for i := range 16 {
		t.Run(fmt.Sprintf("test%02d", i), func(t *testing.T) {
			t.Parallel()
			emu := shared.Tenant(t)
			if emu.TenantName == "" || emu.Keys.All != "mg_test_all."+emu.TenantName {
				t.Fatalf("tenant %q with key %q", emu.TenantName, emu.Keys.All)
			}
			c := newClient(t, emu, emu.Keys.All)
			job := c.generate(fox(), "shared-key", "X-Emulator-Outcome", "succeed")
			if job.status != 202 {
				t.Fatalf("generate: %d %v", job.status, job.body)
			}
			emu.AddFault(api.Perturbation{Match: api.FaultMatch{Path: "/v1/models"}, Status: 503, Count: 1})
			emu.SetCredits(emulatortest.DefaultAccounts.All, int64(1000+i))
			emu.Advance(time.Duration(30+i) * time.Second)
			if got := emu.Now(); !got.Equal(emulator.ManualStart.Add(time.Duration(30+i) * time.Second)) {
				t.Errorf("clock at %s: another test moved it", got)
			}
			if b := emu.Balance(emulatortest.DefaultAccounts.All); b.Available != int64(1000+i) {
				t.Errorf("balance %+v: another test changed it", b)
			}
			list := c.call(http.MethodGet, "/v1/jobs", nil)
			if list.body["total"] != 1.0 {
				t.Errorf("%v jobs listed, want this test's one", list.body["total"])
			}
			if got := emu.Job(job.str("id")).Status; got != "succeeded" {
				t.Errorf("job %v", got)
			}
			if r := c.call(http.MethodGet, "/v1/models", nil); r.status != 503 {
				t.Errorf("own fault: %d", r.status)
			}
			for _, req := range emu.Requests() {
				if req.JobID != "" && req.JobID != job.str("id") {
					t.Errorf("journal shows another test's job %s", req.JobID)
				}
			}
			emu.Reset()
			if list := c.call(http.MethodGet, "/v1/jobs", nil); list.body["total"] != 0.0 {
				t.Errorf("%v jobs after reset", list.body["total"])
			}
		})
	}
}

func TestAwaitWaitingAndHTTPClient(t *testing.T) {
	emu := emulatortest.Start(t, emulatortest.WithManualClock()).Tenant(t)
	c := newClient(t, emu, emu.Keys.All)
	q := c.quote(fox())
	done := make(chan answer, 1)
	go func() {
		done <- c.call(http.MethodPost, "/v1/generate?wait=true", map[string]any{"model": model, "input": fox(), "quote_id": q}, "Idempotency-Key", "k")
	}()
	emu.AwaitWaiting(1)
	emu.Advance(time.Minute)
	if got := <-done; got.status != 200 || got.str("status") != "succeeded" {
		t.Errorf("waited generation: %d %v", got.status, got.body)
	}
	req, _ := http.NewRequest(http.MethodGet, emu.URL+"/_emulator/health", nil)
	resp, err := emu.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := emu.Header().Get("X-Emulator-Tenant"); got != emu.TenantName {
		t.Errorf("Header() = %q", got)
	}
}
