package emulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// simServer is an emulator over the default catalog on a manual clock.
func simServer(t testing.TB, cfg Config, wire ...func(*sim.Config)) *Server {
	t.Helper()
	cfg.ManualClock = true
	s, err := newServer(cfg, func(c *sim.Config) {
		for _, w := range wire {
			w(c)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	<-s.Ready()
	return s
}

var schnell = map[string]any{"prompt": "a lighthouse at dawn"}

const schnellID = "fal-ai/flux/schnell"

// The statistical tests run many jobs; a one-second speech clip is the cheapest output to make.
const speechID = "fal-ai/elevenlabs/tts/turbo-v2.5"

var speech = map[string]any{"text": "Hello."}

// startGeneration quotes and generates one job, returning the generate response.
func startGeneration(t testing.TB, s http.Handler, key, idem, model string, input map[string]any, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	q := quote(t, s, key, model, input)
	return call(t, s, "POST", "/v1/generate", key, map[string]any{"model": model, "input": input, "quote_id": q.QuoteID}, append([]string{"Idempotency-Key", idem}, headers...)...)
}

func control(t testing.TB, s http.Handler, method, path string, body any) *httptest.ResponseRecorder {
	t.Helper()
	return call(t, s, method, path, "", body)
}

func jobOf(t testing.TB, s http.Handler, id string) api.Job {
	t.Helper()
	rec := call(t, s, "GET", "/v1/jobs/"+id, "mg_test_all", nil)
	if rec.Code != 200 {
		t.Fatalf("get job: %d %s", rec.Code, rec.Body)
	}
	return decode[api.Job](t, rec)
}

func TestForcedOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, header, token string
		status, code        string
		credit              string
		startedNil          bool
	}{
		{"succeed by header", "succeed", "", "succeeded", "", "charged", false},
		{"fail by header", "fail", "", "failed", "generation_failed", "refunded", false},
		{"content policy by header", "content_policy", "", "failed", "content_policy_violation", "refunded", false},
		{"expire by header", "expire", "", "expired", "queue_timeout", "refunded", true},
		{"fail by token", "", "fail", "failed", "generation_failed", "refunded", false},
		{"content policy by token", "", "content_policy", "failed", "content_policy_violation", "refunded", false},
		{"expire by token", "", "expire", "expired", "queue_timeout", "refunded", true},
		{"header beats token", "succeed", "fail", "succeeded", "", "charged", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// Under flaky, the forced outcome must still win over the scenario's draw.
			s := simServer(t, Config{Scenario: "flaky", Seeded: true, Seed: 3})
			control(t, s, "DELETE", "/_emulator/faults?source=all", nil)
			input := map[string]any{"prompt": "a lighthouse"}
			if c.token != "" {
				input["prompt"] = "a lighthouse [emulator:" + c.token + "]"
			}
			var headers []string
			if c.header != "" {
				headers = []string{"X-Emulator-Outcome", c.header}
			}
			rec := startGeneration(t, s, "mg_test_all", "forced", schnellID, input, headers...)
			if rec.Code != 202 {
				t.Fatalf("generate: %d %s", rec.Code, rec.Body)
			}
			id := decode[api.Job](t, rec).ID
			control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "1h"})
			job := jobOf(t, s, id)
			code := ""
			if job.Error != nil {
				code = job.Error.Code
			}
			if string(job.Status) != c.status || code != c.code || job.CreditStatus != c.credit || (job.StartedAt == nil) != c.startedNil {
				t.Errorf("job = %s %q %s started %v, want %s %q %s", job.Status, code, job.CreditStatus, job.StartedAt, c.status, c.code, c.credit)
			}
			b, _ := s.world().Ledger().Balance("acct_all")
			if b.Held != 0 || (c.credit == "charged") != (b.Charged == job.Credits) || b.Total() != 1_000_000 {
				t.Errorf("ledger = %+v", b)
			}
		})
	}
}

