package conformance

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/docs"
)

func load(t *testing.T) *Document {
	t.Helper()
	d, err := Load([]byte(docs.OpenAPI))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// common are the headers every answer carries.
func common(kv ...string) http.Header {
	h := http.Header{"X-Request-Id": {"req_1"}, "X-Emulator-Version": {"0.1.0"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

const job = `{"id":"5f0c6a52-8a57-4b8e-9a6e-0d6f3d1c2b11","model":"test/pixel","status":"queued",
"quote_id":"0b0c6a52-8a57-4b8e-9a6e-0d6f3d1c2b11","credits":3,"credit_status":"held","input":{"prompt":"a"},
"created_at":"2026-01-01T00:00:00Z","started_at":null,"finished_at":null,"progress":0,"outputs":[],"error":null}`

const problemBody = `{"type":"about:blank","title":"Not found","status":404,"detail":"no such thing","code":"not_found","request_id":"req_1"}`

func TestCheck(t *testing.T) {
	d := load(t)
	jsonCT := common("Content-Type", "application/json")
	problemCT := common("Content-Type", "application/problem+json")
	cases := []struct {
		name string
		a    Answer
		want string // a fragment of the error; "" when the answer conforms
	}{
		{"a queued job, 202 with Location", Answer{Method: "POST", Path: "/v1/generate", Status: 202,
			Header: common("Content-Type", "application/json", "Location", "/v1/jobs/x"), Body: []byte(job)}, ""},
		{"202 without Location", Answer{Method: "POST", Path: "/v1/generate", Status: 202, Header: jsonCT, Body: []byte(job)},
			"header Location is required"},
		{"a job with a field of the wrong type", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 200, Header: jsonCT,
			Body: []byte(strings.Replace(job, `"credits":3`, `"credits":"3"`, 1))}, `at "/credits"`},
		{"a job with a field the document does not know", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 200, Header: jsonCT,
			Body: []byte(strings.Replace(job, `"credits":3`, `"credits":3,"extra":1`, 1))}, "additionalProperties"},
		{"an evolved job: a member and a status beyond the document", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 200, Header: jsonCT, Evolved: true,
			Body: []byte(strings.Replace(strings.Replace(job, `"queued"`, `"preparing"`, 1), `{"id"`, `{"x_mg_onyx":"a","id"`, 1))}, ""},
		{"an evolved answer of an undocumented status", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 418, Header: problemCT, Body: []byte(problemBody), Evolved: true},
			"status 418 is not documented"},
		{"an evolved answer that is not JSON", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 200, Header: jsonCT, Body: []byte(`{"id":`), Evolved: true},
			"not JSON"},
		{"a job with a bad status", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 200, Header: jsonCT,
			Body: []byte(strings.Replace(job, `"queued"`, `"pending"`, 1))}, `at "/status"`},
		{"an undocumented status", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 418, Header: problemCT, Body: []byte(problemBody)},
			"status 418 is not documented"},
		{"a 500, a bug", Answer{Method: "GET", Path: "/v1/models", Status: 500, Header: problemCT, Body: []byte(problemBody)},
			"status 500 is not documented"},
		{"the same status, injected", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 418, Header: problemCT, Body: []byte(problemBody), Fault: "fault_1"}, ""},
		{"an injected status without a problem", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 418, Header: jsonCT, Body: []byte(`{}`), Fault: "fault_1"},
			"not a problem"},
		{"an injected malformed body", Answer{Method: "GET", Path: "/v1/models", Status: 200, Header: jsonCT, Body: []byte(`{"data":[{"id":"` + "\x00,"), Fault: "fault_1"}, ""},
		{"a malformed body nobody injected", Answer{Method: "GET", Path: "/v1/models", Status: 200, Header: jsonCT, Body: []byte(`{"data":[`)},
			"not JSON"},
		{"a job followed by more", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 200, Header: jsonCT, Body: []byte(job + `{}`)},
			"more than one JSON value"},
		{"a problem without request_id", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 404, Header: problemCT,
			Body: []byte(strings.Replace(problemBody, `,"request_id":"req_1"`, "", 1))}, "request_id"},
		{"a problem as application/json", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 404, Header: jsonCT, Body: []byte(problemBody)},
			"is not one of"},
		{"no X-Request-Id", Answer{Method: "GET", Path: "/v1/jobs/x", Status: 404, Header: http.Header{"X-Emulator-Version": {"1"}, "Content-Type": {"application/problem+json"}}, Body: []byte(problemBody)},
			"header X-Request-Id is required"},
		{"401 without WWW-Authenticate", Answer{Method: "GET", Path: "/v1/models", Status: 401, Header: problemCT, Body: []byte(problemBody)},
			"WWW-Authenticate"},
		{"a Retry-After that is neither seconds nor a date", Answer{Method: "GET", Path: "/v1/models", Status: 503, Header: common("Content-Type", "application/problem+json", "Retry-After", "soon"), Body: []byte(problemBody)},
			"does not match pattern"},
		{"a Retry-After of seconds", Answer{Method: "GET", Path: "/v1/models", Status: 503, Header: common("Content-Type", "application/problem+json", "Retry-After", "30"), Body: []byte(problemBody)}, ""},
		{"a Retry-After of 0 seconds", Answer{Method: "GET", Path: "/v1/models", Status: 503, Header: common("Content-Type", "application/problem+json", "Retry-After", "0"), Body: []byte(problemBody)},
			"minimum"},
		{"a Retry-After date", Answer{Method: "GET", Path: "/v1/models", Status: 503, Header: common("Content-Type", "application/problem+json", "Retry-After", "Thu, 01 Jan 2026 00:00:30 GMT"), Body: []byte(problemBody)}, ""},
		{"an unrouted 404", Answer{Method: "GET", Path: "/v1//models", Status: 404, Header: problemCT, Body: []byte(problemBody)}, ""},
		{"a 405 with Allow", Answer{Method: "DELETE", Path: "/v1/models", Status: 405, Header: common("Content-Type", "application/problem+json", "Allow", "GET, HEAD"), Body: []byte(problemBody)}, ""},
		{"a 405 without Allow", Answer{Method: "DELETE", Path: "/v1/models", Status: 405, Header: problemCT, Body: []byte(problemBody)},
			"header Allow is required"},
		{"an unrouted 200", Answer{Method: "GET", Path: "/v2/models", Status: 200, Header: jsonCT, Body: []byte(`{}`)},
			"status 200 is not documented"},
		{"HEAD, without a body", Answer{Method: "HEAD", Path: "/v1/jobs/x", Status: 200, Header: jsonCT}, ""},
		{"204 with a body", Answer{Method: "DELETE", Path: "/_emulator/requests", Status: 204, Header: common(), Body: []byte("x")},
			"none is documented"},
		{"a file", Answer{Method: "GET", Path: "/files/job/0.png", Status: 200,
			Header: common("Content-Type", "image/png", "ETag", `"1"`, "Cache-Control", "private, max-age=5", "Accept-Ranges", "bytes", "Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT"), Body: []byte("\x89PNG")}, ""},
		{"a file of an undocumented type", Answer{Method: "GET", Path: "/files/t/job/0.html", Status: 200,
			Header: common("Content-Type", "text/html", "ETag", `"1"`, "Cache-Control", "private, max-age=5", "Accept-Ranges", "bytes", "Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT"), Body: []byte("<p>")},
			`"text/html" is not one of`},
		{"no answer written", Answer{Method: "POST", Path: "/v1/generate"}, ""},
		{"a CORS preflight", Answer{Method: "OPTIONS", Path: "/v1/models", Status: 204, Header: common(), Preflight: true}, ""},
		{"OPTIONS that is not a preflight", Answer{Method: "OPTIONS", Path: "/v1/models", Status: 204, Header: common()},
			"status 204 is not documented"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := d.Check(c.a)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("conforming answer refused: %v", err)
			case c.want != "" && err == nil:
				t.Errorf("non-conforming answer accepted; want an error with %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("error %v; want it to mention %q", err, c.want)
			}
		})
	}
}

