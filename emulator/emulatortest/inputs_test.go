package emulatortest_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

// TestUploadFollowsTheInput: an upload through the helper is usable as image_url, and the
// image-to-image outputs have its size.
func TestUploadFollowsTheInput(t *testing.T) {
	t.Parallel()
	emu := emulatortest.Start(t, emulatortest.WithInputsFetched(), emulatortest.WithSeed(1)).Tenant(t)
	img := image.NewNRGBA(image.Rect(0, 0, 640, 480))
	img.Set(1, 1, color.NRGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	up := emu.Upload(t, b.Bytes(), "image/png")
	if up.Width != 640 || up.Height != 480 || !strings.Contains(up.URL, "/uploads/") {
		t.Fatalf("upload = %+v", up)
	}
	post := func(path string, body any, out any) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", emu.URL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+emu.Keys.All)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "helper-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	input := map[string]any{"image_url": up.URL, "prompt": "the same, in winter"}
	var q api.Quote
	post("/v1/quotes", map[string]any{"model": "fal-ai/flux/dev/image-to-image", "input": input}, &q)
	var job api.Job
	post("/v1/generate?wait=true", map[string]any{"model": "fal-ai/flux/dev/image-to-image", "input": input, "quote_id": q.QuoteID}, &job)
	if job.Status != "succeeded" || len(job.Outputs) == 0 || job.Outputs[0].Width != 640 || job.Outputs[0].Height != 480 {
		t.Fatalf("job = %+v", job)
	}
}
