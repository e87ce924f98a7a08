package parity

import (
	"context"
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
