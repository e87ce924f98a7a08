package emulator

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// putPlan applies an adversity plan to a tenant and answers what is in force.
func putPlan(t testing.TB, s *Server, tenant string, ps ...map[string]any) api.PlanInForce {
	t.Helper()
	rec := tenantCall(t, s, tenant, "PUT", "/_emulator/plan", "", map[string]any{"perturbations": ps})
	if rec.Code != 200 {
		t.Fatalf("put plan %v: %d %s", ps, rec.Code, rec.Body)
	}
	return decode[api.PlanInForce](t, rec)
}

// entriesOf is a tenant's journal.
func entriesOf(t testing.TB, s *Server, tenant string) []api.JournalEntry {
	t.Helper()
	return decode[journalPage](t, tenantCall(t, s, tenant, "GET", "/_emulator/requests", "", nil)).Data
}

// clockServers are emulators on each of the three clocks.
func clockServers(t *testing.T) map[string]*Server {
	t.Helper()
	out := map[string]*Server{}
	for name, cfg := range map[string]Config{"real": {}, "manual": {ManualClock: true}, "skip": {SkipClock: true}} {
		cfg.Seeded, cfg.Seed = true, 3
		s, err := NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		<-s.Ready()
		out[name] = s
	}
	return out
}

// TestPlanStrikesAnOrdinal: a perturbation at POST /v1/generate#2 answers the tenant's second
// generation only, and its journal entry names the perturbation; the others are untouched, and
// the plan in force counts what it has seen and fired. The same on every clock.
func TestPlanStrikesAnOrdinal(t *testing.T) {
	t.Parallel()
	for clock, s := range clockServers(t) {
		in := putPlan(t, s, "p", map[string]any{"at": "POST /v1/generate#2", "status": 503, "retry_after": 2})
		id := in.Perturbations[0].ID
		var codes []int
		for i := range 3 {
			q := quote(t, s, "mg_test_all.p", schnellID, schnell)
			rec := generate(t, s, "mg_test_all.p", "k"+string(rune('a'+i)), quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, "")
			codes = append(codes, rec.Code)
		}
		if codes[0] != 202 || codes[1] != 503 || codes[2] != 202 {
			t.Errorf("%s: generations answered %v, want 202 503 202", clock, codes)
		}
		var struck []string
		for _, e := range entriesOf(t, s, "p") {
			if e.Fault != "" {
				struck = append(struck, e.Method+" "+e.Path+" "+e.Fault)
			}
		}
		if len(struck) != 1 || struck[0] != "POST /v1/generate "+id {
			t.Errorf("%s: struck entries %v, want the second generation naming %s", clock, struck, id)
		}
		got := decode[api.PlanInForce](t, tenantCall(t, s, "p", "GET", "/_emulator/plan", "", nil)).Perturbations
		if len(got) != 1 || got[0].Seen != 2 || got[0].Fired != 1 || got[0].Remaining != 0 || got[0].At != "POST /v1/generate#2" {
			t.Errorf("%s: plan in force %+v", clock, got)
		}
	}
}

// TestPlanLosesAnAnswerAfterTheServiceActed: reset after:true on the first generation drops the
// connection once the job is made and its credits held; the same key then replays that job,
// while a new key makes a second one. The journal keeps the job the lost answer made.
func TestPlanLosesAnAnswerAfterTheServiceActed(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	putPlan(t, s, "p", map[string]any{"at": "POST /v1/generate#1", "action": "reset", "after": true})
	q := quote(t, s, "mg_test_all.p", schnellID, schnell)
	body, _ := json.Marshal(map[string]any{"model": schnellID, "input": schnell, "quote_id": q.QuoteID})
	post := func(key, query string) (*http.Response, error) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/generate"+query, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer mg_test_all.p")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		return client.Do(req)
	}
	if resp, err := post("k1", "?wait=true"); err == nil {
		resp.Body.Close()
		t.Fatalf("the lost answer reached the client: %d", resp.StatusCode)
	}
	jobs := decode[api.List[api.ControlJob]](t, tenantCall(t, s, "p", "GET", "/_emulator/jobs", "", nil)).Data
	if len(jobs) != 1 {
		t.Fatalf("jobs after the lost answer: %d, want the 1 the service made", len(jobs))
	}
	e := entriesOf(t, s, "p")
	if last := e[len(e)-1]; last.JobID != jobs[0].ID || last.Fault == "" || last.FaultKind != "reset" || last.JobStatus != "" {
		t.Errorf("the lost answer's entry: job %q fault %q kind %q status %q", last.JobID, last.Fault, last.FaultKind, last.JobStatus)
	}
	resp, err := post("k1", "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry with the same key: %d replayed %q", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	if resp, err := post("k2", ""); err != nil || resp.StatusCode != 409 {
		// The quote bought the first job: a new key cannot buy it again.
		t.Errorf("a new key on the same quote: %v %v", resp, err)
	}
}