func TestFind(t *testing.T) {
	d := load(t)
	for path, want := range map[string]string{
		"/v1/models":                       "listModels",
		"/v1/models/categories":            "listCategories",
		"/v1/models/fal-ai/flux/schnell":   "getModel",
		"/v1/models/categories/x":          "getModel",
		"/v1/jobs/abc":                     "getJob",
		"/files/job/0.png":                 "getFile",
		"/files/tenant/job/0.png":          "getTenantFile",
		"/files/a/b/c/d":                   "",
		"/v1/jobs/a/b":                     "",
		"/v1/jobs/":                        "",
		"/_emulator/jobs/abc/complete":     "completeJob",
		"/_emulator/accounts/acct_default": "",
		"/_emulator/jobs":                  "listAllJobs",
		"/_emulator/ui":                    "getDashboard",
		"/_emulator/ui/":                   "getDashboardFile",
		"/_emulator/ui/app.js":             "getDashboardFile",
		"/_emulator/ui/a/b.js":             "getDashboardFile",
	} {
		op, _ := d.find(http.MethodGet, path)
		if path == "/_emulator/jobs/abc/complete" {
			op, _ = d.find(http.MethodPost, path)
		}
		got := ""
		if op != nil {
			got = op.id
		}
		if got != want {
			t.Errorf("%s: operation %q; want %q", path, got, want)
		}
	}
}

