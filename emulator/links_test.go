package emulator

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// signing is a scenario that signs test/pixel's links for 15 minutes and refuses a signed link
// fetched with a key; other models' links stay plain.
var signing = map[string]any{"scenario": map[string]any{"name": "signed-links", "overrides": []any{
	map[string]any{"match": map[string]any{"model": "test/*"}, "download": map[string]any{"url_ttl": "15m"}},
	map[string]any{"match": map[string]any{"model": "test/pixel"}, "download": map[string]any{"url_ttl": "15m", "reject_authorization": true}},
	map[string]any{"match": map[string]any{"model": "test/voice"}, "download": map[string]any{"bytes_per_second": 1 << 20}},
}}}

// fetched is a file's answer: status, media type and body.
type fetched struct {
	status int
	ctype  string
	body   []byte
}

// fetch GETs a file URL (absolute, as a job gives it) with the headers given.
func fetch(t *testing.T, rawURL string, headers ...string) fetched {
	t.Helper()
	req, err := http.NewRequest("GET", rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return fetched{resp.StatusCode, resp.Header.Get("Content-Type"), body}
}

// storageError reads an S3-style error body.
func storageError(t *testing.T, f fetched) (code, message string) {
	t.Helper()
	var e api.StorageError
	if f.ctype != "application/xml" || xml.Unmarshal(f.body, &e) != nil || !bytes.HasPrefix(f.body, []byte("<?xml")) {
		t.Fatalf("not a storage error: %d %s %s", f.status, f.ctype, f.body)
	}
	if e.RequestID == "" {
		t.Errorf("no RequestId: %s", f.body)
	}
	// The body is api.StorageError and nothing more: written back, it is the same bytes.
	if again, _ := xml.Marshal(e); xml.Header+string(again) != string(f.body) {
		t.Errorf("the body is not api.StorageError's:\n%s\nnot\n%s%s", f.body, xml.Header, again)
	}
	return e.Code, e.Message
}

// makeJob quotes and generates on a model and returns the job's id.
func makeJob(c wire, model string, input map[string]any, key string) string {
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": model, "input": input})["quote_id"]
	return c.must(202, "POST", "/v1/generate", map[string]any{"model": model, "input": input, "quote_id": q}, "Idempotency-Key", key)["id"].(string)
}

// output is a job's first output as a read gives it now.
func output(c wire, id string) map[string]any {
	job := c.must(200, "GET", "/v1/jobs/"+id, nil)
	if job["status"] != "succeeded" {
		c.t.Fatalf("job %s is %v", id, job["status"])
	}
	return job["outputs"].([]any)[0].(map[string]any)
}

// TestSignedLinksExpireAndAreRefreshed drives signed links over HTTP on the manual clock: every
// output carries expires_at; a signed one also url_expires_at and a signed URL that works until
// then, answers 403 in S3's XML once expired or altered and 400 when fetched with a key, and a
// read of the job gives a fresh link that works again. Coverage counts both flows.
func TestSignedLinksExpireAndAreRefreshed(t *testing.T) {
	hs := tenantServer(t, Config{})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "links"}
	advance := func(d string) { c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": d}) }

	// Unsigned by default: a plain URL, expires_at alone, and a query changes nothing.
	plain := makeJob(c, "test/pixel", map[string]any{"prompt": "plain", "num_images": 1}, "k0")
	c.must(200, "PUT", "/_emulator/scenario", signing)
	voice := makeJob(c, "test/voice", map[string]any{"text": "hello"}, "k2")
	id := makeJob(c, "test/pixel", map[string]any{"prompt": "a cat", "num_images": 1}, "k1")
	advance("10s")
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)

	o := output(c, id)
	u, err := url.Parse(o["url"].(string))
	if err != nil || u.Query().Get("expires") == "" || u.Query().Get("signature") == "" {
		t.Fatalf("a signed link: %v", o["url"])
	}
	if o["url_expires_at"] != "2026-01-01T00:15:10Z" || o["expires_at"] != "2026-01-01T01:00:01Z" {
		t.Fatalf("url_expires_at %v, expires_at %v at %s", o["url_expires_at"], o["expires_at"], now)
	}
	if f := fetch(t, u.String()); f.status != 200 || f.ctype != "image/png" {
		t.Fatalf("the signed link: %d %s", f.status, f.ctype)
	}
	if f := fetch(t, u.String(), "Authorization", "Bearer key_a"); f.status != 400 {
		t.Fatalf("a signed link with a key: %d %s", f.status, f.body)
	} else if code, msg := storageError(t, f); code != "InvalidArgument" || !strings.Contains(msg, "Only one auth mechanism allowed") {
		t.Errorf("a signed link with a key: %s %s", code, msg)
	}
	altered := *u
	q := altered.Query()
	q.Set("expires", "9999999999")
	altered.RawQuery = q.Encode()
	if f := fetch(t, altered.String()); f.status != 403 {
		t.Fatalf("an altered link: %d", f.status)
	} else if code, _ := storageError(t, f); code != "SignatureDoesNotMatch" {
		t.Errorf("an altered link: %s", code)
	}
	bare := *u
	bare.RawQuery = ""
	if f := fetch(t, bare.String()); f.status != 403 {
		t.Fatalf("an unsigned link: %d", f.status)
	} else if code, _ := storageError(t, f); code != "AccessDenied" {
		t.Errorf("an unsigned link: %s", code)
	}

	// Stored past its expiry: 403, however often; then a read gives a fresh link that works.
	advance("15m")
	for range 2 {
		f := fetch(t, u.String())
		if f.status != 403 {
			t.Fatalf("an expired link: %d", f.status)
		}
		if code, msg := storageError(t, f); code != "AccessDenied" || msg != "Request has expired" || !bytes.Contains(f.body, []byte("<Expires>2026-01-01T00:15:10Z</Expires>")) {
			t.Errorf("an expired link: %s %s", code, f.body)
		}
	}
	fresh := output(c, id)
	if fresh["url_expires_at"] != "2026-01-01T00:30:10Z" || fresh["url"] == o["url"] || fresh["expires_at"] != o["expires_at"] {
		t.Fatalf("a fresh read: %v", fresh)
	}
	if f := fetch(t, fresh["url"].(string)); f.status != 200 {
		t.Fatalf("the fresh link: %d", f.status)
	}
	// The file's own end bounds its link.
	advance("40m")
	if late := output(c, id); late["url_expires_at"] != late["expires_at"] {
		t.Errorf("a link outlives its file: %v", late)
	}

	// Another model of the scenario: its own download rule, without url_ttl, keeps links plain;
	// and a job made before signing is signed now, since links follow the scenario in force.
	if v := output(c, voice); v["url_expires_at"] != nil || strings.Contains(v["url"].(string), "?") || v["expires_at"] == nil {
		t.Errorf("a model whose links are not signed: %v", v)
	}
	if p := output(c, plain); p["url_expires_at"] == nil {
		t.Errorf("links follow the scenario in force: %v", p)
	}
	c.must(200, "PUT", "/_emulator/scenario", map[string]any{"scenario": map[string]any{"name": "plain"}})
	p := output(c, plain)
	if p["url_expires_at"] != nil || strings.Contains(p["url"].(string), "?") {
		t.Errorf("an unsigned link: %v", p)
	}
	if f := fetch(t, p["url"].(string)+"?expires=1&signature=x", "Authorization", "Bearer key_a"); f.status != 200 {
		t.Errorf("an unsigned link ignores its query and the key: %d", f.status)
	}

	var cov api.Coverage
	_, body, _ := c.do("GET", "/_emulator/coverage", nil)
	remarshal(t, body, &cov)
	hits := map[string]int64{}
	for _, k := range cov.Cases {
		hits[k.ID] = k.Count
	}
	if hits["link expired"] != 2 || hits["link refreshed"] != 1 {
		t.Errorf("coverage: link expired %d, link refreshed %d", hits["link expired"], hits["link refreshed"])
	}

	// The report: the stored link fetched again, and the key sent with a signed link (the plain
	// link fetched with the key is served without auth, so it is not judged).
	rep := getReport(t, c, "")
	if rep.Counts[evidence.StaleLinkRefetched] != 1 || rep.Counts[evidence.DownloadWithAPIKey] != 1 {
		t.Errorf("report: %v", rep.Counts)
	}
}

