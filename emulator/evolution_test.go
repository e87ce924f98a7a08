package emulator

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evolve"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

var evolutionScenario = map[string]any{"name": "evolving", "evolution": true}

// membersEverywhere checks that every object of an answer holds the member, except inside the
// values the mode leaves alone, and that those hold no member at any depth.
func membersEverywhere(t *testing.T, what string, v any, member string, skipped bool) {
	t.Helper()
	switch n := v.(type) {
	case map[string]any:
		if _, has := n[member]; has == skipped {
			t.Errorf("%s: member %s present %v in %v", what, member, has, n)
		}
		for k, x := range n {
			membersEverywhere(t, what+"/"+k, x, member, skipped || k == "input" || k == "input_schema" || k == "examples" || k == "openapi")
		}
	case []any:
		for i, x := range n {
			membersEverywhere(t, what+"/"+strconv.Itoa(i), x, member, skipped)
		}
	}
}

// evolvedAnswer checks an answer of the mode: the header, a Content-Length that is the body's,
// valid JSON whose every object has the member; it returns the body decoded.
func evolvedAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder, kit *evolve.Kit) map[string]any {
	t.Helper()
	if got := rec.Header().Get(kit.HeaderName); got != kit.HeaderValue {
		t.Errorf("%s: %s is %q, want %q", what, kit.HeaderName, got, kit.HeaderValue)
	}
	if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
		t.Errorf("%s: Content-Length %s for a body of %d bytes", what, cl, rec.Body.Len())
	}
	var v map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", what, err, rec.Body)
	}
	membersEverywhere(t, what, v, kit.MemberName, false)
	return v
}