// TestPlanAdvanceExpiresAQuote: advance moves the tenant's clock while the generation is in
// flight, so its quote has expired when the service acts — on the real clock as an offset, on
// the manual and skip clocks as a move.
func TestPlanAdvanceExpiresAQuote(t *testing.T) {
	t.Parallel()
	for clock, s := range clockServers(t) {
		putPlan(t, s, "p", map[string]any{"at": "POST /v1/generate#1", "advance": "11m"})
		before := decode[api.Clock](t, tenantCall(t, s, "p", "GET", "/_emulator/clock", "", nil)).Now
		q := quote(t, s, "mg_test_all.p", schnellID, schnell)
		rec := generate(t, s, "mg_test_all.p", "k1", quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, "")
		if p := decode[problemJSON](t, rec); rec.Code != 422 || p.Code != "quote_expired" {
			t.Errorf("%s: generation after the advance: %d %s", clock, rec.Code, rec.Body)
		}
		after := decode[api.Clock](t, tenantCall(t, s, "p", "GET", "/_emulator/clock", "", nil)).Now
		b, _ := time.Parse(time.RFC3339Nano, before)
		a, _ := time.Parse(time.RFC3339Nano, after)
		if a.Sub(b) < 11*time.Minute {
			t.Errorf("%s: the clock moved %s, want at least 11m", clock, a.Sub(b))
		}
		q = quote(t, s, "mg_test_all.p", schnellID, schnell)
		if rec := generate(t, s, "mg_test_all.p", "k2", quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, ""); rec.Code != 202 {
			t.Errorf("%s: a fresh quote afterwards: %d %s", clock, rec.Code, rec.Body)
		}
	}
}

// TestPlanForcesOutcomes: an outcome at job#2 fails the second job with its code, and the job's
// plan and the generation's journal entry name the perturbation; a refuse at the first
// generation answers 422 content_policy_violation and makes nothing.
func TestPlanForcesOutcomes(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	in := putPlan(t, s, "p",
		map[string]any{"at": "job#2", "outcome": "fail", "code": "provider_timeout"},
		map[string]any{"at": "POST /v1/generate#3", "outcome": "refuse"})
	jobID, refuseID := in.Perturbations[0].ID, in.Perturbations[1].ID
	var ids []string
	for i := range 2 {
		q := quote(t, s, "mg_test_all.p", schnellID, schnell)
		rec := generate(t, s, "mg_test_all.p", "k"+string(rune('a'+i)), quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, "")
		if rec.Code != 202 {
			t.Fatalf("generation %d: %d %s", i+1, rec.Code, rec.Body)
		}
		ids = append(ids, decode[api.Job](t, rec).ID)
	}
	tenantCall(t, s, "p", "POST", "/_emulator/clock", "", map[string]any{"advance": "1h"})
	for i, want := range []string{"", "provider_timeout"} {
		cj := decode[api.ControlJob](t, tenantCall(t, s, "p", "GET", "/_emulator/jobs/"+ids[i], "", nil))
		code := ""
		if cj.Error != nil {
			code = cj.Error.Code
		}
		if code != want {
			t.Errorf("job %d: error %q, want %q", i+1, code, want)
		}
		if want != "" && (cj.Plan == nil || cj.Plan.Perturbation != jobID || cj.Plan.DecidedBy != "directive") {
			t.Errorf("job %d's plan: %+v", i+1, cj.Plan)
		}
	}
	q := quote(t, s, "mg_test_all.p", schnellID, schnell)
	rec := generate(t, s, "mg_test_all.p", "kc", quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, "")
	if p := decode[problemJSON](t, rec); rec.Code != 422 || p.Code != "content_policy_violation" {
		t.Errorf("the refused generation: %d %s", rec.Code, rec.Body)
	}
	var named []string
	for _, e := range entriesOf(t, s, "p") {
		if e.Path == "/v1/generate" {
			named = append(named, e.Fault)
		}
	}
	if strings.Join(named, ",") != ","+jobID+","+refuseID {
		t.Errorf("the generations name %q, want %q", named, ","+jobID+","+refuseID)
	}
}

