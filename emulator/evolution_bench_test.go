package emulator_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkDetailSmallEvolution is BenchmarkDetailSmall in the forward-compatibility mode: what
// laying the member into every object of the answer costs.
func BenchmarkDetailSmallEvolution(b *testing.B) {
	s := newSmallServer(b)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/_emulator/scenario", strings.NewReader(`{"scenario":{"name":"evolving","evolution":true}}`)))
	if rec.Code != http.StatusOK {
		b.Fatalf("put scenario: %d %s", rec.Code, rec.Body)
	}
	benchGet(b, s, "/v1/models/test/pixel", "key_a")
}
