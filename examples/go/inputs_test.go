package mediagen_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	_ "image/jpeg" // the outputs' format
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
	mediagen "github.com/mediagen/mediagen-emulator/examples/go"
)

// editModel is the default catalog's FLUX image-to-image model, whose outputs follow the input.
const editModel = "fal-ai/flux/dev/image-to-image"

// pngOf is a w×h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%h, color.NRGBA{B: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestTheCarefulClientUploadsWhatItEdits: against an emulator that fetches inputs as the hosted
// service does, the careful client uploads its image once, reuses the upload for a second
// edit, gets outputs of the image's size, and a clean report.
func TestTheCarefulClientUploadsWhatItEdits(t *testing.T) {
	emu := emulatortest.Start(t, emulatortest.WithManualClock(), emulatortest.WithInputsFetched())
	emu.FailOnRules(t)
	c := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Careful: true, Sleep: emu.Advance}
	img := pngOf(t, 640, 480)
	ctx := context.Background()
	res, err := c.Edit(ctx, editModel, img, "image/png", map[string]any{"prompt": "the same house in winter", "num_images": 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2 {
		t.Fatalf("%d files", len(res.Files))
	}
	for i, f := range res.Files {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(f))
		if err != nil || cfg.Width != 640 || cfg.Height != 480 {
			t.Errorf("output %d is %d×%d (%v); want the input's 640×480", i, cfg.Width, cfg.Height, err)
		}
	}
	if _, err := c.Edit(ctx, editModel, img, "image/png", map[string]any{"prompt": "the same house at night"}); err != nil {
		t.Fatal(err)
	}
	ups := emu.Uploads(t)
	if len(ups) != 1 || ups[0].JobCount != 2 || ups[0].Width != 640 {
		t.Errorf("uploads = %+v; want the one upload, read by both jobs", ups)
	}
	in := emu.MediaInputs(t, res.JobID)
	if len(in) != 1 || in[0].Source != "upload" || !in[0].Read || in[0].Width != 640 || in[0].Height != 480 {
		t.Errorf("the job's media inputs = %+v", in)
	}
}

// TestTheCarefulClientUploadsAgainAfterAnExpiry: behind a long job, one job at a time, the edit's
// job starts after its upload's life (input_expired, refunded); the careful client uploads the
// image again and renders it.
func TestTheCarefulClientUploadsAgainAfterAnExpiry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.yaml")
	doc := "inputs: {upload_ttl: 1m}\ndefaults: {run: 90s, queue_timeout: 10m}\nconcurrency: [{limit: 1}]\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	emu := emulatortest.Start(t, emulatortest.WithManualClock(), emulatortest.WithInputsFetched(), emulatortest.WithScenario(path))
	emu.ExpectError(t, emulatortest.Pattern{Code: "input_expired"})
	occupy(t, emu) // the one slot, for 90 s: longer than an upload lasts
	c := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Careful: true, Sleep: emu.Advance}
	res, err := c.Edit(context.Background(), editModel, pngOf(t, 320, 200), "image/png", map[string]any{"prompt": "a house"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(res.Files[0])); err != nil || cfg.Width != 320 || cfg.Height != 200 {
		t.Errorf("the output is %d×%d (%v); want 320×200", cfg.Width, cfg.Height, err)
	}
	emu.AssertRequested(t, 2, emulatortest.Pattern{Method: "POST", Path: "/v1/uploads"})
	if b := emu.Balance("acct_all"); b.Refunded == 0 {
		t.Errorf("the expired job's hold was not refunded: %+v", b)
	}
}

// TestTheNaiveClientsLocalURLIsRefused: the naive client's edit sends a URL of the developer's
// machine; it is refused before anything is held, and the report names it.
func TestTheNaiveClientsLocalURLIsRefused(t *testing.T) {
	emu := emulatortest.Start(t, emulatortest.WithManualClock(), emulatortest.WithInputsFetched())
	c := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Sleep: emu.Advance}
	_, err := c.Edit(context.Background(), editModel, pngOf(t, 64, 48), "image/png", map[string]any{"prompt": "a house"})
	var refused *mediagen.Error
	if !errors.As(err, &refused) || refused.Status != 422 || refused.Code != "input_url_refused" {
		t.Fatalf("the naive edit: %v; want 422 input_url_refused", err)
	}
	if b := emu.Balance("acct_all"); b.Held != 0 || b.Charged != 0 {
		t.Errorf("credits moved for a refused generation: %+v", b)
	}
	rep := emu.Report(t, "tenant")
	if rep.Counts["unreachable-input-url"] == 0 {
		t.Errorf("the report does not name unreachable-input-url: %v", rep.Counts)
	}
}
