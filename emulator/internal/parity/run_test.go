package parity

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

func smallCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	path := filepath.Join("..", "..", "..", "testdata", "catalogs", "small.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// problemServer answers every request with the same problem, as a service that refuses all
// would: its shape is all a parity run compares.
var problemServer = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"type":"about:blank","status":404,"code":"not_found","detail":"no"}`))
})

// TestRunWaitsOutAnUnexpectedRateLimit: a 429 the case does not expect is waited out for its
// Retry-After and the request sent again, and the wait goes through the run's sleep; the
// live service gets no request sooner than the rate allows.
func TestRunWaitsOutAnUnexpectedRateLimit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	limited := false
	var sent []time.Time
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var slept time.Duration
	live := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, now)
		first := !limited && r.URL.Path == "/v1/jobs"
		limited = limited || first
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "7")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"code":"rate_limited"}`))
			return
		}
		problemServer(w, r)
	})
	srv, err := importer.ServeLoopback(live)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	res, err := Run(context.Background(), Options{From: srv.URL, Key: "k", Catalog: smallCatalog(t), CatalogName: "small", Emulator: problemServer, Rate: 4,
		sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			now, slept = now.Add(d), slept+d
			return nil
		},
		now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	if !limited {
		t.Fatal("the 429 was never sent")
	}
	if res.Summary.Differs != 0 || res.Summary.Same == 0 {
		t.Errorf("summary %+v: the request limited once should have been tried again and answered alike", res.Summary)
	}
	for i := 1; i < len(sent); i++ {
		if d := sent[i].Sub(sent[i-1]); d < time.Second/4 {
			t.Fatalf("request %d went %v after the one before, sooner than 4 a second allows", i, d)
		}
	}
	if want := time.Duration(len(sent)-1)*time.Second/4 + 7*time.Second - time.Second/4; slept != want {
		t.Errorf("slept %v in all; want %v: the pace, and the 7s Retry-After in place of one pause", slept, want)
	}
}

// TestRunChoosesModelsTheLiveServiceHas: the models named are the catalog's that the live
// listing shows (ready) or describes as not ready; one it does not have is never named.
func TestRunChoosesModelsTheLiveServiceHas(t *testing.T) {
	t.Parallel()
	cat := smallCatalog(t)
	var mu sync.Mutex
	var paths []string
	live := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		switch r.URL.Path {
		case "/v1/models":
			if r.URL.Query().Get("limit") == "500" {
				w.Header().Set("Content-Type", "application/json")
				// Only the catalog's second ready model is live.
				_, _ = w.Write([]byte(`{"data":[{"id":"test/reel"}]}`))
				return
			}
		case "/v1/models/test/legacy":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"test/legacy","status":"deprecated"}`))
			return
		}
		problemServer(w, r)
	})
	srv, err := importer.ServeLoopback(live)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	res, err := Run(context.Background(), Options{From: srv.URL + "/", Key: "k", Catalog: cat, CatalogName: "small", Emulator: problemServer, Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ready, unready string
	for _, m := range cat.Models {
		switch {
		case m.ID == "test/reel" && m.Status == catalog.StatusReady:
			ready = m.ID
		case m.Status != catalog.StatusReady:
			unready = m.ID
		}
	}
	if ready == "" || unready != "test/legacy" {
		t.Fatalf("the small catalog changed: ready %q, unready %q", ready, unready)
	}
	joined := strings.Join(paths, "\n")
	if strings.Contains(joined, "test/pixel") {
		t.Errorf("a model the live service does not list was named:\n%s", joined)
	}
	if !strings.Contains(joined, "GET /v1/models/test/reel") {
		t.Errorf("the live model was not named:\n%s", joined)
	}
	for _, c := range res.Cases {
		if c.Case == "POST /v1/quotes 409 model_unavailable" && c.Result != Same {
			t.Errorf("%s: %+v", c.Case, c)
		}
	}
}

// TestPlanWithoutModels: with no model to name, the cases that need one say why, and the
// others are still planned.
func TestPlanWithoutModels(t *testing.T) {
	t.Parallel()
	plan := Plan(Models{NoReady: "no ready model", NoUnready: "no unready model"}, Lacking{}, Fresh)
	for _, p := range plan {
		switch p.Case {
		case "POST /v1/quotes 422 invalid_input":
			if p.Request != nil || p.Reason == "" {
				t.Errorf("%s: %+v", p.Case, p)
			}
		case "POST /v1/quotes 404 model_not_found":
			if p.Request == nil || !strings.Contains(p.Request.Body, `"parity-missing-`) {
				t.Errorf("%s: %+v", p.Case, p)
			}
		case "POST /v1/generate 404 quote_not_found":
			if p.Request != nil || p.Reason != "no ready model" {
				t.Errorf("%s: %+v", p.Case, p)
			}
		case "POST /v1/quotes 409 model_unavailable":
			if p.Request != nil || p.Reason != "no unready model" {
				t.Errorf("%s: %+v", p.Case, p)
			}
		case "GET /v1/models 403 permission_denied", "POST /v1/quotes 403 permission_denied":
			if p.Request != nil || !strings.Contains(p.Reason, "-only-key") {
				t.Errorf("%s without keys lacking a permission: %+v", p.Case, p)
			}
		case "GET /v1/models/{model} 401 unauthenticated", "GET /v1/models/{model} 404 model_not_found":
			if p.Request == nil || !strings.HasPrefix(p.Request.Path, "/v1/models/parity-") {
				t.Errorf("%s: %+v", p.Case, p)
			}
		}
	}
}

