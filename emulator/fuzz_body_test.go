package emulator

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBodies sends arbitrary bodies to every endpoint that decodes one — quotes,
// generations, and the control API's clock, scenario, faults, accounts and job forcing — and
// checks that the answer is never a 5xx, always JSON, and that the ledger stays whole.
//
//	go test ./emulator -run '^$' -fuzz FuzzRequestBodies -fuzztime 1m
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"model":"test/pixel","input":{"prompt":"a fox","num_images":2}}`,
		`{"model":"test/pixel","input":{"prompt":"a fox [emulator:fail]"},"quote_id":"x"}`,
		`{"model":"test/reel","input":{"prompt":"w","duration":"10","resolution":"1080p"}}`,
		`{"model":"test/voice","input":{"text":"` + strings.Repeat("é", 50) + `"}}`,
		`{"model":"test/pixel","input":{"prompt":"x","num_images":1e400}}`,
		`{"model":"test/pixel","input":{"prompt":"x","seed":-0.0}}`,
		`{"model":"test/pixel","input":{"prompt":"x","num_images":1e1000001}}`,
		`{"model":"test/pixel","input":{"prompt":"x","num_images":-1e1000001}}`,
		`{"model":"test/pixel/edit","input":{"prompt":"x","image_url":"https://example.com/a.png","strength":1e-999999}}`,
		`{"model":"test/pixel","input":{"prompt":"x","num_images":[` + strings.Repeat(`1e999999,`, 200) + `1]}}`,
		`{"advance":"90s"}`, `{"set":"2026-01-01T00:10:00Z"}`, `{"name":"flaky"}`,
		`{"scenario":{"defaults":{"run":{"lognormal":{"min":"1s","max":"2s"}}}}}`,
		`{"match":{"path":"/v1/**"},"status":503,"count":1}`, `{"credits":5}`,
		`{"code":"provider_timeout","message":"m"}`, `[]`, `null`, `{`, `{"a":[[[[[[[[]]]]]]]]}`, "\xef\xbb\xbf{}",
		`{"model":42,"input":{"prompt":tx}}`, `{"match":{"path":7,"x":[{"y":1}]},"status":503,}`, `{"model":"m","model":"m","input":{"a":1,"a":[]}}`,
	} {
		f.Add(seed)
	}
	paths := []string{"/v1/quotes", "/v1/generate", "/_emulator/clock", "/_emulator/scenario",
		"/_emulator/faults", "/_emulator/accounts/acct_a", "/_emulator/jobs/x/fail"}
	f.Fuzz(func(t *testing.T, body string) {
		s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, Seeded: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// A quote for whatever the body names, so generations can get past the quote checks.
		var probe struct {
			Model string          `json:"model"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal([]byte(body), &probe) == nil && probe.Model != "" {
			q := httptest.NewRequest("POST", "/v1/quotes", strings.NewReader(body))
			q.Header.Set("Authorization", "Bearer key_a")
			s.ServeHTTP(httptest.NewRecorder(), q)
		}
		for _, path := range paths {
			method := "POST"
			if path == "/_emulator/scenario" || strings.HasPrefix(path, "/_emulator/accounts/") {
				method = "PUT"
			}
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer key_a")
			req.Header.Set("Idempotency-Key", "fuzz")
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %s with %q: %d\n%s", method, path, body, rec.Code, rec.Body)
			}
			if !json.Valid(bytes.TrimSpace(rec.Body.Bytes())) && rec.Code != 204 {
				t.Fatalf("%s %s with %q: not JSON: %q", method, path, body, rec.Body)
			}
		}
		for _, b := range s.world().Ledger().Balances() {
			if b.Available < 0 || b.Held < 0 || b.Charged < 0 {
				t.Fatalf("balance went negative: %+v", b)
			}
		}
	})
}
