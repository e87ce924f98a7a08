package mediagen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
	mediagen "github.com/mediagen/mediagen-emulator/examples/go"
)

// limited starts the emulator on its manual clock under a scenario that runs one of an
// account's jobs at once, each for 30 s, the rest waiting (over: queue) or refused (reject).
func limited(t *testing.T, over string) *emulatortest.Emulator {
	path := filepath.Join(t.TempDir(), "limited.yaml")
	doc := "defaults: {run: 30s}\nconcurrency: [{limit: 1, over: " + over + "}]\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return emulatortest.Start(t, emulatortest.WithManualClock(), emulatortest.WithScenario(path))
}

// occupy takes the account's one slot with a job of another part of the same program.
func occupy(t *testing.T, emu *emulatortest.Emulator) {
	post := func(path, key string, body map[string]any, out any) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, emu.URL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+emu.Keys.All)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	input := map[string]any{"prompt": "a long night"}
	var q struct {
		QuoteID string `json:"quote_id"`
	}
	post("/v1/quotes", "", map[string]any{"model": "fal-ai/flux/dev", "input": input}, &q)
	post("/v1/generate", "occupy", map[string]any{"model": "fal-ai/flux/dev", "input": input, "quote_id": q.QuoteID}, &struct{}{})
}

// Behind a concurrency limit that queues, the careful client's job waits its turn: it polls
// on without taking the wait for a stuck job, renders once the slot frees, and the report finds
// nothing; coverage saw the queue.
func TestTheCarefulClientWaitsInTheQueue(t *testing.T) {
	emu := limited(t, "queue")
	emu.FailOnRules(t)
	occupy(t, emu)
	c := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Careful: true, Sleep: emu.Advance}
	res, err := c.Render(context.Background(), "fal-ai/flux/dev", map[string]any{"prompt": "a lighthouse at dawn"})
	if err != nil || len(res.Files) == 0 {
		t.Fatalf("render behind the queue: %+v, %v", res, err)
	}
	if job := emu.Job(res.JobID); job.QueuePosition != 0 || job.StartedAt == nil {
		t.Errorf("the job: %+v", job)
	}
	if cov := emu.Coverage(t, "tenant", "queued behind a concurrency limit"); len(cov.RequiredMissing) != 0 {
		t.Errorf("coverage lacks %v", cov.RequiredMissing)
	}
}

// Behind a limit that refuses, the careful client waits what Retry-After asks and sends the
// same generation again (the same key: the 429 held nothing), and the report finds nothing;
// the naive one retries at once and is told so.
func TestTheCarefulClientWaitsOutConcurrencyLimited(t *testing.T) {
	emu := limited(t, "reject")
	emu.FailOnRules(t)
	occupy(t, emu)
	c := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Careful: true, Sleep: emu.Advance}
	res, err := c.Render(context.Background(), "fal-ai/flux/dev", map[string]any{"prompt": "a lighthouse at dawn"})
	if err != nil || len(res.Files) == 0 {
		t.Fatalf("render past a 429 concurrency_limited: %+v, %v", res, err)
	}
	if cov := emu.Coverage(t, "tenant", "POST /v1/generate 429 concurrency_limited"); len(cov.RequiredMissing) != 0 {
		t.Errorf("the careful client never met the limit: %v", cov.RequiredMissing)
	}

	naiveEmu := limited(t, "reject")
	occupy(t, naiveEmu)
	naive := &mediagen.Client{BaseURL: naiveEmu.URL, Key: naiveEmu.Keys.All, Sleep: naiveEmu.Advance}
	if _, err := naive.Render(context.Background(), "fal-ai/flux/dev", map[string]any{"prompt": "a harbour"}); err == nil {
		t.Fatal("the naive client got past the limit without waiting")
	}
	if rep := naiveEmu.Report(t, "tenant"); rep.Counts["retry-after-ignored"] == 0 {
		t.Errorf("the report does not name retry-after-ignored: %v", rep.Counts)
	}
}
