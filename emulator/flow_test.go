package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// flowServer is an emulator over the small test catalog on a manual clock.
func flowServer(t testing.TB) *Server {
	t.Helper()
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, Seeded: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// call sends one request through the full handler.
func call(t testing.TB, h http.Handler, method, path, key string, body any, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decode[T any](t testing.TB, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	return v
}

type quoteBody struct {
	QuoteID   string `json:"quote_id"`
	Model     string `json:"model"`
	Credits   int64  `json:"credits"`
	ExpiresAt string `json:"expires_at"`
}

type problemJSON struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
	Errors []struct {
		Pointer string `json:"pointer"`
		Message string `json:"message"`
	} `json:"errors"`
}

var pixelInput = map[string]any{"prompt": "a red fox in snow", "num_images": 2, "image_size": "landscape_16_9"}

func quote(t testing.TB, h http.Handler, key, model string, input map[string]any) quoteBody {
	t.Helper()
	rec := call(t, h, "POST", "/v1/quotes", key, map[string]any{"model": model, "input": input})
	if rec.Code != 200 {
		t.Fatalf("quote: %d %s", rec.Code, rec.Body)
	}
	return decode[quoteBody](t, rec)
}

func generate(t testing.TB, h http.Handler, key, idem string, q quoteBody, input map[string]any, query string) *httptest.ResponseRecorder {
	t.Helper()
	return call(t, h, "POST", "/v1/generate"+query, key, map[string]any{"model": q.Model, "input": input, "quote_id": q.QuoteID}, "Idempotency-Key", idem)
}

func TestQuoteResponseHasExactlyTheContractFields(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": pixelInput})
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	got := decode[map[string]any](t, rec)
	if len(got) != 4 || got["quote_id"] == nil || got["model"] != "test/pixel" || got["expires_at"] != "2026-01-01T00:10:00Z" {
		t.Errorf("quote = %v", got)
	}
	// landscape_16_9 costs 3 per image, two images.
	if got["credits"] != float64(6) {
		t.Errorf("credits = %v, want 6", got["credits"])
	}
}

func TestGenerateLifecycleWithPolling(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	rec := generate(t, s, "key_a", "poll-1", q, pixelInput, "")
	if rec.Code != 202 {
		t.Fatalf("generate: %d %s", rec.Code, rec.Body)
	}
	job := decode[api.Job](t, rec)
	if rec.Header().Get("Location") != "/v1/jobs/"+job.ID {
		t.Errorf("Location = %q", rec.Header().Get("Location"))
	}
	if job.Status != "queued" || job.CreditStatus != "held" || job.Credits != 6 || job.StartedAt != nil || job.Outputs == nil && false {
		t.Errorf("new job = %+v", job)
	}
	assertBalance(t, s, "acct_a", 994, 6, 0)

	clk := s.world()
	steps := []struct {
		advance  time.Duration
		status   string
		progress float64
	}{
		{100 * time.Millisecond, "running", 0},
		{450 * time.Millisecond, "running", 0.5},
		{450 * time.Millisecond, "succeeded", 1},
	}
	for _, step := range steps {
		if err := clk.Advance(step.advance); err != nil {
			t.Fatal(err)
		}
		rec := call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil)
		got := decode[api.Job](t, rec)
		if string(got.Status) != step.status || got.Progress != step.progress {
			t.Fatalf("after %v: status %s progress %v, want %s %v", step.advance, got.Status, got.Progress, step.status, step.progress)
		}
		job = got
	}
	if *job.StartedAt != "2026-01-01T00:00:00.1Z" || *job.FinishedAt != "2026-01-01T00:00:01Z" {
		t.Errorf("started %v finished %v", *job.StartedAt, *job.FinishedAt)
	}
	if job.CreditStatus != "charged" || len(job.Outputs) != 2 {
		t.Fatalf("finished job = %+v", job)
	}
	assertBalance(t, s, "acct_a", 994, 0, 6)
	for _, o := range job.Outputs {
		if o.Width != 1344 || o.Height != 768 || o.ContentType != "image/png" || o.SizeBytes <= 0 {
			t.Errorf("output = %+v", o)
		}
		if !strings.HasPrefix(o.URL, "http://example.com/files/"+job.ID+"/") {
			t.Errorf("url = %s", o.URL)
		}
		path := strings.TrimPrefix(o.URL, "http://example.com")
		file := call(t, s, "GET", path, "", nil)
		if file.Code != 200 || file.Header().Get("Content-Type") != "image/png" || int64(file.Body.Len()) != o.SizeBytes {
			t.Fatalf("file %s: %d %s (%d bytes)", path, file.Code, file.Header().Get("Content-Type"), file.Body.Len())
		}
		img, err := png.Decode(file.Body)
		if err != nil || img.Bounds().Dx() != 1344 || img.Bounds().Dy() != 768 {
			t.Errorf("decoded %v, err %v", img.Bounds(), err)
		}
	}
}

