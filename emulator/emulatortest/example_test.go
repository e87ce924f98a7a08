package emulatortest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

// Start an emulator and list its models with a plain HTTP client. Outside a test, a Standalone
// stands in for the *testing.T that Start usually gets.
func Example() {
	var tb emulatortest.Standalone
	defer tb.Close() // shuts the emulator down
	emu := emulatortest.Start(&tb)

	req, _ := http.NewRequest(http.MethodGet, emu.URL+"/v1/models?category=text-to-image&limit=3", nil)
	req.Header.Set("Authorization", "Bearer "+emu.Keys.All)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID         string `json:"id"`
			OutputType string `json:"output_type"`
		} `json:"data"`
		HasMore bool `json:"has_more"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode)
	for _, m := range list.Data {
		fmt.Println(m.ID, m.OutputType)
	}
	fmt.Println("more:", list.HasMore)
	// Output:
	// 200
	// fal-ai/flux/dev image
	// fal-ai/flux/schnell image
	// fal-ai/flux-pro/v1.1 image
	// more: true
}

// Force a generation to fail with the X-Emulator-Outcome header (or, when a test controls only
// the input, with the token [emulator:fail] inside any string of it). The job fails when its
// run would have ended, and its credits are refunded.
func Example_forcedFailure() {
	var tb emulatortest.Standalone
	defer tb.Close()
	emu := emulatortest.Start(&tb, emulatortest.WithSeed(42))

	input := map[string]any{"prompt": "a red fox in the snow"}
	_, quote := send(emu, http.MethodPost, "/v1/quotes", map[string]any{"model": "fal-ai/flux/dev", "input": input})
	status, job := send(emu, http.MethodPost, "/v1/generate",
		map[string]any{"model": "fal-ai/flux/dev", "input": input, "quote_id": quote["quote_id"]},
		"Idempotency-Key", "order-1", "X-Emulator-Outcome", "fail")
	fmt.Println(status, job["status"], job["credit_status"])

	emu.Advance(5 * time.Second)
	_, job = send(emu, http.MethodGet, "/v1/jobs/"+job["id"].(string), nil)
	fmt.Println(job["status"], job["error"].(map[string]any)["code"], job["credit_status"])
	// Output:
	// 202 queued held
	// failed generation_failed refunded
}

// ForceFail ends a job that is still running with the failure a test needs, named field by
// field, and refunds its credits.
func ExampleEmulator_ForceFail() {
	var tb emulatortest.Standalone
	defer tb.Close()
	emu := emulatortest.Start(&tb, emulatortest.WithSeed(42))

	input := map[string]any{"prompt": "a red fox in the snow"}
	_, quote := send(emu, http.MethodPost, "/v1/quotes", map[string]any{"model": "fal-ai/flux/dev", "input": input})
	_, job := send(emu, http.MethodPost, "/v1/generate",
		map[string]any{"model": "fal-ai/flux/dev", "input": input, "quote_id": quote["quote_id"]}, "Idempotency-Key", "order-1")

	emu.ForceFail(job["id"].(string), api.JobFailure{Code: "provider_timeout", Message: "the provider did not answer"})
	_, job = send(emu, http.MethodGet, "/v1/jobs/"+job["id"].(string), nil)
	e := job["error"].(map[string]any)
	fmt.Println(job["status"], e["code"], e["message"], job["credit_status"])
	// Output:
	// failed provider_timeout the provider did not answer refunded
}

// On the default skipping clock a wait=true generation answers the finished job at once, with
// the timestamps of the simulated run: FLUX.1 [dev] queues for 150 ms and runs for 800 ms.
func Example_waitTrue() {
	var tb emulatortest.Standalone
	defer tb.Close()
	emu := emulatortest.Start(&tb)

	input := map[string]any{"prompt": "a lighthouse at night", "output_format": "png"}
	_, quote := send(emu, http.MethodPost, "/v1/quotes", map[string]any{"model": "fal-ai/flux/dev", "input": input})
	status, job := send(emu, http.MethodPost, "/v1/generate?wait=true",
		map[string]any{"model": "fal-ai/flux/dev", "input": input, "quote_id": quote["quote_id"]},
		"Idempotency-Key", "order-1")
	fmt.Println(status, job["status"], job["started_at"], job["finished_at"])
	// Output:
	// 200 succeeded 2026-01-01T00:00:00.15Z 2026-01-01T00:00:00.95Z
}

// On the manual clock a job moves only when the test moves time: FLUX.1 [dev] queues for
// 150 ms and runs for 800 ms in the default catalog.
func ExampleEmulator_Advance() {
	var tb emulatortest.Standalone
	defer tb.Close()
	emu := emulatortest.Start(&tb, emulatortest.WithManualClock())

	input := map[string]any{"prompt": "a lighthouse at night", "output_format": "png"}
	_, quote := send(emu, http.MethodPost, "/v1/quotes", map[string]any{"model": "fal-ai/flux/dev", "input": input})
	_, job := send(emu, http.MethodPost, "/v1/generate",
		map[string]any{"model": "fal-ai/flux/dev", "input": input, "quote_id": quote["quote_id"]},
		"Idempotency-Key", "order-2")
	path := "/v1/jobs/" + job["id"].(string)
	fmt.Println(emu.Now().Format(time.RFC3339), job["status"])

	emu.Advance(500 * time.Millisecond)
	_, job = send(emu, http.MethodGet, path, nil)
	fmt.Println(emu.Now().Format(time.RFC3339Nano), job["status"])

	emu.Advance(500 * time.Millisecond)
	_, job = send(emu, http.MethodGet, path, nil)
	output := job["outputs"].([]any)[0].(map[string]any)
	fmt.Println(emu.Now().Format(time.RFC3339), job["status"], output["content_type"])
	// Output:
	// 2026-01-01T00:00:00Z queued
	// 2026-01-01T00:00:00.5Z running
	// 2026-01-01T00:00:01Z succeeded image/png
}

// Switch the scenario at run time: under "outage" generation answers 503 with Retry-After,
// while quotes still work.
func ExampleEmulator_SetScenario() {
	var tb emulatortest.Standalone
	defer tb.Close()
	emu := emulatortest.Start(&tb)
	emu.SetScenario("outage")

	input := map[string]any{"prompt": "a red fox"}
	status, quote := send(emu, http.MethodPost, "/v1/quotes", map[string]any{"model": "fal-ai/flux/dev", "input": input})
	fmt.Println("quote:", status)
	status, problem := send(emu, http.MethodPost, "/v1/generate",
		map[string]any{"model": "fal-ai/flux/dev", "input": input, "quote_id": quote["quote_id"]},
		"Idempotency-Key", "order-3")
	fmt.Println("generate:", status, problem["code"])

	emu.SetScenario("default")
	status, _ = send(emu, http.MethodPost, "/v1/generate",
		map[string]any{"model": "fal-ai/flux/dev", "input": input, "quote_id": quote["quote_id"]},
		"Idempotency-Key", "order-3")
	fmt.Println("generate:", status)
	// Output:
	// quote: 200
	// generate: 503 service_unavailable
	// generate: 202
}

// Make the next request fail once, then check what the client sent.
func ExampleEmulator_AddFault() {
	var tb emulatortest.Standalone
	defer tb.Close()
	emu := emulatortest.Start(&tb)
	emu.AddFault(api.Perturbation{
		Match:  api.FaultMatch{Method: "GET", Path: "/v1/models"},
		Status: 500, Code: "internal_error", Count: 1,
	})

	for range 2 {
		status, _ := send(emu, http.MethodGet, "/v1/models", nil)
		fmt.Println(status)
	}
	for _, r := range emu.Requests(emulatortest.Pattern{Path: "/v1/models"}) {
		fmt.Println(r.Method, r.Path, r.Status, r.Fault != "")
	}
	// Output:
	// 500
	// 200
	// GET /v1/models 500 true
	// GET /v1/models 200 false
}

// send makes one API call with the default catalog's key mg_test_all and decodes the JSON answer;
// headers come in name, value pairs.
func send(emu *emulatortest.Emulator, method, path string, body any, headers ...string) (int, map[string]any) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	req, err := http.NewRequest(method, emu.URL+path, bytes.NewReader(raw))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+emu.Keys.All)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// Give each test its own tenant on one shared emulator: each has its own clock, credits, jobs,
// journal and faults, so tests run in parallel without a process each. The key names the
// tenant (KEY.NAME), so a client that only lets a test set its API key is isolated too.
func ExampleEmulator_Tenant() {
	var tb emulatortest.Standalone
	defer tb.Close()
	shared := emulatortest.Start(&tb) // in a real suite: once, in TestMain

	a, b := shared.Tenant(&tb), shared.Tenant(&tb) // in a real suite: shared.Tenant(t) per test
	a.Advance(time.Hour)
	a.SetCredits("acct_all", 5)
	fmt.Println(a.Keys.All == "mg_test_all."+a.TenantName)
	fmt.Println(a.Now().Sub(b.Now()))
	fmt.Println(a.Balance("acct_all").Available, b.Balance("acct_all").Available)
	// Output:
	// true
	// 1h0m0s
	// 5 1000000
}

// Ask whether requests like a pattern happened. When none did, the near misses say which part
// of the pattern the closest requests missed.
func ExampleEmulator_Verify() {
	var tb emulatortest.Standalone
	defer tb.Close()
	emu := emulatortest.Start(&tb)

	send(emu, http.MethodPost, "/v1/quotes", map[string]any{"model": "fal-ai/flux/dev", "input": map[string]any{"prompt": "a cat"}})

	v := emu.Verify(&tb, emulatortest.Pattern{Method: "POST", Path: "/v1/quotes", Body: map[string]any{"input": map[string]any{"prompt": "a cat"}}})
	fmt.Println("cats:", v.Count)
	v = emu.Verify(&tb, emulatortest.Pattern{Path: "/v1/quotes", Pointers: map[string]any{"/input/prompt": "a dog"}})
	fmt.Println("dogs:", v.Count)
	for _, m := range v.NearMisses[0].Missed {
		fmt.Printf("%s: want %v, got %v\n", m.Field, m.Want, m.Got)
	}
	// Output:
	// cats: 1
	// dogs: 0
	// /pointers/~1input~1prompt: want a dog, got a cat
}

// Count which of the contract's hard cases a run exercised, and list the required ones it
// never did.
func ExampleEmulator_Coverage() {
	var tb emulatortest.Standalone
	defer tb.Close()
	emu := emulatortest.Start(&tb)

	send(emu, http.MethodGet, "/v1/jobs/no-such-job", nil)

	c := emu.Coverage(&tb, "run", "GET /v1/jobs/{id} 4*")
	fmt.Println(c.Exercised, "exercised; never seen:", c.RequiredMissing)
	// Output:
	// 1 exercised; never seen: [GET /v1/jobs/{id} 401 unauthenticated GET /v1/jobs/{id} 403 permission_denied GET /v1/jobs/{id} 429 rate_limited]
}
