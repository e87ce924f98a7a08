package media

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math/bits"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mediagen/mediagen-emulator/fixtures"
)

// sizeTestSpecs is a spread of specs for every format: tiny, odd and non-multiple-of-8 or -16
// sizes, the largest side, labels empty, long and not ASCII, and durations from one sample or
// frame to the maximum.
func sizeTestSpecs(short bool) []Spec {
	labels := []string{"", "fal-ai/flux/dev: a red fox in snow", strings.Repeat("a long prompt ", 60), "日本語のプロンプト 🦊 café"}
	sizes := [][2]int{
		{1, 1}, {2, 1}, {1, 2}, {3, 5}, {7, 3}, {8, 8}, {9, 9}, {15, 17}, {16, 16}, {17, 33},
		{100, 75}, {333, 777}, {1023, 769}, {1024, 768}, {MaxImageSide, 9}, {11, MaxImageSide},
	}
	if !short {
		sizes = append(sizes, [2]int{MaxImageSide, MaxImageSide})
	}
	var specs []Spec
	for i, size := range sizes {
		formats := []string{"png", "jpeg"}
		if i%5 == 0 {
			formats = append(formats, "JPG") // any case, either name
		}
		for _, format := range formats {
			specs = append(specs, Spec{Format: format, Width: size[0], Height: size[1],
				Seed: uint64(i) * 7919, Label: labels[i%len(labels)]})
		}
	}
	for _, a := range []struct {
		d    time.Duration
		rate int
	}{{time.Second / 24000, 0}, {time.Millisecond, 8000}, {1234567 * time.Microsecond, 44100}, {7 * time.Second, 0}, {MaxAudioDuration / 10, 8000}} {
		specs = append(specs, Spec{Format: "wav", Duration: a.d, SampleRate: a.rate, Seed: 5})
	}
	for i, size := range VideoSizes() {
		d := []time.Duration{time.Millisecond, 41 * time.Millisecond, time.Second, 1040 * time.Millisecond,
			2500 * time.Millisecond, 7300 * time.Millisecond, MaxVideoDuration}[i%7]
		specs = append(specs, Spec{Format: "mp4", Width: size[0], Height: size[1], Duration: d})
	}
	return specs
}

// checkDecodes checks that data is a well-formed file of spec's kind and size.
func checkDecodes(t *testing.T, spec Spec, data []byte) {
	t.Helper()
	switch strings.ToLower(spec.Format) {
	case "png", "jpeg", "jpg":
		decode := png.Decode
		if strings.ToLower(spec.Format) != "png" {
			decode = jpeg.Decode
			checkJPEGScan(t, data)
		}
		img, err := decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got := img.Bounds(); got != image.Rect(0, 0, spec.Width, spec.Height) {
			t.Errorf("decoded bounds %v, want %dx%d", got, spec.Width, spec.Height)
		}
	case "wav":
		info := parseWAV(t, data)
		rate := spec.SampleRate
		if rate == 0 {
			rate = DefaultSampleRate
		}
		want := int((int64(spec.Duration)*int64(rate) + int64(time.Second)/2) / int64(time.Second))
		if len(info.samples) != want || int(info.rate) != rate {
			t.Errorf("%d samples at %d Hz, want %d at %d", len(info.samples), info.rate, want, rate)
		}
	case "mp4":
		f := checkMP4(t, data)
		if f.width != spec.Width || f.height != spec.Height {
			t.Errorf("size %dx%d, want %dx%d", f.width, f.height, spec.Width, spec.Height)
		}
		ticks := (int64(spec.Duration)*videoTimescale + int64(time.Second)/2) / int64(time.Second)
		if want := time.Duration(ticks) * time.Second / videoTimescale; f.duration != want {
			t.Errorf("duration %s, want %s", f.duration, want)
		}
	}
}

