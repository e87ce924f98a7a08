package emulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// tenantCall is call in a named tenant.
func tenantCall(t testing.TB, s *Server, tenant, method, path, key string, body any, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	return call(t, s, method, path, key, body, append([]string{"X-Emulator-Tenant", tenant}, headers...)...)
}

// busyTenant fills a tenant with jobs in every state, held credits, used and unused quotes,
// faults of both sources and a manual clock moved part of the way.
func busyTenant(t testing.TB, s *Server, tenant string) {
	t.Helper()
	do := func(want int, method, path, key string, body any, headers ...string) *httptest.ResponseRecorder {
		t.Helper()
		rec := tenantCall(t, s, tenant, method, path, key, body, headers...)
		if rec.Code != want && want != 0 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec
	}
	// The flaky scenario's faults would make the set-up's own answers vary; it comes in last.
	var ids, quoteIDs []string
	for i, outcome := range []string{"expire", "succeed", "fail", "expire", "slow", "succeed", "slow", "content_policy", "slow"} {
		if i == 1 {
			do(200, "POST", "/_emulator/clock", "", map[string]any{"advance": "11m"}) // the first expires
		}
		input := map[string]any{"prompt": fmt.Sprint("busy ", i), "num_images": 1 + i%2, "image_size": "square", "output_format": "png"}
		q := decode[quoteBody](t, do(200, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": input}))
		rec := do(202, "POST", "/v1/generate", "mg_test_all", map[string]any{"model": schnellID, "input": input, "quote_id": q.QuoteID},
			"Idempotency-Key", fmt.Sprint("busy-", i), "X-Emulator-Outcome", outcome)
		ids = append(ids, decode[api.Job](t, rec).ID)
		quoteIDs = append(quoteIDs, q.QuoteID)
	}
	do(200, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": map[string]any{"prompt": "unused"}})
	do(200, "POST", "/_emulator/clock", "", map[string]any{"advance": "7s"})
	do(200, "POST", "/v1/jobs/"+ids[6]+"/cancel", "mg_test_all", nil)
	do(201, "POST", "/_emulator/faults", "", map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 503, "count": 3})
	do(0, "GET", "/v1/models", "mg_test_all", nil)
	do(200, "PUT", "/_emulator/accounts/acct_poor", "", map[string]any{"credits": 77})
	// What the verification and the report keep beside the journal: expected errors (one with a
	// number no float holds exactly), the tenant's coverage, and downloads and balances set.
	do(201, "POST", "/_emulator/expected-errors", "", map[string]any{"path": "/v1/models", "status": 503})
	do(201, "POST", "/_emulator/expected-errors", "", map[string]any{"method": "POST", "body": map[string]any{"seed": json.Number("12345678901234567891")}})
	// A quote used twice, by a client that had the job it made, is a finding of the report.
	do(200, "GET", "/v1/jobs/"+ids[1], "mg_test_all", nil)
	do(409, "POST", "/v1/generate", "mg_test_all", map[string]any{"model": schnellID, "input": map[string]any{"prompt": "busy 1", "num_images": 2, "image_size": "square", "output_format": "png"},
		"quote_id": quoteIDs[1]}, "Idempotency-Key", "busy-again")
	var page struct{ Data []api.Job }
	_ = json.Unmarshal(do(200, "GET", "/v1/jobs?limit=100", "mg_test_all", nil).Body.Bytes(), &page)
	downloads := 0
	for _, j := range page.Data {
		for _, o := range j.Outputs {
			do(0, "GET", strings.TrimPrefix(o.URL, "http://example.com"), "", nil, "Range", "bytes=0-9")
			downloads++
		}
	}
	if downloads == 0 {
		t.Fatal("the busy tenant has no file to download")
	}
	do(200, "PUT", "/_emulator/scenario", "", map[string]any{"name": "flaky"})
	do(200, "POST", "/_emulator/clock", "", map[string]any{"advance": "1500ms"})
}

// continuation sends the same requests after a snapshot point and returns everything the
// emulator answered, file bytes included, with the tenant's own file prefix made neutral.
func continuation(t testing.TB, s *Server, tenant string) string {
	t.Helper()
	var out strings.Builder
	record := func(rec *httptest.ResponseRecorder) {
		fmt.Fprintf(&out, "%d %s %s\n", rec.Code, rec.Header().Get("X-Request-Id"), rec.Body)
	}
	get := func(path, key string) *httptest.ResponseRecorder {
		rec := tenantCall(t, s, tenant, "GET", path, key, nil)
		record(rec)
		return rec
	}
	state := func() {
		for _, p := range []string{"/_emulator/accounts", "/_emulator/jobs?limit=100", "/_emulator/clock", "/_emulator/faults", "/_emulator/scenario",
			"/_emulator/expected-errors", "/_emulator/unexpected", "/_emulator/coverage?scope=tenant", "/_emulator/report"} {
			get(p, "")
		}
		jobs := get("/v1/jobs?limit=100", "mg_test_all")
		var page struct{ Data []api.Job }
		_ = json.Unmarshal(jobs.Body.Bytes(), &page)
		for _, j := range page.Data {
			get("/v1/jobs/"+j.ID, "mg_test_all")
			for _, o := range j.Outputs {
				file := tenantCall(t, s, tenant, "GET", strings.TrimPrefix(o.URL, "http://example.com"), "", nil)
				sum := sha256.Sum256(file.Body.Bytes())
				fmt.Fprintf(&out, "file %s %d %s\n", o.URL, file.Code, hex.EncodeToString(sum[:]))
			}
		}
	}
	state()
	for i := range 6 {
		input := map[string]any{"prompt": fmt.Sprint("after ", i), "num_images": 1, "image_size": "square", "output_format": "png"}
		q := tenantCall(t, s, tenant, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": input})
		record(q)
		if q.Code == 200 {
			record(tenantCall(t, s, tenant, "POST", "/v1/generate", "mg_test_all",
				map[string]any{"model": schnellID, "input": input, "quote_id": decode[quoteBody](t, q).QuoteID}, "Idempotency-Key", fmt.Sprint("after-", i)))
		}
		record(tenantCall(t, s, tenant, "POST", "/_emulator/clock", "", map[string]any{"advance": "2s"}))
	}
	get("/v1/models?limit=1", "mg_test_all")
	record(tenantCall(t, s, tenant, "POST", "/_emulator/clock", "", map[string]any{"advance": "10m"}))
	state()
	get("/_emulator/requests?limit=500", "")
	// The journal times requests in real time, which no snapshot can repeat.
	neutral := durations.ReplaceAllString(out.String(), `"duration_ms":0`)
	// A restored journal shows the headers its requests were sent with, the original tenant's
	// name among them.
	neutral = tenantHeader.ReplaceAllString(neutral, `"X-Emulator-Tenant":"TENANT"`)
	// Its answers recorded before the snapshot name the original tenant's files.
	neutral = filePrefix.ReplaceAllString(neutral, "/files/TENANT/")
	return strings.NewReplacer(`"tenant":"`+tenant+`"`, `"tenant":"TENANT"`).Replace(neutral)
}

var (
	durations  = regexp.MustCompile(`"duration_ms":[0-9.e-]+`)
	filePrefix = regexp.MustCompile(`/files/[a-z]+/`)
)

func snapshotOf(t testing.TB, s *Server, tenant, query string) []byte {
	t.Helper()
	rec := tenantCall(t, s, tenant, "GET", "/_emulator/snapshot"+query, "", nil)
	if rec.Code != 200 {
		t.Fatalf("snapshot: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

func restore(t testing.TB, s *Server, tenant string, doc []byte) *httptest.ResponseRecorder {
	t.Helper()
	return tenantCall(t, s, tenant, "PUT", "/_emulator/snapshot", "", string(doc))
}

// A busy tenant's snapshot, restored into another tenant of another emulator seeded otherwise,
// answers every control and /v1 request as the original does, and goes on identically: the
// same answers, ids and file bytes.
func TestSnapshotRoundTripGoesOnIdentically(t *testing.T) {
	t.Parallel()
	a := simServer(t, Config{Seeded: true, Seed: 99})
	busyTenant(t, a, "alpha")
	doc := snapshotOf(t, a, "alpha", "?journal=true")

	var parsed api.Snapshot
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, j := range parsed.Jobs {
		states[j.Status]++
	}
	for _, s := range []string{"queued", "running", "succeeded", "failed", "canceled", "expired"} {
		if states[s] == 0 {
			t.Errorf("the busy tenant has no %s job: %v", s, states)
		}
	}
	if parsed.Format != 1 || parsed.Clock.Mode != "manual" || !parsed.Random.Seeded || len(parsed.Faults.Rules) < 2 || parsed.Journal == nil || parsed.Scenario.Name != "flaky" {
		t.Errorf("snapshot lacks parts: format %d clock %+v random %+v faults %d scenario %q", parsed.Format, parsed.Clock, parsed.Random, len(parsed.Faults.Rules), parsed.Scenario.Name)
	}
	for _, j := range parsed.Jobs {
		if len(j.Outputs) > 0 { // [] is a job without outputs (one that did not succeed)
			t.Errorf("job %s lists outputs its seeded source makes again: %+v", j.ID, j.Outputs)
		}
	}
	kinds := map[string]int{}
	for _, n := range parsed.Notes.Entries {
		kinds[n.Kind]++
	}
	if len(parsed.ExpectedErrors) != 2 || len(parsed.Coverage) < 3 || kinds["download"] == 0 || kinds["credits_set"] == 0 {
		t.Errorf("snapshot lacks the verification's parts: expected %v coverage %v notes %v", parsed.ExpectedErrors, parsed.Coverage, kinds)
	}

	b := simServer(t, Config{Seeded: true, Seed: 7})
	if rec := restore(t, b, "beta", doc); rec.Code != 200 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	// Restored in place, in the same emulator too.
	if rec := restore(t, a, "gamma", doc); rec.Code != 200 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	// A snapshot of a restored tenant is the document it was restored from.
	if rec := restore(t, b, "delta", doc); rec.Code != 200 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	// Its own request drew one more request id.
	again := bytes.Replace(snapshotOf(t, b, "delta", "?journal=true"), []byte(`"tenant":"delta"`), []byte(`"tenant":"alpha"`), 1)
	again = bytes.Replace(again, fmt.Appendf(nil, `"requests":%d`, parsed.Random.Requests+1), fmt.Appendf(nil, `"requests":%d`, parsed.Random.Requests), 1)
	if !bytes.Equal(again, doc) {
		t.Errorf("a restored snapshot's snapshot differs: %s", firstDifference(strings.ReplaceAll(string(doc), ",", ",\n"), strings.ReplaceAll(string(again), ",", ",\n")))
	}
	want := continuation(t, a, "alpha")
	for _, other := range []struct {
		s      *Server
		tenant string
	}{{b, "beta"}, {a, "gamma"}} {
		if got := continuation(t, other.s, other.tenant); got != want {
			t.Errorf("tenant %s goes on differently:\n%s", other.tenant, firstDifference(want, got))
		}
	}
	if !strings.Contains(want, "file ") || !strings.Contains(want, `"status":"failed"`) || !strings.Contains(want, `"id":"fault error","group":"faults","count":`) ||
		!strings.Contains(want, `"rule":"quote-reused"`) || !strings.Contains(want, `"seed":12345678901234567891`) {
		t.Errorf("the continuation lacks files or failures:\n%s", want)
	}
}

// Without a seed a job's outputs cannot be made again, so the snapshot lists them, and the
// restored job serves the same files.
func TestSnapshotKeepsOutputsNoSeedMakesAgain(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	input := map[string]any{"prompt": "unseeded", "num_images": 2}
	q := decode[quoteBody](t, tenantCall(t, s, "one", "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": input}))
	job := decode[api.Job](t, tenantCall(t, s, "one", "POST", "/v1/generate", "mg_test_all", map[string]any{"model": schnellID, "input": input, "quote_id": q.QuoteID},
		"Idempotency-Key", "k", "X-Emulator-Outcome", "succeed"))
	tenantCall(t, s, "one", "POST", "/_emulator/clock", "", map[string]any{"advance": "1m"})
	doc := snapshotOf(t, s, "one", "")
	var parsed api.Snapshot
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	if len(parsed.Jobs) != 1 || len(parsed.Jobs[0].Outputs) != 2 {
		t.Fatalf("the snapshot does not list the job's outputs: %+v", parsed.Jobs)
	}
	if rec := restore(t, s, "two", doc); rec.Code != 200 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	answers := map[string]string{}
	for _, tenant := range []string{"one", "two"} {
		got := decode[api.Job](t, tenantCall(t, s, tenant, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil))
		var b strings.Builder
		for _, o := range got.Outputs {
			file := tenantCall(t, s, tenant, "GET", strings.TrimPrefix(o.URL, "http://example.com"), "", nil)
			sum := sha256.Sum256(file.Body.Bytes())
			fmt.Fprintf(&b, "%s %d %s\n", strings.Replace(o.URL, "/"+tenant+"/", "/TENANT/", 1), file.Code, hex.EncodeToString(sum[:]))
		}
		answers[tenant] = b.String()
	}
	if answers["one"] != answers["two"] || strings.Count(answers["one"], " 200 ") != 2 {
		t.Errorf("the restored job serves other files:\n%s\n%s", answers["one"], answers["two"])
	}
}

var tenantHeader = regexp.MustCompile(`"X-Emulator-Tenant":"[^"]*"`)

// firstDifference shows where two transcripts part.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			// Long lines are shown from a little before where they part.
			at := 0
			for at < min(len(al[i]), len(bl[i])) && al[i][at] == bl[i][at] {
				at++
			}
			from := max(0, at-200)
			return fmt.Sprintf("line %d, byte %d:\nwant …%s\ngot  …%s", i+1, at, al[i][from:min(len(al[i]), at+300)], bl[i][from:min(len(bl[i]), at+300)])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(al), len(bl))
}

// Bad documents answer 422 invalid_snapshot with a JSON Pointer per problem, and change nothing.
func TestBadSnapshotsChangeNothing(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{Seeded: true, Seed: 5})
	busyTenant(t, s, "src")
	doc := snapshotOf(t, s, "src", "")
	var parsed api.Snapshot
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	busyTenant(t, s, "dst")
	before := snapshotOf(t, s, "dst", "")
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	job := func(m map[string]any, i int) map[string]any { return m["jobs"].([]any)[i].(map[string]any) }
	live := func(m map[string]any) map[string]any {
		for _, j := range m["jobs"].([]any) {
			if j.(map[string]any)["status"] == "running" {
				return j.(map[string]any)
			}
		}
		t.Fatal("no running job")
		return nil
	}
	cases := []struct {
		name, body string
		pointers   []string
		models     []any
	}{
		{"truncated", string(doc[:len(doc)/2]), []string{""}, nil},
		{"newer format", edit(func(m map[string]any) { m["format"] = 2 }), []string{"/format"}, nil},
		{"not an object", `[1, 2]`, []string{""}, nil},
		{"wrong type", edit(func(m map[string]any) { m["clock"] = "soon" }), []string{"/clock"}, nil},
		{"unknown field", edit(func(m map[string]any) { m["extra"] = true }), []string{"/extra"}, nil},
		{"unknown field deep down", edit(func(m map[string]any) { job(m, 3)["plan"].(map[string]any)["extra"] = 1 }), []string{"/jobs/3/plan/extra"}, nil},
		{"a field given twice", strings.Replace(string(doc), `"format":1,`, `"format":1,"format":1,`, 1), []string{"/format"}, nil},
		{"outputs left out that cannot be made again", edit(func(m map[string]any) { job(m, 1)["input"] = "text" }), []string{"/jobs/1/outputs"}, nil},
		{"a bad duration", edit(func(m map[string]any) { job(m, 1)["output_ttl"] = "soon" }), []string{"/jobs/1/output_ttl"}, nil},
		// A job's quote may be forgotten (the markers' bound), but one that is held names it.
		{"job naming another quote than its own", edit(func(m map[string]any) { live(m)["quote_id"] = "nope" }), []string{"/quotes/4/used_by"}, nil},
		{"models the catalog lacks", edit(func(m map[string]any) {
			job(m, 0)["model"] = "acme/imaginary"
			m["quotes"].([]any)[1].(map[string]any)["model"] = "acme/other"
		}), []string{"/quotes/1/model", "/jobs/0/model"}, []any{"acme/other", "acme/imaginary"}},
		{"edited input", edit(func(m map[string]any) {
			q := m["quotes"].([]any)
			q[len(q)-1].(map[string]any)["input"] = map[string]any{"prompt": "changed"}
		}), []string{"/quotes/9/input_digest"}, nil},
		{"held credits that do not add up", edit(func(m map[string]any) {
			m["accounts"].([]any)[0].(map[string]any)["held"] = 999
		}), []string{"/accounts/0/held"}, nil},
		{"bad status", edit(func(m map[string]any) { job(m, 2)["status"] = "sleeping" }), []string{"/jobs/2/status"}, nil},
		{"a bad expected error", edit(func(m map[string]any) {
			m["expected_errors"].([]any)[1].(map[string]any)["status"] = 42
		}), []string{"/expected_errors/1/status"}, nil},
		{"coverage that does not hold", edit(func(m map[string]any) {
			c := m["coverage"].([]any)
			c[0].(map[string]any)["group"] = "flows"
			c[1].(map[string]any)["count"] = -1
			m["coverage"] = append(c, map[string]any{"id": "made up", "group": "nowhere", "count": 1})
		}), []string{"/coverage/0/group", "/coverage/1/count", "/coverage/" + strconv.Itoa(len(parsed.Coverage)) + "/group"}, nil},
		{"notes that do not hold", edit(func(m map[string]any) {
			n := m["notes"].(map[string]any)
			n["entries"].([]any)[0].(map[string]any)["kind"] = "upload"
			n["entries"].([]any)[1].(map[string]any)["time"] = "yesterday"
			n["dropped"] = "later"
		}), []string{"/notes/dropped", "/notes/entries/0/kind", "/notes/entries/1/time"}, nil},
		{"unknown scenario", edit(func(m map[string]any) { m["scenario"] = map[string]any{"name": "nowhere"} }), []string{"/scenario/name"}, nil},
	}
	for _, c := range cases {
		rec := restore(t, s, "dst", []byte(c.body))
		var p struct {
			Code   string
			Errors []api.FieldError
			Models []any
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		var ptrs []string
		for _, e := range p.Errors {
			ptrs = append(ptrs, e.Pointer)
		}
		if rec.Code != 422 || p.Code != "invalid_snapshot" || !slicesEqual(ptrs, c.pointers) || fmt.Sprint(p.Models) != fmt.Sprint(c.models) {
			t.Errorf("%s: %d %s, want 422 invalid_snapshot at %q models %v", c.name, rec.Code, rec.Body, c.pointers, c.models)
		}
	}
	if rec := tenantCall(t, s, "dst", "PUT", "/_emulator/snapshot", "", "{}", "Content-Type", "text/plain"); rec.Code != 415 {
		t.Errorf("a text body: %d %s", rec.Code, rec.Body)
	}
	small := simServer(t, Config{MaxSnapshotBytes: 1000})
	if rec := restore(t, small, "x", doc); rec.Code != 413 {
		t.Errorf("a snapshot over its limit: %d %s", rec.Code, rec.Body)
	}
	after := snapshotOf(t, s, "dst", "")
	// Only the request ids drawn for the refused requests moved on.
	strip := func(b []byte) string { return regexp.MustCompile(`"requests":[0-9]+`).ReplaceAllString(string(b), "") }
	if strip(after) != strip(before) {
		t.Errorf("a refused snapshot changed the tenant: %s", firstDifference(strip(before), strip(after)))
	}
}

func slicesEqual(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// Requests to a tenant being restored see the old world or the new one, never a mix.
func TestRestoreIsAtomic(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{Seeded: true, Seed: 3})
	busyTenant(t, s, "one")
	tenantCall(t, s, "one", "PUT", "/_emulator/scenario", "", map[string]any{"name": "default"}) // no faults drawn at random
	one := snapshotOf(t, s, "one", "")
	call := func(path, key string) string { return tenantCall(t, s, "live", "GET", path, key, nil).Body.String() }
	restoreOK := func(doc []byte) {
		if rec := restore(t, s, "live", doc); rec.Code != 200 {
			t.Errorf("restore: %d %s", rec.Code, rec.Body)
		}
	}
	tenantCall(t, s, "two", "PUT", "/_emulator/accounts/acct_all", "", map[string]any{"credits": 5})
	two := snapshotOf(t, s, "two", "")
	answers := map[string]map[string]bool{}
	paths := []struct{ path, key string }{{"/_emulator/accounts", ""}, {"/v1/jobs?limit=100", "mg_test_all"}, {"/_emulator/faults", ""}}
	for _, doc := range [][]byte{one, two} {
		restoreOK(doc)
		for _, p := range paths {
			if answers[p.path] == nil {
				answers[p.path] = map[string]bool{}
			}
			answers[p.path][durations.ReplaceAllString(call(p.path, p.key), "")] = true
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, p := range paths {
					if got := call(p.path, p.key); !answers[p.path][got] {
						t.Errorf("%s answered neither world: %s", p.path, got)
						return
					}
				}
			}
		})
	}
	for i := range 20 {
		restoreOK([][]byte{one, two}[i%2])
	}
	close(done)
	wg.Wait()
}

// Outputs edited past what the media writers make, or with a size in bytes other than their
// file's, are refused with a pointer to each, rather than restored to answer 500 on download.
func TestSnapshotRefusesOutputsNoDownloadServes(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{}) // unseeded: the snapshot lists every output
	for i, m := range []struct {
		id    string
		input map[string]any
	}{{schnellID, map[string]any{"prompt": "edited", "num_images": 3}}, {speechID, speech}} {
		q := decode[quoteBody](t, tenantCall(t, s, "src", "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": m.id, "input": m.input}))
		tenantCall(t, s, "src", "POST", "/v1/generate", "mg_test_all", map[string]any{"model": m.id, "input": m.input, "quote_id": q.QuoteID},
			"Idempotency-Key", fmt.Sprint("k", i), "X-Emulator-Outcome", "succeed")
	}
	tenantCall(t, s, "src", "POST", "/_emulator/clock", "", map[string]any{"advance": "10m"})
	doc := snapshotOf(t, s, "src", "")
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	var image, audio []any
	for _, j := range m["jobs"].([]any) {
		j := j.(map[string]any)
		if j["model"] == schnellID {
			image = j["outputs"].([]any)
		} else {
			audio = j["outputs"].([]any)
		}
	}
	if len(image) != 3 || len(audio) != 1 {
		t.Fatalf("outputs listed: %d images, %d audio", len(image), len(audio))
	}
	image[0].(map[string]any)["width"] = 60000
	image[1].(map[string]any)["height"] = nil
	image[2].(map[string]any)["size_bytes"] = 12
	audio[0].(map[string]any)["duration_seconds"] = 1e9
	edited, _ := json.Marshal(m)
	rec := restore(t, s, "dst", edited)
	var p struct {
		Code   string
		Errors []api.FieldError
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &p)
	var ptrs []string
	for _, e := range p.Errors {
		ptrs = append(ptrs, strings.TrimPrefix(strings.TrimPrefix(e.Pointer, "/jobs/0"), "/jobs/1"))
	}
	want := []string{"/outputs/0/width", "/outputs/1/height", "/outputs/2/size_bytes", "/outputs/0/duration_seconds"}
	slices.Sort(ptrs)
	slices.Sort(want)
	if rec.Code != 422 || p.Code != "invalid_snapshot" || !slicesEqual(ptrs, want) {
		t.Errorf("%d %s\nwant 422 invalid_snapshot at %q", rec.Code, rec.Body, want)
	}
	if rec := tenantCall(t, s, "dst", "GET", "/v1/jobs", "mg_test_all", nil); !strings.Contains(rec.Body.String(), `"data":[]`) {
		t.Errorf("the refused snapshot left jobs behind: %s", rec.Body)
	}
	if rec := restore(t, s, "dst", doc); rec.Code != 200 {
		t.Errorf("the snapshot as written: %d %s", rec.Code, rec.Body)
	}
}

