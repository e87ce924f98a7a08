package emulatortest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
	"github.com/mediagen/mediagen-emulator/internal/syncbuf"
)

const model = "fal-ai/flux/dev"

// apiClient talks to one emulator as a client under test would, with its own connections.
type apiClient struct {
	t    testing.TB
	base string
	key  string
	http *http.Client
}

func newClient(t testing.TB, emu *emulatortest.Emulator, key string) *apiClient {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &apiClient{t: t, base: emu.URL, key: key, http: &http.Client{Transport: tr, Timeout: time.Minute}}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func (a answer) str(name string) string {
	s, _ := a.body[name].(string)
	return s
}

// call sends one request; headers come in name, value pairs.
func (c *apiClient) call(method, path string, body any, headers ...string) answer {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header}
	if len(raw) > 0 && json.Unmarshal(raw, &a.body) != nil {
		c.t.Fatalf("%s %s: body is not a JSON object: %.200q", method, path, raw)
	}
	return a
}

// quote prices the input and fails the test unless the emulator answers 200.
func (c *apiClient) quote(input map[string]any) string {
	c.t.Helper()
	a := c.call(http.MethodPost, "/v1/quotes", map[string]any{"model": model, "input": input})
	if a.status != http.StatusOK {
		c.t.Fatalf("quote: %d %v", a.status, a.body)
	}
	return a.str("quote_id")
}

// generate quotes and generates; it returns the generate answer.
func (c *apiClient) generate(input map[string]any, idemKey string, headers ...string) answer {
	c.t.Helper()
	q := c.quote(input)
	return c.call(http.MethodPost, "/v1/generate", map[string]any{"model": model, "input": input, "quote_id": q},
		append([]string{"Idempotency-Key", idemKey}, headers...)...)
}

// job fetches a job.
func (c *apiClient) job(id string) answer {
	c.t.Helper()
	a := c.call(http.MethodGet, "/v1/jobs/"+id, nil)
	if a.status != http.StatusOK {
		c.t.Fatalf("GET job %s: %d %v", id, a.status, a.body)
	}
	return a
}

func balance(t testing.TB, emu *emulatortest.Emulator, account string) api.Balance {
	t.Helper()
	for _, b := range emu.Balances() {
		if b.Account == account {
			return b
		}
	}
	t.Fatalf("no account %q in %v", account, emu.Balances())
	return api.Balance{}
}

func fox() map[string]any { return map[string]any{"prompt": "a red fox in the snow"} }

func TestStartDefaults(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	if !strings.HasPrefix(emu.URL, "http://127.0.0.1:") || strings.HasSuffix(emu.URL, "/") {
		t.Errorf("URL = %q, want http://127.0.0.1:PORT", emu.URL)
	}
	if emu.Keys != emulatortest.DefaultKeys || emu.Keys.All != "mg_test_all" || emu.Accounts.Poor != "acct_poor" {
		t.Errorf("Keys = %+v, Accounts = %+v", emu.Keys, emu.Accounts)
	}
	health := newClient(t, emu, "").call(http.MethodGet, "/_emulator/health", nil)
	if health.status != http.StatusOK || health.str("clock") != "skip" || health.str("scenario") != "default" {
		t.Errorf("health = %d %v; want a skipping clock and the default scenario", health.status, health.body)
	}
	if now := emu.Now(); !now.Equal(emulator.ManualStart) {
		t.Errorf("Now() = %v, want %v", now, emulator.ManualStart)
	}
	// The key works against /v1.
	if a := newClient(t, emu, emu.Keys.Read).call(http.MethodGet, "/v1/models?limit=1", nil); a.status != http.StatusOK {
		t.Errorf("GET /v1/models with Keys.Read: %d %v", a.status, a.body)
	}
}

