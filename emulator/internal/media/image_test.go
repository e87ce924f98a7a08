package media

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"slices"
	"strings"
	"testing"
)

func TestRenderImageDecodesAtExactSize(t *testing.T) {
	t.Parallel()
	sizes := [][2]int{
		{1, 1}, {7, 3}, {64, 64}, {1024, 1024}, {1344, 768}, {768, 1344},
		{1536, 640}, {640, 1536}, {4096, 16}, {16, 4096}, {333, 777}, {2048, 2048},
	}
	for _, format := range []string{"png", "jpeg"} {
		for _, size := range sizes {
			t.Run(fmt.Sprintf("%s/%dx%d", format, size[0], size[1]), func(t *testing.T) {
				t.Parallel()
				spec := ImageSpec{
					Width: size[0], Height: size[1], Format: format, Seed: 42,
					Label: "fal-ai/flux/dev: a red fox in snow",
				}
				data, err := RenderImage(spec)
				if err != nil {
					t.Fatalf("RenderImage(%+v): %v", spec, err)
				}
				decode := png.Decode
				if format == "jpeg" {
					decode = jpeg.Decode
				}
				img, err := decode(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("decode %s: %v", format, err)
				}
				if got := img.Bounds(); got != image.Rect(0, 0, size[0], size[1]) {
					t.Errorf("decoded bounds %v, want %dx%d", got, size[0], size[1])
				}
			})
		}
	}
}

func TestRenderImageIsDeterministicAndSeeded(t *testing.T) {
	t.Parallel()
	base := ImageSpec{Width: 320, Height: 240, Format: "png", Seed: 7, Label: "model: prompt"}
	render := func(t *testing.T, spec ImageSpec) []byte {
		t.Helper()
		data, err := RenderImage(spec)
		if err != nil {
			t.Fatalf("RenderImage(%+v): %v", spec, err)
		}
		return data
	}
	for _, format := range []string{"png", "jpeg"} {
		spec := base
		spec.Format = format
		first := render(t, spec)
		if again := render(t, spec); !bytes.Equal(first, again) {
			t.Errorf("%s: the same spec gave different bytes", format)
		}
		for _, change := range []func(*ImageSpec){
			func(s *ImageSpec) { s.Seed = 8 },
			func(s *ImageSpec) { s.Seed = 1 << 63 },
			func(s *ImageSpec) { s.Label = "model: another prompt" },
		} {
			other := spec
			change(&other)
			if bytes.Equal(first, render(t, other)) {
				t.Errorf("%s: %+v and %+v gave the same bytes", format, spec, other)
			}
		}
	}
}

func TestRenderImageDrawsPatternAndLabel(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{0, 1, 2, 3, 0xdeadbeef} {
		spec := ImageSpec{Width: 512, Height: 384, Format: "png", Seed: seed, Label: "HELLO"}
		data, err := RenderImage(spec)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		// The background is a ramp: many distinct colours, not a flat fill.
		colours := map[[3]uint32]bool{}
		for y := 0; y < 300; y += 3 {
			for x := 0; x < 512; x += 3 {
				r, g, b, _ := img.At(x, y).RGBA()
				colours[[3]uint32{r, g, b}] = true
			}
		}
		if len(colours) < 40 {
			t.Errorf("seed %d: only %d distinct colours in the picture", seed, len(colours))
		}
		// The label: light text pixels on the dark band at the bottom left.
		light, dark := 0, 0
		for y := 384 - 24; y < 384; y++ {
			for x := range 80 {
				r, g, b, _ := img.At(x, y).RGBA()
				switch {
				case r>>8 > 200 && g>>8 > 200 && b>>8 > 200:
					light++
				case r>>8 < 40 && g>>8 < 40 && b>>8 < 40:
					dark++
				}
			}
		}
		if light < 50 || dark < 200 {
			t.Errorf("seed %d: label area has %d light and %d dark pixels", seed, light, dark)
		}
	}
}