func TestSlowOutcomeOutlastsTheWait(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{MaxWait: 10 * time.Second})
	done := make(chan *httptest.ResponseRecorder, 1)
	q := quote(t, s, "mg_test_all", schnellID, schnell)
	go func() {
		done <- call(t, s, "POST", "/v1/generate?wait=true", "mg_test_all", map[string]any{"model": schnellID, "input": schnell, "quote_id": q.QuoteID}, "Idempotency-Key", "slow", "X-Emulator-Outcome", "slow")
	}()
	waitUntilWaiting(t, s, 1)
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "10s"})
	rec := <-done
	if rec.Code != 202 {
		t.Fatalf("slow wait: %d %s", rec.Code, rec.Body)
	}
	id := decode[api.Job](t, rec).ID
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "1m"})
	if job := jobOf(t, s, id); job.Status != "running" {
		t.Errorf("slow job before max-wait + 1m + its queue time: %s", job.Status)
	}
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "1s"})
	if job := jobOf(t, s, id); job.Status != "succeeded" {
		t.Errorf("slow job after max-wait + 1m + its queue time: %s", job.Status)
	}
}

func TestBadDirectives(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	for _, c := range []struct {
		input   map[string]any
		headers []string
		status  int
		code    string
	}{
		{schnell, []string{"X-Emulator-Outcome", "explode"}, 400, "invalid_parameter"},
		{schnell, []string{"X-Emulator-Scenario", "nope"}, 400, "invalid_parameter"},
	} {
		rec := startGeneration(t, s, "mg_test_all", "bad", schnellID, c.input, c.headers...)
		if p := decode[problemJSON](t, rec); rec.Code != c.status || p.Code != c.code {
			t.Errorf("%v %v: %d %s", c.input, c.headers, rec.Code, rec.Body)
		}
	}
	// A token naming no outcome is refused as soon as it is quoted.
	rec := call(t, s, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": map[string]any{"prompt": "x [emulator:explode]"}})
	if p := decode[problemJSON](t, rec); rec.Code != 422 || p.Code != "invalid_input" || p.Errors[0].Pointer != "/input/prompt" {
		t.Errorf("bad token: %d %s", rec.Code, rec.Body)
	}
	if b, _ := s.world().Ledger().Balance("acct_all"); b.Held != 0 || b.Available != 1_000_000 {
		t.Errorf("failed directives moved credits: %+v", b)
	}
}

func TestScenarioHeaderAppliesToOneGeneration(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	slow := decode[api.Job](t, startGeneration(t, s, "mg_test_all", "one", schnellID, schnell, "X-Emulator-Scenario", "slow"))
	fast := decode[api.Job](t, startGeneration(t, s, "mg_test_all", "two", schnellID, schnell))
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "10s"})
	if got := jobOf(t, s, slow.ID); got.Status != "running" {
		t.Errorf("job under slow: %s", got.Status)
	}
	if got := jobOf(t, s, fast.ID); got.Status != "succeeded" {
		t.Errorf("job under default: %s", got.Status)
	}
}

// outcomes runs n generations of one model and counts their statuses and error codes.
func outcomes(t *testing.T, s *Server, model string, input map[string]any, n int) (map[string]int, map[string]int) {
	t.Helper()
	var ids []string
	for i := range n {
		rec := startGeneration(t, s, "mg_test_all", fmt.Sprint("k", i), model, input)
		if rec.Code != 202 {
			t.Fatalf("generate %d: %d %s", i, rec.Code, rec.Body)
		}
		ids = append(ids, decode[api.Job](t, rec).ID)
	}
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "24h"})
	statuses, codes := map[string]int{}, map[string]int{}
	for _, id := range ids {
		job := jobOf(t, s, id)
		statuses[string(job.Status)]++
		if job.Error != nil {
			codes[job.Error.Code]++
		}
	}
	return statuses, codes
}