func TestEmulatorsDoNotShareState(t *testing.T) {
	t.Parallel()
	a, b := emulatortest.Start(t), emulatortest.Start(t)
	if a.URL == b.URL {
		t.Fatalf("both emulators at %s", a.URL)
	}
	ca, cb := newClient(t, a, a.Keys.All), newClient(t, b, b.Keys.All)

	job := ca.generate(fox(), "k1")
	if job.status != http.StatusAccepted {
		t.Fatalf("generate on a: %d %v", job.status, job.body)
	}
	a.SetCredits(a.Accounts.Generate, 5)
	a.Advance(time.Hour)
	a.SetScenario("outage")

	if jobs := cb.call(http.MethodGet, "/v1/jobs", nil); jobs.body["total"] != float64(0) {
		t.Errorf("b lists a's job: %v", jobs.body)
	}
	if got := cb.call(http.MethodGet, "/v1/jobs/"+job.str("id"), nil); got.status != http.StatusNotFound {
		t.Errorf("b finds a's job: %d", got.status)
	}
	if bal := balance(t, b, b.Accounts.Generate); bal.Available != 1_000_000 {
		t.Errorf("b's acct_generate = %+v, want untouched", bal)
	}
	if bal := balance(t, b, b.Accounts.All); bal.Held != 0 || bal.Available != 1_000_000 {
		t.Errorf("b's acct_all = %+v, want no hold", bal)
	}
	if now := b.Now(); !now.Equal(emulator.ManualStart) {
		t.Errorf("b's clock moved with a's: %v", now)
	}
	if r := cb.generate(fox(), "k1"); r.status != http.StatusAccepted {
		t.Errorf("generate on b under a's outage: %d %v", r.status, r.body)
	}
	if n := len(b.Requests(emulatortest.Pattern{Method: http.MethodPost, Path: "/v1/generate"})); n != 1 {
		t.Errorf("b's journal has %d generations, want its own 1", n)
	}
}

// TestCleanupLeavesNothingRunning starts an emulator in a subtest with a wait=true request
// blocked on the manual clock; the subtest's cleanup must answer that request and leave none of
// the emulator's goroutines behind.
func TestCleanupLeavesNothingRunning(t *testing.T) {
	waited := make(chan answer, 1)
	t.Run("emulator", func(t *testing.T) {
		emu := emulatortest.Start(t, emulatortest.WithManualClock()) // so the wait=true waits
		c := newClient(t, emu, emu.Keys.All)
		input := fox()
		q := c.quote(input)
		go func() {
			// c.call would t.Fatal off the test goroutine; do the request by hand.
			raw, _ := json.Marshal(map[string]any{"model": model, "input": input, "quote_id": q})
			req, _ := http.NewRequest(http.MethodPost, emu.URL+"/v1/generate?wait=true", bytes.NewReader(raw))
			req.Header.Set("Authorization", "Bearer "+emu.Keys.All)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "wait-1")
			a := answer{}
			if resp, err := c.http.Do(req); err == nil {
				a.status = resp.StatusCode
				_ = json.NewDecoder(resp.Body).Decode(&a.body)
				resp.Body.Close()
			}
			waited <- a
		}()
		emu.AwaitWaiting(1)
	})
	if a := <-waited; a.status != http.StatusAccepted || a.str("status") != "queued" {
		t.Errorf("the waiting request got %d %v; want 202 with the queued job", a.status, a.body)
	}
	// Cleanup has returned: every request was answered and the server's background work stopped,
	// so no goroutine is running the emulator's code. (net/http's own goroutines may still be
	// on their way out; they hold none of it.)
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if emulatorCode.MatchString(g) && !strings.Contains(g, "catalog.(*Catalog).Compile") && !strings.Contains(g, "testing.") {
			t.Errorf("a goroutine of the emulator outlived cleanup:\n%s", g)
		}
	}
}

// emulatorCode matches a stack frame in the emulator or its internal packages. The embedded
// catalog's schemas compile once per process in the background, whoever started it; that
// goroutine is not an emulator's to stop.
var emulatorCode = regexp.MustCompile(`mediagen-emulator/emulator(/internal/[a-z]+)?\.`)

