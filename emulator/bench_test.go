package emulator_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
)

// newSyntheticServer serves a synthetic catalog of n models written to a temporary file.
func newSyntheticServer(b *testing.B, n int) *emulator.Server {
	b.Helper()
	path := filepath.Join(b.TempDir(), "synthetic.yaml")
	if err := os.WriteFile(path, catalogtest.Synthetic(n), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := emulator.NewServer(emulator.Config{CatalogFile: path, ManualClock: true, Seeded: true, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// benchGet measures one GET through the full handler.
func benchGet(b *testing.B, h http.Handler, target, key string) {
	b.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Request-Id", "req_bench")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d\n%s", target, rec.Code, rec.Body)
	}
	b.SetBytes(int64(rec.Body.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
}

// BenchmarkListSearch10000 searches 10,000 models; "noir" matches one model in eight and the
// first page of 100 is sent.
func BenchmarkListSearch10000(b *testing.B) {
	benchGet(b, newSyntheticServer(b, 10_000), "/v1/models?search=NOIR", "key_bench")
}

// BenchmarkListSearchRare10000 searches for a string only one model's id holds.
func BenchmarkListSearchRare10000(b *testing.B) {
	benchGet(b, newSyntheticServer(b, 10_000), "/v1/models?search=m-09998", "key_bench")
}

func BenchmarkListPage10000(b *testing.B) {
	benchGet(b, newSyntheticServer(b, 10_000), "/v1/models?limit=100&offset=5000", "key_bench")
}

func BenchmarkListGrouped10000(b *testing.B) {
	benchGet(b, newSyntheticServer(b, 10_000), "/v1/models?grouped=true&limit=100&offset=1000", "key_bench")
}

func BenchmarkDetail10000(b *testing.B) {
	benchGet(b, newSyntheticServer(b, 10_000), "/v1/models/synth/noir/m-05004", "key_bench")
}

func BenchmarkDetailSmall(b *testing.B) {
	benchGet(b, newSmallServer(b), "/v1/models/test/pixel", "key_a")
}

func BenchmarkNewServer10000(b *testing.B) {
	path := filepath.Join(b.TempDir(), "synthetic.yaml")
	if err := os.WriteFile(path, catalogtest.Synthetic(10_000), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := emulator.NewServer(emulator.Config{CatalogFile: path, ManualClock: true})
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
	}
}

func TestSyntheticCatalogServes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "synthetic.yaml")
	if err := os.WriteFile(path, catalogtest.Synthetic(20), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := emulator.NewServer(emulator.Config{CatalogFile: path, ManualClock: true})
	if err != nil {
		t.Fatalf("the synthetic catalog does not load:\n%v", err)
	}
	defer s.Close()
	got := decodeJSON[listBody[modelItem]](t, send(t, s, http.MethodGet, "/v1/models?search=noir", "key_bench"))
	if got.Total != 2 { // of models 0..19 in eight styles, 4 and 12 are noir
		t.Errorf("search=noir matched %d; want 2", got.Total)
	}
}
