package emulator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// TestRequestBodiesAnswerAsTheEnvelopeSays: POST /v1/quotes and /v1/generate decode into the
// api request types in one strict pass, and every body that pass refuses is answered as the
// envelope words it; a body the envelope takes but the strict pass does not (a member given
// twice, text that is not UTF-8) is taken as before.
func TestRequestBodiesAnswerAsTheEnvelopeSays(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 3})
	deep := `{"model":"test/pixel","input":{"prompt":"p","x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`
	for _, tc := range []struct {
		name, path, body string
		status           int
		detail, errors   string // errors as the answer's JSON, "" for none
	}{
		{"quote fits", "/v1/quotes", `{"model":"test/pixel","input":{"prompt":"p"}}`, 200, "", ""},
		{"quote model twice, the last wins", "/v1/quotes", `{"model":"test/nothing","input":{"prompt":"p"},"model":"test/pixel"}`, 200, "", ""},
		{"quote text not UTF-8", "/v1/quotes", "{\"model\":\"test/pixel\",\"input\":{\"prompt\":\"p\xff\"}}", 200, "", ""},
		{"quote unknown member", "/v1/quotes", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":"q"}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/quote_id","message":"is not a field of this request"}]`},
		{"quote member in other case", "/v1/quotes", `{"MODEL":"test/pixel","input":{"prompt":"p"}}`, 422,
			"the request has 2 problem(s); see errors", `[{"pointer":"/model","message":"is required"},{"pointer":"/MODEL","message":"is not a field of this request"}]`},
		{"quote model null", "/v1/quotes", `{"model":null,"input":{"prompt":"p"}}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/model","message":"must be a non-empty string"}]`},
		{"quote model a number", "/v1/quotes", `{"model":42,"input":{"prompt":"p"}}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/model","message":"must be a non-empty string"}]`},
		{"quote model empty", "/v1/quotes", `{"model":"","input":{"prompt":"p"}}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/model","message":"must be a non-empty string"}]`},
		{"quote input null", "/v1/quotes", `{"model":"test/pixel","input":null}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/input","message":"must be a non-empty object"}]`},
		{"quote input an array", "/v1/quotes", `{"model":"test/pixel","input":[]}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/input","message":"must be a non-empty object"}]`},
		{"quote input left out", "/v1/quotes", `{"model":"test/pixel"}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/input","message":"is required"}]`},
		{"quote too deep", "/v1/quotes", deep, 400, "the body nests deeper than 64 levels", ""},
		{"quote two values", "/v1/quotes", `{"model":"test/pixel","input":{"prompt":"p"}} {}`, 400, "the body holds more than one JSON value", ""},
		{"quote empty", "/v1/quotes", ` `, 400, "the body is empty; send a JSON object", ""},
		{"generate fits", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":"q"}`, 404, `no quote "q" for this account; POST /v1/quotes makes one`, ""},
		{"generate quote id twice", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":"a","quote_id":"q"}`, 404, `no quote "q" for this account; POST /v1/quotes makes one`, ""},
		{"generate quote id null", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":null}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/quote_id","message":"must be a non-empty string"}]`},
		{"generate quote id left out", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"}}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/quote_id","message":"is required"}]`},
		{"generate unknown member", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":"q","wait":true}`, 422,
			"the request has 1 problem(s); see errors", `[{"pointer":"/wait","message":"is not a field of this request"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := call(t, s, "POST", tc.path, "key_a", tc.body, "Idempotency-Key", "k-"+tc.name)
			if rec.Code != tc.status {
				t.Fatalf("%d %s; want %d", rec.Code, rec.Body, tc.status)
			}
			if tc.status == 200 {
				if q := decode[quoteBody](t, rec); q.Model != "test/pixel" {
					t.Errorf("quoted %q, want test/pixel", q.Model)
				}
				return
			}
			type answer struct {
				Detail string          `json:"detail"`
				Errors json.RawMessage `json:"errors"`
			}
			p := decode[answer](t, rec)
			if p.Detail != tc.detail || string(p.Errors) != tc.errors {
				t.Errorf("detail %q errors %s; want %q %s", p.Detail, p.Errors, tc.detail, tc.errors)
			}
		})
	}
}

// TestPutAccountTakesCreditsAlone: PUT /_emulator/accounts/{id} decodes strictly into
// api.CreditsChange with credits required, and whatever is wrong with a body that is a JSON
// object gets the one answer that says what to send; a body that is not one is invalid JSON.
func TestPutAccountTakesCreditsAlone(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	const most = catalog.MaxAccountCredits
	send := fmt.Sprintf(`send {"credits": <integer from 0 to %d>}`, most)
	must := fmt.Sprintf(`[{"pointer":"/credits","message":"must be an integer from 0 to %d"}]`, most)
	for _, tc := range []struct {
		body      string
		status    int
		available int64  // with 200
		code      string // with 400
	}{
		{`{"credits":5}`, 200, 5, ""},
		{`{"credits":0}`, 200, 0, ""},
		{`{"credits":-0}`, 200, 0, ""},
		{fmt.Sprintf(`{"credits":%d}`, most), 200, most, ""},
		{`{}`, 422, 0, ""},
		{`{"credits":null}`, 422, 0, ""},
		{`{"credits":"5"}`, 422, 0, ""},
		{`{"credits":5,"x":1}`, 422, 0, ""},
		{`{"x":1}`, 422, 0, ""},
		{`{"credits":1.5}`, 422, 0, ""},
		{`{"credits":1e2}`, 422, 0, ""},
		{`{"credits":-1}`, 422, 0, ""},
		{fmt.Sprintf(`{"credits":%d}`, most+1), 422, 0, ""},
		{`{"credits":9223372036854775808}`, 422, 0, ""},
		{`{"credits":[5]}`, 422, 0, ""},
		{`{"credits":1,"credits":2}`, 422, 0, ""},
		{`[5]`, 400, 0, "invalid_json"},
		{`{"credits":5} {}`, 400, 0, "invalid_json"},
		{` `, 400, 0, "invalid_json"},
	} {
		rec := control(t, s, "PUT", "/_emulator/accounts/acct_all", tc.body)
		if rec.Code != tc.status {
			t.Errorf("%s: %d %s; want %d", tc.body, rec.Code, rec.Body, tc.status)
			continue
		}
		switch tc.status {
		case 200:
			if b := decode[api.Balance](t, rec); b.Available != tc.available {
				t.Errorf("%s: available %d, want %d", tc.body, b.Available, tc.available)
			}
		case 422:
			type answer struct {
				Code   string          `json:"code"`
				Detail string          `json:"detail"`
				Errors json.RawMessage `json:"errors"`
			}
			if p := decode[answer](t, rec); p.Code != "invalid_request" || p.Detail != send || string(p.Errors) != must {
				t.Errorf("%s: %s", tc.body, rec.Body)
			}
		default:
			if p := decode[problemJSON](t, rec); p.Code != tc.code {
				t.Errorf("%s: %s; want %s", tc.body, rec.Body, tc.code)
			}
		}
	}
}
