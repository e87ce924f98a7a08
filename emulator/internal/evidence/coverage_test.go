package evidence

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mediagen/mediagen-emulator/docs"
	"github.com/mediagen/mediagen-emulator/emulator/api"
)

func TestTheListIsTheContracts(t *testing.T) {
	ids := map[string]bool{}
	groups := map[string]int{}
	for _, c := range Cases() {
		if ids[c.ID] {
			t.Errorf("%s listed twice", c.ID)
		}
		ids[c.ID] = true
		groups[c.Group]++
	}
	for _, id := range []string{"POST /v1/generate 402 insufficient_credits", "GET /v1/jobs/{id} 404 job_not_found",
		"GET /v1/models/{model} 404 model_not_found", "POST /v1/quotes 422 invalid_input", "POST /v1/jobs/{id}/cancel 409 job_not_cancelable",
		"job failed provider_error", "job expired queue_timeout", "job canceled", "idempotent replay", "wait timed out",
		"ranged download", "expired download", "fault reset", "generation refused", "partial result", "model deprecated", "model retired", "link expired", "link refreshed",
		"queued behind a concurrency limit", "POST /v1/generate 429 concurrency_limited",
		"evolution member", "evolution header", "evolution status", "evolution output_type"} {
		if !ids[id] {
			t.Errorf("%q is not listed", id)
		}
	}
	if groups[GroupJobs] != 8 || groups[GroupFlows] != 15 || groups[GroupFaults] != len(FaultKinds) || groups[GroupErrors] < 50 {
		t.Errorf("groups: %v", groups)
	}
	// Every kind of fault a scenario can declare has its case.
	for _, k := range api.FaultActions {
		if _, ok := byFault[k]; !ok || !ids["fault "+k] {
			t.Errorf("fault kind %q has no case", k)
		}
	}
	if len(api.FaultActions) != 7 || groups[GroupFaults] != len(api.FaultActions) {
		t.Errorf("%d fault kinds, %d fault cases", len(api.FaultActions), groups[GroupFaults])
	}
}

// TestErrorCasesComeFromTheDocument: a code the OpenAPI document adds to an operation's error
// responses, or an operation it adds under /v1, becomes a case without touching this package;
// only the emulator's own bounds stay out, and each of those is a code the document has.
func TestErrorCasesComeFromTheDocument(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(docs.OpenAPI), &doc); err != nil {
		t.Fatal(err)
	}
	comps := doc["components"].(map[string]any)
	pc := comps["schemas"].(map[string]any)["ProblemCode"].(map[string]any)
	examples := pc["examples"].([]any)
	for k := range boundCodes {
		code := k[strings.LastIndexByte(k, ' ')+1:]
		if !slices.Contains(examples, any(code)) {
			t.Errorf("bound code %q is not a code of the document", code)
		}
	}
	pc["examples"] = append(examples, "teapot_brewing")
	paths := doc["paths"].(map[string]any)
	conflict := paths["/v1/quotes"].(map[string]any)["post"].(map[string]any)["responses"].(map[string]any)["409"].(map[string]any)
	conflict["description"] = conflict["description"].(string) + " `teapot_brewing`: the kettle is on."
	paths["/v1/kettles/{id}"] = map[string]any{"get": map[string]any{"responses": map[string]any{
		"200": map[string]any{"description": "the kettle"},
		"404": map[string]any{"description": "`kettle_not_found`, `not_a_code`"},
		"418": map[string]any{"description": "`teapot_brewing`"},
		"401": map[string]any{"$ref": "#/components/responses/Unauthenticated"}}}}
	pc["examples"] = append(pc["examples"].([]any), "kettle_not_found")
	raw, _ := json.Marshal(doc)
	got, err := endpointsOf(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, e := range got {
		for _, p := range e.problems {
			cases = append(cases, e.route+" "+p)
		}
	}
	for _, want := range []string{"POST /v1/quotes 409 teapot_brewing", "GET /v1/kettles/{id} 401 unauthenticated",
		"GET /v1/kettles/{id} 404 kettle_not_found", "GET /v1/kettles/{id} 418 teapot_brewing"} {
		if !slices.Contains(cases, want) {
			t.Errorf("%q is not a case of the edited document", want)
		}
	}
	for _, c := range cases {
		if strings.Contains(c, "not_a_code") || strings.Contains(c, "invalid_tenant") || strings.Contains(c, "too_many_quotes") {
			t.Errorf("%q is a case", c)
		}
	}
	listed := 0
	for _, c := range Cases() {
		if c.Group == GroupErrors {
			listed++
		}
	}
	if len(cases) != listed+1+3 {
		t.Errorf("%d error cases from the edited document, want the %d of the list and 4 more", len(cases), listed)
	}
}

func count(c *Counts, id string) int64 {
	for _, k := range c.Snapshot() {
		if k.ID == id {
			return k.Count
		}
	}
	return -1
}

