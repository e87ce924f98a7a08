package emulator

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// balanceOf is an account's balance as the control API shows it.
func balanceOf(t testing.TB, s http.Handler, account string, headers ...string) api.Balance {
	t.Helper()
	rec := call(t, s, "GET", "/_emulator/accounts", "", nil, headers...)
	for _, b := range decode[struct{ Data []api.Balance }](t, rec).Data {
		if b.Account == account {
			return b
		}
	}
	t.Fatalf("no account %s in %s", account, rec.Body)
	return api.Balance{}
}

func advance(t testing.TB, s http.Handler, d string, headers ...string) {
	t.Helper()
	if rec := call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": d}, headers...); rec.Code != 200 {
		t.Fatalf("advance %s: %d %s", d, rec.Code, rec.Body)
	}
}

func reportOf(t testing.TB, s http.Handler) api.Report {
	t.Helper()
	rec := control(t, s, "GET", "/_emulator/report", nil)
	if rec.Code != 200 {
		t.Fatalf("report: %d %s", rec.Code, rec.Body)
	}
	return decode[api.Report](t, rec)
}

// A refusal answers 422 content_policy_violation pointing into the input, before anything is
// held: no job, no credits held, and the quote still buys its generation afterwards.
func TestRefusalHoldsNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		input   map[string]any
		headers []string
		pointer string
	}{
		{"header", map[string]any{"prompt": "a red fox", "num_images": 2}, []string{"X-Emulator-Outcome", "refuse"}, "/input/prompt"},
		{"token", map[string]any{"prompt": "a red fox [emulator:refuse]", "output_format": "png"}, nil, "/input/prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := flowServer(t)
			before := balanceOf(t, s, "acct_a")
			q := quote(t, s, "key_a", "test/pixel", tc.input)
			body := map[string]any{"model": q.Model, "input": tc.input, "quote_id": q.QuoteID}
			rec := call(t, s, "POST", "/v1/generate", "key_a", body, append([]string{"Idempotency-Key", "r1"}, tc.headers...)...)
			p := decode[problemJSON](t, rec)
			if rec.Code != 422 || p.Code != "content_policy_violation" || len(p.Errors) != 1 || p.Errors[0].Pointer != tc.pointer {
				t.Fatalf("refusal: %d %s", rec.Code, rec.Body)
			}
			if after := balanceOf(t, s, "acct_a"); after != before {
				t.Errorf("a refusal changed the balance: %+v -> %+v", before, after)
			}
			if list := decode[struct{ Total int }](t, call(t, s, "GET", "/v1/jobs", "key_a", nil)); list.Total != 0 {
				t.Errorf("a refusal made a job: %d jobs", list.Total)
			}
			if tc.name == "token" {
				return // the token stays in the input the quote was made for
			}
			// The quote is unused: the same quote, without the directive, buys the job.
			if rec := call(t, s, "POST", "/v1/generate", "key_a", body, "Idempotency-Key", "r2"); rec.Code != 202 {
				t.Fatalf("the quote after a refusal: %d %s", rec.Code, rec.Body)
			}
			if after := balanceOf(t, s, "acct_a"); after.Held != q.Credits {
				t.Errorf("held after the real generation: %+v, want %d", after, q.Credits)
			}
		})
	}
}

// refusal_rate refuses by a draw named by the model and the input: under a seed, the same
// input is refused every time, so a client that sends it again unchanged is told so by the
// report's retry-unchanged; a careful client that changes the input is not.
func TestRefusalRateAndRetryUnchanged(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, map[string]any{"name": "strict", "defaults": map[string]any{"refusal_rate": 1}})
	input := map[string]any{"prompt": "a red fox"}
	q := quote(t, s, "key_a", "test/pixel", input)
	for _, key := range []string{"k1", "k2"} {
		if rec := generate(t, s, "key_a", key, q, input, ""); rec.Code != 422 || decode[problemJSON](t, rec).Code != "content_policy_violation" {
			t.Fatalf("refusal_rate 1: %d %s", rec.Code, rec.Body)
		}
	}
	if rep := reportOf(t, s); rep.Counts["retry-unchanged"] != 1 {
		t.Errorf("a refusal sent again unchanged: counts %v", rep.Counts)
	}

	careful := flowServer(t)
	putScenario(t, careful, map[string]any{"name": "strict", "defaults": map[string]any{"refusal_rate": 1}})
	for i, prompt := range []string{"a red fox", "a calm lake"} {
		in := map[string]any{"prompt": prompt}
		q := quote(t, careful, "key_a", "test/pixel", in)
		if rec := generate(t, careful, "key_a", "c"+string(rune('0'+i)), q, in, ""); rec.Code != 422 {
			t.Fatalf("refusal_rate 1: %d %s", rec.Code, rec.Body)
		}
	}
	if rep := reportOf(t, careful); rep.Counts["retry-unchanged"] != 0 {
		t.Errorf("a changed input is not a retry: counts %v", rep.Counts)
	}
	if cov := control(t, s, "GET", "/_emulator/coverage", nil).Body.String(); !strings.Contains(cov, `"generation refused"`) {
		t.Errorf("coverage lacks the refusal case: %s", cov)
	}
}