// Snapshot uploads in flight hold at most twice the route's bound together: one past it is
// answered 503 memory_budget_exhausted with Retry-After at once, and once the others finish, the
// same upload is taken.
func TestSnapshotUploadsInFlightAreBounded(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{MaxSnapshotBytes: 1 << 20})
	doc := snapshotOf(t, s, "src", "")
	var writers []*io.PipeWriter
	var served []chan int
	for i := range 2 {
		pr, pw := io.Pipe()
		req := httptest.NewRequest("PUT", "/_emulator/snapshot", pr)
		req.Header.Set("X-Emulator-Tenant", fmt.Sprint("up", i))
		req.ContentLength = 1 << 20
		answered := make(chan int, 1)
		go func() {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			answered <- rec.Code
		}()
		// The write returns once the handler has read it, so the upload holds its bytes.
		wrote := make(chan error, 1)
		go func() {
			_, err := pw.Write([]byte("{"))
			wrote <- err
		}()
		select {
		case err := <-wrote:
			if err != nil {
				t.Fatal(err)
			}
		case code := <-answered:
			t.Fatalf("upload %d of two within the bound answered %d before its body came", i, code)
		}
		writers = append(writers, pw)
		served = append(served, answered)
	}
	rec := restore(t, s, "dst", doc)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"code":"memory_budget_exhausted"`) || rec.Header().Get("Retry-After") == "" {
		t.Errorf("an upload past the bound: %d %s %v", rec.Code, rec.Body, rec.Header())
	}
	for i, pw := range writers {
		pw.CloseWithError(io.ErrUnexpectedEOF)
		if code := <-served[i]; code != 400 {
			t.Errorf("upload %d cut off: %d", i, code)
		}
	}
	if rec := restore(t, s, "dst", doc); rec.Code != 200 {
		t.Errorf("the upload once the others finished: %d %s", rec.Code, rec.Body)
	}
	// An upload of unannounced length is bounded the same way as it grows.
	chunked := httptest.NewRequest("PUT", "/_emulator/snapshot", io.MultiReader(bytes.NewReader(doc)))
	chunked.ContentLength = -1
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, chunked)
	if rec.Code != 200 {
		t.Errorf("an upload of unannounced length: %d %s", rec.Code, rec.Body)
	}
	// What an upload holds counts against the memory budget: four times its body.
	tight := simServer(t, Config{MemoryBudget: 3 << 20})
	big := httptest.NewRequest("PUT", "/_emulator/snapshot", bytes.NewReader(bytes.Repeat([]byte(" "), 1<<20)))
	rec = httptest.NewRecorder()
	tight.ServeHTTP(rec, big)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"code":"memory_budget_exhausted"`) {
		t.Errorf("an upload of 1 MiB under a budget of 3 MiB: %d %s", rec.Code, rec.Body)
	}
}

// A key that only quotes (a price shown as a user types) is not refused after 10,000 live
// quotes: a quote is a compact record, a digest standing in for its input (so a 2 KB prompt
// costs what a short one does), and the account's bound is set by what those records cost.
func TestOneKeyThatOnlyQuotes(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	long := strings.Repeat("a lighthouse at dawn ", 100)
	for i := range 12_000 {
		rec := call(t, s, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": map[string]any{"prompt": fmt.Sprint(long, i)}})
		if rec.Code != 200 {
			t.Fatalf("quote %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
}
