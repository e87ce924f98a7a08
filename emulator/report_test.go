package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// getReport asks for a report as JSON.
func getReport(t *testing.T, c wire, query string) api.Report {
	t.Helper()
	body := fetchReport(t, c, query, "", http.StatusOK, "application/json")
	var rep api.Report
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func fetchReport(t *testing.T, c wire, query, accept string, want int, contentType string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", c.base+"/_emulator/report"+query, nil)
	if c.header != "" {
		req.Header.Set(sim.HeaderTenant, c.header)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want || !strings.HasPrefix(resp.Header.Get("Content-Type"), contentType) {
		t.Fatalf("report%s: %d %s %s", query, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	return string(raw)
}

// TestReportNamesEveryFlawOfAClient drives one client through every flaw the report knows, over
// HTTP on the manual clock, and checks the report names each, in JSON and in markdown; then
// that the whole run's report keeps the tenant's findings once the tenant is deleted.
func TestReportNamesEveryFlawOfAClient(t *testing.T) {
	hs := tenantServer(t, Config{})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "flawed"}
	advance := func(d string) { c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": d}) }
	input := map[string]any{"prompt": "a cat", "num_images": 1}
	gen := func(want int, quote any, key string) map[string]any {
		return c.must(want, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": quote}, "Idempotency-Key", key)
	}
	quote := func() any {
		return c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})["quote_id"]
	}

	// new-key-on-retry: a 503, then the same generation with a new key.
	c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/generate"}, "status": 503, "count": 1})
	q1 := quote()
	gen(503, q1, "k1")
	advance("1s") // the 503's Retry-After
	id := gen(202, q1, "k2")["id"].(string)
	// poll-too-fast: four polls at one instant.
	for range 4 {
		c.must(200, "GET", "/v1/jobs/"+id, nil)
	}
	// poll-after-terminal: one more read of a finished job is a last look, and a read before a
	// download fetches its links (the download at the end); more are polling.
	advance("5s")
	job := c.must(200, "GET", "/v1/jobs/"+id, nil)
	for range 3 {
		c.must(200, "GET", "/v1/jobs/"+id, nil)
	}
	// quote-reused: the client had the job, and uses its quote again.
	gen(409, q1, "k3")
	// retry-after-ignored.
	c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 429, "retry_after": 5, "count": 1})
	c.must(429, "GET", "/v1/models", nil)
	c.must(200, "GET", "/v1/models", nil)
	// retry-unchanged.
	bad := map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": "a cat", "num_images": 99}}
	c.must(422, "POST", "/v1/quotes", bad)
	c.must(422, "POST", "/v1/quotes", bad)
	// expired-quote.
	q2 := quote()
	advance("11m")
	gen(422, q2, "k4")
	// quote-mismatch: a quote of one input used for another.
	c.must(422, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": "a dog", "num_images": 1}, "quote_id": quote()},
		"Idempotency-Key", "k-other")
	// outputs-never-downloaded: a second job, seen succeeded, never fetched.
	q3 := quote()
	other := gen(202, q3, "k5")["id"].(string)
	advance("5s")
	c.must(200, "GET", "/v1/jobs/"+other, nil)
	// download-after-expiry: the first job's output, fetched past its time to live.
	advance("2h")
	file := job["outputs"].([]any)[0].(map[string]any)["url"].(string)
	u, _ := url.Parse(file)
	if status, _, _ := c.do("GET", u.Path, nil); status != http.StatusGone {
		t.Fatalf("the expired output answered %d", status)
	}

	// deprecated-model-used: a model quoted again after its answer said it is deprecated.
	c.must(200, "PUT", "/_emulator/scenario", map[string]any{"scenario": map[string]any{"name": "retiring", "lifecycle": []any{
		map[string]any{"match": map[string]any{"model": "test/voice"}, "deprecated_at": "2026-01-01T00:00:00Z"}},
		"defaults": map[string]any{"download": map[string]any{"url_ttl": "1m"}}}})
	for _, text := range []string{"hello", "hello again"} {
		c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/voice", "input": map[string]any{"text": text}})
	}
	// stale-link-refetched: a signed link stored, answered 403 once expired, and fetched again.
	// download-with-api-key: the signed link fetched while sound, with the key.
	signed := gen(202, quote(), "k6")["id"].(string)
	advance("5s")
	link := c.must(200, "GET", "/v1/jobs/"+signed, nil)["outputs"].([]any)[0].(map[string]any)["url"].(string)
	u, _ = url.Parse(link)
	if status, _, _ := c.do("GET", u.RequestURI(), nil); status != http.StatusOK {
		t.Fatalf("the signed link, with the key, answered %d", status)
	}
	advance("2m")
	files := wire{t: t, base: hs.URL}
	for range 2 {
		if status, _, _ := files.do("GET", u.RequestURI(), nil); status != http.StatusForbidden {
			t.Fatalf("the expired link answered %d", status)
		}
	}

	rep := getReport(t, c, "")
	if rep.Scope != "tenant" || rep.Tenant != "flawed" || rep.Examined == 0 || len(rep.Rules) != len(evidence.Rules) {
		t.Errorf("report %+v", rep)
	}
	// The webhook receiver's rules need a receiver: emulatortest's TestAuditFindsAReceiverThatChecksNothing finds them;
	// the input rules need inputs fetched: TestInputsReport finds them.
	rules := slices.DeleteFunc(slices.Clone(evidence.Rules), func(r api.Rule) bool { return strings.HasPrefix(r.ID, "webhook-") || evidence.InputRules[r.ID] })
	for _, r := range rules {
		if rep.Counts[r.ID] != 1 {
			t.Errorf("%s found %d times, want once; findings: %+v", r.ID, rep.Counts[r.ID], rep.Findings)
		}
	}
	for _, f := range rep.Findings {
		if f.Rule == evidence.NewKeyOnRetry && len(f.Entries) != 2 {
			t.Errorf("new-key-on-retry shows entries %v", f.Entries)
		}
	}

	for _, ask := range []struct{ query, accept string }{{"?format=markdown", ""}, {"", "text/markdown"}} {
		md := fetchReport(t, c, ask.query, ask.accept, 200, "text/markdown")
		for _, r := range rules {
			if !strings.Contains(md, "`"+r.ID+"`") {
				t.Errorf("the markdown report lacks %s:\n%s", r.ID, md)
			}
		}
	}
	for _, q := range []string{"?scope=all", "?format=html", "?scope=%zz"} {
		fetchReport(t, c, q, "", http.StatusBadRequest, "application/problem+json")
	}

	// The tenant goes; the run keeps what it found, and names it.
	boss := wire{t: t, base: hs.URL, key: "key_a"}
	boss.must(204, "DELETE", "/_emulator/tenants/flawed", nil)
	run := getReport(t, boss, "?scope=run")
	for _, r := range rules {
		if run.Counts[r.ID] != 1 {
			t.Errorf("run: %s found %d times, want once", r.ID, run.Counts[r.ID])
		}
	}
	if run.Scope != "run" || len(run.Findings) != len(rules) || run.Findings[0].Tenant != "flawed" {
		t.Errorf("run report %+v", run)
	}
}

// TestRunReportFoldsResetTenants checks that a reset keeps the findings of the world it ends for
// the run, while the tenant's own report starts over.
func TestRunReportFoldsResetTenants(t *testing.T) {
	hs := tenantServer(t, Config{})
	c := wire{t: t, base: hs.URL, key: "key_a"}
	bad := map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": "a cat", "num_images": 99}}
	for range 2 {
		c.must(422, "POST", "/v1/quotes", bad)
		c.must(422, "POST", "/v1/quotes", bad)
		c.must(200, "POST", "/_emulator/reset", nil)
	}
	c.must(422, "POST", "/v1/quotes", bad)
	c.must(422, "POST", "/v1/quotes", bad)
	if rep := getReport(t, c, "?scope=tenant"); rep.Counts[evidence.RetryUnchanged] != 1 || len(rep.Findings) != 1 {
		t.Errorf("tenant report after resets: %+v", rep)
	}
	run := getReport(t, c, "?scope=run")
	if run.Counts[evidence.RetryUnchanged] != 3 || len(run.Findings) != 3 || run.Examined != 6 {
		t.Errorf("run report: counts %v, %d findings, examined %d", run.Counts, len(run.Findings), run.Examined)
	}
}

// TestReportIsCleanForACarefulClient: the same steps done right find nothing.
func TestReportIsCleanForACarefulClient(t *testing.T) {
	hs := tenantServer(t, Config{})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "careful"}
	advance := func(d string) { c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": d}) }
	input := map[string]any{"prompt": "a cat", "num_images": 1}
	c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/generate"}, "status": 503, "retry_after": 2, "count": 1})
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})["quote_id"]
	body := map[string]any{"model": "test/pixel", "input": input, "quote_id": q}
	c.must(503, "POST", "/v1/generate", body, "Idempotency-Key", "k1")
	advance("2s")
	id := c.must(202, "POST", "/v1/generate", body, "Idempotency-Key", "k1")["id"].(string)
	var job map[string]any
	for {
		advance("1s")
		job = c.must(200, "GET", "/v1/jobs/"+id, nil)
		if job["status"] == "succeeded" {
			break
		}
	}
	files := wire{t: t, base: hs.URL} // no key: file URLs need none
	for _, o := range job["outputs"].([]any) {
		u, _ := url.Parse(o.(map[string]any)["url"].(string))
		files.must(206, "GET", u.Path, nil, "Range", "bytes=0-9") // the start first, then the rest
		files.must(206, "GET", u.Path, nil, "Range", "bytes=10-")
	}
	advance("2h")
	if rep := getReport(t, c, ""); len(rep.Findings) != 0 || rep.Examined == 0 {
		t.Errorf("a careful client got %+v", rep)
	}
}

