package emulator

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// kling is the default catalog's image-to-video model that names no size: its video follows
// the input image's shape.
const kling = "fal-ai/kling-video/v2.1/master/image-to-video"

// veo3 is an image-to-video model whose input may name an aspect ratio.
const veo3 = "fal-ai/veo3/image-to-video"

// quartered is a w×h PNG of four colours, one to each quarter, and the colours.
func quartered(t testing.TB, w, h int) ([]byte, [4]color.NRGBA) {
	t.Helper()
	colours := [4]color.NRGBA{{220, 40, 40, 255}, {40, 200, 60, 255}, {30, 60, 210, 255}, {240, 230, 40, 255}}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, colours[2*(2*y/h)+2*x/w])
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), colours
}

// firstFrame is a video's first frame as ffmpeg decodes it, RGB, or nil without ffmpeg.
func firstFrame(t testing.TB, video []byte, w, h int) []byte {
	t.Helper()
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		return nil
	}
	path := filepath.Join(t.TempDir(), "v.mp4")
	if err := os.WriteFile(path, video, 0o600); err != nil {
		t.Fatal(err)
	}
	frame, err := exec.Command(ffmpeg, "-v", "error", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-").Output()
	if err != nil || len(frame) != 3*w*h {
		t.Fatalf("first frame: %d bytes (%v); want %d", len(frame), err, 3*w*h)
	}
	return frame
}

// TestInputsVideoOpensOnInput: an image-to-video output opens on its input image scaled to the
// video's size: the input's shape when the input names no size, the asked one when it does;
// a stand-in URL opens on a seeded frame of the stand-in's square shape; through a snapshot
// the file is byte for byte the same.
func TestInputsVideoOpensOnInput(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"manual", "skip", "real"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := inputsServer(t, func(c *Config) { setClock(c, mode) })
			n := 0
			run := func(model string, in map[string]any) api.Job {
				t.Helper()
				n++
				in["prompt"] = "the scene comes alive"
				q := quote(t, s, "mg_test_all", model, in)
				rec := generate(t, s, "mg_test_all", "clip-"+strings.Repeat("x", n), q, in, "")
				if rec.Code != 202 && rec.Code != 200 {
					t.Fatalf("generate %v: %d %s", in, rec.Code, rec.Body)
				}
				job := decode[api.Job](t, rec)
				call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "1m"})
				job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil))
				for mode == "real" && (job.Status == "queued" || job.Status == "running") {
					job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID+"?wait=true", "mg_test_all", nil))
				}
				if job.Status != "succeeded" || len(job.Outputs) != 1 {
					t.Fatalf("job = %+v", job)
				}
				return job
			}
			file := func(o api.Output) []byte {
				t.Helper()
				rec := call(t, s, "GET", strings.TrimPrefix(o.URL, "http://example.com"), "", nil)
				if rec.Code != 200 || int64(rec.Body.Len()) != o.SizeBytes {
					t.Fatalf("GET %s: %d, %d bytes of %d", o.URL, rec.Code, rec.Body.Len(), o.SizeBytes)
				}
				return rec.Body.Bytes()
			}
			opens := func(what string, o api.Output, colours [4]color.NRGBA) {
				t.Helper()
				frame := firstFrame(t, file(o), o.Width, o.Height)
				for q, c := range colours {
					if frame == nil {
						break
					}
					x, y := o.Width/4+(q%2)*o.Width/2, o.Height/4+(q/2)*o.Height/2
					p := frame[3*(y*o.Width+x):]
					for i, want := range []uint8{c.R, c.G, c.B} {
						if d := int(p[i]) - int(want); d < -16 || d > 16 {
							t.Errorf("%s: quarter %d of the first frame is %v, want about %v", what, q, p[:3], c)
							break
						}
					}
				}
			}
			img, colours := quartered(t, 640, 480)
			up := decode[api.Upload](t, uploadRaw(t, s, img, "image/png"))
			uploaded := run(kling, map[string]any{"image_url": up.URL})
			if o := uploaded.Outputs[0]; o.Width != 1440 || o.Height != 1080 {
				t.Errorf("a 640x480 upload made a %dx%d video; want 1440x1080, 4:3 at the catalog's 1080", o.Width, o.Height)
			}
			opens("an upload", uploaded.Outputs[0], colours)

			wide, wideColours := quartered(t, 160, 90)
			inline := "data:image/png;base64," + base64.StdEncoding.EncodeToString(wide)
			asked := run(veo3, map[string]any{"image_url": inline, "aspect_ratio": "9:16"})
			if o := asked.Outputs[0]; o.Width != 720 || o.Height != 1280 {
				t.Errorf("an asked 9:16 made %dx%d; want 720x1280", o.Width, o.Height)
			}
			opens("a data: URI at the asked size", asked.Outputs[0], wideColours)

			// The emulator's own image output, made from the upload, is read as its file.
			edit := run(i2i, map[string]any{"image_url": up.URL})
			own := run(kling, map[string]any{"image_url": edit.Outputs[0].URL})
			if o := own.Outputs[0]; o.Width != 1440 || o.Height != 1080 || bytes.Equal(file(o), file(uploaded.Outputs[0])) {
				t.Errorf("an output's URL made a %dx%d video, or one opening on the upload", o.Width, o.Height)
			}
			standIn := run(kling, map[string]any{"image_url": "https://example.com/dog.jpg"})
			again := run(kling, map[string]any{"image_url": "https://example.com/dog.jpg"})
			if o := standIn.Outputs[0]; o.Width != 1080 || o.Height != 1080 {
				t.Errorf("the stand-in made %dx%d; want 1080x1080, its square at 1080", o.Width, o.Height)
			}
			if !bytes.Equal(file(standIn.Outputs[0]), file(again.Outputs[0])) {
				t.Errorf("the same stand-in URL opened two videos differently")
			}

			before := file(uploaded.Outputs[0])
			snap := call(t, s, "GET", "/_emulator/snapshot", "", nil)
			call(t, s, "POST", "/_emulator/reset", "", nil)
			// A raster of another size, or not base64, is refused at its pointer.
			for _, bad := range []string{`"opening":"AAAA`, `"opening":"!`} {
				doc := strings.Replace(snap.Body.String(), `"opening":"`, bad, 1)
				if rec := call(t, s, "PUT", "/_emulator/snapshot", "", doc); rec.Code != 422 || !strings.Contains(rec.Body.String(), `/outputs/0/opening"`) {
					t.Errorf("a snapshot with %s…: %d %s", bad, rec.Code, rec.Body)
				}
			}
			if rec := call(t, s, "PUT", "/_emulator/snapshot", "", snap.Body.String()); rec.Code != 200 {
				t.Fatalf("restore: %d %s", rec.Code, rec.Body)
			}
			restored := decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+uploaded.ID, "mg_test_all", nil))
			if !bytes.Equal(file(restored.Outputs[0]), before) {
				t.Errorf("the restored video is not the same file")
			}
		})
	}
}