// The mode, on the manual clock: every /v1 answer carries the header and every object the
// member (jobs, outputs, models, quotes, problems; never a job's input or a model's schema); the
// catalog lists a model of output type 3d that detail shows and quote refuses; a job passes
// through preparing between queued and running, and is charged as it would be without the mode.
func TestEvolutionMode(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, evolutionScenario)
	kit := evolve.New(7)

	list := evolvedAnswer(t, "models", call(t, s, "GET", "/v1/models", "key_a", nil), kit)
	var found map[string]any
	for _, m := range list["data"].([]any) {
		if m.(map[string]any)["output_type"] == evolve.OutputType {
			found = m.(map[string]any)
		}
	}
	if found == nil || found["id"] != kit.ModelID || found["category"] != evolve.Category || found["status"] != "ready" {
		t.Fatalf("no model of output type 3d listed: %v", list["data"])
	}
	if only := evolvedAnswer(t, "3d category", call(t, s, "GET", "/v1/models?category="+evolve.Category, "key_a", nil), kit); only["total"] != 1.0 {
		t.Errorf("category %s lists %v", evolve.Category, only)
	}
	cats := call(t, s, "GET", "/v1/models/categories", "key_a", nil).Body.String()
	if !strings.Contains(cats, `"id":"text-to-3d","output_type":"3d","model_count":1`) {
		t.Errorf("categories: %s", cats)
	}
	detail := evolvedAnswer(t, "3d detail", call(t, s, "GET", "/v1/models/"+kit.ModelID, "key_a", nil), kit)
	if detail["output_type"] != "3d" || detail["input_schema"] == nil || detail["openapi"] == nil {
		t.Errorf("3d detail: %v", detail)
	}
	evolvedAnswer(t, "pixel detail", call(t, s, "GET", "/v1/models/test/pixel", "key_a", nil), kit)
	rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": kit.ModelID, "input": map[string]any{"prompt": "x"}})
	if p := evolvedAnswer(t, "3d quote", rec, kit); rec.Code != 409 || p["code"] != "model_unavailable" || !strings.Contains(p["detail"].(string), "3d") {
		t.Errorf("quoting the 3d model: %d %s", rec.Code, rec.Body)
	}
	rec = call(t, s, "POST", "/v1/generate", "key_a", map[string]any{"model": kit.ModelID, "input": map[string]any{"prompt": "x"}, "quote_id": "q"}, "Idempotency-Key", "3d")
	if p := evolvedAnswer(t, "3d generation", rec, kit); rec.Code != 409 || p["code"] != "model_unavailable" {
		t.Errorf("generating the 3d model: %d %s", rec.Code, rec.Body)
	}
	rec = call(t, s, "GET", "/v1/jobs/nope", "key_a", nil)
	if p := evolvedAnswer(t, "a problem", rec, kit); rec.Code != 404 || p["code"] != "job_not_found" {
		t.Errorf("problem: %d %s", rec.Code, rec.Body)
	}

	input := map[string]any{"prompt": "a red fox", "num_images": 2}
	rec = call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": input})
	q := evolvedAnswer(t, "quote", rec, kit)
	rec = call(t, s, "POST", "/v1/generate", "key_a", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "e1")
	job := evolvedAnswer(t, "generate", rec, kit)
	if rec.Code != 202 || job["status"] != "queued" {
		t.Fatalf("generate: %d %s", rec.Code, rec.Body)
	}
	if in, _ := json.Marshal(job["input"]); string(in) != `{"num_images":2,"prompt":"a red fox"}` {
		t.Errorf("the job's input changed: %s", in)
	}
	id := job["id"].(string)
	// test/pixel queues 100ms and runs 900ms: it prepares for the first 225ms of its run.
	for _, step := range []struct {
		advance, status string
		started         bool
	}{{"100ms", "preparing", false}, {"224ms", "preparing", false}, {"1ms", "running", true}, {"675ms", "succeeded", true}} {
		advance(t, s, step.advance)
		j := evolvedAnswer(t, "job "+step.status, call(t, s, "GET", "/v1/jobs/"+id, "key_a", nil), kit)
		if j["status"] != step.status || (j["started_at"] != nil) != step.started {
			t.Fatalf("after %s more: %v", step.advance, j)
		}
		if step.status == "preparing" && j["progress"] != 0.0 {
			t.Errorf("preparing with progress: %v", j)
		}
		if step.status == "succeeded" {
			if outs := j["outputs"].([]any); len(outs) != 2 {
				t.Errorf("outputs: %v", outs)
			}
		}
	}
	if b := balanceOf(t, s, "acct_a"); b.Held != 0 || b.Charged != int64(q["credits"].(float64)) || b.Available != 1000-b.Charged {
		t.Errorf("credits: %+v, quoted %v", b, q["credits"])
	}
	// A list of jobs: the envelope and every job.
	evolvedAnswer(t, "jobs", call(t, s, "GET", "/v1/jobs", "key_a", nil), kit)

	// The control API is not /v1: it says the mode is on, without the additions.
	rec = control(t, s, "GET", "/_emulator/scenario", nil)
	if rec.Header().Get(kit.HeaderName) != "" || strings.Contains(rec.Body.String(), kit.MemberName) ||
		!strings.Contains(rec.Body.String(), `"evolution":{"members":true,"headers":true,"status":true,"output_type":true}`) {
		t.Errorf("control scenario: %v %s", rec.Header(), rec.Body)
	}
	cov := control(t, s, "GET", "/_emulator/coverage", nil).Body.String()
	for _, c := range []string{"evolution member", "evolution header", "evolution status", "evolution output_type"} {
		if !strings.Contains(cov, `"`+c+`"`) {
			t.Errorf("coverage lacks %s: %s", c, cov)
		}
	}
}

// Each kind goes on alone; with none, answers are byte for byte those of the default mode.
func TestEvolutionKindsApart(t *testing.T) {
	t.Parallel()
	kit := evolve.New(7)
	plain := flowServer(t)
	want := call(t, plain, "GET", "/v1/models", "key_a", nil)
	for _, tc := range []struct {
		kinds                   map[string]any
		member, header, model3d bool
	}{
		{map[string]any{}, false, false, false},
		{map[string]any{"members": true}, true, false, false},
		{map[string]any{"headers": true}, false, true, false},
		{map[string]any{"output_type": true}, false, false, true},
		{map[string]any{"status": true}, false, false, false},
	} {
		s := flowServer(t)
		putScenario(t, s, map[string]any{"name": "kinds", "evolution": tc.kinds})
		rec := call(t, s, "GET", "/v1/models", "key_a", nil)
		body := rec.Body.String()
		if strings.Contains(body, kit.MemberName) != tc.member || (rec.Header().Get(kit.HeaderName) != "") != tc.header ||
			strings.Contains(body, `"output_type":"3d"`) != tc.model3d {
			t.Errorf("%v: header %v, body %.300s", tc.kinds, rec.Header(), body)
		}
		if !tc.member && !tc.model3d && body != want.Body.String() {
			t.Errorf("%v: the list changed", tc.kinds)
		}
	}
}