// TestReportJudgesWhatTheEmulatorRecorded drives, over HTTP on the manual clock, the shapes an
// outside sweep found judged wrongly, and checks what the report makes of each tenant.
func TestReportJudgesWhatTheEmulatorRecorded(t *testing.T) {
	hs := tenantServer(t, Config{})
	input := map[string]any{"prompt": "a cat", "num_images": 1}
	rules := func(c wire) map[string]int { return getReport(t, c, "").Counts }

	// A client that times out against a slow answer, then quotes again and sends a new key: two
	// charged jobs in production.
	c := wire{t: t, base: hs.URL, key: "key_a", header: "timeout"}
	c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/generate"}, "action": "delay", "delay": "5s", "count": 1})
	q1 := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})["quote_id"]
	raw, _ := json.Marshal(map[string]any{"model": "test/pixel", "input": input, "quote_id": q1})
	req, _ := http.NewRequest("POST", hs.URL+"/v1/generate", strings.NewReader(string(raw)))
	req.Header.Set("Authorization", "Bearer key_a")
	req.Header.Set(sim.HeaderTenant, "timeout")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k1")
	impatient := &http.Client{Timeout: 100 * time.Millisecond}
	if resp, err := impatient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the delayed generation answered within the client's timeout")
	}
	q2 := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})["quote_id"]
	c.must(202, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": q2}, "Idempotency-Key", "k2")
	// The abandoned attempt is journaled once its delay is cut short by the hang-up.
	var rep api.Report
	for range 500 {
		if rep = getReport(t, c, ""); rep.Counts[evidence.NewKeyOnRetry] > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond) // waits for the server's goroutine, not for its clock
	}
	if rep.Counts[evidence.NewKeyOnRetry] != 1 || !strings.Contains(rep.Findings[0].Reason, "may have made a job and been charged") {
		t.Errorf("a timed-out attempt retried with a new quote and key: %+v", rep)
	}

	// The 402 recipe: credits set to 0 on a still clock, then three unchanged generations.
	c = wire{t: t, base: hs.URL, key: "key_a", header: "broke"}
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})["quote_id"]
	c.must(200, "PUT", "/_emulator/accounts/acct_a", map[string]any{"credits": 0})
	for range 3 {
		c.must(402, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": q}, "Idempotency-Key", "k1")
	}
	if got := rules(c); got[evidence.RetryUnchanged] != 1 {
		t.Errorf("the 402 recipe: %v", got)
	}
	// The careful shape: topped up between the attempts, on the same still instant.
	c = wire{t: t, base: hs.URL, key: "key_a", header: "topped"}
	q = c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})["quote_id"]
	c.must(200, "PUT", "/_emulator/accounts/acct_a", map[string]any{"credits": 0})
	c.must(402, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": q}, "Idempotency-Key", "k1")
	c.must(200, "PUT", "/_emulator/accounts/acct_a", map[string]any{"credits": 1000})
	c.must(202, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": input, "quote_id": q}, "Idempotency-Key", "k1")
	if got := getReport(t, c, ""); len(got.Findings) != 0 {
		t.Errorf("a client that topped up: %+v", got.Findings)
	}

	// A job never polled, and one whose output came only as a tiny range: neither was
	// downloaded. Beside them, a job fetched whole after a read that fetched its links.
	c = wire{t: t, base: hs.URL, key: "key_a", header: "downloads"}
	advance := func(d string) { c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": d}) }
	jobOf := func(n int) string {
		in := map[string]any{"prompt": fmt.Sprint("cat ", n), "num_images": 1}
		q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": in})["quote_id"]
		return c.must(202, "POST", "/v1/generate", map[string]any{"model": "test/pixel", "input": in, "quote_id": q}, "Idempotency-Key", fmt.Sprint("k", n))["id"].(string)
	}
	never, tiny, whole := jobOf(1), jobOf(2), jobOf(3)
	advance("10s")
	fileOf := func(id string) string {
		u, _ := url.Parse(c.must(200, "GET", "/v1/jobs/"+id, nil)["outputs"].([]any)[0].(map[string]any)["url"].(string))
		return u.Path
	}
	files := wire{t: t, base: hs.URL}
	files.must(206, "GET", fileOf(tiny), nil, "Range", "bytes=0-9")
	wholeFile := fileOf(whole)
	advance("2s")
	c.must(200, "GET", "/v1/jobs/"+whole, nil) // a read for fresh links, then the download
	files.must(200, "GET", wholeFile, nil)
	advance("2h")
	rep = getReport(t, c, "")
	named := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Rule != evidence.OutputsNeverDownloaded {
			t.Errorf("unexpected finding %+v", f)
		}
		for _, id := range []string{never, tiny, whole} {
			if strings.Contains(f.Reason, id) {
				named[id] = true
			}
		}
	}
	if rep.Counts[evidence.OutputsNeverDownloaded] != 2 || !named[never] || !named[tiny] || named[whole] {
		t.Errorf("downloads: %+v", rep.Findings)
	}

	// A 429 is held against its own account only, and the journal keeps both times.
	c = wire{t: t, base: hs.URL, key: "key_a", header: "accounts"}
	c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 429, "retry_after": 5, "count": 1})
	c.must(429, "GET", "/v1/models", nil)
	other := wire{t: t, base: hs.URL, key: "key_b", header: "accounts"}
	other.must(200, "GET", "/v1/models", nil)
	if got := rules(c); got[evidence.RetryAfterIgnored] != 0 {
		t.Errorf("another account's request after a 429: %v", got)
	}
	var page api.Page[api.JournalEntry]
	_, body, _ := c.do("GET", "/_emulator/requests", nil)
	raw, _ = json.Marshal(body)
	_ = json.Unmarshal(raw, &page)
	if len(page.Data) != 2 || page.Data[0].ReceivedAt.IsZero() || page.Data[0].Account != "acct_a" || page.Data[0].FaultKind != "error" || page.Data[1].Account != "acct_b" {
		t.Errorf("the journal: %+v", page.Data)
	}
}
