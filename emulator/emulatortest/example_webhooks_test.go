package emulatortest_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

// Receive a job's end as a webhook: Webhooks starts a receiver on loopback that checks every
// delivery's signature and timestamp as Standard Webhooks say, and points the emulator at it.
// On the manual clock a delivery goes out when the clock is advanced past its event. A receiver
// that answers 500 gets the same delivery, same webhook-id, 5 s later.
func ExampleEmulator_Webhooks() {
	var tb emulatortest.Standalone
	defer tb.Close()
	emu := emulatortest.Start(&tb, emulatortest.WithSeed(42))
	hooks := emu.Webhooks(&tb, emulatortest.WebhookOptions{})
	answers := []int{http.StatusInternalServerError}
	hooks.Answer = func(emulatortest.Delivery) int {
		if len(answers) == 0 {
			return http.StatusNoContent
		}
		status := answers[0]
		answers = answers[1:]
		return status
	}

	input := map[string]any{"prompt": "a lighthouse at night"}
	_, quote := send(emu, http.MethodPost, "/v1/quotes", map[string]any{"model": "fal-ai/flux/dev", "input": input})
	_, job := send(emu, http.MethodPost, "/v1/generate",
		map[string]any{"model": "fal-ai/flux/dev", "input": input, "quote_id": quote["quote_id"]},
		"Idempotency-Key", "hooked-1")
	emu.Advance(time.Minute)

	d := hooks.Await(&tb, job["id"].(string), "job.succeeded")
	fmt.Println(d.Event.Type, d.Event.Data.Status, d.Err == nil)
	for _, a := range emu.WebhookDeliveries() {
		fmt.Println(a.Attempt, a.At, a.Status, a.Outcome, a.ID == d.ID)
	}
	// Output:
	// job.succeeded succeeded true
	// 1 2026-01-01T00:00:00.95Z 500 retrying true
	// 2 2026-01-01T00:00:05.95Z 204 delivered true
}
