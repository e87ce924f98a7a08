package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// wire is a small client of a served emulator, bound to one tenant.
type wire struct {
	t      testing.TB
	base   string
	key    string
	header string // X-Emulator-Tenant, when the tenant is not in the key
}

func (c wire) do(method, path string, body any, headers ...string) (int, map[string]any, http.Header) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.key != "" { // no key: a download, as a careful client fetches a file URL
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.header != "" {
		req.Header.Set(sim.HeaderTenant, c.header)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &out) != nil {
		out = map[string]any{"raw": fmt.Sprintf("%d bytes", len(raw))}
	}
	return resp.StatusCode, out, resp.Header
}

func (c wire) must(want int, method, path string, body any, headers ...string) map[string]any {
	c.t.Helper()
	status, out, _ := c.do(method, path, body, headers...)
	if status != want {
		c.t.Fatalf("%s %s: %d %v, want %d", method, path, status, out, want)
	}
	return out
}

func tenantServer(t testing.TB, cfg Config) *httptest.Server {
	t.Helper()
	cfg.CatalogFile = "../testdata/catalogs/small.yaml"
	cfg.ManualClock = true
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	return hs
}

// TestTenantsKeepParallelTestsApart runs 64 tenants at once on one server, each quoting,
// generating, waiting, moving its own clock, injecting its own fault and resetting, and checks
// that none sees another's jobs, journal, balance, faults or time.
func TestTenantsKeepParallelTestsApart(t *testing.T) {
	hs := tenantServer(t, Config{Seeded: true, Seed: 3})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			name := fmt.Sprintf("t%02d", i)
			c := wire{t: t, base: hs.URL, key: "key_a." + name}
			if i%2 == 1 {
				c = wire{t: t, base: hs.URL, key: "key_a", header: name}
			}
			checkTenantIsolation(c, name, i)
		})
	}
	wg.Wait()
	// The default tenant saw none of it.
	c := wire{t: t, base: hs.URL, key: "key_a"}
	if jobs := c.must(200, "GET", "/v1/jobs", nil); jobs["total"] != 0.0 {
		t.Errorf("the default tenant lists %v jobs", jobs["total"])
	}
	if reqs := c.must(200, "GET", "/_emulator/requests", nil); reqs["total"] != 1.0 {
		t.Errorf("the default tenant's journal holds %v entries, want only its own one", reqs["total"])
	}
	tenants := c.must(200, "GET", "/_emulator/tenants", nil)["data"].([]any)
	if len(tenants) != 65 || tenants[0].(map[string]any)["name"] != "default" {
		t.Errorf("%d tenants listed, first %v", len(tenants), tenants[0])
	}
}

