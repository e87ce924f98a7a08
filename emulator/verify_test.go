package emulator

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// coverageOf reads GET /_emulator/coverage as a map of case id to count.
func coverageOf(t testing.TB, h http.Handler, query string, headers ...string) (api.Coverage, map[string]int64) {
	t.Helper()
	rec := call(t, h, "GET", "/_emulator/coverage"+query, "", nil, headers...)
	if rec.Code != 200 {
		t.Fatalf("coverage%s: %d %s", query, rec.Code, rec.Body)
	}
	c := decode[api.Coverage](t, rec)
	counts := map[string]int64{}
	for _, k := range c.Cases {
		counts[k.ID] = k.Count
	}
	return c, counts
}

func TestJournalKeepsRequestHeaders(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	q := quote(t, s, "mg_test_all", schnellID, schnell)
	generate(t, s, "mg_test_all", "k1", q, schnell, "")
	rec := call(t, s, "GET", "/_emulator/requests?path=/v1/generate", "", nil)
	entries := decode[api.Page[api.JournalEntry]](t, rec).Data
	if len(entries) != 1 {
		t.Fatalf("journal: %s", rec.Body)
	}
	h := entries[0].RequestHeaders
	if h["Authorization"] != "[redacted]" || h["Idempotency-Key"] != "k1" || h["Content-Type"] != "application/json" {
		t.Errorf("request_headers = %v", h)
	}
	if strings.Contains(rec.Body.String(), "mg_test_all") {
		t.Errorf("the journal shows the key: %s", rec.Body)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	q := quote(t, s, "mg_test_all", schnellID, schnell)
	if rec := generate(t, s, "mg_test_all", "k1", q, schnell, ""); rec.Code != 202 {
		t.Fatalf("generate: %d %s", rec.Code, rec.Body)
	}
	call(t, s, "GET", "/v1/models/"+schnellID, "mg_test_all", nil)
	call(t, s, "GET", "/v1/models/nobody/none", "mg_test_all", nil)

	cases := []struct {
		name    string
		pattern any
		count   int
	}{
		{"empty matches all", nil, 4},
		{"method any case", map[string]any{"method": "post"}, 2},
		{"one star stops at a slash", map[string]any{"path": "/v1/models/*"}, 0},
		{"two stars cross slashes", map[string]any{"path": "/v1/models/**"}, 2},
		{"status and code", map[string]any{"status": 404, "code": "model_not_found"}, 1},
		{"header", map[string]any{"headers": map[string]any{"idempotency-key": "k1"}}, 1},
		{"body subset", map[string]any{"body": map[string]any{"model": schnellID, "input": map[string]any{"prompt": schnell["prompt"]}}}, 2},
		{"body number spelling", map[string]any{"path": "/v1/quotes", "body": map[string]any{"input": schnell}}, 1},
		{"pointer", map[string]any{"pointers": map[string]any{"/input/prompt": schnell["prompt"], "/quote_id": q.QuoteID}}, 1},
	}
	for _, c := range cases {
		rec := call(t, s, "POST", "/_emulator/verify", "", c.pattern)
		if rec.Code != 200 {
			t.Errorf("%s: %d %s", c.name, rec.Code, rec.Body)
			continue
		}
		v := decode[api.Verification](t, rec)
		if v.Count != c.count || len(v.Matches) != c.count {
			t.Errorf("%s: %+v, want count %d", c.name, v, c.count)
		}
		if c.count > 0 && v.NearMisses != nil {
			t.Errorf("%s: near misses beside matches: %s", c.name, rec.Body)
		}
	}

	// No match: the near misses say what each entry missed, the closest first.
	rec := call(t, s, "POST", "/_emulator/verify", "", map[string]any{
		"method": "POST", "path": "/v1/generate", "status": 402,
		"headers":  map[string]any{"Idempotency-Key": "k2"},
		"body":     map[string]any{"model": "other"},
		"pointers": map[string]any{"/input/prompt": "a dog"},
	})
	v := decode[api.Verification](t, rec)
	if v.Count != 0 || len(v.NearMisses) == 0 || len(v.NearMisses) > 5 {
		t.Fatalf("near misses: %s", rec.Body)
	}
	first := v.NearMisses[0]
	if first.Entry.Path != "/v1/generate" {
		t.Errorf("closest entry = %s %s, want the generation", first.Entry.Method, first.Entry.Path)
	}
	var fields []string
	for _, m := range first.Missed {
		fields = append(fields, m.Field)
	}
	want := []string{"/status", "/headers/Idempotency-Key", "/body/model", "/pointers/~1input~1prompt"}
	if !slices.Equal(fields, want) {
		t.Errorf("missed %v, want %v (%s)", fields, want, rec.Body)
	}
	if m := first.Missed[1]; m.Want != "k2" || m.Got != "k1" {
		t.Errorf("header miss = %+v", m)
	}
	for i := 1; i < len(v.NearMisses); i++ {
		if len(v.NearMisses[i].Missed) < len(v.NearMisses[i-1].Missed) {
			t.Errorf("near misses not ranked by misses: %s", rec.Body)
		}
	}
}

func TestVerifyRefusesBadPatterns(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	cases := []struct {
		body     string
		pointers []string
	}{
		{`{"verb":"GET"}`, []string{"/verb"}},
		{`{"status":42}`, []string{"/status"}},
		{`{"status":"404"}`, []string{"/status"}},
		{`{"status":404.5}`, []string{"/status"}},
		{`{"method":7,"path":"v1"}`, []string{"/method", "/path"}},
		{`{"headers":{"X-A":1,"bad name":"x"}}`, []string{"/headers/X-A", "/headers/bad name"}},
		{`{"headers":[]}`, []string{"/headers"}},
		{`{"body":[1]}`, []string{"/body"}},
		{`{"pointers":{"input":1,"/a~2":2}}`, []string{"/pointers/input", "/pointers/~1a~02"}},
		{`{"pointers":"x"}`, []string{"/pointers"}},
	}
	for _, c := range cases {
		rec := call(t, s, "POST", "/_emulator/verify", "", c.body)
		if rec.Code != 422 {
			t.Errorf("%s: %d %s", c.body, rec.Code, rec.Body)
			continue
		}
		p := decode[api.Problem](t, rec)
		var got []string
		for _, e := range p.Errors {
			got = append(got, e.Pointer)
		}
		slices.Sort(got)
		slices.Sort(c.pointers)
		if p.Code != "invalid_request" || !slices.Equal(got, c.pointers) {
			t.Errorf("%s: %s %v, want pointers %v", c.body, p.Code, got, c.pointers)
		}
	}
	if rec := call(t, s, "POST", "/_emulator/verify", "", `[1]`); rec.Code != 400 {
		t.Errorf("not an object: %d %s", rec.Code, rec.Body)
	}
}

func TestExpectedAndUnexpectedErrors(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	control(t, s, "PUT", "/_emulator/accounts/acct_poor", map[string]any{"credits": 0})
	q := quote(t, s, "mg_test_poor", schnellID, schnell)
	if rec := generate(t, s, "mg_test_poor", "p1", q, schnell, ""); rec.Code != 402 {
		t.Fatalf("poor generate: %d %s", rec.Code, rec.Body)
	}
	call(t, s, "GET", "/v1/jobs/nope", "mg_test_all", nil)

	unexpected := func() api.UnexpectedErrors {
		rec := call(t, s, "GET", "/_emulator/unexpected", "", nil)
		if rec.Code != 200 {
			t.Fatalf("unexpected: %d %s", rec.Code, rec.Body)
		}
		return decode[api.UnexpectedErrors](t, rec)
	}
	if u := unexpected(); u.Total != 2 || len(u.Data) != 2 || u.Data[0].Entry.Status != 402 || u.Data[0].Detail == "" {
		t.Fatalf("before expecting: %+v", u)
	}
	// The listing pages as every paged list does.
	rec := call(t, s, "GET", "/_emulator/unexpected?limit=1&offset=1", "", nil)
	if u := decode[api.UnexpectedErrors](t, rec); rec.Code != 200 || u.Total != 2 || len(u.Data) != 1 || u.Limit != 1 || u.Offset != 1 || u.HasMore || u.Data[0].Entry.Code != "job_not_found" {
		t.Errorf("second page: %d %s", rec.Code, rec.Body)
	}
	if rec := call(t, s, "GET", "/_emulator/unexpected?limit=0", "", nil); rec.Code != 400 || decode[api.Problem](t, rec).Code != "invalid_parameter" {
		t.Errorf("limit=0: %d %s", rec.Code, rec.Body)
	}
	rec = call(t, s, "POST", "/_emulator/expected-errors", "", map[string]any{"status": 402, "code": "insufficient_credits"})
	if rec.Code != 201 || len(decode[api.ExpectedErrors](t, rec).Data) != 1 {
		t.Fatalf("expect: %d %s", rec.Code, rec.Body)
	}
	if u := unexpected(); u.Total != 1 || u.Data[0].Entry.Code != "job_not_found" {
		t.Errorf("after expecting 402: %+v", u)
	}
	for i := 1; i < 100; i++ {
		if rec := call(t, s, "POST", "/_emulator/expected-errors", "", map[string]any{"path": fmt.Sprintf("/v1/jobs/%d", i)}); rec.Code != 201 {
			t.Fatalf("expect #%d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	if rec := call(t, s, "POST", "/_emulator/expected-errors", "", map[string]any{"path": "/v1/one-too-many"}); rec.Code != 422 {
		t.Errorf("expect past the bound: %d %s", rec.Code, rec.Body)
	}
	list := decode[api.ExpectedErrors](t, call(t, s, "GET", "/_emulator/expected-errors", "", nil))
	if len(list.Data) != 100 || list.Data[0].Status != 402 {
		t.Errorf("list: %d patterns, first %+v", len(list.Data), list.Data[0])
	}
	if rec := call(t, s, "DELETE", "/_emulator/expected-errors", "", nil); rec.Code != 204 {
		t.Errorf("clear: %d", rec.Code)
	}
	if u := unexpected(); u.Total != 2 {
		t.Errorf("after clearing: %+v", u)
	}
	call(t, s, "POST", "/_emulator/expected-errors", "", map[string]any{"code": "job_not_found"})
	call(t, s, "POST", "/_emulator/reset", "", nil)
	if list := decode[api.ExpectedErrors](t, call(t, s, "GET", "/_emulator/expected-errors", "", nil)); len(list.Data) != 0 {
		t.Errorf("reset kept %d expected errors", len(list.Data))
	}
}

// TestCoverageCountsSurviveWrapAndDrops drives many cases through a journal of three entries and
// through tenants that are dropped and reset: the counters still hold every one.
func TestCoverageCountsSurviveWrapAndDrops(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{MaxWait: 10 * time.Second}, func(c *sim.Config) { c.JournalMax = 3 })
	for range 5 {
		call(t, s, "GET", "/v1/jobs/nope", "mg_test_all", nil)
	}
	call(t, s, "GET", "/v1/models", "", nil)                       // 401
	call(t, s, "GET", "/v1/models", "mg_test_generate", nil)       // 403
	call(t, s, "DELETE", "/v1/generate", "mg_test_all", nil)       // 405
	call(t, s, "HEAD", "/v1/models/none/such", "mg_test_all", nil) // 404 as GET
	call(t, s, "GET", "/v1/nowhere", "mg_test_all", nil)           // no route
	q := quote(t, s, "mg_test_all", schnellID, schnell)
	generate(t, s, "mg_test_all", "k1", q, schnell, "")
	generate(t, s, "mg_test_all", "k1", q, schnell, "") // replay
	q2 := quote(t, s, "mg_test_all", schnellID, schnell)
	id := decode[api.Job](t, call(t, s, "POST", "/v1/generate", "mg_test_all", map[string]any{"model": schnellID, "input": schnell, "quote_id": q2.QuoteID}, "Idempotency-Key", "k2", "X-Emulator-Outcome", "fail")).ID
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "5m"})
	if job := jobOf(t, s, id); job.Status != "failed" {
		t.Fatalf("forced failure: %+v", job)
	}
	call(t, s, "POST", "/_emulator/faults", "", map[string]any{"match": map[string]any{"path": "/v1/models/categories"}, "status": 503, "count": 1})
	call(t, s, "GET", "/v1/models/categories", "mg_test_all", nil)
	call(t, s, "POST", "/_emulator/faults", "", map[string]any{"match": map[string]any{"path": "/v1/models"}, "action": "malformed", "count": 1})
	call(t, s, "GET", "/v1/models", "mg_test_all", nil)

	// Downloads: a range, then the output past its time to live.
	q3 := quote(t, s, "mg_test_all", speechID, speech)
	job := decode[api.Job](t, call(t, s, "POST", "/v1/generate", "mg_test_all", map[string]any{"model": speechID, "input": speech, "quote_id": q3.QuoteID}, "Idempotency-Key", "k3", "X-Emulator-Outcome", "succeed"))
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "5m"})
	job = jobOf2(t, s, job.ID)
	if len(job.Outputs) == 0 {
		t.Fatalf("no outputs: %+v", job)
	}
	file := strings.TrimPrefix(job.Outputs[0].URL, "http://example.com")
	if rec := call(t, s, "GET", file, "", nil, "Range", "bytes=0-9"); rec.Code != 206 {
		t.Fatalf("range: %d", rec.Code)
	}
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "2h"})
	if rec := call(t, s, "GET", file, "", nil); rec.Code != 410 {
		t.Fatalf("expired: %d", rec.Code)
	}

	// The journal's bound counts the downloads too: three more requests fill it.
	for range 3 {
		call(t, s, "GET", "/v1/models", "mg_test_all", nil)
	}

	// A tenant that is dropped counts in the run, not after.
	tenant := []string{"X-Emulator-Tenant", "gone"}
	call(t, s, "GET", "/v1/jobs/nope", "mg_test_all", nil, tenant...)
	call(t, s, "POST", "/v1/jobs/nope/cancel", "mg_test_all", nil, tenant...)
	if _, c := coverageOf(t, s, "", tenant...); c["POST /v1/jobs/{id}/cancel 404 job_not_found"] != 1 {
		t.Errorf("tenant coverage: %v", c["POST /v1/jobs/{id}/cancel 404 job_not_found"])
	}
	if rec := control(t, s, "DELETE", "/_emulator/tenants/gone", nil); rec.Code != 204 {
		t.Fatalf("drop: %d", rec.Code)
	}

	if n := len(decode[api.Page[api.JournalEntry]](t, call(t, s, "GET", "/_emulator/requests", "", nil)).Data); n != 3 {
		t.Fatalf("the journal holds %d entries, want its bound 3", n)
	}
	want := map[string]int64{
		"GET /v1/jobs/{id} 404 job_not_found":               5,
		"GET /v1/models 401 unauthenticated":                1,
		"GET /v1/models 403 permission_denied":              1,
		"DELETE /v1/generate 405 method_not_allowed":        1,
		"GET /v1/models/{model} 404 model_not_found":        1,
		"GET * 404 not_found":                               1,
		"GET /v1/models/categories 503 service_unavailable": 1,
		"fault error":                  1,
		"fault malformed":              1,
		"idempotent replay":            1,
		"job failed generation_failed": 1,
		"job succeeded":                2,
		"ranged download":              1,
		"expired download":             1,
		"job canceled":                 0,
	}
	c, got := coverageOf(t, s, "")
	for id, n := range want {
		if got[id] != n {
			t.Errorf("tenant %q = %d, want %d", id, got[id], n)
		}
	}
	if c.Scope != "tenant" || c.Tenant != "default" || c.Exercised < 12 || c.Total < 70 {
		t.Errorf("summary: scope %s tenant %s %d of %d", c.Scope, c.Tenant, c.Exercised, c.Total)
	}
	_, run := coverageOf(t, s, "?scope=run")
	if run["GET /v1/jobs/{id} 404 job_not_found"] != 6 || run["POST /v1/jobs/{id}/cancel 404 job_not_found"] != 1 {
		t.Errorf("run: jobs 404 = %d, cancel 404 = %d", run["GET /v1/jobs/{id} 404 job_not_found"], run["POST /v1/jobs/{id}/cancel 404 job_not_found"])
	}

	// A reset starts the tenant's counts over; the run keeps them.
	control(t, s, "POST", "/_emulator/reset", nil)
	if c, _ := coverageOf(t, s, ""); c.Exercised != 0 {
		t.Errorf("after reset the tenant shows %d cases exercised", c.Exercised)
	}
	if _, run := coverageOf(t, s, "?scope=run"); run["idempotent replay"] != 1 {
		t.Errorf("after reset the run lost the replay: %d", run["idempotent replay"])
	}
}