// A partial result succeeds with fewer outputs than asked, says how many were filtered, and
// charges only for what it returned: the ledger's figures add up exactly. The job survives a
// snapshot taken while it runs.
func TestPartialResultChargesWhatItReturns(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	tenant := []string{"X-Emulator-Tenant", "p"}
	before := balanceOf(t, s, "acct_a", tenant...)
	input := map[string]any{"prompt": "a red fox", "num_images": 4, "image_size": "landscape_16_9"}
	q := tenantQuote(t, s, "p", input)
	if q.Credits != 12 {
		t.Fatalf("credits %d, want 12 (3 a landscape image)", q.Credits)
	}
	rec := call(t, s, "POST", "/v1/generate", "key_a", map[string]any{"model": q.Model, "input": input, "quote_id": q.QuoteID},
		append([]string{"Idempotency-Key", "p1", "X-Emulator-Outcome", "partial"}, tenant...)...)
	if rec.Code != 202 {
		t.Fatalf("generate: %d %s", rec.Code, rec.Body)
	}
	id := decode[api.Job](t, rec).ID
	if raw := decode[map[string]any](t, rec); raw["filtered_outputs"] != nil || raw["credits_charged"] != nil {
		t.Errorf("a live job already tells its filtering: %s", rec.Body)
	}

	// Snapshot the running job into another tenant: both end the same way.
	doc := snapshotOf(t, s, "p", "")
	if rec := restore(t, s, "p2", doc); rec.Code != 200 && rec.Code != 201 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	for _, tn := range []string{"p", "p2"} {
		h := []string{"X-Emulator-Tenant", tn}
		advance(t, s, "5s", h...)
		rec := call(t, s, "GET", "/v1/jobs/"+id, "key_a", nil, h...)
		job := decode[api.Job](t, rec)
		kept := len(job.Outputs)
		if job.Status != "succeeded" || kept < 1 || kept > 3 || job.FilteredOutputs != 4-kept || job.CreditsCharged == nil || *job.CreditsCharged != int64(3*kept) {
			t.Fatalf("%s: partial job: %s", tn, rec.Body)
		}
		cj := decode[map[string]any](t, call(t, s, "GET", "/_emulator/jobs/"+id, "", nil, h...))
		if plan, _ := cj["plan"].(map[string]any); plan["filtered"] != float64(4-kept) || cj["filtered_outputs"] != float64(4-kept) {
			t.Errorf("%s: control job: %v", tn, cj)
		}
		after := balanceOf(t, s, "acct_a", h...)
		if after.Held != 0 || after.Charged != int64(3*kept) || after.Refunded != 12-int64(3*kept) || after.Available != before.Available-int64(3*kept) {
			t.Errorf("%s: balance %+v after charging %d of 12 (before %+v)", tn, after, 3*kept, before)
		}
	}
}

func tenantQuote(t testing.TB, s http.Handler, tenant string, input map[string]any) quoteBody {
	t.Helper()
	rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": input}, "X-Emulator-Tenant", tenant)
	if rec.Code != 200 {
		t.Fatalf("quote: %d %s", rec.Code, rec.Body)
	}
	return decode[quoteBody](t, rec)
}