func TestScenariosBehaveAsTheyClaim(t *testing.T) {
	t.Parallel()
	t.Run("default always succeeds fast", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{Seeded: true, Seed: 1})
		rec := startGeneration(t, s, "mg_test_all", "d", schnellID, schnell)
		control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "2s"})
		if job := jobOf(t, s, decode[api.Job](t, rec).ID); job.Status != "succeeded" {
			t.Errorf("default: %s", job.Status)
		}
		statuses, _ := outcomes(t, s, speechID, speech, 50)
		if statuses["succeeded"] != 50 {
			t.Errorf("default outcomes %v", statuses)
		}
	})
	t.Run("flaky fails a quarter with varied codes", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{Scenario: "flaky", Seeded: true, Seed: 1})
		control(t, s, "DELETE", "/_emulator/faults?source=all", nil) // counted separately below
		statuses, codes := outcomes(t, s, speechID, speech, 160)
		if f := statuses["failed"]; f < 24 || f > 56 {
			t.Errorf("flaky failed %d of 160, want about 40: %v", f, statuses)
		}
		if len(codes) < 3 {
			t.Errorf("flaky codes %v, want variety", codes)
		}
	})
	t.Run("flaky answers some requests with 503 and 429", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{Scenario: "flaky", Seeded: true, Seed: 2})
		seen := map[int]int{}
		for i := range 200 {
			q := call(t, s, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": speechID, "input": speech})
			seen[q.Code]++
			if q.Code != 200 {
				continue
			}
			rec := call(t, s, "POST", "/v1/generate", "mg_test_all", map[string]any{"model": speechID, "input": speech, "quote_id": decode[quoteBody](t, q).QuoteID}, "Idempotency-Key", fmt.Sprint("f", i))
			seen[rec.Code]++
			if rec.Code == 429 || rec.Code == 503 {
				if rec.Header().Get("Retry-After") == "" {
					t.Errorf("%d without Retry-After", rec.Code)
				}
			}
		}
		if seen[503] == 0 || seen[429] == 0 || seen[202] == 0 {
			t.Errorf("flaky codes %v", seen)
		}
	})
	t.Run("realistic videos take minutes", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{Scenario: "realistic", Seeded: true, Seed: 1})
		video := "fal-ai/kling-video/v2.1/master/text-to-video"
		if _, ok := s.catalog.Model(video); !ok {
			t.Skip("no kling model in the default catalog")
		}
		input := exampleInput(t, s, video)
		rec := startGeneration(t, s, "mg_test_all", "v", video, input, "X-Emulator-Outcome", "succeed")
		id := decode[api.Job](t, rec).ID
		control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "40s"})
		if job := jobOf(t, s, id); job.Status != "queued" && job.Status != "running" {
			t.Errorf("realistic video done within 40s: %s", job.Status)
		}
		control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "8m"})
		if job := jobOf(t, s, id); job.Status != "succeeded" {
			t.Errorf("realistic video after 8m40s: %s", job.Status)
		}
	})
	t.Run("slow outlasts the wait", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{Scenario: "slow"})
		rec := startGeneration(t, s, "mg_test_all", "s", schnellID, schnell)
		id := decode[api.Job](t, rec).ID
		control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "180s"})
		if job := jobOf(t, s, id); job.Status != "running" {
			t.Errorf("slow job at the wait limit: %s", job.Status)
		}
	})
	t.Run("expiring quotes and queues", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{Scenario: "expiring", Seeded: true, Seed: 1})
		q := quote(t, s, "mg_test_all", schnellID, schnell)
		if q.ExpiresAt != "2026-01-01T00:00:30Z" {
			t.Errorf("quote expires %s, want in 30s", q.ExpiresAt)
		}
		statuses, codes := outcomes(t, s, speechID, speech, 120)
		if e := statuses["expired"]; e < 25 || e > 60 || codes["queue_timeout"] != e {
			t.Errorf("expiring: %v %v", statuses, codes)
		}
	})
	t.Run("outage refuses generation only", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{Scenario: "outage"})
		rec := startGeneration(t, s, "mg_test_all", "o", schnellID, schnell)
		if p := decode[problemJSON](t, rec); rec.Code != 503 || p.Code != "service_unavailable" || rec.Header().Get("Retry-After") != "30" {
			t.Errorf("outage generate: %d %s %v", rec.Code, rec.Body, rec.Header())
		}
		if rec := call(t, s, "GET", "/v1/models", "mg_test_all", nil); rec.Code != 200 {
			t.Errorf("outage list: %d", rec.Code)
		}
	})
	t.Run("rate-limited", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{Scenario: "rate-limited"})
		var last *httptest.ResponseRecorder
		for i := range 6 {
			last = startGeneration(t, s, "mg_test_all", fmt.Sprint("r", i), schnellID, schnell)
			if i < 5 && last.Code != 202 {
				t.Fatalf("generation %d: %d %s", i, last.Code, last.Body)
			}
		}
		h := last.Header()
		if p := decode[problemJSON](t, last); last.Code != 429 || p.Code != "rate_limited" || h.Get("Retry-After") != "60" || h.Get("X-RateLimit-Limit") != "5" || h.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("sixth generation: %d %s %v", last.Code, last.Body, h)
		}
		// Another key has its own budget; the next window opens a minute later.
		if rec := startGeneration(t, s, "mg_test_generate", "other", schnellID, schnell); rec.Code != 202 {
			t.Errorf("other key: %d %s", rec.Code, rec.Body)
		}
		control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "1m"})
		if rec := startGeneration(t, s, "mg_test_all", "r-next", schnellID, schnell); rec.Code != 202 {
			t.Errorf("next window: %d %s", rec.Code, rec.Body)
		}
	})
}