func checkTenantIsolation(c wire, name string, i int) {
	t := c.t
	start := ManualStart
	if h := c.must(200, "GET", "/_emulator/health", nil); h["tenant"] != name {
		t.Errorf("%s: health names tenant %v", name, h["tenant"])
	}
	// Every tenant adds a fault for its next categories request; none may hit another tenant.
	if status, out, _ := c.do("GET", "/v1/models/categories", nil); status != 200 {
		t.Errorf("%s: another tenant's fault reached this one: %d %v", name, status, out)
	}
	c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/models/categories"}, "status": 503, "count": 1})
	if status, _, _ := c.do("GET", "/v1/models/categories", nil); status != 503 {
		t.Errorf("%s: own fault did not fire: %d", name, status)
	}

	input := map[string]any{"prompt": "tenant " + name, "num_images": 1 + i%4}
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
	job := c.must(202, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "same-key-everywhere")
	id := job["id"].(string)
	credits := q["credits"].(float64)

	// A wait=true request blocks until this tenant's own clock finishes the job.
	done := make(chan map[string]any, 1)
	go func() {
		_, out, _ := c.do("POST", "/v1/generate?wait=true", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "same-key-everywhere")
		done <- out
	}()
	if w := c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil); w["reached"] != true {
		t.Errorf("%s: the wait never began: %v", name, w)
	}
	advance := time.Duration(10+i) * time.Second
	c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": advance.String()})
	if got := (<-done)["status"]; got != "succeeded" {
		t.Errorf("%s: waited job ended %v", name, got)
	}
	if now := c.must(200, "GET", "/_emulator/clock", nil)["now"]; now != start.Add(advance).Format(time.RFC3339Nano) {
		t.Errorf("%s: clock %v, want start+%s: another tenant moved it", name, now, advance)
	}

	list := c.must(200, "GET", "/v1/jobs", nil)
	if list["total"] != 1.0 || list["data"].([]any)[0].(map[string]any)["id"] != id {
		t.Errorf("%s: jobs %v, want only %s", name, list["total"], id)
	}
	out := list["data"].([]any)[0].(map[string]any)["outputs"].([]any)[0].(map[string]any)
	url := out["url"].(string)
	if !strings.Contains(url, "/files/"+name+"/") {
		t.Errorf("%s: output url %s does not name the tenant", name, url)
	}
	if resp, err := http.Get(url); err != nil || resp.StatusCode != 200 {
		t.Errorf("%s: download without any tenant header: %v %v", name, resp, err)
	} else {
		resp.Body.Close()
	}
	accounts := c.must(200, "GET", "/_emulator/accounts", nil)["data"].([]any)
	for _, a := range accounts {
		a := a.(map[string]any)
		if a["account"] == "acct_a" && a["available"] != 1000-credits {
			t.Errorf("%s: acct_a has %v available, want %v", name, a["available"], 1000-credits)
		}
	}
	journal := c.must(200, "GET", "/_emulator/requests", nil)
	for _, e := range journal["data"].([]any) {
		e := e.(map[string]any)
		if e["tenant"] != name {
			t.Errorf("%s: journal entry of tenant %v", name, e["tenant"])
		}
		if j, ok := e["job_id"]; ok && j != id {
			t.Errorf("%s: journal names job %v", name, j)
		}
	}
	if journal["total"] != 6.0 { // categories ×2, quote, generate ×2, jobs
		t.Errorf("%s: journal holds %v entries, want 6", name, journal["total"])
	}

	c.must(200, "POST", "/_emulator/reset", nil)
	if list := c.must(200, "GET", "/v1/jobs", nil); list["total"] != 0.0 {
		t.Errorf("%s: %v jobs after reset", name, list["total"])
	}
	if now := c.must(200, "GET", "/_emulator/clock", nil)["now"]; now != start.Format(time.RFC3339Nano) {
		t.Errorf("%s: clock %v after reset", name, now)
	}
}

func TestTenantSelectionErrors(t *testing.T) {
	hs := tenantServer(t, Config{MaxTenants: 2})
	tests := []struct {
		name   string
		key    string
		header string
		status int
		code   string
	}{
		{"header and key agree", "key_a.same", "same", 200, ""},
		{"header and key disagree", "key_a.one", "two", 400, "invalid_tenant"},
		{"bad header name", "key_a", "no.dots", 400, "invalid_tenant"},
		{"bad key suffix", "key_a.bad!name", "", 400, "invalid_tenant"},
		{"too long", "key_a", strings.Repeat("x", 65), 400, "invalid_tenant"},
		{"unknown key prefix", "nokey.t1", "", 401, "unauthenticated"},
		{"a second tenant", "key_a.second", "", 200, ""},
		{"a third is one too many", "key_a.third", "", 429, "too_many_tenants"},
		{"an existing one still works", "key_a", "same", 200, ""},
	}
	for _, tt := range tests {
		c := wire{t: t, base: hs.URL, key: tt.key, header: tt.header}
		status, out, _ := c.do("GET", "/v1/models", nil)
		if status != tt.status || (tt.code != "" && out["code"] != tt.code) {
			t.Errorf("%s: %d %v, want %d %s", tt.name, status, out["code"], tt.status, tt.code)
		}
	}
	c := wire{t: t, base: hs.URL, key: "key_a"}
	c.must(204, "DELETE", "/_emulator/tenants/second", nil)
	c.must(404, "DELETE", "/_emulator/tenants/second", nil)
	c.must(409, "DELETE", "/_emulator/tenants/default", nil)
	if status, _, _ := (wire{t: t, base: hs.URL, key: "key_a.third"}).do("GET", "/v1/models", nil); status != 200 {
		t.Errorf("after a delete a new tenant fits: %d", status)
	}
}