// filter_rate filters by a seeded draw; one output has nothing to filter, and a job made with
// filtering that fails charges nothing.
func TestFilterRate(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, map[string]any{"name": "filtering", "defaults": map[string]any{"filter_rate": 1}})
	one := startGeneration(t, s, "key_a", "f1", "test/pixel", map[string]any{"prompt": "one", "num_images": 1})
	two := startGeneration(t, s, "key_a", "f2", "test/pixel", map[string]any{"prompt": "two", "num_images": 2})
	advance(t, s, "5s")
	if j := keyAJob(t, s, decode[api.Job](t, one).ID); len(j.Outputs) != 1 || j.FilteredOutputs != 0 || j.CreditsCharged != nil {
		t.Errorf("one output: %+v", j)
	}
	if j := keyAJob(t, s, decode[api.Job](t, two).ID); len(j.Outputs) != 1 || j.FilteredOutputs != 1 || *j.CreditsCharged != 2 {
		t.Errorf("two outputs, filter_rate 1: %+v", j)
	}
	if cov := control(t, s, "GET", "/_emulator/coverage", nil).Body.String(); !strings.Contains(cov, `"partial result"`) {
		t.Errorf("coverage lacks the partial case: %s", cov)
	}
}

func keyAJob(t testing.TB, s http.Handler, id string) api.Job {
	t.Helper()
	rec := call(t, s, "GET", "/v1/jobs/"+id, "key_a", nil)
	if rec.Code != 200 {
		t.Fatalf("get job: %d %s", rec.Code, rec.Body)
	}
	return decode[api.Job](t, rec)
}

// lifecycleScenario deprecates test/pixel an hour after the start and retires it an hour later.
var lifecycleScenario = map[string]any{"name": "retiring", "lifecycle": []any{map[string]any{
	"match": map[string]any{"model": "test/pix*"}, "deprecated_at": "2026-01-01T01:00:00Z",
	"sunset": "2026-01-01T02:00:00Z", "replacement": "test/pixel/edit"}}}

func lifecycleHeaders(rec *httptest.ResponseRecorder) string {
	return rec.Header().Get("Deprecation") + " | " + rec.Header().Get("Sunset") + " | " + rec.Header().Get("Link")
}

const deprecatedHeaders = `@1767229200 | Thu, 01 Jan 2026 02:00:00 GMT | </v1/models/test/pixel/edit>; rel="successor-version"`

