package emulator_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/golden"
)

// Golden files for documents clients consume: a model's detail (with its OpenAPI document) and
// the error bodies. Rewrite them with
//
//	go test ./emulator -run Golden -update

// goldenDir is the repository's testdata/golden.
const goldenDir = "../testdata/golden"

// checkGolden compares got with testdata/golden/name, or rewrites the file under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	if want, ok := golden.Check(t, filepath.Join(goldenDir, name), got); !ok {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestGoldenModelDetail(t *testing.T) {
	t.Parallel()
	rec := send(t, newSmallServer(t), http.MethodGet, "/v1/models/test/pixel", "key_a")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d:\n%s", rec.Code, rec.Body)
	}
	// Indented for review; Indent keeps the key order the emulator chose.
	var out bytes.Buffer
	if err := json.Indent(&out, rec.Body.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "model-test-pixel.json", out.Bytes())
}

func TestGoldenErrors(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	tests := []struct {
		file, method, path, key string
		status                  int
	}{
		{"error-401.json", http.MethodGet, "/v1/models", "nope", 401},
		{"error-403.json", http.MethodGet, "/v1/models", "key_gen", 403},
		{"error-404.json", http.MethodGet, "/v1/models/test/nope", "key_a", 404},
		{"error-404-route.json", http.MethodGet, "/v1/nope", "key_a", 404},
		{"error-405.json", http.MethodDelete, "/v1/models/test/pixel", "key_a", 405},
		{"error-400.json", http.MethodGet, "/v1/models?limit=0", "key_a", 400},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			rec := send(t, h, tc.method, tc.path, tc.key, "X-Request-Id", "req_golden_"+tc.file)
			if rec.Code != tc.status {
				t.Fatalf("status %d; want %d", rec.Code, tc.status)
			}
			checkGolden(t, tc.file, rec.Body.Bytes()) // exactly the bytes sent
		})
	}
}