func assertBalance(t testing.TB, s *Server, account string, available, held, charged int64) {
	t.Helper()
	b, _ := s.world().Ledger().Balance(account)
	if b.Available != available || b.Held != held || b.Charged != charged {
		t.Errorf("%s balance = %+v, want available %d held %d charged %d", account, b, available, held, charged)
	}
}

// waitUntilWaiting blocks until exactly n requests are waiting for jobs, woken by the
// emulator's own count as it changes; the emulator's clock does not move.
func waitUntilWaiting(t testing.TB, s *Server, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound for a broken test, not a wait
	defer cancel()
	if got, ok := s.world().AwaitWaitingExactly(ctx, n, nil); !ok {
		t.Fatalf("waiting = %d, want %d", got, n)
	}
}

func TestWaitReturnsWhenTheJobTurnsTerminal(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	srv := httptest.NewServer(s)
	defer srv.Close()
	q := quote(t, s, "key_a", "test/voice", map[string]any{"text": "Hello there"})
	body, _ := json.Marshal(map[string]any{"model": q.Model, "input": map[string]any{"text": "Hello there"}, "quote_id": q.QuoteID})
	type result struct {
		status int
		job    api.Job
		err    error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/generate?wait=true", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer key_a")
		req.Header.Set("Idempotency-Key", "wait-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		var j api.Job
		err = json.NewDecoder(resp.Body).Decode(&j)
		done <- result{resp.StatusCode, j, err}
	}()
	waitUntilWaiting(t, s, 1)
	if err := s.world().Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.status != 200 || r.job.Status != "succeeded" {
		t.Fatalf("wait=true: %d %+v %v", r.status, r.job, r.err)
	}
	if !strings.HasPrefix(r.job.Outputs[0].URL, srv.URL+"/files/") {
		t.Errorf("output url %s is not on %s", r.job.Outputs[0].URL, srv.URL)
	}
	resp, err := http.Get(r.job.Outputs[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	wav, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/wav" || string(wav[:4]) != "RIFF" {
		t.Errorf("audio: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), wav[:4])
	}
	waitUntilWaiting(t, s, 0)
}

func TestWaitRunsOutAt202AndDisconnectKeepsTheJob(t *testing.T) {
	t.Parallel()
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, MaxWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := quote(t, s, "key_a", "test/reel", map[string]any{"prompt": "waves"})
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- generate(t, s, "key_a", "slow-1", q, map[string]any{"prompt": "waves"}, "?wait=true") }()
	waitUntilWaiting(t, s, 1)
	_ = s.world().Advance(2 * time.Second) // the wait limit passes on the emulator's clock
	rec := <-done
	if rec.Code != 202 || rec.Header().Get("Location") == "" {
		t.Fatalf("ran-out wait: %d %s", rec.Code, rec.Body)
	}
	job := decode[api.Job](t, rec)
	if job.Status != "running" {
		t.Errorf("status = %s, want running", job.Status)
	}

	// A client that leaves does not cancel its job, and its wait ends.
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest("POST", "/v1/generate?wait=true", strings.NewReader(fmt.Sprintf(`{"model":"test/reel","input":{"prompt":"waves"},"quote_id":%q}`, q.QuoteID))).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer key_a")
	req.Header.Set("Idempotency-Key", "slow-1")
	left := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		left <- rec.Code
	}()
	waitUntilWaiting(t, s, 1)
	cancel()
	<-left
	waitUntilWaiting(t, s, 0)
	_ = s.world().Advance(time.Minute)
	got := decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil))
	if got.Status != "succeeded" {
		t.Errorf("after the client left: %s, want succeeded", got.Status)
	}
}