// jobOf2 reads a job as the API shows it.
func jobOf2(t testing.TB, h http.Handler, id string) api.Job {
	t.Helper()
	return decode[api.Job](t, call(t, h, "GET", "/v1/jobs/"+id, "mg_test_all", nil))
}

func TestCoverageWaitTimedOut(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{MaxWait: 10 * time.Second})
	q := quote(t, s, "mg_test_all", schnellID, schnell)
	done := make(chan int, 1)
	go func() {
		done <- call(t, s, "POST", "/v1/generate?wait=true", "mg_test_all", map[string]any{"model": schnellID, "input": schnell, "quote_id": q.QuoteID}, "Idempotency-Key", "slow", "X-Emulator-Outcome", "slow").Code
	}()
	waitUntilWaiting(t, s, 1)
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "10s"})
	if code := <-done; code != 202 {
		t.Fatalf("slow wait: %d", code)
	}
	if _, c := coverageOf(t, s, ""); c["wait timed out"] != 1 {
		t.Errorf("wait timed out = %d", c["wait timed out"])
	}
}

func TestCoverageRequireAndMarkdown(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	call(t, s, "GET", "/v1/jobs/nope", "mg_test_all", nil)
	c, _ := coverageOf(t, s, "?require=job%20*&require=GET%20/v1/jobs/%7Bid%7D%20404%20*")
	want := []string{"job succeeded", "job failed generation_failed", "job failed content_policy_violation", "job failed provider_timeout",
		"job failed provider_error", "job failed out_of_capacity", "job expired queue_timeout", "job canceled"}
	if !slices.Equal(c.RequiredMissing, want) {
		t.Errorf("required_missing = %v, want %v", c.RequiredMissing, want)
	}
	for _, q := range []struct {
		query   string
		headers []string
	}{{"?format=markdown&require=fault%20*", nil}, {"?require=fault%20*", []string{"Accept", "text/markdown"}}} {
		rec := call(t, s, "GET", "/_emulator/coverage"+q.query, "", nil, q.headers...)
		body := rec.Body.String()
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/markdown; charset=utf-8" ||
			!strings.Contains(body, "| `GET /v1/jobs/{id} 404 job_not_found` | errors | 1 |") ||
			!strings.Contains(body, "- `fault reset`") || !strings.HasPrefix(body, "## Emulator coverage (tenant default): 1 of ") {
			t.Errorf("markdown %s: %d %s\n%s", q.query, rec.Code, rec.Header(), body)
		}
	}
	for _, bad := range []string{"?scope=all", "?format=html", "?require=", "?scope=run&scope=tenant"} {
		if rec := call(t, s, "GET", "/_emulator/coverage"+bad, "", nil); rec.Code != 400 || !strings.Contains(rec.Body.String(), "invalid_parameter") {
			t.Errorf("%s: %d %s", bad, rec.Code, rec.Body)
		}
	}
}