// exampleInput returns the first schema example of a model.
func exampleInput(t testing.TB, s *Server, id string) map[string]any {
	t.Helper()
	m, _ := s.catalog.Model(id)
	var input map[string]any
	if err := json.Unmarshal(m.Examples[0], &input); err != nil {
		t.Fatal(err)
	}
	return input
}

// transcript drives a fixed sequence of requests and returns everything the emulator said,
// file bytes included.
func transcript(t *testing.T, seed int64) string {
	s := simServer(t, Config{Scenario: "flaky", Seeded: true, Seed: seed})
	var out strings.Builder
	record := func(rec *httptest.ResponseRecorder) {
		fmt.Fprintf(&out, "%d %s %s\n", rec.Code, rec.Header().Get("X-Request-Id"), rec.Body)
	}
	var ids []string
	for i := range 12 {
		input := map[string]any{"prompt": fmt.Sprint("scene ", i), "num_images": 1 + i%2, "image_size": "square", "output_format": "png"}
		model := "fal-ai/flux/schnell"
		q := call(t, s, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": model, "input": input})
		record(q)
		if q.Code != 200 {
			continue
		}
		rec := call(t, s, "POST", "/v1/generate", "mg_test_all", map[string]any{"model": model, "input": input, "quote_id": decode[quoteBody](t, q).QuoteID}, "Idempotency-Key", fmt.Sprint("t", i))
		record(rec)
		if rec.Code == 202 {
			ids = append(ids, decode[api.Job](t, rec).ID)
		}
	}
	record(control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "1h"}))
	for _, id := range ids {
		rec := call(t, s, "GET", "/v1/jobs/"+id, "mg_test_all", nil)
		record(rec)
		if rec.Code != 200 {
			continue // the flaky scenario injects faults here too
		}
		for _, o := range decode[api.Job](t, rec).Outputs {
			file := call(t, s, "GET", strings.TrimPrefix(o.URL, "http://example.com"), "", nil)
			sum := sha256.Sum256(file.Body.Bytes())
			fmt.Fprintf(&out, "file %s %d %s\n", o.URL, file.Code, hex.EncodeToString(sum[:]))
		}
	}
	return out.String()
}