func TestTenantFilesAreInvisibleElsewhere(t *testing.T) {
	hs := tenantServer(t, Config{})
	a := wire{t: t, base: hs.URL, key: "key_a", header: "alpha"}
	input := map[string]any{"prompt": "x"}
	q := a.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
	job := a.must(202, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "k")
	id := job["id"].(string)
	a.must(200, "POST", "/_emulator/jobs/"+id+"/complete", nil)
	b := wire{t: t, base: hs.URL, key: "key_a", header: "beta"}
	b.must(404, "GET", "/v1/jobs/"+id, nil)
	b.must(404, "POST", "/_emulator/jobs/"+id+"/complete", nil)
	b.must(404, "GET", "/files/"+id+"/0.png", nil)
	a.must(200, "GET", "/files/"+id+"/0.png", nil) // the short form looks in the request's tenant
	if resp, err := http.Get(hs.URL + "/files/alpha/" + id + "/0.png"); err != nil || resp.StatusCode != 200 {
		t.Errorf("the tenant's file URL without a header: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	b.must(404, "GET", "/files/gamma/"+id+"/0.png", nil)
	if _, ok := (wire{t: t, base: hs.URL, key: "key_a"}).must(200, "GET", "/_emulator/tenants", nil)["data"].([]any); !ok {
		t.Fatal("no tenant list")
	}
	for _, tn := range (wire{t: t, base: hs.URL, key: "key_a"}).must(200, "GET", "/_emulator/tenants", nil)["data"].([]any) {
		if tn.(map[string]any)["name"] == "gamma" {
			t.Error("a file request made a tenant")
		}
	}
}

func TestJournalRecordsBodies(t *testing.T) {
	hs := tenantServer(t, Config{})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "bodies"}
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": "a fox"}})
	c.must(422, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": ""}})
	entries := c.must(200, "GET", "/_emulator/requests?path=/v1/quotes", nil)["data"].([]any)
	if len(entries) != 2 {
		t.Fatalf("%d entries", len(entries))
	}
	first := entries[0].(map[string]any)
	sent, _ := first["request_body"].(map[string]any)
	got, _ := first["response_body"].(map[string]any)
	if sent["model"] != "test/pixel" || got["quote_id"] != q["quote_id"] {
		t.Errorf("first entry's bodies: %v / %v", first["request_body"], first["response_body"])
	}
	problem, _ := entries[1].(map[string]any)["response_body"].(map[string]any)
	if problem["code"] != "invalid_input" {
		t.Errorf("second entry's response body: %v", problem)
	}
	raw, _ := json.Marshal(entries)
	if strings.Contains(string(raw), "key_a") {
		t.Error("the journal holds the API key")
	}

	// A body no handler reads, since a fault that matches on its model answers first, is
	// journaled as it was read to find the model.
	c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"model": "test/pixel"}, "status": 503, "count": 1})
	c.must(503, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": "faulted"}})
	faulted := c.must(200, "GET", "/_emulator/requests?status=503", nil)["data"].([]any)
	if len(faulted) != 1 {
		t.Fatalf("%d entries answered 503", len(faulted))
	}
	if sent, _ := faulted[0].(map[string]any)["request_body"].(map[string]any); sent["model"] != "test/pixel" {
		t.Errorf("the faulted request's body: %v", faulted[0].(map[string]any)["request_body"])
	}
}