func TestAdvanceFinishesJob(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t, emulatortest.WithManualClock())
	c := newClient(t, emu, emu.Keys.All)
	job := c.generate(fox(), "k1")
	if job.status != http.StatusAccepted || job.str("status") != "queued" {
		t.Fatalf("generate: %d %v", job.status, job.body)
	}
	emu.Advance(100 * time.Millisecond)
	if got := c.job(job.str("id")); got.str("status") != "queued" {
		t.Errorf("after 100ms: %s, want queued", got.str("status"))
	}
	emu.Advance(900 * time.Millisecond)
	got := c.job(job.str("id"))
	if got.str("status") != "succeeded" || got.str("credit_status") != "charged" {
		t.Errorf("after 1s: %v", got.body)
	}
	if want := emulator.ManualStart.Add(time.Second); !emu.Now().Equal(want) {
		t.Errorf("Now() = %v, want %v", emu.Now(), want)
	}
}

func TestSetTime(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)
	job := c.generate(fox(), "k1")
	later := time.Date(2026, 1, 1, 12, 30, 0, 0, time.FixedZone("CET", 3600)) // within the 24 h job retention
	emu.SetTime(later)
	if now := emu.Now(); !now.Equal(later) || now.Location() != time.UTC {
		t.Errorf("Now() = %v, want %v in UTC", now, later)
	}
	if got := c.job(job.str("id")); got.str("status") != "succeeded" {
		t.Errorf("job after SetTime: %v", got.body)
	}
}

func TestForceComplete(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)
	job := c.generate(fox(), "k1")
	emu.ForceComplete(job.str("id"))
	got := c.job(job.str("id"))
	outputs, _ := got.body["outputs"].([]any)
	if got.str("status") != "succeeded" || len(outputs) != 1 {
		t.Errorf("after ForceComplete: %v", got.body)
	}
	if !emu.Now().Equal(emulator.ManualStart) {
		t.Errorf("ForceComplete moved the clock to %v", emu.Now())
	}
}

func TestForceFail(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)
	job := c.generate(fox(), "k1")
	if bal := balance(t, emu, emu.Accounts.All); bal.Held == 0 {
		t.Fatalf("no credits held for the job: %+v", bal)
	}
	emu.ForceFail(job.str("id"), api.JobFailure{Code: "content_policy_violation", Message: "the prompt was refused"})
	got := c.job(job.str("id"))
	e, _ := got.body["error"].(map[string]any)
	if got.str("status") != "failed" || e["code"] != "content_policy_violation" || e["message"] != "the prompt was refused" || got.str("credit_status") != "refunded" {
		t.Errorf("after ForceFail: %v", got.body)
	}
	if bal := balance(t, emu, emu.Accounts.All); bal.Held != 0 || bal.Charged != 0 || bal.Available != 1_000_000 || bal.Refunded == 0 {
		t.Errorf("after ForceFail: %+v, want everything refunded", bal)
	}

	// Empty code and message mean generation_failed with the usual message.
	job2 := c.generate(map[string]any{"prompt": "a second fox"}, "k2")
	emu.ForceFail(job2.str("id"), api.JobFailure{})
	e, _ = c.job(job2.str("id")).body["error"].(map[string]any)
	if e["code"] != "generation_failed" || e["message"] == "" {
		t.Errorf("ForceFail with no code: error = %v", e)
	}
}

func TestSetCreditsAndBalances(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	got := map[string]int64{}
	for _, b := range emu.Balances() {
		got[b.Account] = b.Available
	}
	want := map[string]int64{"acct_all": 1_000_000, "acct_read": 0, "acct_generate": 1_000_000, "acct_poor": 10}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Balances() = %v, want %v", got, want)
	}
	emu.SetCredits(emu.Accounts.All, 2)
	if bal := balance(t, emu, emu.Accounts.All); bal.Available != 2 {
		t.Errorf("after SetCredits: %+v", bal)
	}
	a := newClient(t, emu, emu.Keys.All).generate(fox(), "k1") // 3 credits
	if a.status != http.StatusPaymentRequired || a.str("code") != "insufficient_credits" {
		t.Errorf("generate with 2 credits: %d %v", a.status, a.body)
	}
}