func TestSeededRunsAreIdentical(t *testing.T) {
	t.Parallel()
	a, b := transcript(t, 99), transcript(t, 99)
	if a != b {
		t.Fatalf("two runs with seed 99 differ:\n%s\n---\n%s", a, b)
	}
	if c := transcript(t, 100); c == a {
		t.Error("seed 100 gave the same transcript as seed 99")
	}
	if !strings.Contains(a, "file ") || !strings.Contains(a, `"status":"failed"`) {
		t.Errorf("transcript lacks files or failures:\n%s", a)
	}
}

func TestFaultsOverRealHTTP(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func() (*http.Response, []byte, error) {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer mg_test_all")
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, body, err
	}
	add := func(f map[string]any) {
		if rec := control(t, s, "POST", "/_emulator/faults", f); rec.Code != 201 {
			t.Fatalf("add fault: %d %s", rec.Code, rec.Body)
		}
	}

	add(map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 502, "count": 2})
	for i := range 3 {
		resp, body, err := get()
		want := 502
		if i == 2 {
			want = 200
		}
		if err != nil || resp.StatusCode != want {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
		if i < 2 && !bytes.Contains(body, []byte(`"code":"fault_injected"`)) {
			t.Errorf("fault body %s", body)
		}
	}

	add(map[string]any{"match": map[string]any{"method": "GET"}, "action": "reset", "count": 1})
	if _, _, err := get(); err == nil {
		t.Error("reset: the request succeeded")
	} else if !strings.Contains(err.Error(), "reset") && !errors.Is(err, io.EOF) {
		t.Logf("reset seen as: %v", err)
	}

	add(map[string]any{"match": map[string]any{"path": "/v1/**"}, "action": "malformed", "count": 1})
	resp, body, err := get()
	var v any
	if err != nil || resp.StatusCode != 200 || json.Unmarshal(body, &v) == nil {
		t.Errorf("malformed: %v %s %v", resp, body, err)
	}

	add(map[string]any{"match": map[string]any{"path": "/v1/models"}, "action": "truncated", "count": 1})
	if _, _, err := get(); err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: err = %v, want unexpected EOF", err)
	}

	add(map[string]any{"match": map[string]any{"path": "/v1/models"}, "delay": "50ms", "count": 1})
	start := time.Now()
	if resp, _, err := get(); err != nil || resp.StatusCode != 200 || time.Since(start) < 50*time.Millisecond {
		t.Errorf("delay: %v %v after %v", resp, err, time.Since(start))
	}

	add(map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 500, "probability": 0})
	if resp, _, err := get(); err != nil || resp.StatusCode != 200 {
		t.Errorf("probability 0 fired: %v %v", resp, err)
	}

	list := decode[map[string][]api.Fault](t, control(t, s, "GET", "/_emulator/faults", nil))["data"]
	if len(list) != 6 || list[0].Fired != 2 || list[0].Remaining != 0 {
		t.Errorf("faults = %+v", list)
	}
	if rec := control(t, s, "DELETE", "/_emulator/faults", nil); rec.Code != 204 {
		t.Errorf("clear: %d", rec.Code)
	}
}

func TestFaultMatchesOnModel(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	control(t, s, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"model": "fal-ai/flux/**", "method": "POST"}, "status": 503, "retry_after": 3})
	if rec := call(t, s, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": schnell}); rec.Code != 503 || rec.Header().Get("Retry-After") != "3" {
		t.Errorf("flux quote: %d", rec.Code)
	}
	other := "fal-ai/recraft-v3"
	if m, ok := s.catalog.Model(other); ok && m.Ready() {
		if rec := call(t, s, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": other, "input": exampleInput(t, s, other)}); rec.Code != 200 {
			t.Errorf("other model quote: %d %s", rec.Code, rec.Body)
		}
	}
}