// TestJournalRecordsRefusedBodies: a body over the size limit is refused, and the journal shows
// what was read of it, cut to its bound.
func TestJournalRecordsRefusedBodies(t *testing.T) {
	hs := tenantServer(t, Config{MaxBodyBytes: 64 << 10})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "refused"}
	c.must(413, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": strings.Repeat("a", 100<<10)}})
	entries := c.must(200, "GET", "/_emulator/requests?path=/v1/quotes", nil)["data"].([]any)
	if len(entries) != 1 {
		t.Fatalf("%d entries", len(entries))
	}
	sent, ok := entries[0].(map[string]any)["request_body"].(string)
	if !ok || !strings.HasPrefix(sent, `{"input":{"prompt":"aaaa`) || !strings.HasSuffix(sent, evidence.Truncated) {
		t.Errorf("the refused body is journaled as %.80q…", entries[0].(map[string]any)["request_body"])
	}
}

// TestParkedWaitsAnswerAndJournal: a wait=true generation on a real connection is parked (no
// goroutine waits for it); it counts as waiting, is answered when its job ends or its tenant is
// reset, and its journal entry carries the status it was answered with.
func TestParkedWaitsAnswerAndJournal(t *testing.T) {
	// An hour's wait limit: only the job's end, the reset or the drop can answer in time.
	hs := tenantServer(t, Config{MaxWait: time.Hour})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "parked"}
	input := map[string]any{"prompt": "x"}
	start := func(key string) chan map[string]any {
		q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
		done := make(chan map[string]any, 1)
		go func() {
			status, out, h := c.do("POST", "/v1/generate?wait=true", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", key)
			out["http_status"] = float64(status)
			out["location"] = h.Get("Location")
			done <- out
		}()
		return done
	}
	first := start("one")
	if w := c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil); w["reached"] != true {
		t.Fatalf("the wait never began: %v", w)
	}
	c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "5s"})
	if got := <-first; got["http_status"] != 200.0 || got["status"] != "succeeded" {
		t.Errorf("answer after the job ended: %v", got)
	}
	entries := c.must(200, "GET", "/_emulator/requests?path=/v1/generate", nil)["data"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["status"] != 200.0 || entries[0].(map[string]any)["job_id"] == nil {
		t.Errorf("journal of the parked generation: %v", entries)
	}
	second := start("two")
	c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil)
	c.must(200, "POST", "/_emulator/reset", nil)
	if got := answerOf(t, second); got["http_status"] != 202.0 || got["status"] != "queued" || got["location"] == "" {
		t.Errorf("answer after a reset: %v", got)
	}
	if h := c.must(200, "GET", "/_emulator/health", nil); h["waiting"] != 0.0 {
		t.Errorf("waiting = %v after both answers", h["waiting"])
	}
	third := start("three")
	c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil)
	c.must(204, "DELETE", "/_emulator/tenants/parked", nil)
	if got := answerOf(t, third); got["http_status"] != 202.0 || got["status"] != "queued" {
		t.Errorf("answer after the tenant was dropped: %v", got)
	}
}

// answerOf is the answer a waiting request gets; a minute of real time without one fails the
// test, where only the emulator's clock (an hour's wait limit) would otherwise answer.
func answerOf(t *testing.T, answer chan map[string]any) map[string]any {
	t.Helper()
	select {
	case got := <-answer:
		return got
	case <-time.After(time.Minute):
		t.Fatal("the wait was not answered")
		return nil
	}
}