// checkJPEGScan checks that the entropy-coded data of a rendered JPEG (from after the SOS
// segment to EOI) holds no run of eight one-bits, hence no 0xFF byte and nothing to stuff.
func checkJPEGScan(t *testing.T, data []byte) {
	t.Helper()
	sos := bytes.Index(data, []byte{0xff, 0xda})
	if sos < 0 || !bytes.HasSuffix(data, []byte{0xff, 0xd9}) {
		t.Fatal("no SOS segment or no EOI at the end")
	}
	scan := data[sos+2+(int(data[sos+2])<<8|int(data[sos+3])) : len(data)-2]
	if i := bytes.IndexByte(scan, 0xff); i >= 0 {
		t.Fatalf("scan byte %d of %d is 0xFF", i, len(scan))
	}
	// With no 0xFF byte, a run of eight ones must cross a byte boundary: the trailing ones of
	// one byte and the leading ones of the next.
	trailing := 0
	for i, b := range scan {
		if trailing+bits.LeadingZeros8(^b) >= 8 {
			t.Fatalf("eight one-bits in a row end in scan byte %d", i)
		}
		trailing = bits.TrailingZeros8(^b)
	}
}

func TestSizeMatchesRender(t *testing.T) {
	t.Parallel()
	m := NewMaker(fixtures.FS)
	for _, spec := range sizeTestSpecs(testing.Short()) {
		t.Run(fmt.Sprintf("%s/%dx%d/%s/%d", spec.Format, spec.Width, spec.Height, spec.Duration, len(spec.Label)), func(t *testing.T) {
			t.Parallel()
			size, err := m.Size(spec)
			if err != nil {
				t.Fatalf("Size: %v", err)
			}
			data, err := m.Render(spec)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if int64(len(data)) != size {
				t.Errorf("Size %d, rendered %d bytes", size, len(data))
			}
			if cap(data) != len(data) {
				t.Errorf("rendered slice has capacity %d for %d bytes", cap(data), len(data))
			}
			checkDecodes(t, spec, data)
			if again, _ := m.Render(spec); !bytes.Equal(again, data) {
				t.Error("the same spec gave different bytes")
			}
			if spec.Format == "mp4" || spec.Format == "wav" && spec.Duration < 100*time.Millisecond {
				// One fixture per size: the seed does not change a video. Audio starts with a
				// fade-in from silence, so a few samples are the same whatever the seed.
				return
			}
			other := spec
			other.Seed ^= 0x5555
			if b, err := m.Render(other); err != nil || bytes.Equal(b, data) {
				t.Errorf("seed %d and %d gave the same bytes (%v)", spec.Seed, other.Seed, err)
			}
		})
	}
}

// The per-format functions agree with Maker, and RenderMP4 (which parses the fixture each
// time) with the Maker's cached fixtures.
func TestPerFormatFunctionsAgreeWithMaker(t *testing.T) {
	t.Parallel()
	m := NewMaker(fixtures.FS)
	img := Spec{Format: "jpeg", Width: 99, Height: 51, Seed: 3, Label: "x"}
	aud := Spec{Format: "wav", Duration: 1500 * time.Millisecond, SampleRate: 16000, Seed: 3}
	vid := Spec{Format: "mp4", Width: 1280, Height: 720, Duration: 3100 * time.Millisecond}
	for _, c := range []struct {
		spec         Spec
		size         func() (int64, error)
		render       func() ([]byte, error)
		wantSameSize int64
	}{
		{img, func() (int64, error) { return ImageSize(img.Image()) }, func() ([]byte, error) { return RenderImage(img.Image()) }, 0},
		{aud, func() (int64, error) { return WAVSize(aud.Audio()) }, func() ([]byte, error) { return RenderWAV(aud.Audio()) }, 0},
		{vid, func() (int64, error) { return MP4Size(fixtures.FS, vid.Video()) }, func() ([]byte, error) { return RenderMP4(fixtures.FS, vid.Video()) }, 0},
	} {
		size, err := c.size()
		if err != nil {
			t.Fatal(err)
		}
		data, err := c.render()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := m.Render(c.spec)
		if mSize, _ := m.Size(c.spec); mSize != size || !bytes.Equal(data, want) {
			t.Errorf("%s: functions give %d bytes (size %d), Maker %d (size %d)", c.spec.Format, len(data), size, len(want), mSize)
		}
	}
}