func TestControlAPIProtection(t *testing.T) {
	t.Parallel()
	token := simServer(t, Config{AdminToken: "s3cret"})
	if rec := control(t, token, "POST", "/_emulator/reset", nil); rec.Code != 401 || decode[problemJSON](t, rec).Code != "admin_token_required" {
		t.Errorf("no token: %d %s", rec.Code, rec.Body)
	}
	if rec := call(t, token, "POST", "/_emulator/reset", "", nil, headerAdminToken, "wrong"); rec.Code != 401 {
		t.Errorf("wrong token: %d", rec.Code)
	}
	if rec := call(t, token, "POST", "/_emulator/reset", "", nil, headerAdminToken, "s3cret"); rec.Code != 200 {
		t.Errorf("right token: %d %s", rec.Code, rec.Body)
	}
	if rec := control(t, token, "GET", "/_emulator/health", nil); rec.Code != 200 {
		t.Errorf("health with token set: %d", rec.Code)
	}
	off := simServer(t, Config{ControlDisabled: true})
	for _, path := range []string{"/_emulator/clock", "/_emulator/accounts", "/_emulator/requests", "/_emulator/faults", "/_emulator/scenario"} {
		if rec := control(t, off, "GET", path, nil); rec.Code != 403 || decode[problemJSON](t, rec).Code != "control_api_disabled" {
			t.Errorf("%s while disabled: %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec := control(t, off, "GET", "/_emulator/health", nil); rec.Code != 200 {
		t.Errorf("health while disabled: %d", rec.Code)
	}
}

func TestClockControl(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	rec := startGeneration(t, s, "mg_test_all", "c", schnellID, schnell)
	id := decode[api.Job](t, rec).ID
	// The advance returns after the job's transitions have happened.
	got := decode[map[string]string](t, control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "90s"}))
	if got["now"] != "2026-01-01T00:01:30Z" || got["mode"] != "manual" {
		t.Errorf("advance: %v", got)
	}
	if job := jobOf(t, s, id); job.Status != "succeeded" {
		t.Errorf("right after the advance: %s", job.Status)
	}
	for _, c := range []struct {
		body   any
		status int
		code   string
	}{
		{map[string]any{"set": "2026-01-01T02:00:00Z"}, 200, ""},
		{map[string]any{"set": "2025-01-01T00:00:00Z"}, 400, "invalid_clock_change"},
		{map[string]any{"advance": "-5s"}, 400, "invalid_clock_change"},
		{map[string]any{"advance": "soon"}, 400, "invalid_clock_change"},
		{map[string]any{"advance": "1s", "set": "2027-01-01T00:00:00Z"}, 400, "conflicting_control_input"},
		{map[string]any{}, 400, "conflicting_control_input"},
		{map[string]any{"jump": "1s"}, 422, "invalid_request"},
		// An empty or null member is refused, not read as left out: the clock must not move.
		{map[string]any{"advance": "", "set": "2027-01-01T00:00:00Z"}, 422, "invalid_request"},
		{map[string]any{"mode": "manual", "advance": nil}, 422, "invalid_request"},
		{map[string]any{"mode": ""}, 422, "invalid_request"},
		{"[]", 400, "invalid_json"},
	} {
		rec := control(t, s, "POST", "/_emulator/clock", c.body)
		if rec.Code != c.status || (c.code != "" && decode[problemJSON](t, rec).Code != c.code) {
			t.Errorf("%v: %d %s", c.body, rec.Code, rec.Body)
		}
	}
	if got := decode[map[string]string](t, control(t, s, "GET", "/_emulator/clock", nil)); got["now"] != "2026-01-01T02:00:00Z" {
		t.Errorf("clock = %v", got)
	}
}

func TestRealClockAdvanceAddsAnOffset(t *testing.T) {
	t.Parallel()
	s, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-s.Ready()
	before := time.Now()
	got := decode[map[string]string](t, control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "2h"}))
	now, _ := time.Parse(time.RFC3339Nano, got["now"])
	if got["mode"] != "real" || now.Sub(before) < 2*time.Hour || now.Sub(before) > 2*time.Hour+time.Minute {
		t.Errorf("real advance: %v", got)
	}
}

