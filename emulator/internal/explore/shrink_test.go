package explore

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// TestCandidatesSmaller: every candidate of every drawn plan is smaller by size, never empty,
// and shrinking greedily ends.
func TestCandidatesSmaller(t *testing.T) {
	t.Parallel()
	routes := map[string]int{"POST /v1/quotes": 3, "POST /v1/generate": 4, "GET /v1/jobs/{id}": 9, "GET /files/**": 3}
	for run := range 300 {
		plan := Draw(api.DrawRequest{Seed: 5, Run: run, Terminal: run%2 == 0, Routes: routes}).Plan
		for steps := 0; ; steps++ {
			cs := Candidates(plan)
			for _, c := range cs {
				if len(c.Perturbations) == 0 || size(c) >= size(plan) {
					t.Fatalf("run %d: %q (size %d) shrinks to %q (size %d)", run, Log(plan), size(plan), Log(c), size(c))
				}
			}
			if len(cs) == 0 {
				break
			}
			if steps > 100 {
				t.Fatalf("run %d: shrinking does not end", run)
			}
			plan = cs[len(cs)-1] // the least promising step is the smallest change
		}
	}
}

// TestCandidatesOrder: dropping a perturbation comes first, then earlier ordinals, then
// milder kinds.
func TestCandidatesOrder(t *testing.T) {
	t.Parallel()
	plan := api.Plan{Perturbations: []api.Perturbation{
		{At: "POST /v1/generate#3", Action: api.FaultReset, After: true},
		{At: "GET /v1/jobs/{id}#2", Action: api.FaultError, Status: 429, Code: "rate_limited", RetryAfter: 2, RetryAfterFormat: api.RetryAfterDate},
		{Set: &api.Knobs{Evolution: &api.Evolution{Members: true, Status: true}}},
	}}
	var got []string
	for _, c := range Candidates(plan) {
		got = append(got, Log(c))
	}
	want := []string{
		"GET /v1/jobs/{id}#2 error 429 rate_limited retry_after=2s(date); set evolution=members,status",
		"POST /v1/generate#3 reset after; set evolution=members,status",
		"POST /v1/generate#3 reset after; GET /v1/jobs/{id}#2 error 429 rate_limited retry_after=2s(date)",
		"POST /v1/generate#1 reset after; GET /v1/jobs/{id}#2 error 429 rate_limited retry_after=2s(date); set evolution=members,status",
		"POST /v1/generate#2 reset after; GET /v1/jobs/{id}#2 error 429 rate_limited retry_after=2s(date); set evolution=members,status",
		"POST /v1/generate#3 reset after; GET /v1/jobs/{id}#1 error 429 rate_limited retry_after=2s(date); set evolution=members,status",
		"POST /v1/generate#3 reset; GET /v1/jobs/{id}#2 error 429 rate_limited retry_after=2s(date); set evolution=members,status",
		"POST /v1/generate#3 reset after; GET /v1/jobs/{id}#2 error 503 service_unavailable retry_after=2s(date); set evolution=members,status",
		"POST /v1/generate#3 reset after; GET /v1/jobs/{id}#2 error 429 rate_limited retry_after=2s(date); set evolution=status",
		"POST /v1/generate#3 reset after; GET /v1/jobs/{id}#2 error 429 rate_limited retry_after=2s(date); set evolution=members",
	}
	if !slices.Equal(got, want) {
		t.Errorf("candidates\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(plan.Perturbations[0].At) != len("POST /v1/generate#3") || !plan.Perturbations[0].After {
		t.Error("Candidates changed the plan it was given")
	}
}

// TestMilderChains: each kind's way down to the mildest.
func TestMilderChains(t *testing.T) {
	t.Parallel()
	chain := func(p api.Perturbation) []string {
		out := []string{Describe(p)}
		for {
			m := milder(p)
			if len(m) == 0 {
				return out
			}
			p = m[0]
			out = append(out, Describe(p))
		}
	}
	for _, tc := range []struct {
		p    api.Perturbation
		want []string
	}{
		{api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultGateway, Status: 502, After: true}, []string{
			"POST /v1/generate#1 gateway 502 after", "POST /v1/generate#1 gateway 502",
			"POST /v1/generate#1 error 503 service_unavailable retry_after=1s", "POST /v1/generate#1 error 500 internal_error"}},
		{api.Perturbation{At: "POST /v1/quotes#1", Action: api.FaultError, Status: 503, Code: "service_unavailable", RetryAfter: 2, RetryAfterFormat: api.RetryAfterDate}, []string{
			"POST /v1/quotes#1 error 503 service_unavailable retry_after=2s(date)", "POST /v1/quotes#1 error 503 service_unavailable retry_after=2s",
			"POST /v1/quotes#1 error 503 service_unavailable retry_after=1s", "POST /v1/quotes#1 error 500 internal_error"}},
		{api.Perturbation{At: "GET /files/**#1", Action: api.FaultDelay, Delay: api.Duration(150 * time.Millisecond)}, []string{
			"GET /files/**#1 delay 150ms", "GET /files/**#1 delay 70ms", "GET /files/**#1 delay 30ms", "GET /files/**#1 delay 10ms"}},
		{api.Perturbation{At: "GET /files/**#1", Advance: api.Duration(5 * time.Minute), Set: &api.Knobs{URLTTL: api.Duration(time.Minute)}}, []string{
			"GET /files/**#1 advance 5m set url_ttl=1m", "GET /files/**#1 advance 2m30s set url_ttl=1m",
			"GET /files/**#1 advance 1m15s set url_ttl=1m", "GET /files/**#1 advance 1m15s"}},
		{api.Perturbation{At: "job#1", Outcome: "fail", Code: "provider_timeout"}, []string{"job#1 outcome fail provider_timeout", "job#1 outcome fail generation_failed"}},
		{api.Perturbation{Set: &api.Knobs{Concurrency: 1}}, []string{"set concurrency=1"}},
	} {
		if got := chain(tc.p); !slices.Equal(got, tc.want) {
			t.Errorf("chain\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

// TestDescribe writes the shapes a plan may hold that Draw does not draw.
func TestDescribe(t *testing.T) {
	t.Parallel()
	half := 0.5
	for _, tc := range []struct {
		p    api.Perturbation
		want string
	}{
		{api.Perturbation{Match: api.FaultMatch{Method: "POST", Path: "/v1/generate", Model: "acme/*"}, Status: 500, Count: 2}, "match POST /v1/generate model=acme/* count=2 error 500"},
		{api.Perturbation{Match: api.FaultMatch{Path: "/files/**"}, Download: &api.Download{BytesPerSecond: 1000, Pause: api.Duration(time.Second)}, Probability: &half}, "match /files/** probability=0.5 download bytes_per_second=1000 pause=1s"},
		{api.Perturbation{At: "POST /v1/generate#1", Action: api.FaultTruncated, Delay: api.Duration(time.Second), After: true}, "POST /v1/generate#1 truncated delay=1s after"},
		{api.Perturbation{Set: &api.Knobs{QuoteTTL: api.Duration(time.Hour), Latency: api.Duration(20 * time.Millisecond)}}, "set quote_ttl=1h latency=20ms"},
		{api.Perturbation{}, "nothing"},
	} {
		if got := Describe(tc.p); got != tc.want {
			t.Errorf("Describe = %q, want %q", got, tc.want)
		}
	}
	if got := Log(api.Plan{}); got != "no perturbations" {
		t.Errorf("Log of the empty plan = %q", got)
	}
}