// TestSignedLinksAcrossClocksSeedsAndSnapshots: links are signed on the real and skipping clocks
// too; the same seed gives the same links; and a restored tenant's links verify, in the same
// emulator and in another of the same seed.
func TestSignedLinksAcrossClocksSeedsAndSnapshots(t *testing.T) {
	serve := func(cfg Config) *httptest.Server {
		cfg.CatalogFile = "../testdata/catalogs/small.yaml"
		s, err := NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s)
		t.Cleanup(func() { hs.Close(); _ = s.Close() })
		return hs
	}
	input := map[string]any{"prompt": "a cat", "num_images": 1}
	for _, clock := range []string{"real", "skip"} {
		hs := serve(Config{SkipClock: clock == "skip"})
		c := wire{t: t, base: hs.URL, key: "key_a"}
		c.must(200, "PUT", "/_emulator/scenario", map[string]any{"scenario": map[string]any{"name": "signed", "defaults": map[string]any{
			"queue": "0s", "run": "0s", "download": map[string]any{"url_ttl": "1m"}}}})
		// wait=true answers once the job ends: at once on the real clock, by a jump on the skipping one.
		q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})["quote_id"]
		job := c.must(200, "POST", "/v1/generate?wait=true", map[string]any{"model": "test/pixel", "input": input, "quote_id": q}, "Idempotency-Key", "k1")
		if job["status"] != "succeeded" {
			t.Fatalf("%s clock: the job is %v", clock, job["status"])
		}
		o := job["outputs"].([]any)[0].(map[string]any)
		exp, err := time.Parse(time.RFC3339, o["url_expires_at"].(string))
		now := c.must(200, "GET", "/_emulator/clock", nil)["now"].(string)
		at, _ := time.Parse(time.RFC3339Nano, now)
		if err != nil || exp.Sub(at) > time.Minute || exp.Sub(at) < 58*time.Second {
			t.Errorf("%s clock: url_expires_at %v at %s", clock, o["url_expires_at"], now)
		}
		if f := fetch(t, o["url"].(string)); f.status != 200 {
			t.Errorf("%s clock: the signed link answered %d", clock, f.status)
		}
	}

	// Seeded, manual: the same steps give the same link; a snapshot restored elsewhere gives links
	// that verify.
	var links []string
	var doc []byte
	for range 2 {
		hs := serve(Config{Seeded: true, Seed: 5, ManualClock: true})
		c := wire{t: t, base: hs.URL, key: "key_a", header: "orig"}
		c.must(200, "PUT", "/_emulator/scenario", signing)
		id := makeJob(c, "test/pixel", input, "k1")
		c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "10s"})
		u, _ := url.Parse(output(c, id)["url"].(string))
		links = append(links, u.RequestURI())
		fetch(t, hs.URL+u.RequestURI(), "Authorization", "Bearer key_a")
		fetch(t, hs.URL+u.RequestURI())
		doc = rawGet(t, hs.URL+"/_emulator/snapshot?journal=true", "orig")
		if !bytes.Contains(doc, []byte(`"authorized":true`)) || !bytes.Contains(doc, []byte(`"link_expires":"2026-01-01T00:15:10Z"`)) {
			t.Fatalf("the snapshot's notes lack the downloads' link facts: %s", doc)
		}
	}
	if links[0] != links[1] {
		t.Fatalf("the same seed gave %s and %s", links[0], links[1])
	}
	for _, seed := range []int64{5, 6} {
		hs := serve(Config{Seeded: true, Seed: seed, ManualClock: true})
		c := wire{t: t, base: hs.URL, key: "key_a", header: "orig"}
		c.must(200, "PUT", "/_emulator/snapshot", rawJSON(doc))
		moved := wire{t: t, base: hs.URL, key: "key_a", header: "moved"}
		moved.must(200, "PUT", "/_emulator/snapshot", rawJSON(doc))
		if f := fetch(t, hs.URL+links[0]); (f.status == 200) != (seed == 5) {
			t.Errorf("seed %d: the link from before the snapshot answered %d", seed, f.status)
		}
		var jobs struct {
			Data []map[string]any `json:"data"`
		}
		_, body, _ := moved.do("GET", "/v1/jobs", nil)
		remarshal(t, body, &jobs)
		o := jobs.Data[0]["outputs"].([]any)[0].(map[string]any)
		if o["url_expires_at"] != "2026-01-01T00:15:10Z" || !strings.Contains(o["url"].(string), "/files/moved/") {
			t.Fatalf("seed %d: a restored tenant's link: %v", seed, o)
		}
		if f := fetch(t, o["url"].(string)); f.status != 200 {
			t.Errorf("seed %d: a restored tenant's link answered %d", seed, f.status)
		}
		if rep := getReport(t, moved, ""); rep.Counts[evidence.DownloadWithAPIKey] != 1 {
			t.Errorf("seed %d: the restored tenant's report: %v", seed, rep.Counts)
		}
	}
}