func TestRequests(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)
	if n := len(emu.Requests()); n != 0 {
		t.Fatalf("journal starts with %d entries", n)
	}
	c.call(http.MethodGet, "/v1/models?limit=2", nil)
	job := c.generate(fox(), "k1")
	newClient(t, emu, "nope").call(http.MethodGet, "/v1/models", nil)

	all := emu.Requests()
	if len(all) != 4 {
		t.Fatalf("Requests() = %d entries, want 4: %+v", len(all), all)
	}
	first := all[0]
	if first.Method != "GET" || first.Path != "/v1/models" || first.Query != "limit=2" || first.Status != 200 || first.Account != "acct_all" || !first.Time.Equal(emulator.ManualStart) || first.RequestID == "" {
		t.Errorf("first entry = %+v", first)
	}
	gen := all[2]
	if gen.Path != "/v1/generate" || gen.Status != 202 || gen.Model != model || gen.JobID != job.str("id") || gen.IdempotencyKey != "k1" {
		t.Errorf("generate entry = %+v", gen)
	}
	if bad := emu.Requests(emulatortest.Pattern{Status: 401}); len(bad) != 1 || bad[0].Code != "unauthenticated" {
		t.Errorf("Requests(Status 401) = %+v", bad)
	}
	if posts := emu.Requests(emulatortest.Pattern{Method: "POST", Path: "/v1/**"}); len(posts) != 2 {
		t.Errorf("Requests(POST /v1/*) = %+v", posts)
	}
	emu.ClearRequests()
	if n := len(emu.Requests()); n != 0 {
		t.Errorf("after ClearRequests: %d entries", n)
	}
}

func TestRequestsPagesThroughTheJournal(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)
	const n = 520 // more than one page of 500
	for range n {
		c.call(http.MethodHead, "/v1/models/categories", nil)
	}
	got := emu.Requests()
	if len(got) != n {
		t.Fatalf("Requests() = %d entries, want %d", len(got), n)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("entries out of order at %d: %d after %d", i, got[i].Seq, got[i-1].Seq)
		}
	}
}

func TestAddFault(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)
	id := emu.AddFault(api.Perturbation{
		Match:  api.FaultMatch{Method: "POST", Path: "/v1/generate"},
		Status: 503, Code: "service_unavailable", RetryAfter: 7, Count: 1,
	})
	if id == "" {
		t.Fatal("AddFault returned no id")
	}
	input := fox()
	q := c.quote(input)
	body := map[string]any{"model": model, "input": input, "quote_id": q}
	first := c.call(http.MethodPost, "/v1/generate", body, "Idempotency-Key", "k1")
	if first.status != 503 || first.str("code") != "service_unavailable" || first.header.Get("Retry-After") != "7" {
		t.Errorf("first generate: %d %v Retry-After %q", first.status, first.body, first.header.Get("Retry-After"))
	}
	retry := c.call(http.MethodPost, "/v1/generate", body, "Idempotency-Key", "k1")
	if retry.status != http.StatusAccepted {
		t.Errorf("retry after a count-1 fault: %d %v", retry.status, retry.body)
	}
	if rs := emu.Requests(emulatortest.Pattern{Path: "/v1/generate"}); len(rs) != 2 || rs[0].Fault != id || rs[1].Fault != "" {
		t.Errorf("journal: %+v; want the first answered by fault %s", rs, id)
	}

	// A fault without a count stays until ClearFaults.
	emu.AddFault(api.Perturbation{Match: api.FaultMatch{Path: "/v1/models"}, Action: api.FaultMalformed})
	for range 2 {
		if a := c.call(http.MethodGet, "/v1/models/categories", nil); a.status != 200 {
			t.Errorf("a fault on /v1/models hit /v1/models/categories: %d", a.status)
		}
	}
	resp, err := c.http.Get(emu.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if json.Valid(raw) {
		t.Errorf("malformed fault answered valid JSON: %s", raw)
	}
	emu.ClearFaults()
	if a := c.call(http.MethodGet, "/v1/models?limit=1", nil); a.status != 200 {
		t.Errorf("after ClearFaults: %d", a.status)
	}
}