// TestPlanKnobs: knobs tune the tenant's scenario while they are in force — a short quote life,
// one job at a time — and the scenario's own values come back when the plan is removed.
func TestPlanKnobs(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	putPlan(t, s, "p", map[string]any{"set": map[string]any{"quote_ttl": "30s", "concurrency": 1}})
	q := quote(t, s, "mg_test_all.p", schnellID, schnell)
	if q.ExpiresAt != "2026-01-01T00:00:30Z" {
		t.Errorf("a quote under quote_ttl 30s expires at %s", q.ExpiresAt)
	}
	generate(t, s, "mg_test_all.p", "k1", quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, "")
	q = quote(t, s, "mg_test_all.p", schnellID, schnell)
	second := decode[map[string]any](t, generate(t, s, "mg_test_all.p", "k2", quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, ""))
	if second["queue_position"] != 1.0 {
		t.Errorf("the second job under concurrency 1: queue_position %v", second["queue_position"])
	}
	if rec := tenantCall(t, s, "p", "DELETE", "/_emulator/plan", "", nil); rec.Code != 204 {
		t.Fatalf("delete plan: %d", rec.Code)
	}
	if q := quote(t, s, "mg_test_all.p", schnellID, schnell); q.ExpiresAt != "2026-01-01T00:10:00Z" {
		t.Errorf("without the knob a quote expires at %s, want the default ten minutes", q.ExpiresAt)
	}
}

// TestPlanRefusesBadPerturbations: each problem answers 422 with a pointer into the plan, and
// nothing changes.
func TestPlanRefusesBadPerturbations(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	putPlan(t, s, "p", map[string]any{"at": "GET /v1/models#1", "status": 500})
	for _, c := range []struct {
		p   map[string]any
		ptr string
	}{
		{map[string]any{"at": "POST /v1/generate", "status": 503}, "/perturbations/1/at"},
		{map[string]any{"at": "job#0", "outcome": "fail"}, "/perturbations/1/at"},
		{map[string]any{"at": "job#1", "status": 503}, "/perturbations/1/at"},
		{map[string]any{"at": "GET /v1/jobs/{id}#1", "outcome": "fail"}, "/perturbations/1/at"},
		{map[string]any{"set": map[string]any{"url_ttl": "1ms"}}, "/perturbations/1/set/url_ttl"},
		{map[string]any{"set": map[string]any{"concurrency": 1}, "status": 503}, "/perturbations/1/set"},
		{map[string]any{"outcome": "explode"}, "/perturbations/1/outcome"},
		{map[string]any{"outcome": "fail", "code": "oops"}, "/perturbations/1/code"},
		{map[string]any{"action": "delay", "delay": "1s", "after": true}, "/perturbations/1/after"},
		{map[string]any{"advance": "48h"}, "/perturbations/1/advance"},
	} {
		rec := tenantCall(t, s, "p", "PUT", "/_emulator/plan", "", map[string]any{"perturbations": []any{map[string]any{"status": 502}, c.p}})
		p := decode[problemJSON](t, rec)
		if rec.Code != 422 || p.Code != "invalid_request" || len(p.Errors) != 1 || p.Errors[0].Pointer != c.ptr {
			t.Errorf("%v: %d %s, want 422 at %s", c.p, rec.Code, rec.Body, c.ptr)
		}
	}
	if got := decode[api.PlanInForce](t, tenantCall(t, s, "p", "GET", "/_emulator/plan", "", nil)).Perturbations; len(got) != 1 || got[0].At != "GET /v1/models#1" {
		t.Errorf("a refused plan changed the plan in force: %+v", got)
	}
}

// TestPlanGoesThroughASnapshot: a perturbation's ordinal counts on in the restored tenant, so
// the struck request is the same one.
func TestPlanGoesThroughASnapshot(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{Seeded: true, Seed: 5})
	putPlan(t, s, "a", map[string]any{"at": "POST /v1/quotes#2", "status": 500}, map[string]any{"set": map[string]any{"quote_ttl": "45s", "latency": "1ms"}})
	q := quote(t, s, "mg_test_all.a", schnellID, schnell)
	doc := snapshotOf(t, s, "a", "")
	if rec := restore(t, s, "b", doc); rec.Code != 200 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	for _, tenant := range []string{"a", "b"} {
		rec := call(t, s, "POST", "/v1/quotes", "mg_test_all."+tenant, map[string]any{"model": schnellID, "input": schnell})
		if rec.Code != 500 {
			t.Errorf("%s: the second quote answered %d, want the plan's 500", tenant, rec.Code)
		}
		if q2 := quote(t, s, "mg_test_all."+tenant, schnellID, schnell); q2.ExpiresAt != q.ExpiresAt {
			t.Errorf("%s: a quote expires at %s, want the knob's %s", tenant, q2.ExpiresAt, q.ExpiresAt)
		}
	}
}

