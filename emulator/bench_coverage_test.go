package emulator

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkErrorAnswer answers GET /v1/jobs/{id} for a job that does not exist: a 404 that the
// journal records and the coverage counters count, as they do every error answer. Compared
// with BenchmarkQuote (which no counter sees), it shows what counting adds where it happens.
func BenchmarkErrorAnswer(b *testing.B) {
	s := benchServer(b)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/v1/jobs/no-such-job", nil)
		req.Header.Set("Authorization", "Bearer "+benchKey)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound {
			b.Fatalf("GET a missing job: %d %s", rec.Code, rec.Body)
		}
	}
}