func TestFaultDelayAndProbability(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t, emulatortest.WithSeed(1))
	emu.AddFault(api.Perturbation{Match: api.FaultMatch{Path: "/v1/models"}, Delay: api.Duration(50 * time.Millisecond), Count: 1})
	c := newClient(t, emu, emu.Keys.All)
	start := time.Now()
	if a := c.call(http.MethodGet, "/v1/models", nil); a.status != 200 {
		t.Errorf("delayed request: %d", a.status)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("the delay fault answered after %v", d)
	}
	half := 0.5
	emu.AddFault(api.Perturbation{Match: api.FaultMatch{Path: "/v1/models"}, Status: 500, Code: "internal_error", Probability: &half})
	failed := 0
	for range 40 {
		if c.call(http.MethodGet, "/v1/models", nil).status == 500 {
			failed++
		}
	}
	if failed == 0 || failed == 40 {
		t.Errorf("probability 0.5 failed %d of 40 requests", failed)
	}
}

func TestSetScenario(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)
	emu.SetScenario("outage")
	if a := c.generate(fox(), "k1"); a.status != 503 || a.str("code") != "service_unavailable" || a.header.Get("Retry-After") == "" {
		t.Errorf("generate under outage: %d %v", a.status, a.body)
	}
	if a := c.call(http.MethodGet, "/v1/models?limit=1", nil); a.status != 200 {
		t.Errorf("catalog under outage: %d", a.status)
	}
	emu.SetScenario("default")
	if a := c.generate(fox(), "k2"); a.status != http.StatusAccepted {
		t.Errorf("generate back on default: %d %v", a.status, a.body)
	}

	// A scenario file is read here and sent inline, named after the file.
	path := filepath.Join(t.TempDir(), "teapot.yaml")
	doc := "description: catalog down\nfaults:\n  - match: {method: GET, path: /v1/models}\n    status: 502\n    code: bad_gateway\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	emu.SetScenario(path)
	if a := c.call(http.MethodGet, "/v1/models", nil); a.status != 502 || a.str("code") != "bad_gateway" {
		t.Errorf("GET /v1/models under %s: %d %v", path, a.status, a.body)
	}
	if sc := newClient(t, emu, "").call(http.MethodGet, "/_emulator/scenario", nil); sc.str("name") != "teapot" {
		t.Errorf("scenario in force = %v, want teapot", sc.body)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	c := newClient(t, emu, emu.Keys.All)
	job := c.generate(fox(), "k1")
	emu.SetCredits(emu.Accounts.Poor, 0)
	emu.Advance(time.Hour)
	emu.SetScenario("outage")
	emu.AddFault(api.Perturbation{Match: api.FaultMatch{Path: "/v1/models/categories"}, Status: 500})

	emu.Reset()
	if now := emu.Now(); !now.Equal(emulator.ManualStart) {
		t.Errorf("clock after Reset: %v", now)
	}
	if a := c.call(http.MethodGet, "/v1/jobs/"+job.str("id"), nil); a.status != http.StatusNotFound {
		t.Errorf("job after Reset: %d", a.status)
	}
	if bal := balance(t, emu, emu.Accounts.Poor); bal.Available != 10 {
		t.Errorf("acct_poor after Reset: %+v", bal)
	}
	if bal := balance(t, emu, emu.Accounts.All); bal.Available != 1_000_000 || bal.Charged != 0 {
		t.Errorf("acct_all after Reset: %+v", bal)
	}
	if n := len(emu.Requests()); n != 1 {
		t.Errorf("journal after Reset: %d entries, want only the GET just made", n)
	}
	if a := c.call(http.MethodGet, "/v1/models/categories", nil); a.status != 200 {
		t.Errorf("fault survived Reset: %d", a.status)
	}
	if a := c.generate(fox(), "k1"); a.status != http.StatusAccepted {
		t.Errorf("generate after Reset (scenario back to default, key forgotten): %d %v", a.status, a.body)
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	t.Run("WithScenario", func(t *testing.T) {
		t.Parallel()
		emu := emulatortest.Start(t, emulatortest.WithScenario("outage"))
		if a := newClient(t, emu, emu.Keys.All).generate(fox(), "k1"); a.status != 503 {
			t.Errorf("generate: %d", a.status)
		}
	})
	t.Run("WithCatalog", func(t *testing.T) {
		t.Parallel()
		emu := emulatortest.Start(t, emulatortest.WithCatalog("../../testdata/catalogs/small.yaml"))
		if emu.Keys != (emulatortest.Keys{}) || emu.Accounts != (emulatortest.Accounts{}) {
			t.Errorf("Keys = %+v, Accounts = %+v; want empty with another catalog", emu.Keys, emu.Accounts)
		}
		a := newClient(t, emu, "key_a").call(http.MethodGet, "/v1/models/test/pixel", nil)
		if a.status != 200 {
			t.Errorf("GET test/pixel: %d %v", a.status, a.body)
		}
		emu.SetCredits("acct_b", 7)
		if b := balance(t, emu, "acct_b"); b.Available != 7 {
			t.Errorf("acct_b = %+v", b)
		}
	})
	t.Run("WithSeed", func(t *testing.T) {
		t.Parallel()
		ids := func() [2]string {
			emu := emulatortest.Start(t, emulatortest.WithSeed(42))
			job := newClient(t, emu, emu.Keys.All).generate(fox(), "k1")
			return [2]string{job.str("quote_id"), job.str("id")}
		}
		if a, b := ids(), ids(); a != b || a[0] == "" {
			t.Errorf("same seed, different ids: %v and %v", a, b)
		}
	})
	t.Run("WithQuoteTTL", func(t *testing.T) {
		t.Parallel()
		emu := emulatortest.Start(t, emulatortest.WithQuoteTTL(time.Minute))
		c := newClient(t, emu, emu.Keys.All)
		a := c.call(http.MethodPost, "/v1/quotes", map[string]any{"model": model, "input": fox()})
		if want := "2026-01-01T00:01:00Z"; a.str("expires_at") != want {
			t.Errorf("expires_at = %q, want %q", a.str("expires_at"), want)
		}
		emu.Advance(time.Minute + time.Millisecond) // valid until expires_at, invalid after it
		g := c.call(http.MethodPost, "/v1/generate", map[string]any{"model": model, "input": fox(), "quote_id": a.str("quote_id")}, "Idempotency-Key", "k1")
		if g.status != 422 || g.str("code") != "quote_expired" {
			t.Errorf("generate after the TTL: %d %v", g.status, g.body)
		}
	})
	t.Run("WithStartTime", func(t *testing.T) {
		t.Parallel()
		at := time.Date(2030, 6, 1, 8, 0, 0, 0, time.UTC)
		emu := emulatortest.Start(t, emulatortest.WithStartTime(at))
		if !emu.Now().Equal(at) {
			t.Errorf("Now() = %v, want %v", emu.Now(), at)
		}
	})
	t.Run("WithMaxWait", func(t *testing.T) {
		t.Parallel()
		emu := emulatortest.Start(t, emulatortest.WithMaxWait(50*time.Millisecond))
		c := newClient(t, emu, emu.Keys.All)
		input := fox()
		q := c.quote(input)
		a := c.call(http.MethodPost, "/v1/generate?wait=true", map[string]any{"model": model, "input": input, "quote_id": q}, "Idempotency-Key", "k1")
		if a.status != http.StatusAccepted || a.header.Get("Location") == "" {
			t.Errorf("wait=true past the max wait: %d %v", a.status, a.body)
		}
	})
	t.Run("WithSkipClock", func(t *testing.T) {
		t.Parallel()
		emu := emulatortest.Start(t, emulatortest.WithManualClock(), emulatortest.WithSkipClock())
		if h := newClient(t, emu, "").call(http.MethodGet, "/_emulator/health", nil); h.str("clock") != "skip" {
			t.Errorf("health: %v", h.body)
		}
	})
	t.Run("WithRealClock", func(t *testing.T) {
		t.Parallel()
		emu := emulatortest.Start(t, emulatortest.WithRealClock())
		if h := newClient(t, emu, "").call(http.MethodGet, "/_emulator/health", nil); h.str("clock") != "real" {
			t.Errorf("health: %v", h.body)
		}
		before := emu.Now()
		emu.Advance(time.Hour)
		if d := emu.Now().Sub(before); d < time.Hour {
			t.Errorf("Advance(1h) on a real clock moved it %v", d)
		}
	})
	t.Run("WithManualClock", func(t *testing.T) {
		t.Parallel()
		emu := emulatortest.Start(t, emulatortest.WithRealClock(), emulatortest.WithManualClock())
		if h := newClient(t, emu, "").call(http.MethodGet, "/_emulator/health", nil); h.str("clock") != "manual" {
			t.Errorf("health: %v", h.body)
		}
	})
	t.Run("WithAdminToken", func(t *testing.T) {
		t.Parallel()
		emu := emulatortest.Start(t, emulatortest.WithAdminToken("s3cret"))
		emu.Advance(time.Second) // the control methods send the token
		emu.SetCredits(emu.Accounts.Poor, 1)
		if a := newClient(t, emu, "").call(http.MethodGet, "/_emulator/clock", nil); a.status < 400 || a.str("code") != "admin_token_required" {
			t.Errorf("control API without the token: %d %v", a.status, a.body)
		}
	})
}

// TestWithLogger reads the log once the emulator is shut down, so every line is written.
func TestWithLogger(t *testing.T) {
	t.Parallel()
	var buf syncbuf.Buffer
	t.Run("serve", func(t *testing.T) {
		emu := emulatortest.Start(t, emulatortest.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		newClient(t, emu, emu.Keys.All).call(http.MethodGet, "/v1/models/categories", nil)
	})
	if !strings.Contains(buf.String(), "/v1/models/categories") {
		t.Errorf("log does not mention the request:\n%s", buf.String())
	}
}

// fakeTB records Fatalf and stops the caller with a panic, as FailNow stops a test.
type fakeTB struct {
	emulatortest.Standalone
	fatal string
}

type stopped struct{}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(stopped{})
}

// fatal runs fn against a fakeTB and returns the message it ended with.
func fatal(fn func(tb *fakeTB)) (msg string) {
	tb := &fakeTB{}
	defer tb.Close()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopped); !ok {
				panic(r)
			}
		}
		msg = tb.fatal
	}()
	fn(tb)
	return ""
}

