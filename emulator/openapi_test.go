package emulator

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/docs"
	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/conformance"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// TestOpenAPIDocumentIsValid checks docs/openapi.json against the OpenAPI 3.1 schema and for
// what that schema cannot see: references that do not resolve, undeclared path parameters,
// repeated operationIds.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	for _, err := range conformance.CheckDocument([]byte(docs.OpenAPI)) {
		t.Error(err)
	}
	if _, err := conformance.Load([]byte(docs.OpenAPI)); err != nil {
		t.Errorf("the document does not compile for checking answers: %v", err)
	}
}

// TestOpenAPIDocumentServedAsCommitted fetches the document as a client would, with no key and
// no admin token, also from an emulator whose control API is off or behind a token, and
// compares it with the committed file byte for byte.
func TestOpenAPIDocumentServedAsCommitted(t *testing.T) {
	committed, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]Config{
		"loopback":         {},
		"control disabled": {ControlDisabled: true},
		"admin token":      {AdminToken: "s3cret"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.CatalogFile = "../testdata/catalogs/small.yaml"
			cfg.ManualClock = true
			s, err := NewServer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })

			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/_emulator/openapi.json", nil))
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("GET /_emulator/openapi.json: %d %s\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			if !bytes.Equal(rec.Body.Bytes(), committed) {
				t.Errorf("the served document (%d bytes) differs from docs/openapi.json (%d bytes)", rec.Body.Len(), len(committed))
			}
			if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(len(committed)) {
				t.Errorf("Content-Length %s; want %d", got, len(committed))
			}

			head := httptest.NewRecorder()
			s.ServeHTTP(head, httptest.NewRequest(http.MethodHead, "/_emulator/openapi.json", nil))
			if head.Code != http.StatusOK || head.Body.Len() != 0 || head.Header().Get("Content-Length") != strconv.Itoa(len(committed)) {
				t.Errorf("HEAD: %d, %d bytes of body, Content-Length %s", head.Code, head.Body.Len(), head.Header().Get("Content-Length"))
			}

			// The rest of the control API is guarded in these configurations; the document is not.
			clock := httptest.NewRecorder()
			s.ServeHTTP(clock, httptest.NewRequest(http.MethodGet, "/_emulator/clock", nil))
			if want := map[string]int{"loopback": 200, "control disabled": 403, "admin token": 401}[name]; clock.Code != want {
				t.Errorf("GET /_emulator/clock: %d; want %d", clock.Code, want)
			}
		})
	}
}

// route is one method and path template of the route table.
type route struct{ method, path string }

// muxParam is a gorilla/mux path variable with an optional pattern: {name} or {name:pattern}.
var muxParam = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}]*))?\}`)

// routeTable reads the routes registered in routes.go, as OpenAPI templates, the path variables
// whose pattern lets them hold slashes, and those it lets be empty. A registration it cannot read
// fails the test, so a route cannot escape the comparison by being written differently.
func routeTable(t *testing.T) ([]route, map[string]bool, map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var routes []route
	slash, empty := map[string]bool{}, map[string]bool{}
	read := map[ast.Node]bool{} // the Handle calls understood as part of a .Methods(...) chain
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Methods" {
			return true
		}
		handle, ok := sel.X.(*ast.CallExpr)
		if !ok {
			return true
		}
		hsel, ok := handle.Fun.(*ast.SelectorExpr)
		if !ok || (hsel.Sel.Name != "Handle" && hsel.Sel.Name != "HandleFunc") || len(handle.Args) == 0 {
			return true
		}
		lit, ok := handle.Args[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		path, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range muxParam.FindAllStringSubmatch(path, -1) {
			if m[2] == "" {
				continue
			}
			pattern := regexp.MustCompile("^(?:" + m[2] + ")$")
			slash[m[1]] = slash[m[1]] || pattern.MatchString("a/b")
			empty[m[1]] = empty[m[1]] || pattern.MatchString("")
		}
		path = muxParam.ReplaceAllString(path, "{$1}")
		for _, arg := range call.Args {
			msel, ok := arg.(*ast.SelectorExpr)
			if !ok || !strings.HasPrefix(msel.Sel.Name, "Method") {
				t.Fatalf("%s: a method this test cannot read", fset.Position(arg.Pos()))
			}
			routes = append(routes, route{strings.ToUpper(strings.TrimPrefix(msel.Sel.Name, "Method")), path})
		}
		read[handle] = true
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && !read[call] {
			switch sel.Sel.Name {
			case "Handle", "HandleFunc", "Path", "PathPrefix", "NewRoute", "Host", "Schemes", "Queries", "Headers":
				t.Errorf("%s: a route registered as %s(...) without .Methods(...) on the same call; this test cannot read it", fset.Position(call.Pos()), sel.Sel.Name)
			}
		}
		return true
	})
	if len(routes) == 0 {
		t.Fatal("no routes found in routes.go")
	}
	return routes, slash, empty
}

// documentedOperations lists the document's operations as routes.
func documentedOperations(t *testing.T) []route {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(docs.OpenAPI), &doc); err != nil {
		t.Fatal(err)
	}
	var out []route
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "head", "post", "put", "patch", "delete", "options", "trace":
				out = append(out, route{strings.ToUpper(method), path})
			}
		}
	}
	return out
}

// TestOpenAPIDocumentCoversEveryRoute compares the route table with the document both ways: a
// route the document leaves out, or an operation no route answers, fails.
func TestOpenAPIDocumentCoversEveryRoute(t *testing.T) {
	routes, slash, empty := routeTable(t)
	ops := documentedOperations(t)
	key := func(r route) string { return r.method + " " + r.path }
	have := map[string]bool{}
	for _, o := range ops {
		have[key(o)] = true
	}
	served := map[string]bool{}
	for _, r := range routes {
		served[key(r)] = true
		if !have[key(r)] {
			t.Errorf("routes.go answers %s; docs/openapi.json does not describe it", key(r))
		}
	}
	for _, o := range ops {
		if !served[key(o)] {
			t.Errorf("docs/openapi.json describes %s; no route in routes.go answers it", key(o))
		}
	}
	names := func(m map[string]bool) []string {
		var out []string
		for k, v := range m {
			if v {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(conformance.SlashParams), names(slash); !slices.Equal(got, want) {
		t.Errorf("the checker lets path parameters %v hold slashes; the routes let %v", got, want)
	}
	if got, want := names(conformance.EmptyParams), names(empty); !slices.Equal(got, want) {
		t.Errorf("the checker lets path parameters %v be empty; the routes let %v", got, want)
	}
}

// TestOpenAPIDocumentDescribesThisVersion keeps info.version at the newest release the
// changelog names: the document changes with the API, and a release ships both.
func TestOpenAPIDocumentDescribesThisVersion(t *testing.T) {
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(docs.OpenAPI), &doc); err != nil {
		t.Fatal(err)
	}
	changelog, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	release := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\]`).FindSubmatch(changelog)
	if release == nil {
		t.Fatal("CHANGELOG.md names no release")
	}
	if doc.Info.Version != string(release[1]) {
		t.Errorf("info.version is %q; the newest release in CHANGELOG.md is %q", doc.Info.Version, release[1])
	}
}