func TestIdempotencyReplaysAndRefusesADifferentBody(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	first := generate(t, s, "key_a", "same", q, pixelInput, "")
	// Same request as a JSON value: other key order, other number spelling.
	body := fmt.Sprintf(`{"quote_id":%q,"input":{"image_size":"landscape_16_9","num_images":2.0,"prompt":"a red fox in snow"},"model":"test/pixel"}`, q.QuoteID)
	again := call(t, s, "POST", "/v1/generate", "key_a", body, "Idempotency-Key", "same")
	if again.Code != 202 || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.Code, again.Body)
	}
	if decode[api.Job](t, first).ID != decode[api.Job](t, again).ID {
		t.Error("replay made another job")
	}
	other := generate(t, s, "key_a", "same", q, map[string]any{"prompt": "something else"}, "")
	if p := decode[problemJSON](t, other); other.Code != 422 || p.Code != "idempotency_key_reused" {
		t.Errorf("different body: %d %s", other.Code, other.Body)
	}
	// Keys are per account: the same key from another account is its own request.
	qb := quote(t, s, "key_b", "test/pixel", pixelInput)
	if rec := generate(t, s, "key_b", "same", qb, pixelInput, ""); rec.Code != 202 || rec.Header().Get("Idempotent-Replayed") != "" {
		t.Errorf("other account, same key: %d %v", rec.Code, rec.Header())
	}
	assertBalance(t, s, "acct_a", 994, 6, 0)
}

func TestConcurrentDuplicatesMakeOneJobAndOneHold(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	const n = 64
	ids := make([]string, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := generate(t, s, "key_a", "dup", q, pixelInput, "")
			codes[i] = rec.Code
			ids[i] = decode[api.Job](t, rec).ID
		}()
	}
	wg.Wait()
	for i := range n {
		if codes[i] != 202 || ids[i] != ids[0] {
			t.Fatalf("request %d: %d job %s, want 202 job %s", i, codes[i], ids[i], ids[0])
		}
	}
	if s.world().Jobs() != 1 {
		t.Errorf("%d jobs, want 1", s.world().Jobs())
	}
	assertBalance(t, s, "acct_a", 994, 6, 0)
}