func TestSizeRejectsWhatRenderRejects(t *testing.T) {
	t.Parallel()
	m := NewMaker(fixtures.FS)
	for _, spec := range []Spec{
		{Format: "gif", Width: 10, Height: 10},
		{Format: "", Width: 10, Height: 10},
		{Format: "png", Width: 0, Height: 10},
		{Format: "jpeg", Width: MaxImageSide + 1, Height: 10},
		{Format: "png", Width: 10, Height: -3},
		{Format: "wav"},
		{Format: "wav", Duration: time.Second, SampleRate: 1},
		{Format: "wav", Duration: MaxAudioDuration + 1},
		{Format: "mp4", Width: 1000, Height: 1000, Duration: time.Second},
		{Format: "mp4", Width: 1280, Height: 720, Duration: MaxVideoDuration + 1},
		{Format: "mp4", Width: 1280, Height: 720, Duration: time.Microsecond},
	} {
		_, sizeErr := m.Size(spec)
		_, renderErr := m.Render(spec)
		if !errors.Is(sizeErr, ErrInvalidSpec) || !errors.Is(renderErr, ErrInvalidSpec) {
			t.Errorf("%+v: Size error %v, Render error %v; want ErrInvalidSpec from both", spec, sizeErr, renderErr)
		}
	}
}

// A fixture that cannot be read is an error each time, not remembered: once it appears, the
// Maker uses it.
func TestMakerRetriesMissingFixture(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{}
	m := NewMaker(fsys)
	spec := Spec{Format: "mp4", Width: 854, Height: 480, Duration: time.Second}
	if _, err := m.Size(spec); err == nil || errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("Size with no fixture: error %v, want a fixture error", err)
	}
	good, err := fixtures.FS.ReadFile(videoFixtureDir + "/854x480.h264")
	if err != nil {
		t.Fatal(err)
	}
	fsys[videoFixtureDir+"/854x480.h264"] = &fstest.MapFile{Data: good}
	size, err := m.Size(spec)
	if err != nil {
		t.Fatal(err)
	}
	data, err := m.Render(spec)
	if err != nil || int64(len(data)) != size {
		t.Errorf("Render: %d bytes (%v), Size %d", len(data), err, size)
	}
}

// Many seeds and shapes, so that the no-0xFF argument meets every kind of block: flat areas,
// grain, disc edges, text at every scale.
func TestJPEGScanNeverHoldsFF(t *testing.T) {
	t.Parallel()
	rng := splitmix64{state: 99}
	n := 200
	if testing.Short() {
		n = 40
	}
	for i := range n {
		spec := ImageSpec{Format: "jpeg", Width: rng.between(1, 300), Height: rng.between(1, 300),
			Seed: rng.next(), Label: strings.Repeat("Wm#@ ", rng.intn(30))}
		if i%40 == 0 {
			spec.Width, spec.Height = rng.between(600, 1400), rng.between(600, 1400)
		}
		data, err := RenderImage(spec)
		if err != nil {
			t.Fatal(err)
		}
		checkJPEGScan(t, data)
	}
}

// The Huffman tables in the file are what the size argument assumes: every code has the form
// 1…10 with at most seven ones, every symbol (code plus magnitude bits) has the same length
// within a table, and the all-ones code is unused.
func TestJPEGHuffmanTables(t *testing.T) {
	t.Parallel()
	data, err := RenderImage(ImageSpec{Format: "jpeg", Width: 8, Height: 8})
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte{0xff, 0xc4})
	if at < 0 {
		t.Fatal("no DHT segment")
	}
	seg := data[at+4 : at+2+(int(data[at+2])<<8|int(data[at+3]))]
	tables := 0
	for len(seg) > 0 {
		class, counts := seg[0], seg[1:17]
		n := 0
		for _, c := range counts {
			n += int(c)
		}
		values := seg[17 : 17+n]
		seg = seg[17+n:]
		tables++
		code, i, cost := 0, 0, -1
		for l := 1; l <= 16; l++ {
			for range counts[l-1] {
				if code != 1<<l-2 || l-1 > 7 {
					t.Errorf("table %#x: code %b of length %d is not ones then a zero, or has over seven ones", class, code, l)
				}
				size := int(values[i] & 0x0f)
				if class>>4 == 1 && values[i]>>4 != 0 {
					t.Errorf("table %#x: symbol %#x has a zero run", class, values[i])
				}
				if cost >= 0 && l+size != cost {
					t.Errorf("table %#x: symbol %#x costs %d bits, others %d", class, values[i], l+size, cost)
				}
				cost = l + size
				code++
				i++
			}
			code <<= 1
		}
		if code>>1 == 1<<16-1 || n == 0 {
			t.Errorf("table %#x uses the all-ones code or is empty", class)
		}
	}
	if tables != 4 {
		t.Errorf("%d Huffman tables, want 4", tables)
	}
}