// TestOpenAPIDocumentNamesEveryProblemCode keeps the document's list of problem codes equal to
// the codes the emulator answers.
func TestOpenAPIDocumentNamesEveryProblemCode(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				ProblemCode struct {
					Examples []string `json:"examples"`
				} `json:"ProblemCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(docs.OpenAPI), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{string(problem.FaultInjected)}
	for code := range kinds {
		want = append(want, string(code))
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(doc.Components.Schemas.ProblemCode.Examples))
	if !slices.Equal(got, want) {
		t.Errorf("ProblemCode examples:\n%v\nthe emulator's codes:\n%v", got, want)
	}
}

// TestOpenAPIDocumentOverTheWire serves the document over HTTP, as a generator or a browser
// fetches it, and checks that it decodes as the JSON object it claims to be.
func TestOpenAPIDocumentOverTheWire(t *testing.T) {
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/_emulator/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil || doc["openapi"] != "3.1.0" {
		t.Fatalf("%d: not an OpenAPI 3.1.0 document (%v)", resp.StatusCode, err)
	}
	if resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("X-Emulator-Version") != Version {
		t.Errorf("the answer lacks the headers every answer carries: %v", resp.Header)
	}
}

// TestOpenAPIRareAnswers provokes answers the other tests seldom reach (HEAD on jobs and
// tenant files, conditional and multi-range downloads, replays, removing a fault, tenant
// errors), so the package's TestMain checks them against the document too.
func TestOpenAPIRareAnswers(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	tenant := []string{"X-Emulator-Tenant", "t1"}
	expect := func(rec *httptest.ResponseRecorder, status int, what string) *httptest.ResponseRecorder {
		t.Helper()
		if rec.Code != status {
			t.Fatalf("%s: %d; want %d\n%s", what, rec.Code, status, rec.Body)
		}
		return rec
	}

	rec := call(t, s, "POST", "/v1/quotes", "key_a", map[string]any{"model": "test/pixel", "input": pixelInput}, tenant...)
	q := decode[quoteBody](t, expect(rec, 200, "quote in t1"))
	body := map[string]any{"model": q.Model, "input": pixelInput, "quote_id": q.QuoteID}
	first := expect(call(t, s, "POST", "/v1/generate", "key_a", body, append([]string{"Idempotency-Key", "k1"}, tenant...)...), 202, "generate")
	replay := expect(call(t, s, "POST", "/v1/generate", "key_a", body, append([]string{"Idempotency-Key", "k1"}, tenant...)...), 202, "replay")
	if replay.Header().Get("Idempotent-Replayed") != "true" || first.Header().Get("Idempotent-Replayed") != "" {
		t.Errorf("Idempotent-Replayed: first %q, replay %q", first.Header().Get("Idempotent-Replayed"), replay.Header().Get("Idempotent-Replayed"))
	}
	job := decode[api.Job](t, first)
	expect(call(t, s, "HEAD", "/v1/jobs/"+job.ID, "key_a", nil, tenant...), 200, "HEAD job")
	expect(call(t, s, "HEAD", "/v1/jobs?status=queued", "key_a", nil, tenant...), 200, "HEAD jobs")
	expect(call(t, s, "HEAD", "/v1/jobs/"+job.ID, "key_a", nil), 404, "HEAD job from the default tenant")
	done := decode[api.Job](t, expect(call(t, s, "POST", "/_emulator/jobs/"+job.ID+"/complete", "", nil, tenant...), 200, "complete"))
	expect(call(t, s, "GET", "/_emulator/jobs/"+job.ID, "", nil, tenant...), 200, "control job")
	expect(call(t, s, "GET", "/_emulator/jobs/"+job.ID, "", nil), 404, "control job from the default tenant")

	if len(done.Outputs) == 0 {
		t.Fatal("the completed job has no outputs")
	}
	file := done.Outputs[0].URL[strings.Index(done.Outputs[0].URL, "/files/"):]
	if !strings.HasPrefix(file, "/files/t1/") {
		t.Fatalf("a tenant's file URL %s does not name the tenant", file)
	}
	expect(call(t, s, "HEAD", file, "", nil), 200, "HEAD file")
	etag := expect(call(t, s, "GET", file, "", nil), 200, "GET file").Header().Get("ETag")
	expect(call(t, s, "GET", file, "", nil, "If-None-Match", etag), 304, "If-None-Match")
	expect(call(t, s, "GET", file, "", nil, "If-Match", `"other"`), 412, "If-Match")
	multi := expect(call(t, s, "GET", file, "", nil, "Range", "bytes=0-3,8-11"), 206, "two ranges")
	if !strings.HasPrefix(multi.Header().Get("Content-Type"), "multipart/byteranges") {
		t.Errorf("two ranges came as %q", multi.Header().Get("Content-Type"))
	}
	expect(call(t, s, "GET", strings.Replace(file, "/files/t1/", "/files/nobody/", 1), "", nil), 404, "another tenant's file")

	fault := decode[map[string]any](t, expect(call(t, s, "POST", "/_emulator/faults", "", map[string]any{"match": map[string]any{"path": "/v1/jobs"}, "status": 503, "count": 1}, tenant...), 201, "add fault"))
	id, _ := fault["id"].(string)
	expect(call(t, s, "DELETE", "/_emulator/faults/"+id, "", nil, tenant...), 204, "delete fault")
	expect(call(t, s, "DELETE", "/_emulator/faults/"+id, "", nil, tenant...), 404, "delete it again")

	expect(call(t, s, "GET", "/v1/models", "key_a", nil, "X-Emulator-Tenant", "not a name"), 400, "bad tenant on /v1")
	expect(call(t, s, "GET", "/_emulator/clock", "", nil, "X-Emulator-Tenant", "not a name"), 400, "bad tenant on the control API")
	expect(call(t, s, "GET", "/v1/models", "key_a.t2", nil, tenant...), 400, "a header and a key suffix that disagree")

	expect(call(t, s, "GET", "/_emulator/jobs?status=pending", "", nil), 400, "every account's jobs in an unknown status")
	expect(call(t, s, "GET", "/_emulator/jobs?status=&model=test/pixel&limit=1", "", nil, tenant...), 200, "every account's jobs, filtered")
	expect(call(t, s, "HEAD", "/_emulator/ui", "", nil), 301, "HEAD the dashboard's address without its slash")
	expect(call(t, s, "HEAD", "/_emulator/ui/", "", nil), 200, "HEAD the dashboard's page")
	expect(call(t, s, "HEAD", "/_emulator/ui/app.css", "", nil, "Range", "bytes=0-9"), 206, "HEAD a range of the dashboard's style")
	expect(call(t, s, "HEAD", "/_emulator/ui/nothing.js", "", nil), 404, "HEAD a file the dashboard does not have")
	expect(call(t, s, "GET", "/_emulator/ui/app.js", "", nil, "Range", "bytes=0-3,8-11"), 206, "two ranges of the dashboard's script")

	few, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, MaxTenants: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = few.Close() })
	expect(call(t, few, "GET", "/_emulator/health", "", nil, "X-Emulator-Tenant", "a"), 200, "the one tenant")
	for _, path := range []string{"/v1/models", "/_emulator/clock", "/_emulator/health", "/_emulator/openapi.json"} {
		expect(call(t, few, "GET", path, "key_a", nil, "X-Emulator-Tenant", "b"), 429, "a tenant too many on "+path)
	}
}