// rawGet GETs a control URL in a tenant and returns the body.
func rawGet(t *testing.T, u, tenant string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set(sim.HeaderTenant, tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return b
}

// remarshal turns a decoded JSON answer into a typed value.
func remarshal(t *testing.T, from, to any) {
	t.Helper()
	raw, _ := json.Marshal(from)
	if err := json.Unmarshal(raw, to); err != nil {
		t.Fatal(err)
	}
}

// rawJSON sends a document as it is.
func rawJSON(doc []byte) json.RawMessage { return json.RawMessage(doc) }

// TestSignedLinksRefuseMalformedQueries: whatever the query holds, a signed file answers a
// storage error, never a 5xx or the file.
func TestSignedLinksRefuseMalformedQueries(t *testing.T) {
	hs := tenantServer(t, Config{})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "odd"}
	c.must(200, "PUT", "/_emulator/scenario", signing)
	id := makeJob(c, "test/pixel", map[string]any{"prompt": "a cat", "num_images": 1}, "k1")
	c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "10s"})
	u, _ := url.Parse(output(c, id)["url"].(string))
	sig := u.Query().Get("signature")
	base := u.Scheme + "://" + u.Host + u.Path
	for _, q := range []string{"expires=-1&signature=" + sig, "expires=abc&signature=" + sig, "expires=99999999999999999999&signature=" + sig,
		"expires=" + u.Query().Get("expires"), "signature=" + sig, "expires=" + u.Query().Get("expires") + "&signature=%zz",
		"expires=" + u.Query().Get("expires") + "&signature=" + strings.ToUpper(sig), "expires=1&expires=2&signature=<x>&"} {
		f := fetch(t, base+"?"+q)
		if f.status != 403 {
			t.Errorf("?%s: %d %s", q, f.status, f.body)
			continue
		}
		storageError(t, f)
	}
}

// BenchmarkJobRead reads a succeeded job of four outputs, with plain links and with signed ones:
// what signing adds to a read.
func BenchmarkJobRead(b *testing.B) {
	for _, signed := range []bool{false, true} {
		name := "plain"
		if signed {
			name = "signed"
		}
		b.Run(name, func(b *testing.B) {
			s := simServer(b, Config{})
			if signed {
				control(b, s, "PUT", "/_emulator/scenario", map[string]any{"scenario": map[string]any{"name": "signed",
					"defaults": map[string]any{"download": map[string]any{"url_ttl": "15m"}}}})
			}
			rec := startGeneration(b, s, "mg_test_all", "k1", schnellID, map[string]any{"prompt": "a fox", "num_images": 4})
			id := decode[api.Job](b, rec).ID
			control(b, s, "POST", "/_emulator/clock", map[string]any{"advance": "1m"})
			if j := jobOf(b, s, id); len(j.Outputs) != 4 || (j.Outputs[0].URLExpiresAt != "") != signed {
				b.Fatalf("job %+v", j)
			}
			b.ReportAllocs()
			for b.Loop() {
				call(b, s, "GET", "/v1/jobs/"+id, "mg_test_all", nil)
			}
		})
	}
}
