package emulator

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
)

// rulesCatalog is a catalog of one image-to-image model whose catalog inputs take http: URLs,
// bound a data: URI to 64 bytes and mark reference (and not image_url) as its one media member.
const rulesCatalog = `models:
  - id: test/edit
    name: Edit
    description: An edit of a reference image.
    category: image-to-image
    output_type: image
    input_schema:
      type: object
      required: [prompt]
      properties:
        prompt: {type: string}
        reference: {type: string, format: uri}
        image_url: {type: string, format: uri}
      examples: [{prompt: a cat, reference: "https://example.com/cat.png"}]
    timing: {queue: 100ms, run: 100ms}
    output: {format: png, width: 64, height: 64}
    inputs:
      https_only: false
      limits: {image: {inline: 64}}
      media: {reference: image}
`

// TestInputsCatalogRules: a model's catalog inputs change the rules its inputs are judged by
// and which members are media, and a scenario's inputs are laid over them.
func TestInputsCatalogRules(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(rulesCatalog), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"manual", "skip", "real"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := inputsServer(t, func(c *Config) { c.CatalogFile = path; setClock(c, mode) })
			big := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngOf(t, 64, 64))
			n := 0
			try := func(in map[string]any) (int, problemJSON, map[string]any) {
				t.Helper()
				n++
				in["prompt"] = "a cat"
				q := quote(t, s, "mg_test_all", "test/edit", in)
				rec := generate(t, s, "mg_test_all", mode+string(rune('a'+n)), q, in, "")
				var p problemJSON
				if rec.Code >= 400 {
					p = decode[problemJSON](t, rec)
				}
				return rec.Code, p, decode[map[string]any](t, rec)
			}
			// The model takes http: where the service's default takes https: only.
			if code, p, _ := try(map[string]any{"reference": "http://example.com/cat.png"}); code != 202 && code != 200 {
				t.Errorf("http: reference: %d %+v; the model's https_only: false takes it", code, p)
			}
			// Its inline limit is its own.
			if code, p, _ := try(map[string]any{"reference": big}); code != 422 || p.Code != "input_too_large" || p.Errors[0].Pointer != "/input/reference" {
				t.Errorf("a data: URI over the model's 64 bytes: %d %+v", code, p)
			}
			// A marked member is judged as media; image_url, left out of media, is not.
			if code, p, body := try(map[string]any{"reference": "https://127.0.0.1/cat.png"}); code != 422 || body["rule"] != "loopback_address" || p.Errors[0].Pointer != "/input/reference" {
				t.Errorf("a loopback reference: %d %+v", code, p)
			}
			if code, p, _ := try(map[string]any{"image_url": "https://127.0.0.1/cat.png"}); code != 202 && code != 200 {
				t.Errorf("image_url is not media for this model, yet: %d %+v", code, p)
			}
			// A scenario's rules are laid over the model's: its https_only wins.
			if rec := control(t, s, "PUT", "/_emulator/scenario", map[string]any{"scenario": map[string]any{
				"name": "strict", "inputs": map[string]any{"https_only": true},
			}}); rec.Code != 200 {
				t.Fatalf("scenario: %d %s", rec.Code, rec.Body)
			}
			if code, _, body := try(map[string]any{"reference": "http://example.com/cat.png"}); code != 422 || body["rule"] != "https_only" {
				t.Errorf("http: under a scenario's https_only: %d %v", code, body)
			}
			// What the scenario leaves alone is still the model's.
			if code, p, _ := try(map[string]any{"reference": big}); code != 422 || p.Code != "input_too_large" {
				t.Errorf("the model's inline limit under the scenario: %d %+v", code, p)
			}
		})
	}
}