// TestPlanOrdinalsCountFromTheirPlan: job#1 strikes the first job made after the plan was put
// in force, not the tenant's first; and an outcome is not spent on a generation a fault answers
// before the service sees it.
func TestPlanOrdinalsCountFromTheirPlan(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	gen := func(key string) *httptest.ResponseRecorder {
		q := quote(t, s, "mg_test_all.p", schnellID, schnell)
		return generate(t, s, "mg_test_all.p", key, quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, "")
	}
	if rec := gen("before"); rec.Code != 202 {
		t.Fatalf("a job before the plan: %d", rec.Code)
	}
	putPlan(t, s, "p",
		map[string]any{"at": "POST /v1/generate#1", "status": 503},
		map[string]any{"match": map[string]any{"path": "/v1/generate"}, "outcome": "fail", "count": 1},
		map[string]any{"at": "job#2", "outcome": "expire"})
	if rec := gen("k1"); rec.Code != 503 {
		t.Fatalf("the struck generation: %d", rec.Code)
	}
	first := decode[api.Job](t, gen("k2")) // the outcome's one count, kept for a job
	second := decode[api.Job](t, gen("k3"))
	tenantCall(t, s, "p", "POST", "/_emulator/clock", "", map[string]any{"advance": "2h"})
	for _, c := range []struct {
		id, want string
	}{{first.ID, "failed"}, {second.ID, "expired"}} {
		if got := decode[api.ControlJob](t, tenantCall(t, s, "p", "GET", "/_emulator/jobs/"+c.id, "", nil)); string(got.Status) != c.want {
			t.Errorf("job %s is %s, want %s", c.id, got.Status, c.want)
		}
	}
}

// TestPlanOnEveryClock: an answer lost after the service acted, an outcome at job#N and a knob
// behave alike on the real, manual and skip clocks, and the plan's counts go through a
// snapshot into another tenant.
func TestPlanOnEveryClock(t *testing.T) {
	t.Parallel()
	for clock, s := range clockServers(t) {
		putPlan(t, s, "c",
			map[string]any{"at": "POST /v1/generate#1", "status": 503, "after": true},
			map[string]any{"at": "job#2", "outcome": "fail", "code": "provider_timeout"},
			map[string]any{"set": map[string]any{"quote_ttl": "30s"}})
		q := quote(t, s, "mg_test_all.c", schnellID, schnell)
		if rec := generate(t, s, "mg_test_all.c", "k1", quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, ""); rec.Code != 503 {
			t.Fatalf("%s: the lost answer: %d", clock, rec.Code)
		}
		replay := generate(t, s, "mg_test_all.c", "k1", quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, "")
		if replay.Code != 202 || replay.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("%s: the same key after the lost answer: %d %q", clock, replay.Code, replay.Header().Get("Idempotent-Replayed"))
		}
		if restore(t, s, "d", snapshotOf(t, s, "c", "")).Code != 200 {
			t.Fatalf("%s: restore", clock)
		}
		for _, tenant := range []string{"c", "d"} {
			q := quote(t, s, "mg_test_all."+tenant, schnellID, schnell)
			qt, _ := time.Parse(time.RFC3339Nano, q.ExpiresAt)
			now, _ := time.Parse(time.RFC3339Nano, decode[api.Clock](t, tenantCall(t, s, tenant, "GET", "/_emulator/clock", "", nil)).Now)
			if d := qt.Sub(now); d > 31*time.Second {
				t.Errorf("%s/%s: a quote lives %s under quote_ttl 30s", clock, tenant, d)
			}
			second := decode[api.Job](t, generate(t, s, "mg_test_all."+tenant, "k2", quoteBody{QuoteID: q.QuoteID, Model: schnellID}, schnell, ""))
			cj := decode[api.ControlJob](t, tenantCall(t, s, tenant, "GET", "/_emulator/jobs/"+second.ID, "", nil))
			if cj.Plan == nil || cj.Plan.Ending.Code != "provider_timeout" || cj.Plan.Perturbation == "" {
				t.Errorf("%s/%s: job#2's plan %+v", clock, tenant, cj.Plan)
			}
		}
	}
}
