package emulator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// TestRequestBodiesAnswerInOnePass: POST /v1/quotes and /v1/generate read a body once, strictly,
// into the api request types, which then say what they lack. What is not one JSON object is
// invalid_json, whatever comes before the fault; the first member that does not fit is named
// with the control API's words; the members left out, null or empty are listed together. A
// member given twice keeps its last value and text that is not UTF-8 is taken, as before.
func TestRequestBodiesAnswerInOnePass(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 3})
	deep := `{"model":"test/pixel","input":{"prompt":"p","x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`
	const one = "the request has 1 problem(s); see errors"
	for _, tc := range []struct {
		name, path, body string
		status           int
		detail, errors   string // errors as the answer's JSON, "" for none
	}{
		{"quote fits", "/v1/quotes", `{"model":"test/pixel","input":{"prompt":"p"}}`, 200, "", ""},
		{"quote exact numbers", "/v1/quotes", `{"model":"test/pixel","input":{"prompt":"p","num_images":1.0e0}}`, 200, "", ""},
		{"quote model twice, the last wins", "/v1/quotes", `{"model":"test/nothing","input":{"prompt":"p"},"model":"test/pixel"}`, 200, "", ""},
		{"quote input member twice, the last wins", "/v1/quotes", `{"model":"test/pixel","input":{"prompt":7,"prompt":"p"}}`, 200, "", ""},
		{"quote text not UTF-8", "/v1/quotes", "{\"model\":\"test/pixel\",\"input\":{\"prompt\":\"p\xff\"}}", 200, "", ""},
		{"quote unknown member", "/v1/quotes", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":"q"}`, 422,
			`the body does not hold at "/quote_id": unknown field "quote_id"`, `[{"pointer":"/quote_id","message":"unknown field \"quote_id\""}]`},
		{"quote member in other case", "/v1/quotes", `{"MODEL":"test/pixel","input":{"prompt":"p"}}`, 422,
			`the body does not hold at "/MODEL": unknown field "MODEL"`, `[{"pointer":"/MODEL","message":"unknown field \"MODEL\""}]`},
		{"quote model null", "/v1/quotes", `{"model":null,"input":{"prompt":"p"}}`, 422,
			one, `[{"pointer":"/model","message":"is required"}]`},
		{"quote model a number", "/v1/quotes", `{"model":42,"input":{"prompt":"p"}}`, 422,
			`the body does not hold at "/model": want a string, got a JSON number`, `[{"pointer":"/model","message":"want a string, got a JSON number"}]`},
		{"quote model empty", "/v1/quotes", `{"model":"","input":{"prompt":"p"}}`, 422,
			one, `[{"pointer":"/model","message":"is required"}]`},
		{"quote input null", "/v1/quotes", `{"model":"test/pixel","input":null}`, 422,
			one, `[{"pointer":"/input","message":"is required"}]`},
		{"quote input an array", "/v1/quotes", `{"model":"test/pixel","input":[]}`, 422,
			`the body does not hold at "/input": want an object, got a JSON array`, `[{"pointer":"/input","message":"want an object, got a JSON array"}]`},
		{"quote input a number", "/v1/quotes", `{"model":"test/pixel","input":12}`, 422,
			`the body does not hold at "/input": want an object, got the number 12`, `[{"pointer":"/input","message":"want an object, got the number 12"}]`},
		{"quote input left out", "/v1/quotes", `{"model":"test/pixel"}`, 422,
			one, `[{"pointer":"/input","message":"is required"}]`},
		{"quote all left out", "/v1/quotes", `{}`, 422,
			"the request has 2 problem(s); see errors", `[{"pointer":"/model","message":"is required"},{"pointer":"/input","message":"is required"}]`},
		{"quote too deep", "/v1/quotes", deep, 400, "the body nests deeper than 64 levels", ""},
		{"quote too deep after a misfit", "/v1/quotes", `{"x":1,"y":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`, 400, "the body nests deeper than 64 levels", ""},
		{"quote not JSON after a misfit", "/v1/quotes", `{"model":42,"input":{"prompt":tx}}`, 400,
			"the body is not valid JSON: invalid character 'x' in literal true (expecting 'r') (at byte 32)", ""},
		{"quote cut short after a misfit", "/v1/quotes", `{"quote_id":"q","input":{"prompt":"p"`, 400, "the body is not valid JSON: it ends too early", ""},
		{"quote two values", "/v1/quotes", `{"model":"test/pixel","input":{"prompt":"p"}} {}`, 400, "the body holds more than one JSON value", ""},
		{"quote two values after a misfit", "/v1/quotes", `{"model":1,"input":{"prompt":"p"}} {}`, 400, "the body holds more than one JSON value", ""},
		{"quote an array", "/v1/quotes", `[{"model":"test/pixel"}]`, 400, "the body must be a JSON object, not an array", ""},
		{"quote null", "/v1/quotes", `null`, 400, "the body must be a JSON object, not null", ""},
		{"quote empty", "/v1/quotes", ` `, 400, "the body is empty; send a JSON object", ""},
		{"generate fits", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":"q"}`, 404, `no quote "q" for this account; POST /v1/quotes makes one`, ""},
		{"generate quote id twice", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":"a","quote_id":"q"}`, 404, `no quote "q" for this account; POST /v1/quotes makes one`, ""},
		{"generate quote id null", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":null}`, 422,
			one, `[{"pointer":"/quote_id","message":"is required"}]`},
		{"generate quote id left out", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"}}`, 422,
			one, `[{"pointer":"/quote_id","message":"is required"}]`},
		{"generate unknown member", "/v1/generate", `{"model":"test/pixel","input":{"prompt":"p"},"quote_id":"q","wait":true}`, 422,
			`the body does not hold at "/wait": unknown field "wait"`, `[{"pointer":"/wait","message":"unknown field \"wait\""}]`},
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

// TestControlBodiesAnswerInOnePass: a control body is read as strictly as a /v1 one, and also
// refuses a member given twice and text that is not UTF-8; what is not one JSON object is
// invalid_json even after a member that does not fit, however deep that member is.
func TestControlBodiesAnswerInOnePass(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	for _, tc := range []struct {
		path, body string
		status     int
		detail     string
	}{
		{"/_emulator/faults", `{"match":{"path":"/v1/quotes"},"status":503,"status":502}`, 422, `the body does not hold at "/status": given twice`},
		{"/_emulator/faults", `{"match":{"path":"/v1/quotes","x":1},"status":503}`, 422, `the body does not hold at "/match/x": unknown field "x"`},
		{"/_emulator/faults", `{"match":{"path":"/v1/quotes","x":1,"y":[1,{"z":tx}]},"status":503}`, 400,
			"the body is not valid JSON: invalid character 'x' in literal true (expecting 'r') (at byte 50)"},
		{"/_emulator/faults", `{"match":{"path":7,"method":"GET"},"status":503,}`, 400,
			"the body is not valid JSON: invalid character ',' at start of value (at byte 48)"},
		{"/_emulator/faults", `{"match":{"body":{"n":1}},"status":"503"} x`, 400, "the body holds more than one JSON value"},
		{"/_emulator/faults", `{"match":{"body":` + strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70) + `}}`, 400, "the body nests deeper than 64 levels"},
		{"/_emulator/faults", "{\"match\":{\"path\":\"/v1/\xff\"},\"status\":503}", 400,
			"the body is not valid JSON: invalid UTF-8 (at byte 23)"},
		{"/_emulator/clock", `{"advance":""}`, 422, "the request has 1 problem(s); see errors"},
		{"/_emulator/clock", `{"advance":null,"set":"2026-01-01T00:00:00Z"}`, 422, "the request has 1 problem(s); see errors"},
	} {
		rec := control(t, s, "POST", tc.path, tc.body)
		if p := decode[problemJSON](t, rec); rec.Code != tc.status || p.Detail != tc.detail {
			t.Errorf("%s %s: %d %s; want %d %q", tc.path, tc.body, rec.Code, rec.Body, tc.status, tc.detail)
		}
	}
}