func TestConcurrentGenerationsNeverOverspend(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	// acct_poor has 3 credits; the edit model costs 4, a square pixel image 2. Of 16 parallel
	// generations exactly one can be paid for.
	input := map[string]any{"prompt": "dot", "image_size": "square"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 16 {
		q := quote(t, s, "key_poor", "test/pixel", input)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := generate(t, s, "key_poor", fmt.Sprint("k", i), q, input, "")
			mu.Lock()
			codes[rec.Code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[202] != 1 || codes[402] != 15 {
		t.Errorf("codes = %v, want one 202 and fifteen 402", codes)
	}
	assertBalance(t, s, "acct_poor", 1, 2, 0)
}

func TestGenerationErrors(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	clk := s.world()
	good := quote(t, s, "key_a", "test/pixel", pixelInput)
	expiring := quote(t, s, "key_a", "test/pixel", map[string]any{"prompt": "old"})
	_ = clk.Advance(11 * time.Minute)
	fresh := quote(t, s, "key_a", "test/pixel", pixelInput)
	used := quote(t, s, "key_a", "test/pixel", pixelInput)
	if rec := generate(t, s, "key_a", "spend", used, pixelInput, ""); rec.Code != 202 {
		t.Fatal(rec.Body)
	}
	poor := quote(t, s, "key_poor", "test/pixel", pixelInput)
	env := func(q quoteBody, input any) string {
		b, _ := json.Marshal(map[string]any{"model": q.Model, "input": input, "quote_id": q.QuoteID})
		return string(b)
	}
	cases := []struct {
		name, key, body, idem string
		headers               []string
		status                int
		code                  string
	}{
		{"no key", "", env(fresh, pixelInput), "a", nil, 401, "unauthenticated"},
		{"read-only key", "key_read", env(fresh, pixelInput), "a", nil, 403, "permission_denied"},
		{"no idempotency key", "key_a", env(fresh, pixelInput), "", nil, 400, "missing_idempotency_key"},
		{"idempotency key too long", "key_a", env(fresh, pixelInput), strings.Repeat("k", 256), nil, 400, "missing_idempotency_key"},
		{"not json", "key_a", "{nope", "a", nil, 400, "invalid_json"},
		{"array body", "key_a", "[]", "a", nil, 400, "invalid_json"},
		{"two values", "key_a", "{} {}", "a", nil, 400, "invalid_json"},
		{"form body", "key_a", "model=x", "a", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"too large", "key_a", `{"model":"` + strings.Repeat("x", 1<<20) + `"}`, "a", nil, 413, "payload_too_large"},
		{"missing quote_id", "key_a", `{"model":"test/pixel","input":{}}`, "a", nil, 422, "invalid_request"},
		{"unknown field", "key_a", `{"model":"test/pixel","input":{"prompt":"x"},"quote_id":"q","extra":1}`, "a", nil, 422, "invalid_request"},
		{"input not object", "key_a", `{"model":"test/pixel","input":"x","quote_id":"q"}`, "a", nil, 422, "invalid_request"},
		{"unknown model", "key_a", `{"model":"nope","input":{},"quote_id":"q"}`, "a", nil, 404, "model_not_found"},
		{"invalid input", "key_a", env(fresh, map[string]any{"num_images": 9}), "a", nil, 422, "invalid_input"},
		{"unknown quote", "key_a", env(quoteBody{Model: "test/pixel", QuoteID: "nope"}, pixelInput), "a", nil, 404, "quote_not_found"},
		{"another account's quote", "key_b", env(fresh, pixelInput), "a", nil, 404, "quote_not_found"},
		{"other input", "key_a", env(fresh, map[string]any{"prompt": "a red fox in snow"}), "a", nil, 422, "quote_mismatch"},
		{"other model", "key_a", env(quoteBody{Model: "test/pixel/edit", QuoteID: fresh.QuoteID}, map[string]any{"prompt": "x", "image_url": "https://example.com/a.png"}), "a", nil, 422, "quote_mismatch"},
		{"expired", "key_a", env(expiring, map[string]any{"prompt": "old"}), "a", nil, 422, "quote_expired"},
		{"expired (first quote)", "key_a", env(good, pixelInput), "b", nil, 422, "quote_expired"},
		{"used", "key_a", env(used, pixelInput), "other", nil, 409, "quote_already_used"},
		{"poor", "key_poor", env(poor, pixelInput), "a", nil, 402, "insufficient_credits"},
		{"bad wait", "key_a", env(fresh, pixelInput), "a", []string{}, 400, "invalid_parameter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "/v1/generate"
			if c.name == "bad wait" {
				path += "?wait=soon"
			}
			headers := c.headers
			if c.idem != "" {
				headers = append(headers, "Idempotency-Key", c.idem)
			}
			rec := call(t, s, "POST", path, c.key, c.body, headers...)
			p := decode[problemJSON](t, rec)
			if rec.Code != c.status || p.Code != c.code || p.Status != c.status {
				t.Errorf("%d %s, want %d %s: %s", rec.Code, p.Code, c.status, c.code, rec.Body)
			}
			if rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Errorf("content type %q", rec.Header().Get("Content-Type"))
			}
		})
	}
	// Failed requests changed nothing: one job (the "spend" one), its credits held.
	if n := s.world().Jobs(); n != 1 {
		t.Errorf("%d jobs after failures, want 1", n)
	}
	assertBalance(t, s, "acct_poor", 3, 0, 0)
}

func TestInvalidInputListsEveryViolationUnderInput(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": map[string]any{"num_images": 0, "image_size": "huge", "bogus": true}})
	p := decode[problemJSON](t, rec)
	if rec.Code != 422 || p.Code != "invalid_input" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	pointers := map[string]bool{}
	for _, e := range p.Errors {
		pointers[e.Pointer] = true
		if e.Message == "" {
			t.Errorf("empty message for %s", e.Pointer)
		}
	}
	for _, want := range []string{"/input", "/input/num_images", "/input/image_size"} {
		if !pointers[want] {
			t.Errorf("no error at %s in %s", want, rec.Body)
		}
	}
}

func TestQuoteUnavailableModelAndFormatChecks(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/legacy", "input": map[string]any{"prompt": "x"}})
	if p := decode[problemJSON](t, rec); rec.Code != 409 || p.Code != "model_unavailable" {
		t.Errorf("legacy: %d %s", rec.Code, rec.Body)
	}
	rec = call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel/edit", "input": map[string]any{"prompt": "x", "image_url": "not a uri"}})
	if p := decode[problemJSON](t, rec); rec.Code != 422 || p.Code != "invalid_input" || p.Errors[0].Pointer != "/input/image_url" {
		t.Errorf("format: %d %s", rec.Code, rec.Body)
	}
}

func TestJobsListCancelAndIsolation(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	var ids []string
	for i, model := range []string{"test/pixel", "test/voice", "test/pixel"} {
		input := pixelInput
		if model == "test/voice" {
			input = map[string]any{"text": "hi"}
		}
		q := quote(t, s, "key_a", model, input)
		ids = append(ids, decode[api.Job](t, generate(t, s, "key_a", fmt.Sprint("list-", i), q, input, "")).ID)
	}
	type list struct {
		Data    []api.Job `json:"data"`
		Total   int       `json:"total"`
		HasMore bool      `json:"has_more"`
	}
	all := decode[list](t, call(t, s, "GET", "/v1/jobs", "key_a", nil))
	if all.Total != 3 || all.Data[0].ID != ids[2] || all.Data[2].ID != ids[0] {
		t.Fatalf("list = %+v", all)
	}
	pixels := decode[list](t, call(t, s, "GET", "/v1/jobs?model=test/pixel&limit=1", "key_a", nil))
	if pixels.Total != 2 || len(pixels.Data) != 1 || !pixels.HasMore || pixels.Data[0].ID != ids[2] {
		t.Errorf("model filter = %+v", pixels)
	}
	if rec := call(t, s, "GET", "/v1/jobs?status=done", "key_a", nil); rec.Code != 400 {
		t.Errorf("bad status filter: %d", rec.Code)
	}
	// Another account sees none of them.
	if rec := call(t, s, "GET", "/v1/jobs/"+ids[0], "key_b", nil); rec.Code != 404 || decode[problemJSON](t, rec).Code != "job_not_found" {
		t.Errorf("other account get: %d", rec.Code)
	}
	if rec := call(t, s, "POST", "/v1/jobs/"+ids[0]+"/cancel", "key_b", nil); rec.Code != 404 {
		t.Errorf("other account cancel: %d", rec.Code)
	}
	if other := decode[list](t, call(t, s, "GET", "/v1/jobs", "key_b", nil)); other.Total != 0 {
		t.Errorf("other account list = %+v", other)
	}
	// Cancel refunds; a second cancel is 409.
	rec := call(t, s, "POST", "/v1/jobs/"+ids[0]+"/cancel", "key_a", nil)
	if job := decode[api.Job](t, rec); rec.Code != 200 || job.Status != "canceled" || job.CreditStatus != "refunded" {
		t.Errorf("cancel: %d %s", rec.Code, rec.Body)
	}
	if rec := call(t, s, "POST", "/v1/jobs/"+ids[0]+"/cancel", "key_a", nil); rec.Code != 409 || decode[problemJSON](t, rec).Code != "job_not_cancelable" {
		t.Errorf("second cancel: %d %s", rec.Code, rec.Body)
	}
	canceled := decode[list](t, call(t, s, "GET", "/v1/jobs?status=canceled", "key_a", nil))
	if canceled.Total != 1 || canceled.Data[0].ID != ids[0] {
		t.Errorf("status filter = %+v", canceled)
	}
}

func TestOutputsExpireAndJobsAreDropped(t *testing.T) {
	t.Parallel()
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, OutputTTL: time.Hour, JobRetention: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := quote(t, s, "key_a", "test/voice", map[string]any{"text": "bye"})
	job := decode[api.Job](t, generate(t, s, "key_a", "ttl", q, map[string]any{"text": "bye"}, ""))
	clk := s.world()
	_ = clk.Advance(time.Second)
	job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil))
	path := strings.TrimPrefix(job.Outputs[0].URL, "http://example.com")
	if rec := call(t, s, "GET", path, "", nil); rec.Code != 200 {
		t.Fatalf("file: %d", rec.Code)
	}
	_ = clk.Advance(time.Hour)
	if rec := call(t, s, "GET", path, "", nil); rec.Code != 410 || decode[problemJSON](t, rec).Code != "output_expired" {
		t.Errorf("expired file: %d %s", rec.Code, rec.Body)
	}
	_ = clk.Advance(time.Hour)
	if rec := call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil); rec.Code != 404 {
		t.Errorf("dropped job: %d", rec.Code)
	}
	if n := s.world().Quotes(); n != 0 {
		t.Errorf("%d quotes kept after expiry", n)
	}
}

func TestFilePathsCannotEscape(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	for _, path := range []string{
		"/files/../fixtures/embed.go", "/files/x/../../go.mod", "/files/nope/0.png", "/files/%2e%2e/0.png",
		"/files/a/b/c", "/files/a/-1.png", "/files/a/01.png",
	} {
		rec := call(t, s, "GET", path, "", nil)
		if rec.Code != 404 {
			t.Errorf("%s: %d", path, rec.Code)
		}
	}
}