// A model is deprecated, then retired, on the tenant's clock: before its deprecation nothing
// shows; from it every answer about the model carries Deprecation, Sunset and Link and its
// record says so; from the sunset detail, quote and generate answer 410 model_retired, and a job
// made before finishes.
func TestModelLifecycle(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, lifecycleScenario)
	input := map[string]any{"prompt": "a red fox"}

	rec := call(t, s, "GET", "/v1/models/test/pixel", "key_a", nil)
	if rec.Code != 200 || lifecycleHeaders(rec) != " |  | " || strings.Contains(rec.Body.String(), "deprecated") {
		t.Fatalf("before the deprecation: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	advance(t, s, "1h")
	rec = call(t, s, "GET", "/v1/models/test/pixel", "key_a", nil)
	detail := decode[map[string]any](t, rec)
	if rec.Code != 200 || lifecycleHeaders(rec) != deprecatedHeaders || detail["deprecated"] != true ||
		detail["deprecated_at"] != "2026-01-01T01:00:00Z" || detail["sunset_at"] != "2026-01-01T02:00:00Z" || detail["replacement"] != "test/pixel/edit" || detail["openapi"] == nil {
		t.Fatalf("deprecated detail: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if list := call(t, s, "GET", "/v1/models?search=pixel", "key_a", nil).Body.String(); !strings.Contains(list, `"deprecated":true`) {
		t.Errorf("the listing does not say the model is deprecated: %s", list)
	}
	if other := call(t, s, "GET", "/v1/models/test/reel", "key_a", nil); other.Header().Get("Deprecation") != "" {
		t.Errorf("another model carries Deprecation: %v", other.Header())
	}
	// Half a minute before the sunset, a slow job is made: it outlasts the sunset.
	advance(t, s, "59m30s")
	rec = call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": input})
	if rec.Code != 200 || lifecycleHeaders(rec) != deprecatedHeaders {
		t.Fatalf("deprecated quote: %d %v", rec.Code, rec.Header())
	}
	q := decode[quoteBody](t, rec)
	rec = call(t, s, "POST", "/v1/generate", "key_a", map[string]any{"model": q.Model, "input": input, "quote_id": q.QuoteID}, "Idempotency-Key", "g1", "X-Emulator-Outcome", "slow")
	if rec.Code != 202 || lifecycleHeaders(rec) != deprecatedHeaders {
		t.Fatalf("deprecated generate: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	id := decode[api.Job](t, rec).ID
	q2 := quote(t, s, "key_a", "test/pixel", input)

	advance(t, s, "29s")
	if rec := call(t, s, "GET", "/v1/models/test/pixel", "key_a", nil); rec.Code != 200 {
		t.Fatalf("a second before the sunset: %d", rec.Code)
	}
	advance(t, s, "1s")
	for _, rec := range []*httptest.ResponseRecorder{
		call(t, s, "GET", "/v1/models/test/pixel", "key_a", nil),
		call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": input}),
		generate(t, s, "key_a", "g2", q2, input, ""),
	} {
		var p map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		if rec.Code != 410 || p["code"] != "model_retired" || p["replacement"] != "test/pixel/edit" || lifecycleHeaders(rec) != deprecatedHeaders {
			t.Errorf("retired: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
	}
	if b := balanceOf(t, s, "acct_a"); b.Held != q.Credits {
		t.Errorf("the retired generation held credits: %+v", b)
	}
	advance(t, s, "10m")
	rec = call(t, s, "GET", "/v1/jobs/"+id, "key_a", nil)
	if job := decode[api.Job](t, rec); job.Status != "succeeded" || lifecycleHeaders(rec) != deprecatedHeaders {
		t.Errorf("the job made before the sunset: %v %s", rec.Header(), rec.Body)
	}
	// The control API (and so the dashboard) says where the job's model stands.
	if cj := decode[map[string]any](t, control(t, s, "GET", "/_emulator/jobs/"+id, nil)); cj["model_phase"] != "retired" {
		t.Errorf("control job: %v", cj)
	}
	cov := control(t, s, "GET", "/_emulator/coverage", nil).Body.String()
	for _, c := range []string{`"model deprecated"`, `"model retired"`} {
		if !strings.Contains(cov, c) {
			t.Errorf("coverage lacks %s", c)
		}
	}
}

// deprecated-model-used fires for a client that quotes a model again after an answer announced
// its deprecation, and stays silent for one that moves to the successor.
func TestDeprecatedModelUsedRule(t *testing.T) {
	t.Parallel()
	input := map[string]any{"prompt": "a red fox"}
	for _, tc := range []struct {
		name     string
		next     string
		findings int
	}{{"flawed", "test/pixel", 1}, {"careful", "test/pixel/edit", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := flowServer(t)
			putScenario(t, s, lifecycleScenario)
			quote(t, s, "key_a", "test/pixel", input) // before the deprecation: fine
			advance(t, s, "1h")
			rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": input})
			if rec.Code != 200 || rec.Header().Get("Deprecation") == "" {
				t.Fatalf("quote: %d %v", rec.Code, rec.Header())
			}
			next := input
			if tc.next != "test/pixel" {
				next = map[string]any{"prompt": "a red fox", "image_url": "http://example.com/a.png"}
			}
			if rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": tc.next, "input": next}); rec.Code != 200 {
				t.Fatalf("second quote: %d %s", rec.Code, rec.Body)
			}
			if rep := reportOf(t, s); rep.Counts["deprecated-model-used"] != tc.findings {
				t.Errorf("deprecated-model-used: %v %+v", rep.Counts, rep.Findings)
			}
		})
	}
}

// On the real clock the lifecycle follows the wall time; a snapshot carries the lifecycle (the
// scenario's) to a restored tenant, which answers as the original does.
func TestLifecycleOnTheRealClockAndThroughASnapshot(t *testing.T) {
	t.Parallel()
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	tenant := []string{"X-Emulator-Tenant", "real"}
	sc := map[string]any{"name": "retiring", "lifecycle": []any{
		map[string]any{"match": map[string]any{"model": "test/pixel"}, "deprecated_at": "2001-01-01T00:00:00Z", "replacement": "test/pixel/edit"},
		map[string]any{"match": map[string]any{"model": "test/voice"}, "deprecated_at": "2001-01-01T00:00:00Z", "sunset": "2002-01-01T00:00:00Z"},
		map[string]any{"match": map[string]any{"model": "test/reel"}, "deprecated_at": "2999-01-01T00:00:00Z"},
	}}
	if rec := call(t, s, "PUT", "/_emulator/scenario", "", map[string]any{"scenario": sc}, tenant...); rec.Code != 200 {
		t.Fatalf("put scenario: %d %s", rec.Code, rec.Body)
	}
	check := func(tn string) {
		h := []string{"X-Emulator-Tenant", tn}
		if rec := call(t, s, "GET", "/v1/models/test/pixel", "key_a", nil, h...); rec.Code != 200 || rec.Header().Get("Deprecation") != "@978307200" ||
			rec.Header().Get("Sunset") != "" || rec.Header().Get("Link") != `</v1/models/test/pixel/edit>; rel="successor-version"` {
			t.Errorf("%s: deprecated without a sunset: %d %v", tn, rec.Code, rec.Header())
		}
		if rec := call(t, s, "GET", "/v1/models/test/voice", "key_a", nil, h...); rec.Code != 410 || rec.Header().Get("Link") != "" {
			t.Errorf("%s: retired without a replacement: %d %v %s", tn, rec.Code, rec.Header(), rec.Body)
		}
		if rec := call(t, s, "GET", "/v1/models/test/reel", "key_a", nil, h...); rec.Code != 200 || rec.Header().Get("Deprecation") != "" {
			t.Errorf("%s: not yet deprecated: %d %v", tn, rec.Code, rec.Header())
		}
	}
	check("real")
	if rec := restore(t, s, "copy", snapshotOf(t, s, "real", "")); rec.Code >= 300 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	check("copy")
}

// Refusals and filtering are draws of the seeded source: two emulators with the same seed
// refuse the same inputs and filter the same outputs, and some of each happen at a rate of ½.
func TestRefusalsAndFilteringAreSeeded(t *testing.T) {
	t.Parallel()
	run := func() []string {
		s := flowServer(t)
		putScenario(t, s, map[string]any{"name": "half", "defaults": map[string]any{"refusal_rate": 0.5, "filter_rate": 0.5}})
		var ids []string
		for i := range 12 {
			in := map[string]any{"prompt": "picture " + string(rune('a'+i)), "num_images": 4}
			rec := startGeneration(t, s, "key_a", "s"+string(rune('a'+i)), "test/pixel", in)
			if rec.Code == 422 {
				ids = append(ids, "refused")
				continue
			}
			ids = append(ids, decode[api.Job](t, rec).ID)
		}
		advance(t, s, "5s")
		var out []string
		for _, id := range ids {
			if id == "refused" {
				out = append(out, id)
				continue
			}
			out = append(out, strconv.Itoa(len(keyAJob(t, s, id).Outputs)))
		}
		return out
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Errorf("one seed, two outcomes:\n%v\n%v", a, b)
	}
	if !slices.Contains(a, "refused") || !slices.Contains(a, "4") || !slices.ContainsFunc(a, func(s string) bool { return s == "1" || s == "2" || s == "3" }) {
		t.Errorf("at rates of ½, some of each: %v", a)
	}
}

// TestModelAnswersAreTheAPITypes: the catalog writes models from bytes made at load, not from
// api.ModelSummary and api.ModelDetail; every listed model and its detail, deprecated or not,
// decodes into those types with no member unknown to them, so the types say what is sent.
func TestModelAnswersAreTheAPITypes(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, lifecycleScenario)
	strict := func(rec *httptest.ResponseRecorder, v any) {
		t.Helper()
		dec := json.NewDecoder(rec.Body)
		dec.DisallowUnknownFields()
		if rec.Code != 200 || dec.Decode(v) != nil {
			t.Fatalf("%d %s does not decode into %T", rec.Code, rec.Body, v)
		}
	}
	for _, when := range []string{"before the deprecation", "deprecated"} {
		var list api.Page[api.ModelSummary]
		strict(call(t, s, "GET", "/v1/models?limit=500", "key_a", nil), &list)
		deprecated := 0
		for _, m := range list.Data {
			var d api.ModelDetail
			strict(call(t, s, "GET", "/v1/models/"+m.ID, "key_a", nil), &d)
			if d.ModelSummary != m || len(d.InputSchema) == 0 || len(d.OpenAPI) == 0 {
				t.Errorf("%s: %s is listed as %+v, detailed as %+v", when, m.ID, m, d)
			}
			if m.Deprecated {
				deprecated++
			}
		}
		if want := map[string]int{"deprecated": 1}[when]; len(list.Data) == 0 || deprecated != want {
			t.Errorf("%s: %d models, %d deprecated; want some, %d deprecated", when, len(list.Data), deprecated, want)
		}
		advance(t, s, "1h")
	}
}