// The JPEG shows the same picture as the PNG: close in colour on average, and with the label's
// light text pixels in the same places.
func TestJPEGMatchesPNG(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{300, 200}, {1024, 768}} {
		spec := ImageSpec{Width: size[0], Height: size[1], Seed: 4, Label: "fal-ai/flux/dev: HELLO world 0123"}
		spec.Format = "png"
		p, _ := RenderImage(spec)
		spec.Format = "jpeg"
		j, _ := RenderImage(spec)
		pi, err := png.Decode(bytes.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		ji, err := jpeg.Decode(bytes.NewReader(j))
		if err != nil {
			t.Fatal(err)
		}
		var diff, n int64
		agree, text := 0, 0
		for y := range size[1] {
			for x := range size[0] {
				pr, pg, pb, _ := pi.At(x, y).RGBA()
				jr, jg, jb, _ := ji.At(x, y).RGBA()
				diff += abs64(int64(pr>>8)-int64(jr>>8)) + abs64(int64(pg>>8)-int64(jg>>8)) + abs64(int64(pb>>8)-int64(jb>>8))
				n += 3
				if pr>>8 > 200 && pg>>8 > 200 && pb>>8 > 200 && y > size[1]-40 {
					text++
					if jr>>8 > 128 && jg>>8 > 128 && jb>>8 > 128 {
						agree++
					}
				}
			}
		}
		mean := float64(diff) / float64(n)
		t.Logf("%dx%d: mean difference %.2f levels; %d of %d text pixels light", size[0], size[1], mean, agree, text)
		if mean > 6 {
			t.Errorf("%dx%d: JPEG differs from PNG by %.1f levels on average", size[0], size[1], mean)
		}
		if text < 100 || float64(agree) < 0.9*float64(text) {
			t.Errorf("%dx%d: %d of %d text pixels are light in the JPEG", size[0], size[1], agree, text)
		}
	}
}

func FuzzSizeMatchesRender(f *testing.F) {
	f.Add("png", uint16(1), uint16(1), uint64(0), "", uint32(0), uint32(0))
	f.Add("jpeg", uint16(17), uint16(9), uint64(7), "model: prompt", uint32(0), uint32(0))
	f.Add("wav", uint16(0), uint16(0), uint64(1), "", uint32(1234), uint32(44100))
	f.Add("mp4", uint16(854), uint16(480), uint64(1), "", uint32(1040), uint32(0))
	f.Add("gif", uint16(5), uint16(5), uint64(1), "", uint32(5), uint32(0))
	m := NewMaker(fixtures.FS)
	f.Fuzz(func(t *testing.T, format string, w, h uint16, seed uint64, label string, ms, rate uint32) {
		spec := Spec{Format: format, Width: int(w), Height: int(h), Seed: seed, Label: label,
			Duration: time.Duration(ms%5000) * time.Millisecond, SampleRate: int(rate)}
		if !strings.EqualFold(format, "mp4") {
			// Keep images small; sizes out of range still check that both refuse them.
			spec.Width, spec.Height = int(w%400)-2, int(h%400)-2
		}
		size, sizeErr := m.Size(spec)
		data, renderErr := m.Render(spec)
		if (sizeErr == nil) != (renderErr == nil) {
			t.Fatalf("%+v: Size error %v, Render error %v", spec, sizeErr, renderErr)
		}
		if renderErr == nil && int64(len(data)) != size {
			t.Fatalf("%+v: Size %d, rendered %d bytes", spec, size, len(data))
		}
	})
}

func BenchmarkSize(b *testing.B) {
	m := NewMaker(fixtures.FS)
	for _, spec := range []Spec{
		{Format: "png", Width: 1024, Height: 768},
		{Format: "jpeg", Width: 1024, Height: 768},
		{Format: "wav", Duration: 10 * time.Second},
		{Format: "mp4", Width: 1280, Height: 720, Duration: 5 * time.Second},
	} {
		b.Run(spec.Format, func(b *testing.B) {
			if _, err := m.Size(spec); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Size(spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
