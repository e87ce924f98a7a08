package emulator_test

// Tests of the catalog endpoints, authentication and the error format, through the full
// handler that NewServer returns (routing, middleware and errors included).

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator"
)

// smallConfig serves testdata/catalogs/small.yaml on a manual clock with seeded ids.
var smallConfig = emulator.Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, Seeded: true, Seed: 1}

func newSmallServer(t testing.TB) *emulator.Server {
	t.Helper()
	s, err := emulator.NewServer(smallConfig)
	if err != nil {
		t.Fatalf("NewServer(small.yaml): %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// send makes one request through h. key, when not empty, is sent as a bearer token; headers
// are name, value pairs.
func send(t testing.TB, h http.Handler, method, target, key string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	checkCommonHeaders(t, rec)
	return rec
}

// checkCommonHeaders checks what every response carries, errors included.
func checkCommonHeaders(t testing.TB, rec *httptest.ResponseRecorder) {
	t.Helper()
	if got := rec.Header().Get("X-Emulator-Version"); got != emulator.Version {
		t.Errorf("X-Emulator-Version = %q; want %q", got, emulator.Version)
	}
	if rec.Header().Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}
	if rec.Code == http.StatusMovedPermanently || rec.Code >= 500 {
		t.Errorf("status %d; the emulator must never redirect or fail here:\n%s", rec.Code, rec.Body)
	}
}

// problemBody is an RFC 9457 body as the contract describes it.
type problemBody struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	Code       string `json:"code"`
	RequestID  string `json:"request_id"`
	Permission string `json:"permission"`
	Errors     []struct {
		Pointer   string `json:"pointer"`
		Parameter string `json:"parameter"`
		Message   string `json:"message"`
	} `json:"errors"`
}

// goInternals matches what must never reach a client: Go type names, panics, stacks.
var goInternals = regexp.MustCompile(`panic|goroutine|runtime\.|\.go:\d|\*[a-z]+\.[A-Z]|\b(emulator|catalog|problem|jsonschema|yaml|json|http|mux|strconv|url)\.[A-Z]\w*|map\[|\[\]interface|interface \{\}|<nil>`)

// checkProblem checks an error response: status, content type, code, request id, and that
// nothing internal shows.
func checkProblem(t testing.TB, rec *httptest.ResponseRecorder, status int, code string) problemBody {
	t.Helper()
	var p problemBody
	if rec.Code != status {
		t.Errorf("status %d; want %d:\n%s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q; want application/problem+json", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("error body is not JSON: %v\n%s", err, rec.Body)
	}
	if p.Code != code || p.Status != status || p.Title == "" || p.Detail == "" || p.Type == "" {
		t.Errorf("problem %+v; want code %s, status %d, a title, a detail and a type", p, code, status)
	}
	if p.RequestID == "" || p.RequestID != rec.Header().Get("X-Request-Id") {
		t.Errorf("request_id %q; want the X-Request-Id header %q", p.RequestID, rec.Header().Get("X-Request-Id"))
	}
	if m := goInternals.FindString(rec.Body.String()); m != "" {
		t.Errorf("error body shows %q:\n%s", m, rec.Body)
	}
	return p
}

// listBody is the pagination envelope.
type listBody[T any] struct {
	Data    []T  `json:"data"`
	Total   int  `json:"total"`
	Limit   int  `json:"limit"`
	Offset  int  `json:"offset"`
	HasMore bool `json:"has_more"`
}

type modelItem struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category"`
	OutputType  string `json:"output_type"`
	Status      string `json:"status"`
	Product     string `json:"product"`
}

type productItem struct {
	Product     string `json:"product"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Modes       []struct {
		Mode     string `json:"mode"`
		Model    string `json:"model"`
		Category string `json:"category"`
	} `json:"modes"`
}

func decodeJSON[T any](t testing.TB, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q; want application/json", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("body is not the expected JSON: %v\n%s", err, rec.Body)
	}
	return v
}

// The ready models of small.yaml in catalog order; test/legacy is deprecated.
var (
	allReady  = []string{"test/pixel", "test/pixel/edit", "test/reel", "test/voice"}
	noModels  = []string{}
	pixelOnly = []string{"test/pixel"}
)

func TestListModels(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	tests := []struct {
		query   string
		ids     []string
		total   int
		limit   int
		offset  int
		hasMore bool
	}{
		{"", allReady, 4, 100, 0, false},
		// search: case-insensitive substring of id, name or description
		{"search=pixel", []string{"test/pixel", "test/pixel/edit"}, 2, 100, 0, false},
		{"search=PIXEL", []string{"test/pixel", "test/pixel/edit"}, 2, 100, 0, false},
		{"search=pIxEl%20eDiT", []string{"test/pixel/edit"}, 1, 100, 0, false},
		{"search=test%2Freel", []string{"test/reel"}, 1, 100, 0, false},    // id, with its slash
		{"search=TTS", []string{"test/voice"}, 1, 100, 0, false},           // name only
		{"search=short+clip", []string{"test/reel"}, 1, 100, 0, false},     // description only
		{"search=%20+aloud+%20", []string{"test/voice"}, 1, 100, 0, false}, // trimmed
		{"search=test", allReady, 4, 100, 0, false},
		{"search=", allReady, 4, 100, 0, false},
		{"search=legacy", noModels, 0, 100, 0, false}, // not ready: not listed
		{"search=zebra", noModels, 0, 100, 0, false},
		// category
		{"category=text-to-image", pixelOnly, 1, 100, 0, false}, // test/legacy shares it but is not ready
		{"category=image-edit", []string{"test/pixel/edit"}, 1, 100, 0, false},
		{"category=text-to-video&search=pixel", noModels, 0, 100, 0, false},
		{"category=image-edit&search=EDIT", []string{"test/pixel/edit"}, 1, 100, 0, false},
		// pagination
		{"limit=2", []string{"test/pixel", "test/pixel/edit"}, 4, 2, 0, true},
		{"limit=2&offset=2", []string{"test/reel", "test/voice"}, 4, 2, 2, false},
		{"limit=1&offset=1", []string{"test/pixel/edit"}, 4, 1, 1, true},
		{"offset=3", []string{"test/voice"}, 4, 100, 3, false},
		{"offset=4", noModels, 4, 100, 4, false},
		{"offset=1000", noModels, 4, 100, 1000, false},
		{"limit=1", pixelOnly, 4, 1, 0, true},
		{"limit=500", allReady, 4, 500, 0, false},
		{"limit=1&search=pixel", pixelOnly, 2, 1, 0, true},
		{"limit=1&offset=1&search=pixel", []string{"test/pixel/edit"}, 2, 1, 1, false},
		{"offset=0&limit=100", allReady, 4, 100, 0, false},
		{"grouped=false", allReady, 4, 100, 0, false},
		{"grouped=0", allReady, 4, 100, 0, false},
		{"grouped=FALSE&limit=3", []string{"test/pixel", "test/pixel/edit", "test/reel"}, 4, 3, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			rec := send(t, h, http.MethodGet, "/v1/models?"+tc.query, "key_a")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d:\n%s", rec.Code, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), `"data":[`) {
				t.Errorf("data must be a list, even when empty: %s", rec.Body)
			}
			got := decodeJSON[listBody[modelItem]](t, rec)
			ids := []string{}
			for _, m := range got.Data {
				ids = append(ids, m.ID)
				if m.Status != "ready" || m.Name == "" || m.Description == "" || m.Category == "" || m.OutputType == "" || m.Product == "" {
					t.Errorf("item %+v lacks a contract field or is not ready", m)
				}
			}
			if !reflect.DeepEqual(ids, tc.ids) || got.Total != tc.total || got.Limit != tc.limit || got.Offset != tc.offset || got.HasMore != tc.hasMore {
				t.Errorf("got ids %q total %d limit %d offset %d has_more %v\nwant ids %q total %d limit %d offset %d has_more %v",
					ids, got.Total, got.Limit, got.Offset, got.HasMore, tc.ids, tc.total, tc.limit, tc.offset, tc.hasMore)
			}
		})
	}
}

func TestListModelsItem(t *testing.T) {
	t.Parallel()
	rec := send(t, newSmallServer(t), http.MethodGet, "/v1/models?search=test/reel", "key_a")
	got := decodeJSON[listBody[map[string]any]](t, rec)
	want := map[string]any{
		"id": "test/reel", "name": "Reel Text-to-Video", "description": "Makes a short clip from a prompt.",
		"category": "text-to-video", "output_type": "video", "status": "ready", "product": "reel", "mode": "text-to-video",
	}
	if len(got.Data) != 1 || !reflect.DeepEqual(got.Data[0], want) {
		t.Errorf("item = %v; want %v", got.Data, want)
	}
}

func TestListModelsGrouped(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	type mode struct{ mode, model, category string }
	pixel := []mode{{"text-to-image", "test/pixel", "text-to-image"}, {"edit", "test/pixel/edit", "image-edit"}}
	reel := []mode{{"text-to-video", "test/reel", "text-to-video"}}
	voice := []mode{{"text-to-speech", "test/voice", "text-to-speech"}}
	tests := []struct {
		query    string
		products []string
		modes    [][]mode
		total    int
		hasMore  bool
	}{
		{"grouped=true", []string{"pixel", "reel", "voice"}, [][]mode{pixel, reel, voice}, 3, false},
		{"grouped=TRUE", []string{"pixel", "reel", "voice"}, [][]mode{pixel, reel, voice}, 3, false},
		{"grouped=1", []string{"pixel", "reel", "voice"}, [][]mode{pixel, reel, voice}, 3, false},
		// pagination counts products, not models
		{"grouped=true&limit=1", []string{"pixel"}, [][]mode{pixel}, 3, true},
		{"grouped=true&limit=1&offset=1", []string{"reel"}, [][]mode{reel}, 3, true},
		{"grouped=true&limit=2&offset=1", []string{"reel", "voice"}, [][]mode{reel, voice}, 3, false},
		{"grouped=true&offset=3", []string{}, [][]mode{}, 3, false},
		// filters apply to models first, then grouping
		{"grouped=true&search=edit", []string{"pixel"}, [][]mode{{pixel[1]}}, 1, false},
		{"grouped=true&category=text-to-image", []string{"pixel"}, [][]mode{{pixel[0]}}, 1, false},
		{"grouped=true&search=legacy", []string{}, [][]mode{}, 0, false},
		{"grouped=true&search=e&limit=1", []string{"pixel"}, [][]mode{pixel}, 3, true},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			rec := send(t, h, http.MethodGet, "/v1/models?"+tc.query, "key_a")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d:\n%s", rec.Code, rec.Body)
			}
			got := decodeJSON[listBody[productItem]](t, rec)
			products := []string{}
			modes := [][]mode{}
			for _, p := range got.Data {
				products = append(products, p.Product)
				var ms []mode
				for _, m := range p.Modes {
					ms = append(ms, mode{m.Mode, m.Model, m.Category})
				}
				modes = append(modes, ms)
				if p.Name == "" || p.Description == "" {
					t.Errorf("product %+v has no name or description", p)
				}
			}
			if !reflect.DeepEqual(products, tc.products) || !reflect.DeepEqual(modes, tc.modes) || got.Total != tc.total || got.HasMore != tc.hasMore {
				t.Errorf("got %q %v total %d has_more %v; want %q %v total %d has_more %v",
					products, modes, got.Total, got.HasMore, tc.products, tc.modes, tc.total, tc.hasMore)
			}
		})
	}
}

func TestListModelsInvalidParameters(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	tests := []struct {
		query     string
		parameter string
	}{
		{"limit=0", "limit"},
		{"limit=501", "limit"},
		{"limit=-1", "limit"},
		{"limit=x", "limit"},
		{"limit=1.5", "limit"},
		{"limit=", "limit"},
		{"limit=1e2", "limit"},
		{"limit=99999999999999999999", "limit"},
		{"offset=-1", "offset"},
		{"offset=abc", "offset"},
		{"offset=1.5", "offset"},
		{"offset=", "offset"},
		{"grouped=maybe", "grouped"},
		{"grouped=yes", "grouped"},
		{"grouped=", "grouped"},
		{"category=nope", "category"},
		{"category=", "category"},
		{"category=TEXT-TO-IMAGE", "category"}, // categories are exact words
		{"limit=1&limit=2", "limit"},
		{"limit=2&limit=2", "limit"},
		{"offset=0&offset=1", "offset"},
		{"search=a&search=b", "search"},
		{"grouped=true&grouped=false", "grouped"},
		{"category=text-to-image&category=image-edit", "category"},
		{"limit=0&offset=-1", "limit"}, // the first bad parameter is named
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			rec := send(t, h, http.MethodGet, "/v1/models?"+tc.query, "key_a")
			p := checkProblem(t, rec, http.StatusBadRequest, "invalid_parameter")
			if len(p.Errors) != 1 || p.Errors[0].Parameter != tc.parameter || p.Errors[0].Message == "" {
				t.Errorf("errors = %+v; want one naming parameter %q", p.Errors, tc.parameter)
			}
		})
	}
}

func TestGetModel(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	// Paths are matched as sent (gorilla/mux with SkipClean) on the decoded path: %2F is a slash,
	// nothing is cleaned or redirected, and the id is everything after /v1/models/. So a
	// trailing slash, "//", ".." or "%2e%2e" name ids no model has (the loader refuses such ids)
	// and answer 404 model_not_found; /v1/models/ alone has no id and answers 404 not_found.
	tests := []struct {
		path   string
		status int
		code   string
		id     string
	}{
		{"/v1/models/test/pixel", 200, "", "test/pixel"},
		{"/v1/models/test/pixel/edit", 200, "", "test/pixel/edit"},
		{"/v1/models/test%2Fpixel", 200, "", "test/pixel"},
		{"/v1/models/test%2fpixel%2Fedit", 200, "", "test/pixel/edit"},
		{"/v1/models/test/legacy", 200, "", "test/legacy"}, // not ready, still described
		{"/v1/models/test/pixel/", 404, "model_not_found", ""},
		{"/v1/models/test%2Fpixel%2F", 404, "model_not_found", ""},
		{"/v1/models//test/pixel", 404, "model_not_found", ""},
		{"/v1/models/test//pixel", 404, "model_not_found", ""},
		{"/v1/models/test/./pixel", 404, "model_not_found", ""},
		{"/v1/models/test/../test/pixel", 404, "model_not_found", ""},
		{"/v1/models/test/%2e%2e/test/pixel", 404, "model_not_found", ""},
		{"/v1/models/test/%2E%2E/test/pixel", 404, "model_not_found", ""},
		{"/v1/models/..", 404, "model_not_found", ""},
		{"/v1/models/../models", 404, "model_not_found", ""},
		{"/v1/models/TEST/PIXEL", 404, "model_not_found", ""}, // ids are exact
		{"/v1/models/test", 404, "model_not_found", ""},
		{"/v1/models/nope", 404, "model_not_found", ""},
		{"/v1/models/categories/", 404, "model_not_found", ""},
		{"/v1/models/test%20pixel", 404, "model_not_found", ""},
		{"/v1/models/", 404, "not_found", ""},
		{"//v1/models/test/pixel", 404, "not_found", ""},
		{"/v1//models/test/pixel", 404, "not_found", ""},
		{"/v1/../v1/models/test/pixel", 404, "not_found", ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			rec := send(t, h, http.MethodGet, tc.path, "key_a")
			if tc.status != http.StatusOK {
				checkProblem(t, rec, tc.status, tc.code)
				return
			}
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d:\n%s", rec.Code, rec.Body)
			}
			got := decodeJSON[map[string]any](t, rec)
			if got["id"] != tc.id {
				t.Errorf("id = %v; want %s", got["id"], tc.id)
			}
		})
	}
}

func TestGetModelDetail(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	rec := send(t, h, http.MethodGet, "/v1/models/test/legacy", "key_a")
	got := decodeJSON[map[string]any](t, rec)
	for k, want := range map[string]any{
		"id": "test/legacy", "name": "Legacy Painter", "status": "deprecated", "category": "text-to-image",
		"output_type": "image", "product": "pixel",
	} {
		if got[k] != want {
			t.Errorf("%s = %v; want %v", k, got[k], want)
		}
	}
	for _, k := range []string{"input_schema", "openapi", "examples"} {
		if got[k] == nil {
			t.Errorf("detail lacks %s", k)
		}
	}
	// The same bytes whichever spelling of the id was used.
	a := send(t, h, http.MethodGet, "/v1/models/test/pixel", "key_a").Body.String()
	b := send(t, h, http.MethodGet, "/v1/models/test%2Fpixel", "key_a").Body.String()
	if a != b {
		t.Error("test/pixel and test%2Fpixel answer different bodies")
	}
}

func TestCategories(t *testing.T) {
	t.Parallel()
	rec := send(t, newSmallServer(t), http.MethodGet, "/v1/models/categories", "key_read")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d:\n%s", rec.Code, rec.Body)
	}
	type category struct {
		ID         string `json:"id"`
		OutputType string `json:"output_type"`
		ModelCount int    `json:"model_count"`
	}
	got := decodeJSON[struct{ Data []category }](t, rec)
	want := []category{
		{"text-to-image", "image", 1}, // test/legacy is deprecated and not counted
		{"image-edit", "image", 1},
		{"text-to-video", "video", 1},
		{"text-to-speech", "audio", 1},
	}
	if !reflect.DeepEqual(got.Data, want) {
		t.Errorf("categories = %+v; want %+v", got.Data, want)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec := send(t, h, method, "/_emulator/health", "") // no key needed
		if rec.Code != http.StatusOK {
			t.Fatalf("%s status %d:\n%s", method, rec.Code, rec.Body)
		}
		got := decodeJSON[map[string]any](t, rec)
		for k, want := range map[string]any{
			"status": "ok", "version": emulator.Version, "clock": "manual", "now": "2026-01-01T00:00:00Z",
			"models": float64(5), "seeded": true,
		} {
			if got[k] != want {
				t.Errorf("%s health %s = %v; want %v", method, k, got[k], want)
			}
		}
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	paths := []string{"/v1/models", "/v1/models/test/pixel", "/v1/models/categories", "/v1/models/nope"}
	tests := []struct {
		name          string
		authorization string // "-" sends no header
	}{
		{"no header", "-"},
		{"empty header", ""},
		{"basic", "Basic x"},
		{"basic with key", "Basic key_a"},
		{"bearer without token", "Bearer"},
		{"bearer with blank token", "Bearer    "},
		{"token scheme", "Token key_a"},
		{"no scheme", "key_a"},
		{"unknown key", "Bearer nope"},
		{"key of another case", "Bearer KEY_A"},
		{"key with suffix", "Bearer key_a2"},
		{"two tokens", "Bearer key_a key_b"},
	}
	for _, tc := range tests {
		for _, path := range paths {
			t.Run(tc.name+path, func(t *testing.T) {
				t.Parallel()
				var rec *httptest.ResponseRecorder
				if tc.authorization == "-" {
					rec = send(t, h, http.MethodGet, path, "")
				} else {
					rec = send(t, h, http.MethodGet, path, "", "Authorization", tc.authorization)
				}
				checkProblem(t, rec, http.StatusUnauthorized, "unauthenticated")
				if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate = %q; want a Bearer challenge", got)
				}
				if strings.Contains(rec.Body.String(), "test/pixel") && path != "/v1/models/test/pixel" {
					t.Error("an unauthenticated request learns about models")
				}
			})
		}
	}
	// The scheme is case-insensitive and surrounding blanks are tolerated.
	for _, auth := range []string{"Bearer key_a", "bearer key_a", "BEARER key_a", "Bearer  key_a", "Bearer key_a "} {
		rec := send(t, h, http.MethodGet, "/v1/models", "", "Authorization", auth)
		if rec.Code != http.StatusOK {
			t.Errorf("Authorization %q: status %d", auth, rec.Code)
		}
	}
}

func TestPermissionDenied(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	for _, path := range []string{"/v1/models", "/v1/models?grouped=true", "/v1/models/test/pixel", "/v1/models/nope", "/v1/models/categories"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			rec := send(t, h, http.MethodGet, path, "key_gen") // generate only
			p := checkProblem(t, rec, http.StatusForbidden, "permission_denied")
			if p.Permission != "models:read" || !strings.Contains(p.Detail, "models:read") {
				t.Errorf("problem %+v; want it to name models:read", p)
			}
			if rec.Header().Get("WWW-Authenticate") != "" {
				t.Error("a 403 carries WWW-Authenticate")
			}
		})
	}
	// Bad parameters are only checked once the key may read: a 403 comes first.
	rec := send(t, h, http.MethodGet, "/v1/models?limit=0", "key_gen")
	checkProblem(t, rec, http.StatusForbidden, "permission_denied")
	rec = send(t, h, http.MethodGet, "/v1/models?limit=0", "")
	checkProblem(t, rec, http.StatusUnauthorized, "unauthenticated")
}

func TestUnknownRoutes(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	for _, path := range []string{"/nope", "/v1", "/v1/", "/v1/nope", "/v2/models", "/V1/models", "/v1/models/", "/_emulator", "/_emulator/nope"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			// With or without a key: unknown routes are 404 before authentication.
			for _, key := range []string{"", "key_a"} {
				rec := send(t, h, http.MethodGet, path, key)
				p := checkProblem(t, rec, http.StatusNotFound, "not_found")
				if !strings.Contains(p.Detail, path) {
					t.Errorf("detail %q does not name the path", p.Detail)
				}
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	tests := []struct {
		method, path string
	}{
		{http.MethodPost, "/v1/models"},
		{http.MethodPut, "/v1/models"},
		{http.MethodDelete, "/v1/models"},
		{http.MethodPatch, "/v1/models/test/pixel"},
		{http.MethodPost, "/v1/models/test/pixel"},
		{http.MethodDelete, "/v1/models/categories"},
		{http.MethodPost, "/v1/models/nope"},
		{http.MethodPost, "/_emulator/health"},
	}
	for _, tc := range tests {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			t.Parallel()
			for _, key := range []string{"", "key_a"} {
				rec := send(t, h, tc.method, tc.path, key)
				p := checkProblem(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
				if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
					t.Errorf("Allow = %q; want GET, HEAD", got)
				}
				if !strings.Contains(p.Detail, tc.method) {
					t.Errorf("detail %q does not name the method", p.Detail)
				}
			}
		})
	}
}

func TestHead(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	for _, path := range []string{"/v1/models", "/v1/models?grouped=true", "/v1/models/test/pixel", "/v1/models/categories"} {
		get := send(t, h, http.MethodGet, path, "key_a")
		head := send(t, h, http.MethodHead, path, "key_a")
		if head.Code != http.StatusOK || head.Header().Get("Content-Type") != get.Header().Get("Content-Type") ||
			head.Header().Get("Content-Length") != get.Header().Get("Content-Length") {
			t.Errorf("HEAD %s: %d %v; GET: %d %v", path, head.Code, head.Header(), get.Code, get.Header())
		}
	}
	rec := send(t, h, http.MethodHead, "/v1/models", "")
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("HEAD without a key: %d", rec.Code)
	}

	// On the wire a HEAD has no body, and its Content-Length is the GET's.
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, srv.URL+"/v1/models/test/pixel", nil)
		req.Header.Set("Authorization", "Bearer key_a")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		buf := make([]byte, 512)
		for {
			k, err := resp.Body.Read(buf)
			n += int64(k)
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		if method == http.MethodHead && (n != 0 || resp.ContentLength <= 0) {
			t.Errorf("HEAD: %d body bytes, Content-Length %d", n, resp.ContentLength)
		}
		if method == http.MethodGet && n != resp.ContentLength {
			t.Errorf("GET: %d body bytes, Content-Length %d", n, resp.ContentLength)
		}
	}
}

var generatedRequestID = regexp.MustCompile(`^req_[0-9a-f]{24}$`)

func TestRequestID(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	long200 := strings.Repeat("a", 200)
	tests := []struct {
		name string
		sent string // "" sends none
		echo bool
	}{
		{"none", "", false},
		{"simple", "abc-123", true},
		{"uuid", "5f0c2c9e-8a55-4a0b-9a4e-1c1f2b3d4e5f", true},
		{"punctuation", "req:1/2?x=y&z=[w]", true},
		{"200 characters", long200, true},
		{"201 characters", long200 + "b", false},
		{"space", "has space", false},
		{"tab", "has\ttab", false},
		{"control", "ctl\x01", false},
		{"delete", "del\x7f", false},
		{"non-ASCII", "café", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, path := range []string{"/v1/models", "/nope"} { // success and error alike
				var rec *httptest.ResponseRecorder
				if tc.sent == "" {
					rec = send(t, h, http.MethodGet, path, "key_a")
				} else {
					rec = send(t, h, http.MethodGet, path, "key_a", "X-Request-Id", tc.sent)
				}
				got := rec.Header().Get("X-Request-Id")
				if tc.echo && got != tc.sent {
					t.Errorf("%s: X-Request-Id = %q; want it echoed", path, got)
				}
				if !tc.echo && !generatedRequestID.MatchString(got) {
					t.Errorf("%s: X-Request-Id = %q; want a generated req_ id", path, got)
				}
				if path == "/nope" {
					if p := checkProblem(t, rec, http.StatusNotFound, "not_found"); p.RequestID != got {
						t.Errorf("body request_id %q; header %q", p.RequestID, got)
					}
				}
			}
		})
	}
}

// TestEveryResponseIsFramed sends one request of each kind and checks the headers every
// response carries.
func TestEveryResponseIsFramed(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	for _, tc := range []struct {
		method, path, key string
		status            int
	}{
		{"GET", "/v1/models", "key_a", 200},
		{"HEAD", "/v1/models", "key_a", 200},
		{"GET", "/v1/models/test/pixel", "key_a", 200},
		{"GET", "/v1/models/categories", "key_a", 200},
		{"GET", "/_emulator/health", "", 200},
		{"GET", "/v1/models?limit=0", "key_a", 400},
		{"GET", "/v1/models", "", 401},
		{"GET", "/v1/models", "key_gen", 403},
		{"GET", "/v1/models/nope", "key_a", 404},
		{"GET", "/nope", "", 404},
		{"POST", "/v1/models", "key_a", 405},
	} {
		rec := send(t, h, tc.method, tc.path, tc.key) // send checks the common headers
		if rec.Code != tc.status {
			t.Errorf("%s %s: status %d; want %d", tc.method, tc.path, rec.Code, tc.status)
		}
		if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, rec.Header().Get("Content-Type"))
		}
	}
}

// TestSearchWithNUL: no id, name or description holds a NUL character, so a search for one
// (or for text spanning two fields) must match nothing.
func TestSearchWithNUL(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	for _, q := range []string{"%00", "pixel%00pixel"} {
		rec := send(t, h, http.MethodGet, "/v1/models?search="+q, "key_a")
		got := decodeJSON[listBody[modelItem]](t, rec)
		if got.Total != 0 {
			t.Errorf("search=%s matched %d models; want none", q, got.Total)
		}
	}
}

// TestMalformedQuery: a query that does not decode (a bad %-escape) is not silently ignored;
// limit=%zz must not be served as if no limit had been given.
func TestMalformedQuery(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	rec := send(t, h, http.MethodGet, "/v1/models?limit=%zz", "key_a")
	if rec.Code == http.StatusOK {
		t.Errorf("limit=%%zz answered 200 with the default limit; want 400 invalid_parameter")
		return
	}
	checkProblem(t, rec, http.StatusBadRequest, "invalid_parameter")
}