func TestFailuresEndTheTest(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t)
	cases := []struct {
		name string
		fn   func(tb *fakeTB)
		want string
	}{
		{"unknown scenario option", func(tb *fakeTB) { emulatortest.Start(tb, emulatortest.WithScenario("nope")) }, `no scenario "nope"`},
		{"missing catalog", func(tb *fakeTB) { emulatortest.Start(tb, emulatortest.WithCatalog("no/such.yaml")) }, "no/such.yaml: no such file"},
		{"unknown scenario", func(tb *fakeTB) { emu.For(tb).SetScenario("nope") }, "scenario_not_found"},
		{"bad scenario file", func(tb *fakeTB) {
			path := filepath.Join(t.TempDir(), "bad.yaml")
			_ = os.WriteFile(path, []byte("faults:\n  - match: {path: /v1/models}\n    colour: red\n"), 0o644)
			emu.For(tb).SetScenario(path)
		}, "bad.yaml:3:"},
		{"clock backwards", func(tb *fakeTB) { emu.For(tb).SetTime(emulator.ManualStart.Add(-time.Hour)) }, "invalid_clock_change"},
		{"negative advance", func(tb *fakeTB) { emu.For(tb).Advance(-time.Second) }, "only moves forward"},
		{"AwaitWaiting on a skipping clock", func(tb *fakeTB) { emu.For(tb).AwaitWaiting(1) }, "the clock skips"},
		{"unknown job", func(tb *fakeTB) { emu.For(tb).ForceComplete("no-such-job") }, "job_not_found"},
		{"unknown account", func(tb *fakeTB) { emu.For(tb).SetCredits("acct_nobody", 1) }, "account_not_found"},
		{"bad fault", func(tb *fakeTB) { emu.For(tb).AddFault(api.Perturbation{Status: 200}) }, "invalid_request"},
		{"two filters", func(tb *fakeTB) { emu.For(tb).Requests(emulatortest.Pattern{}, emulatortest.Pattern{}) }, "at most one"},
	}
	for _, tc := range cases {
		if got := fatal(tc.fn); !strings.Contains(got, tc.want) {
			t.Errorf("%s: Fatalf(%q), want it to contain %q", tc.name, got, tc.want)
		}
	}
	// The failures went to the fakes; this emulator still works.
	emu.Advance(time.Second)
}

