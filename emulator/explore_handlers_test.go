package emulator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/explore"
)

// TestExploreDraw: the endpoint answers explore.Draw of its body, the same bytes each time and
// whatever the tenant; bodies out of bounds are refused at their pointers.
func TestExploreDraw(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	req := api.DrawRequest{Seed: 7, Run: 3, Terminal: true, Reached: []string{"fault reset"}, Routes: map[string]int{"POST /v1/generate": 2, "GET /files/**": 1}}
	first := control(t, s, "POST", "/_emulator/explore/draw", req)
	if first.Code != 200 {
		t.Fatalf("draw: %d %s", first.Code, first.Body)
	}
	want, _ := json.Marshal(explore.Draw(req))
	if got := strings.TrimSpace(first.Body.String()); got != string(want) {
		t.Errorf("draw answered\n%s\nnot\n%s", got, want)
	}
	again := call(t, s, "POST", "/_emulator/explore/draw", "", req, "X-Emulator-Tenant", "other")
	if again.Body.String() != first.Body.String() {
		t.Errorf("the same body drew\n%s\nthen\n%s", first.Body, again.Body)
	}
	for _, tc := range []struct{ body, pointer string }{
		{`{"seed":1,"run":-1}`, "/run"},
		{`{"seed":1,"routes":{"POST /v1/generate#1":1}}`, "/routes/POST ~1v1~1generate#1"},
		{`{"seed":1,"routes":{"GET /v1/jobs/{id}":-2}}`, "/routes/GET ~1v1~1jobs~1{id}"},
		{`{"seed":1,"reached":[` + strings.Repeat(`"x",`, explore.MaxReached) + `"x"]}`, "/reached"},
		{`{"seed":"1"}`, "/seed"},
		{`{"seed":1,"runs":2}`, "/runs"},
	} {
		rec := control(t, s, "POST", "/_emulator/explore/draw", tc.body)
		p := decode[api.Problem](t, rec)
		if rec.Code != 422 || p.Code != "invalid_request" || len(p.Errors) == 0 || p.Errors[0].Pointer != tc.pointer {
			t.Errorf("%.60s: %d %s", tc.body, rec.Code, rec.Body)
		}
	}
	if rec := control(t, s, "POST", "/_emulator/explore/draw", `[1]`); rec.Code != 400 {
		t.Errorf("an array: %d %s", rec.Code, rec.Body)
	}
}

// TestExploreShrink: the endpoint answers explore.Candidates of the plan; a plan that cannot
// shrink has none; a missing or oversized plan is refused.
func TestExploreShrink(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	plan := api.Plan{Perturbations: []api.Perturbation{
		{At: "POST /v1/generate#1", Action: api.FaultError, Status: 503, Code: "service_unavailable", RetryAfter: 2, RetryAfterFormat: api.RetryAfterDate},
		{At: "job#1", Outcome: "slow"},
	}}
	rec := control(t, s, "POST", "/_emulator/explore/shrink", api.ShrinkRequest{Plan: plan})
	if rec.Code != 200 {
		t.Fatalf("shrink: %d %s", rec.Code, rec.Body)
	}
	got := decode[api.Shrunk](t, rec)
	var logs []string
	for _, c := range got.Candidates {
		logs = append(logs, explore.Log(c))
	}
	want := []string{
		"job#1 outcome slow",
		"POST /v1/generate#1 error 503 service_unavailable retry_after=2s(date)",
		"POST /v1/generate#1 error 503 service_unavailable retry_after=2s; job#1 outcome slow",
		"POST /v1/generate#1 error 503 service_unavailable retry_after=1s(date); job#1 outcome slow",
		"POST /v1/generate#1 error 500 internal_error; job#1 outcome slow",
	}
	if strings.Join(logs, "\n") != strings.Join(want, "\n") {
		t.Errorf("candidates\n%s\nwant\n%s", strings.Join(logs, "\n"), strings.Join(want, "\n"))
	}
	rec = control(t, s, "POST", "/_emulator/explore/shrink", `{"plan":{"perturbations":[{"at":"job#1","outcome":"slow"}]}}`)
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"candidates":[]}` {
		t.Errorf("an unshrinkable plan: %d %s", rec.Code, rec.Body)
	}
	big := `{"plan":{"perturbations":[` + strings.Repeat(`{"at":"job#1","outcome":"slow"},`, explore.MaxPlan) + `{"at":"job#2","outcome":"slow"}]}}`
	for body, pointer := range map[string]string{`{}`: "/plan", big: "/plan/perturbations", `{"plan":{"perturbations":[{"at":1}]}}`: "/plan/perturbations/0/at"} {
		rec := control(t, s, "POST", "/_emulator/explore/shrink", body)
		p := decode[api.Problem](t, rec)
		if rec.Code != 422 || len(p.Errors) == 0 || p.Errors[0].Pointer != pointer {
			t.Errorf("%s: %d %s", fmt.Sprintf("%.60s", body), rec.Code, rec.Body)
		}
	}
}

// TestExplorePlansApply: every plan Draw draws, and every candidate it shrinks to, is a plan
// PUT /_emulator/plan takes, so an explore run never stops at a plan of its own making.
func TestExplorePlansApply(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	routes := map[string]int{"POST /v1/quotes": 2, "POST /v1/generate": 2, "GET /v1/jobs/{id}": 5, "GET /files/**": 2, "GET /v1/models": 1, "GET /v1/models/{model}": 2, "POST /v1/jobs/{id}/cancel": 1}
	seen := map[string]bool{}
	for run := range 150 {
		for _, terminal := range []bool{false, true} {
			plan := explore.Draw(api.DrawRequest{Seed: 9, Run: run, Terminal: terminal, Routes: routes}).Plan
			for _, p := range append([]api.Plan{plan}, explore.Candidates(plan)...) {
				if key := explore.Log(p); !seen[key] {
					seen[key] = true
					if rec := call(t, s, "PUT", "/_emulator/plan", "", p, "X-Emulator-Tenant", "plans"); rec.Code != 200 {
						t.Fatalf("%s: %d %s", key, rec.Code, rec.Body)
					}
				}
			}
		}
	}
}
