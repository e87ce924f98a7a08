package emulator

import (
	"net/url"
	"testing"
)

// A quote spent on another model that accepts the same input answers 422 quote_mismatch, as the
// contract lists it, and holds nothing.
func TestQuoteForAnotherModelIsAMismatch(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	before := balanceOf(t, s, "acct_a")
	input := map[string]any{"prompt": "a red fox"} // valid for test/reel and test/pixel alike
	rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/reel", "input": input})
	if rec.Code != 200 {
		t.Fatalf("quote: %d %s", rec.Code, rec.Body)
	}
	q := decode[quoteBody](t, rec)
	rec = call(t, s, "POST", "/v1/generate", "key_a", map[string]any{"model": "test/pixel", "input": input, "quote_id": q.QuoteID},
		"Idempotency-Key", "other-model")
	if body := decode[map[string]any](t, rec); rec.Code != 422 || body["code"] != "quote_mismatch" || body["status"] != float64(422) ||
		rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a test/reel quote spent on test/pixel: %d %s %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	if after := balanceOf(t, s, "acct_a"); after != before {
		t.Errorf("balance %+v after a refused generation, was %+v", after, before)
	}
}

// A file of a model whose links are signed, asked for at its plain URL, answers 403
// AccessDenied in S3's XML whether or not the request carries an API key: the key's 400
// InvalidArgument is for a signed link that also carries one. A plain link of a model the
// scenario does not sign serves the file, key or not, and no fetch here is a signed link fetched
// with a key.
func TestUnsignedFetchWithAKey(t *testing.T) {
	hs := tenantServer(t, Config{})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "unsigned"}
	c.must(200, "PUT", "/_emulator/scenario", signing)
	signed := makeJob(c, "test/pixel", map[string]any{"prompt": "a cat", "num_images": 1}, "k1")
	plain := makeJob(c, "test/voice", map[string]any{"text": "hello"}, "k2")
	c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "10s"})

	u, err := url.Parse(output(c, signed)["url"].(string))
	if err != nil || u.Query().Get("signature") == "" {
		t.Fatalf("a signed link: %v %v", u, err)
	}
	u.RawQuery = ""
	for _, headers := range [][]string{nil, {"Authorization", "Bearer key_a"}} {
		f := fetch(t, u.String(), headers...)
		if f.status != 403 {
			t.Fatalf("an unsigned fetch with headers %q: %d %s", headers, f.status, f.body)
		}
		if code, msg := storageError(t, f); code != "AccessDenied" || msg != "Access Denied" {
			t.Errorf("an unsigned fetch with headers %q: %s %q", headers, code, msg)
		}
	}
	voice := output(c, plain)["url"].(string)
	for _, headers := range [][]string{nil, {"Authorization", "Bearer key_a"}} {
		if f := fetch(t, voice, headers...); f.status != 200 {
			t.Errorf("a plain link with headers %q: %d %s", headers, f.status, f.body)
		}
	}
	counts, _ := c.must(200, "GET", "/_emulator/report", nil)["counts"].(map[string]any)
	if n, ok := counts["download-with-api-key"]; ok {
		t.Errorf("no signed link was fetched with a key, yet the report counts %v", n)
	}
}
