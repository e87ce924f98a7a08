package evidence

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
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
		"ranged download", "expired download", "fault reset"} {
		if !ids[id] {
			t.Errorf("%q is not listed", id)
		}
	}
	if groups[GroupJobs] != 8 || groups[GroupFlows] != 4 || groups[GroupFaults] != len(FaultKinds) || groups[GroupErrors] < 50 {
		t.Errorf("groups: %v", groups)
	}
	// Every kind of fault a scenario can declare has its case.
	for _, k := range []string{scenario.ActionError, scenario.ActionReset, scenario.ActionMalformed, scenario.ActionTruncated, scenario.ActionDelay} {
		if !slices.Contains(FaultKinds, k) {
			t.Errorf("fault kind %q has no case", k)
		}
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
	r := CoverageReport("tenant", "t1", c, []Glob{NewGlob("job *"), NewGlob("*cancel*"), NewGlob("GET /v1/jobs/{id} 404 *")})
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