// The same seed gives the same bytes; another seed draws other names.
func TestEvolutionIsSeeded(t *testing.T) {
	t.Parallel()
	answer := func(seed int64) (string, http.Header) {
		s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, Seeded: true, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		putScenario(t, s, evolutionScenario)
		rec := startGeneration(t, s, "key_a", "k", "test/pixel", map[string]any{"prompt": "x"})
		return rec.Body.String() + call(t, s, "GET", "/v1/models", "key_a", nil).Body.String(), rec.Header()
	}
	a, ha := answer(3)
	b, hb := answer(3)
	c, _ := answer(4)
	if a != b || ha.Get(evolve.New(3).HeaderName) == "" || ha.Get(evolve.New(3).HeaderName) != hb.Get(evolve.New(3).HeaderName) {
		t.Errorf("seed 3 twice:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("seeds 3 and 4 gave the same answers")
	}
}

// On a skipping clock each poll moves the job on by one step, preparing among them; wait=true
// skips to the end. Through a snapshot the mode goes on in the restored tenant.
func TestEvolutionOnTheSkipClockAndThroughASnapshot(t *testing.T) {
	t.Parallel()
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", SkipClock: true, Seeded: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	kit := evolve.New(5)
	tenant := []string{"X-Emulator-Tenant", "skip"}
	if rec := call(t, s, "PUT", "/_emulator/scenario", "", map[string]any{"scenario": evolutionScenario}, tenant...); rec.Code != 200 {
		t.Fatalf("put scenario: %d %s", rec.Code, rec.Body)
	}
	input := map[string]any{"prompt": "x"}
	q := decode[quoteBody](t, call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": input}, tenant...))
	rec := call(t, s, "POST", "/v1/generate", "key_a", map[string]any{"model": "test/pixel", "input": input, "quote_id": q.QuoteID}, append([]string{"Idempotency-Key", "s1"}, tenant...)...)
	id := decode[api.Job](t, rec).ID
	var seen []string
	for range 4 {
		seen = append(seen, decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+id, "key_a", nil, tenant...)).Status)
	}
	if strings.Join(seen, " ") != "preparing running succeeded succeeded" {
		t.Errorf("polls on a skipping clock saw %v", seen)
	}
	q = decode[quoteBody](t, call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": input}, tenant...))
	rec = call(t, s, "POST", "/v1/generate?wait=true", "key_a", map[string]any{"model": "test/pixel", "input": input, "quote_id": q.QuoteID}, append([]string{"Idempotency-Key", "s2"}, tenant...)...)
	if j := evolvedAnswer(t, "wait=true", rec, kit); rec.Code != 200 || j["status"] != "succeeded" {
		t.Errorf("wait=true on a skipping clock: %d %s", rec.Code, rec.Body)
	}

	if rec := restore(t, s, "copy", snapshotOf(t, s, "skip", "")); rec.Code >= 300 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	copied := call(t, s, "GET", "/v1/jobs/"+id, "key_a", nil, "X-Emulator-Tenant", "copy")
	original := call(t, s, "GET", "/v1/jobs/"+id, "key_a", nil, tenant...)
	evolvedAnswer(t, "restored job", copied, kit)
	if !bytes.Equal(bytes.ReplaceAll(copied.Body.Bytes(), []byte("/files/copy/"), []byte("/files/skip/")), original.Body.Bytes()) {
		t.Errorf("the restored tenant answers otherwise:\n%s\n%s", copied.Body, original.Body)
	}
}

// On the real clock, and over the wire: a wait=true generation parked until its job ends (the
// clock jumped forward, so the test waits on nothing) answers with the member in its objects and
// a Content-Length that fits.
func TestEvolutionOverTheWire(t *testing.T) {
	t.Parallel()
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	kit := evolve.New(9)
	c := wire{t: t, base: hs.URL, key: "key_a"}
	c.must(200, "PUT", "/_emulator/scenario", map[string]any{"scenario": evolutionScenario})
	input := map[string]any{"prompt": "x"}
	// test/reel queues 500ms and runs 3s of real time: the wait has begun long before it ends.
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/reel", "input": input})
	if q[kit.MemberName] != kit.MemberValue {
		t.Errorf("quote over the wire: %v", q)
	}
	raw, _ := json.Marshal(map[string]any{"model": "test/reel", "input": input, "quote_id": q["quote_id"]})
	req, _ := http.NewRequest("POST", hs.URL+"/v1/generate?wait=true", bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer key_a")
	req.Header.Set("Idempotency-Key", "w1")
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	if w := c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil); w["reached"] != true {
		t.Fatalf("the wait never began: %v", w)
	}
	c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "10s"})
	resp := <-done
	if resp == nil {
		t.FailNow()
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	for k, v := range resp.Header {
		rec.Header()[k] = v
	}
	rec.Body = &body
	if j := evolvedAnswer(t, "parked", rec, kit); resp.StatusCode != 200 || j["status"] != "succeeded" {
		t.Errorf("parked answer: %d %s", resp.StatusCode, body.String())
	}
}