func TestCountsAddToTheirParent(t *testing.T) {
	run := NewCounts(nil)
	a, b := NewCounts(run), NewCounts(run)
	a.Error("POST /v1/generate", 402, "insufficient_credits")
	b.Error("POST /v1/generate", 402, "insufficient_credits")
	b.JobEnded("failed", "provider_error")
	b.JobEnded("succeeded", "")
	a.JobEnded("canceled", "")
	a.Hit(Replay)
	a.Fault("reset")
	for _, c := range []struct {
		counts *Counts
		id     string
		want   int64
	}{
		{a, "POST /v1/generate 402 insufficient_credits", 1},
		{run, "POST /v1/generate 402 insufficient_credits", 2},
		{b, "job failed provider_error", 1},
		{a, "job failed provider_error", 0},
		{run, "job succeeded", 1},
		{run, "job canceled", 1},
		{run, "idempotent replay", 1},
		{a, "fault reset", 1},
	} {
		if got := count(c.counts, c.id); got != c.want {
			t.Errorf("%q = %d, want %d", c.id, got, c.want)
		}
	}
}

func TestCasesBeyondTheListAreAddedAndBounded(t *testing.T) {
	run := NewCounts(nil)
	c := NewCounts(run)
	c.JobEnded("failed", "made_up")
	c.JobEnded("failed", "made_up")
	c.Error("", 404, "not_found")
	c.Error("POST /v1/quotes", 429, "too_many_quotes")
	snap := c.Snapshot()
	tail := snap[len(Cases()):]
	got := fmt.Sprint(tail)
	if len(tail) != 3 || tail[0].ID != "job failed made_up" || tail[0].Count != 2 || tail[0].Group != GroupJobs ||
		tail[1].ID != "* 404 not_found" || tail[2].ID != "POST /v1/quotes 429 too_many_quotes" || tail[2].Group != GroupErrors {
		t.Errorf("extra cases: %s", got)
	}
	for i := range 2 * MaxExtra {
		c.JobEnded("failed", fmt.Sprint("code_", i))
	}
	if n := len(c.Snapshot()) - len(Cases()); n != MaxExtra {
		t.Errorf("%d extra cases kept, want the bound %d", n, MaxExtra)
	}
	if n := len(run.Snapshot()) - len(Cases()); n != MaxExtra {
		t.Errorf("the run kept %d extra cases, want the bound %d", n, MaxExtra)
	}
}

func TestCountingIsSafeInParallel(t *testing.T) {
	run := NewCounts(nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := NewCounts(run)
			for range 1000 {
				c.Hit(WaitTimedOut)
				c.JobEnded("failed", "odd")
			}
		})
	}
	wg.Wait()
	if got := count(run, "wait timed out"); got != 8000 {
		t.Errorf("wait timed out = %d", got)
	}
	if got := count(run, "job failed odd"); got != 8000 {
		t.Errorf("job failed odd = %d", got)
	}
}

func TestReportAndMarkdown(t *testing.T) {
	c := NewCounts(nil)
	c.JobEnded("succeeded", "")
	c.Error("GET /v1/jobs/{id}", 404, "job_not_found")
	r := CoverageReport("tenant", "t1", c, []Glob{NewGlob("job *"), NewGlob("**cancel**"), NewGlob("GET /v1/jobs/{id} 404 *")})
	if r.Exercised != 2 || r.Total != len(Cases()) || r.Tenant != "t1" {
		t.Errorf("report: %d of %d", r.Exercised, r.Total)
	}
	if slices.Contains(r.RequiredMissing, "job succeeded") || !slices.Contains(r.RequiredMissing, "job canceled") ||
		!slices.Contains(r.RequiredMissing, "POST /v1/jobs/{id}/cancel 409 job_not_cancelable") ||
		slices.Contains(r.RequiredMissing, "GET /v1/jobs/{id} 404 job_not_found") || slices.Contains(r.RequiredMissing, "idempotent replay") {
		t.Errorf("required_missing: %v", r.RequiredMissing)
	}
	if none := CoverageReport("run", "", c, nil); none.RequiredMissing == nil || len(none.RequiredMissing) != 0 {
		t.Errorf("no require: %v", none.RequiredMissing)
	}
	md := CoverageMarkdown(r)
	for _, want := range []string{"## Emulator coverage (tenant t1): 2 of ", "- `job canceled`\n", "| `job succeeded` | jobs | 1 |\n", "|---|---|---:|\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if md := CoverageMarkdown(CoverageReport("run", "", c, nil)); !strings.HasPrefix(md, "## Emulator coverage (the whole run)") || strings.Contains(md, "Required") {
		t.Errorf("run markdown:\n%s", md)
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		glob, id string
		want     bool
	}{
		{"job *", "job failed provider_error", true},
		{"job *", "jobs", false},
		{"*", "anything at all", true},
		{"GET /v1/*", "GET /v1/jobs/{id} 404 job_not_found", false},
		{"GET /v1/**", "GET /v1/jobs/{id} 404 job_not_found", true},
		{"POST /v1/generate 4*", "POST /v1/generate 402 insufficient_credits", true},
		{"POST /v1/generate 4*", "POST /v1/generate 503 service_unavailable", false},
		{"GET /v1/jobs/{id} 404 job_not_found", "GET /v1/jobs/{id} 404 job_not_found", true},
		{"a.c", "abc", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYcZ", false},
		{"*c", "cc", true},
		{"**", "", true},
		{"", "x", false},
		{strings.Repeat("*a", 500), strings.Repeat("a", 400), false},
	} {
		if got := NewGlob(c.glob).Match(c.id); got != c.want {
			t.Errorf("%q matches %q: %v", c.glob, c.id, got)
		}
	}
}