func TestResetRestoresEverything(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{Scenario: "default"})
	rec := startGeneration(t, s, "mg_test_all", "r", schnellID, schnell)
	id := decode[api.Job](t, rec).ID
	control(t, s, "PUT", "/_emulator/scenario", map[string]any{"name": "outage"})
	control(t, s, "PUT", "/_emulator/accounts/acct_poor", map[string]any{"credits": 5000})
	control(t, s, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/jobs"}, "status": 500})
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "3h"})
	if rec := control(t, s, "POST", "/_emulator/reset", nil); rec.Code != 200 {
		t.Fatalf("reset: %d", rec.Code)
	}
	if rec := call(t, s, "GET", "/v1/jobs/"+id, "mg_test_all", nil); rec.Code != 404 {
		t.Errorf("job after reset: %d", rec.Code)
	}
	if got := decode[map[string]any](t, control(t, s, "GET", "/_emulator/scenario", nil)); got["name"] != "default" {
		t.Errorf("scenario after reset: %v", got["name"])
	}
	if got := decode[map[string]string](t, control(t, s, "GET", "/_emulator/clock", nil)); got["now"] != "2026-01-01T00:00:00Z" {
		t.Errorf("clock after reset: %v", got)
	}
	if b, _ := s.world().Ledger().Balance("acct_poor"); b.Available != 10 {
		t.Errorf("poor after reset: %+v", b)
	}
	if rec := call(t, s, "GET", "/v1/jobs", "mg_test_all", nil); rec.Code != 200 {
		t.Errorf("fault survived reset: %d", rec.Code)
	}
	type list struct {
		Data []json.RawMessage `json:"data"`
	}
	if got := decode[list](t, control(t, s, "GET", "/_emulator/requests", nil)); len(got.Data) != 2 {
		t.Errorf("journal after reset has %d entries, want the two requests since", len(got.Data))
	}
}

func TestScenarioSwitching(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	for _, c := range []struct {
		body   any
		status int
		name   string
	}{
		{map[string]any{"name": "flaky"}, 200, "flaky"},
		{map[string]any{"name": "nope"}, 404, ""},
		{map[string]any{"scenario": map[string]any{"name": "mine", "defaults": map[string]any{"failure_rate": 1}}}, 200, "mine"},
		{map[string]any{"scenario": map[string]any{"defaults": map[string]any{"failure_rate": 2}}}, 422, ""},
		{map[string]any{"scenario": map[string]any{"bogus": 1}}, 422, ""},
		{map[string]any{}, 422, ""},
		{map[string]any{"name": ""}, 422, ""},
		{map[string]any{"name": nil, "scenario": map[string]any{"name": "z"}}, 422, ""},
	} {
		rec := control(t, s, "PUT", "/_emulator/scenario", c.body)
		if rec.Code != c.status {
			t.Errorf("%v: %d %s", c.body, rec.Code, rec.Body)
			continue
		}
		if c.name != "" {
			if got := decode[map[string]any](t, rec); got["name"] != c.name {
				t.Errorf("%v: name %v", c.body, got["name"])
			}
		}
	}
	// "mine" fails every job.
	rec := startGeneration(t, s, "mg_test_all", "m", schnellID, schnell)
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "1m"})
	if job := jobOf(t, s, decode[api.Job](t, rec).ID); job.Status != "failed" {
		t.Errorf("under an inline scenario failing everything: %s", job.Status)
	}
}