// Injected faults keep their bodies in the mode: a malformed or truncated body goes out as the
// fault wrote it, and an injected error is a problem with the member.
func TestEvolutionLeavesInjectedBodiesAlone(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, evolutionScenario)
	kit := evolve.New(7)
	for _, f := range []map[string]any{
		{"match": map[string]any{"path": "/v1/models"}, "action": "malformed", "count": 1},
		{"match": map[string]any{"path": "/v1/models/categories"}, "status": 503, "count": 1},
	} {
		if rec := control(t, s, "POST", "/_emulator/faults", f); rec.Code != 201 {
			t.Fatalf("fault: %d %s", rec.Code, rec.Body)
		}
	}
	if rec := call(t, s, "GET", "/v1/models", "key_a", nil); rec.Body.String() != `{"data":[{"id":"`+"\x00"+`,` {
		t.Errorf("the malformed body changed: %q", rec.Body)
	}
	rec := call(t, s, "GET", "/v1/models/categories", "key_a", nil)
	if p := evolvedAnswer(t, "injected 503", rec, kit); rec.Code != 503 || p["code"] != "service_unavailable" {
		t.Errorf("injected 503: %d %s", rec.Code, rec.Body)
	}
}

// A scenario sent inline with evolution of the wrong kind, or a kind unknown, is refused with
// its line, and a pointer to the field when the problem is the field's value.
func TestEvolutionRefusedInline(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	for body, want := range map[string]problem.FieldError{
		`{"scenario": {"evolution": "yes"}}`: {Pointer: "/scenario/evolution",
			Message: `line 2: evolution: want true, false or a mapping of members, headers, status and output_type, got "yes"`},
		`{"scenario": {"evolution": {"statuses": true}}}`: {
			Message: `line 3: unknown field "statuses" in evolution (known: headers, members, output_type, status)`},
	} {
		rec := control(t, s, "PUT", "/_emulator/scenario", body)
		p := decode[problemJSON](t, rec)
		if rec.Code != 422 || p.Code != "invalid_request" || len(p.Errors) != 1 || p.Errors[0].Pointer != want.Pointer || p.Errors[0].Message != want.Message {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
}

// TestEvolutionStatusCountsOncePerJobShown: coverage counts a job shown as preparing once per
// time it is shown, as it counts every other case.
func TestEvolutionStatusCountsOncePerJobShown(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, map[string]any{"name": "preparing", "evolution": map[string]any{"status": true}})
	input := map[string]any{"prompt": "a red fox"}
	q := decode[map[string]any](t, call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": input}))
	job := decode[map[string]any](t, call(t, s, "POST", "/v1/generate", "key_a",
		map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]}, "Idempotency-Key", "once"))
	advance(t, s, "100ms") // test/pixel queues 100ms, then prepares for the first 225ms of its run
	if j := decode[map[string]any](t, call(t, s, "GET", "/v1/jobs/"+job["id"].(string), "key_a", nil)); j["status"] != evolve.Status {
		t.Fatalf("the job shows %v, not %s", j["status"], evolve.Status)
	}
	cov := decode[api.Coverage](t, control(t, s, "GET", "/_emulator/coverage", nil))
	for _, c := range cov.Cases {
		if c.ID == "evolution status" && c.Count != 1 {
			t.Errorf("evolution status counted %d times for one job shown once", c.Count)
		}
	}
}