func TestStandaloneRunsCleanupsLastFirst(t *testing.T) {
	t.Parallel()
	var tb emulatortest.Standalone
	var order []int
	tb.Cleanup(func() { order = append(order, 1) })
	tb.Cleanup(func() {
		order = append(order, 2)
		tb.Cleanup(func() { order = append(order, 3) }) // registered while closing: still runs
	})
	tb.Close()
	tb.Close()
	if fmt.Sprint(order) != "[2 3 1]" {
		t.Errorf("cleanups ran in order %v", order)
	}
}

// The forward-compatibility mode, from a scenario file given at the start: polls see a job go
// through preparing, every answer carries the member, and the harness reads the journal, the
// job and coverage as it does without the mode.
func TestEvolutionScenario(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "evolving.yaml")
	if err := os.WriteFile(path, []byte("evolution: {members: true, status: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	emu := emulatortest.Start(t, emulatortest.WithScenario(path), emulatortest.WithSkipClock())
	c := newClient(t, emu, emu.Keys.All)
	job := c.generate(fox(), "k1")
	var member string
	for k := range job.body {
		if strings.HasPrefix(k, "x_mg_") {
			member = k
		}
	}
	if job.status != http.StatusAccepted || member == "" {
		t.Fatalf("generate: %d %v", job.status, job.body)
	}
	var seen []string
	for len(seen) == 0 || (seen[len(seen)-1] != "succeeded" && len(seen) < 10) {
		got := c.job(job.str("id"))
		if _, ok := got.body[member]; !ok {
			t.Errorf("a poll without %s: %v", member, got.body)
		}
		seen = append(seen, got.str("status"))
	}
	if strings.Join(seen, " ") != "preparing running succeeded" {
		t.Errorf("polls saw %v", seen)
	}
	if got := emu.Job(job.str("id")); got.Status != "succeeded" || got.CreditStatus != "charged" {
		t.Errorf("the harness's job: %+v", got)
	}
	if n := len(emu.Requests(emulatortest.Pattern{Path: "/v1/jobs/*"})); n != len(seen) {
		t.Errorf("the journal has %d polls, want %d", n, len(seen))
	}
}