func TestRenderImageRejectsBadSpecs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec ImageSpec
	}{
		{"zero width", ImageSpec{Width: 0, Height: 10, Format: "png"}},
		{"negative height", ImageSpec{Width: 10, Height: -1, Format: "png"}},
		{"too wide", ImageSpec{Width: MaxImageSide + 1, Height: 10, Format: "png"}},
		{"too tall", ImageSpec{Width: 10, Height: MaxImageSide + 1, Format: "jpeg"}},
		{"unknown format", ImageSpec{Width: 10, Height: 10, Format: "gif"}},
		{"empty format", ImageSpec{Width: 10, Height: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := RenderImage(tt.spec); !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("RenderImage(%+v) error = %v, want ErrInvalidSpec", tt.spec, err)
			}
		})
	}
}

func TestToASCII(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain ASCII ~", "plain ASCII ~"},
		{"tab\tand\nnewline", "tab and newline"},
		{"café", "caf?"},
		{"日本", "??"},
		{"bad \xff byte", "bad ? byte"},
		{"emoji 🦊!", "emoji ?!"},
	}
	for _, tt := range tests {
		if got := string(toASCII(tt.in)); got != tt.want {
			t.Errorf("toASCII(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWrapText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text     string
		width    int
		maxLines int
		want     []string
	}{
		{"short", 10, 3, []string{"short"}},
		{"exactly ten", 11, 3, []string{"exactly ten"}},
		{"a red fox in the snow", 10, 3, []string{"a red fox", "in the", "snow"}},
		{"abcdefghijklmnop", 5, 3, []string{"abcde", "fghij", "kl..."}},
		{"a red fox in the snow at dusk", 10, 2, []string{"a red fox", "in the..."}},
		{"trailing spaces     ", 15, 1, []string{"trailing spaces"}},
		{"anything", 0, 3, nil},
		{"anything", 10, 0, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, line := range wrapText([]byte(tt.text), tt.width, tt.maxLines) {
			got = append(got, string(line))
			if len(line) > tt.width {
				t.Errorf("wrapText(%q, %d) line %q is longer than %d", tt.text, tt.width, line, tt.width)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("wrapText(%q, %d, %d) = %q, want %q", tt.text, tt.width, tt.maxLines, got, tt.want)
		}
	}
}

// The font is a picture in a string; a stray or missing character would shift every glyph after
// it.
func TestGlyphTableIsWellFormed(t *testing.T) {
	t.Parallel()
	if want := 95 * glyphStride; len(glyphs) != want {
		t.Fatalf("glyph table is %d bytes, want %d", len(glyphs), want)
	}
	for i := range len(glyphs) {
		c, want := glyphs[i], ".#"
		if i%(glyphW+1) == glyphW {
			want = " "
		}
		if !strings.ContainsRune(want, rune(c)) {
			t.Fatalf("glyph %q: byte %d is %q, want one of %q", rune(0x20+i/glyphStride), i%glyphStride, c, want)
		}
	}
	// Every printable character but the space draws something.
	for c := byte(0x21); c <= 0x7e; c++ {
		var any uint8
		for r := range glyphH {
			any |= glyphRow(c, r)
		}
		if any == 0 {
			t.Errorf("glyph %q is blank", c)
		}
	}
}

func TestContentType(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"png": "image/png", "jpeg": "image/jpeg", "jpg": "image/jpeg", "JPEG": "image/jpeg",
		"wav": "audio/wav", "mp4": "video/mp4", "gif": "application/octet-stream", "": "application/octet-stream",
	}
	for format, want := range tests {
		if got := ContentType(format); got != want {
			t.Errorf("ContentType(%q) = %q, want %q", format, got, want)
		}
	}
}

func BenchmarkRenderImage(b *testing.B) {
	for _, format := range []string{"png", "jpeg"} {
		for _, size := range [][2]int{{1024, 768}, {1024, 1024}} {
			b.Run(fmt.Sprintf("%s/%dx%d", format, size[0], size[1]), func(b *testing.B) {
				spec := ImageSpec{Width: size[0], Height: size[1], Format: format, Seed: 1,
					Label: "fal-ai/flux/dev: a red fox in snow, golden hour"}
				b.ReportAllocs()
				var n int
				for b.Loop() {
					data, err := RenderImage(spec)
					if err != nil {
						b.Fatal(err)
					}
					n = len(data)
				}
				b.ReportMetric(float64(n), "file-bytes")
			})
		}
	}
}