// fakeTime is a clock that moves only when the run sleeps, and the sleeps it was asked for.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (f *fakeTime) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.sleeps = append(f.sleeps, d)
	return ctx.Err()
}

func (f *fakeTime) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// elapsed is the time the sleeps took in all, and the longest of them.
func (f *fakeTime) elapsed() (total, longest time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.sleeps {
		total, longest = total+d, max(longest, d)
	}
	return total, longest
}

// outage is a live service that answers every request 503 with the Retry-After given.
func outage(t *testing.T, retryAfter string) (url string, requests func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv, err := importer.ServeLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		w.Header().Set("Retry-After", retryAfter)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"type":"about:blank","status":503,"code":"service_unavailable","detail":"down for maintenance"}`))
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv.URL, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// smallEmulator is the Emulator of the parity command over the small catalog, answering as
// problemServer does.
func smallEmulator(t *testing.T) Emulator {
	return func(string) (http.Handler, *catalog.Catalog, string, func(), error) {
		return problemServer, smallCatalog(t), "small", func() {}, nil
	}
}

// TestRunAgainstAnOutage: a live service that answers every request 503 with Retry-After: 30
// gets one wait of 30s (the whole budget) and no more; every case it answered is reported
// unavailable, in the text, the JSON and the markdown, not compared and not recorded, and the
// command exits 1 naming them. At the default rate the run would have taken under a minute.
func TestRunAgainstAnOutage(t *testing.T) {
	t.Parallel()
	url, requests := outage(t, "30")
	ft := &fakeTime{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	out, md, rec := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md"), filepath.Join(dir, "rec")
	var stdout, stderr strings.Builder
	code := runMain(context.Background(), []string{"--from", url, "--key", "k", "--out", out, "--markdown", md, "--record", rec},
		func(string) string { return "" }, &stdout, &stderr, smallEmulator(t), ft.sleep, ft.clock)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	total, longest := ft.elapsed()
	if total >= time.Minute || longest > maxRetryWait {
		t.Errorf("the run would have taken %v, its longest wait %v: want under a minute, no wait over %v", total, longest, maxRetryWait)
	}
	retried := time.Duration(0)
	for _, d := range ft.sleeps {
		if d > time.Second { // longer than the pace at 2 a second: a Retry-After wait
			retried += d
		}
	}
	if retried != retryBudget {
		t.Errorf("waited %v on Retry-After in all; want the budget, %v, once", retried, retryBudget)
	}

	var res Result
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, c := range res.Cases {
		switch c.Result {
		case Unavailable:
			sent++
			if !strings.Contains(c.Reason, "503 service_unavailable") || len(c.Differences) != 0 || c.Request == "" {
				t.Errorf("%s: %+v", c.Case, c)
			}
			if !strings.Contains(stdout.String(), "unavailable    "+c.Case+": the live service answered 503") ||
				!strings.Contains(stderr.String(), c.Case) {
				t.Errorf("%s is not named as unavailable in the output", c.Case)
			}
			if !strings.Contains(readFile(t, md), "| `"+c.Case+"` | **unavailable** |") {
				t.Errorf("%s is not in the markdown as unavailable", c.Case)
			}
		case NotProvokable:
		default:
			t.Errorf("%s: %s, during an outage", c.Case, c.Result)
		}
	}
	if sent == 0 || res.Summary.Unavailable != sent || res.Summary.Same+res.Summary.Differs != 0 {
		t.Errorf("summary %+v with %d cases sent", res.Summary, sent)
	}
	// One request a case, one more for the case that waited, the listing and the probes.
	if n := requests(); n > sent+1+1+unreadyProbes {
		t.Errorf("%d live requests for %d cases", n, sent)
	}
	if files, _ := os.ReadDir(rec); len(files) != 0 {
		t.Errorf("%d outage answers recorded as the cases' answers", len(files))
	}
	if !strings.Contains(stdout.String(), "unavailable live (not compared)") {
		t.Errorf("the counts do not say so:\n%s", stdout.String())
	}
}

// TestRunWaitsWithinItsBudget: an outage that asks for short waits is waited out only until
// the run's budget is spent; each case after that is reported at once.
func TestRunWaitsWithinItsBudget(t *testing.T) {
	t.Parallel()
	url, _ := outage(t, "7")
	ft := &fakeTime{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	res, err := Run(context.Background(), Options{From: url, Key: "k", Catalog: smallCatalog(t), CatalogName: "small", Emulator: problemServer,
		sleep: ft.sleep, now: ft.clock})
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	for _, d := range ft.sleeps {
		if d > time.Second {
			waits = append(waits, d)
		}
	}
	// 7s fits four times in 30s; the first case waits twice (three tries), the second twice.
	if len(waits) != 4 {
		t.Errorf("Retry-After waits %v; want four of 7s within the 30s budget", waits)
	}
	if res.Summary.Unavailable == 0 || res.Summary.Same+res.Summary.Differs != 0 || !res.Failed() {
		t.Errorf("summary %+v", res.Summary)
	}
	var last CaseResult
	for _, c := range res.Cases {
		if c.Result == Unavailable {
			last = c
		}
	}
	if !strings.Contains(last.Reason, "asking to wait 7s, past the 30s a run waits in all") {
		t.Errorf("a case after the budget was spent: %+v", last)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
