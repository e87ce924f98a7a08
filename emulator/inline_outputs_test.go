package emulator

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// TestInlineOutputs: a model whose catalog output names a delivery_field carries its files in
// the job as data: URIs when the input sets it, the very bytes its file URL serves; without it,
// URLs as always.
func TestInlineOutputs(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../testdata/catalogs/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "        seed: {type: integer, minimum: 0, maximum: 2147483647, description: Random seed.}\n      $defs:",
		"        seed: {type: integer, minimum: 0, maximum: 2147483647, description: Random seed.}\n        sync_mode: {type: boolean, default: false, description: Carry the files in the answer.}\n      $defs:", 1)
	doc = strings.Replace(doc, "      format_field: output_format\n      count_field: num_images\n      size_field: image_size\n",
		"      format_field: output_format\n      count_field: num_images\n      size_field: image_size\n      delivery_field: sync_mode\n", 1)
	if doc == string(raw) {
		t.Fatal("the small catalog changed; this test cannot add sync_mode")
	}
	path := filepath.Join(t.TempDir(), "inline.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"manual", "skip"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s, err := NewServer(Config{CatalogFile: path, ManualClock: mode == "manual", SkipClock: mode == "skip", Seeded: true, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			for _, inline := range []bool{true, false} {
				in := map[string]any{"prompt": "a fox", "num_images": 2, "sync_mode": inline}
				q := quote(t, s, "key_a", "test/pixel", in)
				key := "inline-" + mode
				if !inline {
					key = "url-" + mode
				}
				job := decode[api.Job](t, generate(t, s, "key_a", key, q, in, ""))
				call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "5s"})
				job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil))
				if job.Status != "succeeded" || len(job.Outputs) != 2 {
					t.Fatalf("job = %+v", job)
				}
				for i, o := range job.Outputs {
					data, isData := strings.CutPrefix(o.URL, "data:"+o.ContentType+";base64,")
					switch {
					case !inline || o.SizeBytes > sim.MaxInlineOutput:
						if isData || !strings.HasPrefix(o.URL, "http://example.com/files/") {
							t.Errorf("sync_mode %v, output %d: url %.80s", inline, i, o.URL)
						}
					case !isData:
						t.Errorf("output %d: url %.80s, want a data: URI", i, o.URL)
					default:
						b, err := base64.StdEncoding.DecodeString(data)
						direct := call(t, s, "GET", "/files/"+job.ID+"/"+[]string{"0", "1"}[i]+".png", "", nil)
						if err != nil || int64(len(b)) != o.SizeBytes || !bytes.Equal(b, direct.Body.Bytes()) {
							t.Errorf("output %d: %d bytes inline (%v), %d served", i, len(b), err, direct.Body.Len())
						}
					}
				}
			}
		})
	}
}