// TestOnlyAuthorisedRequestsMakeTenants: a client without a key (or, for the control API,
// without the admin token) cannot make tenants, so it cannot use up --max-tenants.
func TestOnlyAuthorisedRequestsMakeTenants(t *testing.T) {
	hs := tenantServer(t, Config{AdminToken: "secret", MaxTenants: 2})
	for _, c := range []wire{
		{t: t, base: hs.URL, key: "nokey", header: "intruder1"},
		{t: t, base: hs.URL, header: "intruder3"},
	} {
		for path, code := range map[string]string{"/v1/models": "unauthenticated", "/_emulator/health": "admin_token_required"} {
			if status, out, _ := c.do("GET", path, nil); status != 401 || out["code"] != code {
				t.Errorf("%s %s with key %q: %d %v, want 401 %s", path, c.header, c.key, status, out["code"], code)
			}
		}
	}
	// An unknown key names no tenant at all: the request is the default tenant's, and fails
	// its authentication there.
	if status, _, _ := (wire{t: t, base: hs.URL, key: "nokey.intruder2"}).do("GET", "/v1/models", nil); status != 401 {
		t.Errorf("an unknown key with a tenant suffix: %d", status)
	}
	ok := wire{t: t, base: hs.URL, key: "key_a", header: "real"}
	ok.must(200, "GET", "/v1/models", nil)
	status, _, _ := (wire{t: t, base: hs.URL, header: "real"}).do("GET", "/_emulator/health", nil)
	if status != 200 {
		t.Errorf("an existing tenant's health without a key: %d", status)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/_emulator/health", nil)
	req.Header.Set(sim.HeaderTenant, "by-admin")
	req.Header.Set(headerAdminToken, "secret")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("the admin token makes a tenant: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	req, _ = http.NewRequest("GET", hs.URL+"/_emulator/tenants", nil)
	req.Header.Set(headerAdminToken, "secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct{ Name string } `json:"data"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&list)
	if len(list.Data) != 3 {
		t.Errorf("tenants: %+v, want default, by-admin and real", list.Data)
	}
}

// TestParkedWaitKeepsItsTenant: a wait=true generation is a request in progress, so its
// tenant is not dropped as idle however long it waits, and its job answers when it ends.
func TestParkedWaitKeepsItsTenant(t *testing.T) {
	wall := clock.NewManual(ManualStart)
	s, err := newServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true,
		TenantIdle: 3 * time.Second, MaxWait: 30 * time.Second}, func(c *sim.Config) { c.Wall = wall })
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	c := wire{t: t, base: hs.URL, key: "key_a", header: "waits"}
	input := map[string]any{"prompt": "x"}
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
	done := make(chan map[string]any, 1)
	go func() {
		status, out, _ := c.do("POST", "/v1/generate?wait=true", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "k")
		out["http_status"] = float64(status)
		done <- out
	}()
	if w := c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil); w["reached"] != true {
		t.Fatalf("the wait never began: %v", w)
	}
	if err := wall.Advance(time.Hour); err != nil {
		t.Fatal(err)
	}
	tenant, ok := s.tenants.Lookup("waits")
	if !ok {
		t.Fatal("the tenant of a parked wait was dropped as idle")
	}
	if err := tenant.World().Advance(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got["http_status"] != 200.0 || got["status"] != "succeeded" {
		t.Errorf("the wait answered %v, want 200 with the succeeded job", got)
	}
	// Answered, the wait no longer holds the tenant.
	if err := wall.Advance(time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.tenants.Lookup("waits"); ok {
		t.Error("the tenant outlived its idle time once the wait was answered")
	}
}

// TestKeylessRequestsMakeNoTenantWhereControlIsOpen: with the control API open to everyone
// (loopback, no admin token), a /v1 request without a key still makes no tenant: it answers
// 401 as the README says, below the bound and at it alike, never 429.
func TestKeylessRequestsMakeNoTenantWhereControlIsOpen(t *testing.T) {
	hs := tenantServer(t, Config{MaxTenants: 1})
	anon := wire{t: t, base: hs.URL, header: "anon"}
	if status, out, _ := anon.do("GET", "/v1/models", nil); status != 401 || out["code"] != "unauthenticated" {
		t.Errorf("keyless request below the bound: %d %v, want 401 unauthenticated", status, out["code"])
	}
	admin := wire{t: t, base: hs.URL}
	if list := admin.must(200, "GET", "/_emulator/tenants", nil)["data"].([]any); len(list) != 1 {
		t.Errorf("a keyless request made a tenant: %v", list)
	}
	(wire{t: t, base: hs.URL, key: "key_a", header: "full"}).must(200, "GET", "/v1/models", nil)
	if status, out, _ := anon.do("GET", "/v1/models", nil); status != 401 || out["code"] != "unauthenticated" {
		t.Errorf("keyless request at the bound: %d %v, want 401 unauthenticated", status, out["code"])
	}
	// A control request may still make one where the control API is open.
	(wire{t: t, base: hs.URL, header: "full"}).must(200, "GET", "/_emulator/health", nil)
}

// TestDeletingATenantNamedInTheHeaderDoesNotMakeIt: DELETE /_emulator/tenants/x sent with
// X-Emulator-Tenant: x, for an x that does not exist, answers 404 and leaves no tenant x.
func TestDeletingATenantNamedInTheHeaderDoesNotMakeIt(t *testing.T) {
	hs := tenantServer(t, Config{})
	c := wire{t: t, base: hs.URL, header: "ghost"}
	if status, out, _ := c.do("DELETE", "/_emulator/tenants/ghost", nil); status != 404 || out["code"] != "tenant_not_found" {
		t.Errorf("deleting a tenant that does not exist: %d %v, want 404 tenant_not_found", status, out["code"])
	}
	if list := c.must(200, "GET", "/_emulator/tenants", nil)["data"].([]any); len(list) != 1 {
		t.Errorf("tenants after the delete: %v, want the default alone", list)
	}
	// A tenant that exists is deleted as before, from within itself too.
	(wire{t: t, base: hs.URL, key: "key_a", header: "real"}).must(200, "GET", "/v1/models", nil)
	(wire{t: t, base: hs.URL, header: "real"}).must(204, "DELETE", "/_emulator/tenants/real", nil)
}

// TestMemoryBudgetAnswer: past --memory-budget a quote answers 503 memory_budget_exhausted with
// Retry-After, as a problem body; what was made before stays.
func TestMemoryBudgetAnswer(t *testing.T) {
	hs := tenantServer(t, Config{MemoryBudget: 1 << 20})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "hoard"}
	var first string
	for i := range 100_000 {
		status, out, h := c.do("POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": fmt.Sprintf("%d %s", i, strings.Repeat("x", 1900))}})
		if status == 200 {
			if first == "" {
				first = out["quote_id"].(string)
			}
			continue
		}
		if status != 503 || out["code"] != "memory_budget_exhausted" || h.Get("Retry-After") == "" || h.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("after %d quotes: %d %v (Retry-After %q)", i, status, out, h.Get("Retry-After"))
		}
		if i < 100 {
			t.Errorf("only %d quotes of 2 KB fit in 1 MiB", i)
		}
		input := map[string]any{"prompt": "0 " + strings.Repeat("x", 1900)}
		if status, out, _ := c.do("POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": first}, "Idempotency-Key", "k"); status != 503 || out["code"] != "memory_budget_exhausted" {
			t.Errorf("a generation past the budget: %d %v", status, out["code"])
		}
		c.must(204, "DELETE", "/_emulator/tenants/hoard", nil)
		c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
		return
	}
	t.Fatal("the budget was never reached")
}

// TestExpectedErrorsCountAgainstTheBudget: expected-error patterns are held at their real cost
// within --memory-budget: past it one more answers 503 memory_budget_exhausted, and clearing
// them makes room again.
func TestExpectedErrorsCountAgainstTheBudget(t *testing.T) {
	hs := tenantServer(t, Config{MemoryBudget: 1 << 20})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "expecting"}
	body := map[string]any{}
	for i := range 60 {
		body[fmt.Sprint("member", i)] = strings.Repeat("v", 900)
	}
	for i := range 100 {
		status, out, _ := c.do("POST", "/_emulator/expected-errors", map[string]any{"path": fmt.Sprint("/v1/", i), "body": body})
		if status == 201 {
			continue
		}
		if status != 503 || out["code"] != "memory_budget_exhausted" || i < 5 {
			t.Fatalf("after %d patterns: %d %v", i, status, out)
		}
		c.must(204, "DELETE", "/_emulator/expected-errors", nil)
		c.must(201, "POST", "/_emulator/expected-errors", map[string]any{"path": "/v1/models", "body": body})
		return
	}
	t.Fatal("100 patterns of 54 KB each fit in a budget of 1 MiB")
}