// TestRunFailsOnANonConformingAnswer goes through the hook as the emulator calls it: a bad
// answer makes the report fail the run, and a good one does not.
func TestRunFailsOnANonConformingAnswer(t *testing.T) {
	c := &collector{doc: load(t), repeats: map[string]int{}, examples: map[string]string{}, reached: map[string]bool{}}
	serve := func(status int, body string) {
		rec := httptest.NewRecorder()
		w, done := c.watch(rec, httptest.NewRequest(http.MethodGet, "/v1/jobs/x", nil))
		for k, v := range common("Content-Type", "application/json") {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
		done("", false)
		if rec.Code != status || rec.Body.String() != body {
			t.Fatalf("the watched writer did not pass the answer on: %d %q", rec.Code, rec.Body)
		}
	}
	serve(200, job)
	var out bytes.Buffer
	if code := c.report(&out, 0); code != 0 || out.Len() > 0 && !testing.Verbose() {
		t.Fatalf("a conforming answer: exit %d\n%s", code, &out)
	}
	serve(200, `{"id":1}`)
	serve(200, `{"id":1}`)
	out.Reset()
	if code := c.report(&out, 0); code != 1 {
		t.Errorf("a non-conforming answer: exit %d; want 1", code)
	}
	if !strings.Contains(out.String(), "2 of 3 answers") || !strings.Contains(out.String(), "seen 2 time(s)") {
		t.Errorf("report:\n%s", &out)
	}
}

func TestCheckDocumentFindsProblems(t *testing.T) {
	if errs := CheckDocument([]byte(docs.OpenAPI)); len(errs) > 0 {
		t.Fatalf("the published document: %v", errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(docs.OpenAPI), &doc); err != nil {
		t.Fatal(err)
	}
	paths := doc["paths"].(map[string]any)
	jobs := paths["/v1/jobs"].(map[string]any)["get"].(map[string]any)
	jobs["operationId"] = "getJob"
	jobs["responses"].(map[string]any)["20x"] = map[string]any{"description": "x"}
	paths["/v1/jobs/{id}"].(map[string]any)["parameters"] = []any{}
	doc["components"].(map[string]any)["schemas"].(map[string]any)["Quote"] = map[string]any{"$ref": "#/components/schemas/Nope"}
	broken, _ := json.Marshal(doc)
	var msgs []string
	for _, err := range CheckDocument(broken) {
		msgs = append(msgs, err.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"not valid OpenAPI 3.1", "/responses/20x", `"#/components/schemas/Nope"`, `share operationId "getJob"`, "declares path parameters []"} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem mentions %q; got:\n%s", want, all)
		}
	}
}

// TestCheckDocumentFollowsParameterRefs: a path parameter reached through two $refs counts as
// declared, as the loader follows references; one that does not resolve is named.
func TestCheckDocumentFollowsParameterRefs(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(docs.OpenAPI), &doc); err != nil {
		t.Fatal(err)
	}
	params := doc["components"].(map[string]any)["parameters"].(map[string]any)
	params["JobIdAgain"] = map[string]any{"$ref": "#/components/parameters/JobId"}
	item := doc["paths"].(map[string]any)["/v1/jobs/{id}"].(map[string]any)
	list := item["parameters"].([]any)
	list[0] = map[string]any{"$ref": "#/components/parameters/JobIdAgain"}
	twice, _ := json.Marshal(doc)
	if errs := CheckDocument(twice); len(errs) > 0 {
		t.Errorf("a parameter behind two $refs: %v", errs)
	}
	list[0] = map[string]any{"$ref": "#/components/parameters/Nope"}
	broken, _ := json.Marshal(doc)
	var msgs []string
	for _, err := range CheckDocument(broken) {
		msgs = append(msgs, err.Error())
	}
	if all := strings.Join(msgs, "\n"); !strings.Contains(all, `/v1/jobs/{id}: parameter 0: $ref "#/components/parameters/Nope"`) {
		t.Errorf("an unresolved parameter $ref; got:\n%s", all)
	}
}
