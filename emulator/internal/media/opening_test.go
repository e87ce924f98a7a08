package media

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/fixtures"
)

// quadrants is a w×h image of four colours, one to each quarter: what a first frame must show.
func quadrants(w, h int) (image.Image, [4]color.NRGBA) {
	colours := [4]color.NRGBA{{220, 40, 40, 255}, {40, 200, 60, 255}, {30, 60, 210, 255}, {240, 230, 40, 255}}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, colours[2*(2*y/h)+2*x/w])
		}
	}
	return img, colours
}

// TestOpeningSized: a video with an opening frame is exactly as long as Size says, the same
// spec makes the same bytes, and a raster of another size is refused; without one, the video
// is what it always was.
func TestOpeningSized(t *testing.T) {
	t.Parallel()
	m := NewMaker(fixtures.FS)
	img, _ := quadrants(640, 480)
	for _, size := range [][2]int{{854, 480}, {1280, 720}, {1920, 1080}, {480, 1120}, {720, 720}} {
		w, h := size[0], size[1]
		spec := Spec{Format: "mp4", Width: w, Height: h, Duration: 1500 * time.Millisecond, Opening: NewOpening(img, w, h)}
		n, err := m.Size(spec)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Render(spec)
		if err != nil || int64(len(b)) != n {
			t.Fatalf("%dx%d: %d bytes (%v), Size says %d", w, h, len(b), err, n)
		}
		if again, _ := m.Render(spec); !bytes.Equal(again, b) {
			t.Errorf("%dx%d: the same spec made other bytes", w, h)
		}
		plain := spec
		plain.Opening = ""
		if got, _ := m.Render(plain); !bytes.Equal(got, mustRender(t, VideoSpec{Width: w, Height: h, Duration: spec.Duration})) {
			t.Errorf("%dx%d: a video without an opening changed", w, h)
		}
	}
	if _, err := m.Size(Spec{Format: "mp4", Width: 1280, Height: 720, Duration: time.Second, Opening: NewOpening(img, 854, 480)}); err == nil {
		t.Error("an 854x480 raster was taken for a 1280x720 video")
	}
}

func mustRender(t *testing.T, spec VideoSpec) []byte {
	t.Helper()
	b, err := RenderMP4(fixtures.FS, spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOpeningWithFFmpeg: ffmpeg decodes every frame of a video with an opening without
// complaint, and the first frame shows the input image at the video's size: each quarter's
// centre has its colour.
func TestOpeningWithFFmpeg(t *testing.T) {
	t.Parallel()
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg is not on PATH")
	}
	m := NewMaker(fixtures.FS)
	for _, size := range [][2]int{{854, 480}, {1920, 1080}, {720, 1280}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			t.Parallel()
			img, colours := quadrants(300, 200) // another shape: the frame stretches it to fill
			b, err := m.Render(Spec{Format: "mp4", Width: w, Height: h, Duration: 2100 * time.Millisecond, Opening: NewOpening(img, w, h)})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "v.mp4")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(ffmpeg, "-v", "error", "-xerror", "-i", path, "-f", "null", "-")
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Fatalf("ffmpeg decode: %v\n%s", err, stderr.String())
			}
			stderr.Reset()
			cmd = exec.Command(ffmpeg, "-v", "error", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-")
			cmd.Stderr = &stderr
			frame, err := cmd.Output()
			if err != nil || len(frame) != 3*w*h {
				t.Fatalf("first frame: %d bytes (%v) %s; want %d", len(frame), err, stderr.String(), 3*w*h)
			}
			for q, c := range colours {
				x, y := w/4+(q%2)*w/2, h/4+(q/2)*h/2
				p := frame[3*(y*w+x):]
				for i, want := range []uint8{c.R, c.G, c.B} {
					if d := int(p[i]) - int(want); d < -12 || d > 12 {
						t.Errorf("quarter %d at (%d,%d) is %v, want about %v", q, x, y, p[:3], c)
						break
					}
				}
			}
		})
	}
}