func TestAccountsAndForcedJobOutcomes(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	if rec := control(t, s, "PUT", "/_emulator/accounts/acct_poor", map[string]any{"credits": 0}); rec.Code != 200 {
		t.Fatalf("set credits: %d %s", rec.Code, rec.Body)
	}
	if rec := startGeneration(t, s, "mg_test_poor", "p", schnellID, schnell); rec.Code != 402 {
		t.Errorf("zero credits: %d", rec.Code)
	}
	for _, c := range []struct {
		path   string
		body   any
		status int
	}{
		{"/_emulator/accounts/nobody", map[string]any{"credits": 1}, 404},
		{"/_emulator/accounts/acct_poor", map[string]any{"credits": -1}, 422},
		{"/_emulator/accounts/acct_poor", map[string]any{"credits": 1.5}, 422},
		{"/_emulator/accounts/acct_poor", map[string]any{"credits": "10"}, 422},
	} {
		if rec := control(t, s, "PUT", c.path, c.body); rec.Code != c.status {
			t.Errorf("%s %v: %d", c.path, c.body, rec.Code)
		}
	}
	accounts := decode[map[string][]map[string]any](t, control(t, s, "GET", "/_emulator/accounts", nil))["data"]
	if len(accounts) != 4 {
		t.Errorf("accounts = %v", accounts)
	}

	a := decode[api.Job](t, startGeneration(t, s, "mg_test_all", "a", schnellID, schnell, "X-Emulator-Outcome", "slow"))
	b := decode[api.Job](t, startGeneration(t, s, "mg_test_all", "b", schnellID, schnell))
	done := decode[api.Job](t, control(t, s, "POST", "/_emulator/jobs/"+a.ID+"/complete", nil))
	if done.Status != "succeeded" || len(done.Outputs) != 1 || done.Outputs[0].SizeBytes == 0 {
		t.Errorf("forced complete: %+v", done)
	}
	failed := decode[api.Job](t, control(t, s, "POST", "/_emulator/jobs/"+b.ID+"/fail", map[string]any{"code": "provider_timeout"}))
	if failed.Status != "failed" || failed.Error.Code != "provider_timeout" || failed.CreditStatus != "refunded" {
		t.Errorf("forced fail: %+v", failed)
	}
	if rec := control(t, s, "POST", "/_emulator/jobs/"+b.ID+"/complete", nil); rec.Code != 409 {
		t.Errorf("complete a failed job: %d", rec.Code)
	}
	if rec := control(t, s, "POST", "/_emulator/jobs/nope/fail", nil); rec.Code != 404 {
		t.Errorf("fail unknown job: %d", rec.Code)
	}
}

func TestJournalFilters(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	call(t, s, "GET", "/v1/models", "mg_test_all", nil)
	call(t, s, "GET", "/v1/models", "nope", nil)
	startGeneration(t, s, "mg_test_generate", "j", schnellID, schnell)
	type list struct {
		Data []struct {
			Method, Path, Account, Model, Code string
			Status                             int
		} `json:"data"`
		Total int `json:"total"`
	}
	for _, c := range []struct {
		query string
		total int
	}{
		{"", 4},
		{"?method=post", 2},
		{"?path=/v1/models", 2},
		{"?path=/v1/*", 4},
		{"?status=401", 1},
		{"?code=unauthenticated", 1},
		{"?account=acct_generate", 2},
		{"?model=" + schnellID, 2},
		{"?limit=1&offset=3", 4},
	} {
		got := decode[list](t, control(t, s, "GET", "/_emulator/requests"+c.query, nil))
		if got.Total != c.total {
			t.Errorf("%s: total %d, want %d: %+v", c.query, got.Total, c.total, got.Data)
		}
	}
	if rec := control(t, s, "DELETE", "/_emulator/requests", nil); rec.Code != 204 {
		t.Errorf("clear: %d", rec.Code)
	}
	if got := decode[list](t, control(t, s, "GET", "/_emulator/requests", nil)); got.Total != 0 {
		t.Errorf("after clear: %d", got.Total)
	}
}

// A server made from a zero Config has the default memory budget, not an unbounded one: the
// budget every store shares is made with the upload gate, from the settled Config.
func TestZeroConfigHasTheDefaultBudget(t *testing.T) {
	s, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-s.ready // the embedded catalog loads in the background
	if got := s.tenants.Budget().Limit(); got != config.DefaultMemoryBudget {
		t.Errorf("the memory budget of a zero Config is %d bytes; want the default %d", got, config.DefaultMemoryBudget)
	}
	// Every other setting is what the one applier makes of a zero Config, as main's flags are.
	got, want := s.cfg, Config{}.WithDefaults()
	got.Logger, want.Logger = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NewServer's settings:\n%+v\nwant:\n%+v", got, want)
	}
}
