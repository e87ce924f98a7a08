package media

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mediagen/mediagen-emulator/fixtures"
)

// RenderMP4 renders a video through a Maker of its own, which reads and parses the fixture
// anew (a Maker keeps them), so that the tests can give it broken fixtures and compare the two.
func RenderMP4(fixtures fs.FS, spec VideoSpec) ([]byte, error) {
	g, ticks, err := NewMaker(fixtures).video(spec)
	if err != nil {
		return nil, err
	}
	return renderMP4(g, ticks, opens{}), nil
}

// MP4Size is the length of RenderMP4(fixtures, spec), counted without assembling the file.
func MP4Size(fixtures fs.FS, spec VideoSpec) (int64, error) {
	g, ticks, err := NewMaker(fixtures).video(spec)
	if err != nil {
		return 0, err
	}
	return mp4Size(g, ticks, opens{}), nil
}

// mp4Box is one box found by walkMP4: its type, where it starts in the file, and its payload.
type mp4Box struct {
	typ     string
	path    string // types from the top, joined by "/", e.g. "moov/trak/tkhd"
	offset  int
	payload []byte
}

// walkMP4 lists every box in b, descending into the containers a single-track H.264 file has.
// It fails the test on a size that does not fit its parent.
func walkMP4(t *testing.T, b []byte) []mp4Box {
	t.Helper()
	var boxes []mp4Box
	var walk func(data []byte, base int, parent string)
	walk = func(data []byte, base int, parent string) {
		for p := 0; p < len(data); {
			if len(data)-p < 8 {
				t.Fatalf("%d stray bytes at %d in %q", len(data)-p, base+p, parent)
			}
			size := int(binary.BigEndian.Uint32(data[p:]))
			typ := string(data[p+4 : p+8])
			if size < 8 || size > len(data)-p {
				t.Fatalf("box %q at %d has size %d, %d bytes left in %q", typ, base+p, size, len(data)-p, parent)
			}
			path := typ
			if parent != "" {
				path = parent + "/" + typ
			}
			payload := data[p+8 : p+size]
			boxes = append(boxes, mp4Box{typ: typ, path: path, offset: base + p, payload: payload})
			switch typ {
			case "moov", "trak", "mdia", "minf", "stbl", "dinf":
				walk(payload, base+p+8, path)
			case "stsd", "dref": // full box header and an entry count, then boxes
				walk(payload[8:], base+p+16, path)
			case "avc1": // the visual sample entry's 78 fixed bytes, then boxes
				walk(payload[78:], base+p+86, path)
			}
			p += size
		}
	}
	walk(b, 0, "")
	return boxes
}

// find returns the payload of the one box at path.
func find(t *testing.T, boxes []mp4Box, path string) []byte {
	t.Helper()
	var found []byte
	n := 0
	for _, b := range boxes {
		if b.path == path {
			found = b.payload
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d boxes at %s, want 1", n, path)
	}
	return found
}

// mp4Facts is what checkMP4 reads from a file.
type mp4Facts struct {
	duration      time.Duration // from mdhd
	width, height int
	samples       int
}

// checkMP4 verifies the structure of a file written by RenderMP4 and returns its facts: box
// order, matching durations in mvhd, tkhd and mdhd, the size in tkhd and avc1, and sample tables
// that agree with each other and point inside mdat.
func checkMP4(t *testing.T, b []byte) mp4Facts {
	t.Helper()
	be := binary.BigEndian
	boxes := walkMP4(t, b)
	var top []string
	for _, box := range boxes {
		if box.path == box.typ {
			top = append(top, box.typ)
		}
	}
	if want := []string{"ftyp", "moov", "mdat"}; !slices.Equal(top, want) {
		t.Fatalf("top-level boxes %v, want %v (moov before mdat)", top, want)
	}

	mvhd := find(t, boxes, "moov/mvhd")
	movieScale, movieDur := be.Uint32(mvhd[12:]), be.Uint32(mvhd[16:])
	tkhd := find(t, boxes, "moov/trak/tkhd")
	if d := be.Uint32(tkhd[20:]); d != movieDur {
		t.Errorf("tkhd duration %d, mvhd %d", d, movieDur)
	}
	width, height := int(be.Uint32(tkhd[76:])>>16), int(be.Uint32(tkhd[80:])>>16)
	mdhd := find(t, boxes, "moov/trak/mdia/mdhd")
	scale, dur := be.Uint32(mdhd[12:]), be.Uint32(mdhd[16:])
	if hdlr := find(t, boxes, "moov/trak/mdia/hdlr"); string(hdlr[8:12]) != "vide" {
		t.Errorf("handler %q, want vide", hdlr[8:12])
	}
	facts := mp4Facts{
		duration: time.Duration(dur) * time.Second / time.Duration(scale),
		width:    width, height: height,
	}
	movie := time.Duration(movieDur) * time.Second / time.Duration(movieScale)
	if diff := (movie - facts.duration).Abs(); diff > time.Second/time.Duration(movieScale) {
		t.Errorf("mvhd duration %s, mdhd %s", movie, facts.duration)
	}

	avc1 := find(t, boxes, "moov/trak/mdia/minf/stbl/stsd/avc1")
	if w, h := int(be.Uint16(avc1[24:])), int(be.Uint16(avc1[26:])); w != width || h != height {
		t.Errorf("avc1 size %dx%d, tkhd %dx%d", w, h, width, height)
	}
	avcC := find(t, boxes, "moov/trak/mdia/minf/stbl/stsd/avc1/avcC")
	spsLen := int(be.Uint16(avcC[6:]))
	sw, sh, err := spsSize(avcC[8 : 8+spsLen])
	if err != nil || sw != width || sh != height {
		t.Errorf("SPS in avcC says %dx%d (%v), tkhd %dx%d", sw, sh, err, width, height)
	}

	const stbl = "moov/trak/mdia/minf/stbl/"
	stts := find(t, boxes, stbl+"stts")
	var sttsSamples, sttsTicks uint64
	for i := range int(be.Uint32(stts[4:])) {
		count, delta := be.Uint32(stts[8+8*i:]), be.Uint32(stts[12+8*i:])
		sttsSamples += uint64(count)
		sttsTicks += uint64(count) * uint64(delta)
	}
	if sttsTicks != uint64(dur) {
		t.Errorf("stts sums to %d ticks, mdhd says %d", sttsTicks, dur)
	}
	stsz := find(t, boxes, stbl+"stsz")
	facts.samples = int(be.Uint32(stsz[8:]))
	if uint64(facts.samples) != sttsSamples {
		t.Errorf("stsz has %d samples, stts %d", facts.samples, sttsSamples)
	}
	sizes := make([]int, facts.samples)
	for i := range sizes {
		sizes[i] = int(be.Uint32(stsz[12+4*i:]))
	}
	stss := find(t, boxes, stbl+"stss")
	if be.Uint32(stss[4:]) == 0 || be.Uint32(stss[8:]) != 1 {
		t.Error("stss does not list sample 1 as a sync sample")
	}

	// Expand stsc into samples per chunk and check every sample lies inside mdat.
	stsc := find(t, boxes, stbl+"stsc")
	stco := find(t, boxes, stbl+"stco")
	chunks := int(be.Uint32(stco[4:]))
	var mdat mp4Box
	for _, box := range boxes {
		if box.typ == "mdat" {
			mdat = box
		}
	}
	mdatStart, mdatEnd := mdat.offset+8, mdat.offset+8+len(mdat.payload)
	entries := int(be.Uint32(stsc[4:]))
	sample, end := 0, mdatStart
	for c := range chunks {
		perChunk := 0
		for e := range entries {
			if first := int(be.Uint32(stsc[8+12*e:])); first <= c+1 {
				perChunk = int(be.Uint32(stsc[12+12*e:]))
			}
		}
		off := int(be.Uint32(stco[8+4*c:]))
		if off != end {
			t.Fatalf("chunk %d at %d, want %d (right after the previous one)", c+1, off, end)
		}
		for range perChunk {
			if sample >= len(sizes) {
				t.Fatalf("stsc maps more samples than stsz has")
			}
			end = off + sizes[sample]
			off = end
			sample++
		}
	}
	if sample != facts.samples || end != mdatEnd {
		t.Errorf("chunks hold %d samples ending at %d; want %d ending at %d", sample, end, facts.samples, mdatEnd)
	}
	return facts
}

func TestVideoSizes(t *testing.T) {
	t.Parallel()
	sizes := VideoSizes()
	if len(sizes) != 21 {
		t.Errorf("%d sizes, want 21 (7 aspect ratios × 3 resolutions)", len(sizes))
	}
	seen := map[[2]int]bool{}
	for _, s := range sizes {
		if s[0]%2 != 0 || s[1]%2 != 0 || seen[s] || min(s[0], s[1]) != 480 && min(s[0], s[1]) != 720 && min(s[0], s[1]) != 1080 {
			t.Errorf("size %dx%d is odd, repeated or has an unexpected short side", s[0], s[1])
		}
		seen[s] = true
	}
	for _, want := range [][2]int{
		{854, 480}, {1280, 720}, {1920, 1080}, {1680, 720}, {1120, 480}, {2520, 1080},
		{640, 480}, {960, 720}, {1440, 1080}, {480, 480}, {720, 720}, {1080, 1080},
		{480, 640}, {720, 1280}, {1080, 1920}, {480, 1120}, {1080, 2520},
	} {
		if !seen[want] {
			t.Errorf("VideoSizes lacks %dx%d", want[0], want[1])
		}
	}

	// Exactly one fixture per size, and nothing else in the directory.
	entries, err := fs.ReadDir(fixtures.FS, videoFixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	var want []string
	for _, s := range sizes {
		want = append(want, fmt.Sprintf("%dx%d.h264", s[0], s[1]))
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("fixtures %v, want %v", names, want)
	}
}

func TestRenderMP4EverySize(t *testing.T) {
	t.Parallel()
	for _, size := range VideoSizes() {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			spec := VideoSpec{Width: size[0], Height: size[1], Duration: 2500 * time.Millisecond}
			b, err := RenderMP4(fixtures.FS, spec)
			if err != nil {
				t.Fatal(err)
			}
			f := checkMP4(t, b)
			if f.width != size[0] || f.height != size[1] {
				t.Errorf("size %dx%d, want %dx%d", f.width, f.height, size[0], size[1])
			}
			if f.duration != spec.Duration {
				t.Errorf("duration %s, want %s", f.duration, spec.Duration)
			}
			if f.samples != 60 {
				t.Errorf("%d frames, want 60 (2.5 s at 24 fps)", f.samples)
			}
		})
	}
}

func TestRenderMP4Durations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		duration    time.Duration
		wantFrames  int
		wantSeconds float64 // as the track states it
	}{
		{time.Millisecond, 1, 0.001},
		{40 * time.Millisecond, 1, 0.04},
		{500 * time.Millisecond, 12, 0.5},
		{time.Second, 24, 1},
		{1040 * time.Millisecond, 25, 1.04},
		{5 * time.Second, 120, 5},
		{7300 * time.Millisecond, 176, 7.3},
		{10 * time.Second, 240, 10},
		{MaxVideoDuration, 1440, 60},
		{1234567890 * time.Nanosecond, 30, 1.234583}, // 29629.63 ticks of 1/24000 s → 29630
	}
	for _, tt := range tests {
		t.Run(tt.duration.String(), func(t *testing.T) {
			t.Parallel()
			b, err := RenderMP4(fixtures.FS, VideoSpec{Width: 854, Height: 480, Duration: tt.duration})
			if err != nil {
				t.Fatal(err)
			}
			f := checkMP4(t, b)
			if f.samples != tt.wantFrames {
				t.Errorf("%d frames, want %d", f.samples, tt.wantFrames)
			}
			if got := f.duration.Seconds(); math.Abs(got-tt.wantSeconds) > 1e-6 {
				t.Errorf("duration %.6f s, want %.6f", got, tt.wantSeconds)
			}
		})
	}
}

func TestRenderMP4IsDeterministic(t *testing.T) {
	t.Parallel()
	spec := VideoSpec{Width: 1280, Height: 720, Duration: 3 * time.Second, Seed: 5}
	a, err := RenderMP4(fixtures.FS, spec)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RenderMP4(fixtures.FS, spec)
	if !bytes.Equal(a, b) {
		t.Error("the same spec gave different bytes")
	}
}

func TestRenderMP4RejectsBadSpecs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec VideoSpec
	}{
		{"unsupported size", VideoSpec{Width: 1000, Height: 1000, Duration: time.Second}},
		{"swapped odd size", VideoSpec{Width: 853, Height: 480, Duration: time.Second}},
		{"zero size", VideoSpec{Duration: time.Second}},
		{"zero duration", VideoSpec{Width: 1280, Height: 720}},
		{"negative duration", VideoSpec{Width: 1280, Height: 720, Duration: -time.Second}},
		{"too long", VideoSpec{Width: 1280, Height: 720, Duration: MaxVideoDuration + time.Millisecond}},
		{"shorter than a tick", VideoSpec{Width: 1280, Height: 720, Duration: time.Microsecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := RenderMP4(fixtures.FS, tt.spec)
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("RenderMP4(%+v) error = %v, want ErrInvalidSpec", tt.spec, err)
			}
		})
	}
}

func TestRenderMP4ReportsBadFixtures(t *testing.T) {
	t.Parallel()
	good, err := fs.ReadFile(fixtures.FS, videoFixtureDir+"/854x480.h264")
	if err != nil {
		t.Fatal(err)
	}
	const name = videoFixtureDir + "/1280x720.h264"
	tests := []struct {
		name    string
		fsys    fs.FS
		wantErr string
	}{
		{"missing", fstest.MapFS{}, "file does not exist"},
		{"empty", fstest.MapFS{name: {Data: nil}}, "no SPS or PPS"},
		{"not h264", fstest.MapFS{name: {Data: []byte("hello, world")}}, "no SPS or PPS"},
		{"wrong size", fstest.MapFS{name: {Data: good}}, "is 854x480"},
		{"no frames", fstest.MapFS{name: {Data: good[:bytes.Index(good, []byte{0, 0, 1, 0x65})]}}, "no frames"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := RenderMP4(tt.fsys, VideoSpec{Width: 1280, Height: 720, Duration: time.Second})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSplitAnnexB(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stream []byte
		want   [][]byte
	}{
		{"empty", nil, nil},
		{"no start code", []byte{1, 2, 3}, nil},
		{"three-byte codes", []byte{0, 0, 1, 0x67, 1, 0, 0, 1, 0x68, 2}, [][]byte{{0x67, 1}, {0x68, 2}}},
		{"four-byte codes", []byte{0, 0, 0, 1, 0x67, 1, 0, 0, 0, 1, 0x68, 2, 0}, [][]byte{{0x67, 1}, {0x68, 2}}},
		{"escaped zeros stay", []byte{0, 0, 1, 0x65, 0, 0, 3, 1}, [][]byte{{0x65, 0, 0, 3, 1}}},
	}
	for _, tt := range tests {
		if got := splitAnnexB(tt.stream); !slices.EqualFunc(got, tt.want, bytes.Equal) {
			t.Errorf("%s: splitAnnexB = %x, want %x", tt.name, got, tt.want)
		}
	}
}

func TestUnescapeRBSP(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want []byte }{
		{[]byte{1, 2, 3}, []byte{1, 2, 3}},
		{[]byte{0, 0, 3, 1}, []byte{0, 0, 1}},
		{[]byte{0, 0, 3, 0, 0, 3}, []byte{0, 0, 0, 0}},
		{[]byte{0, 3, 0}, []byte{0, 3, 0}},
	}
	for _, tt := range tests {
		if got := unescapeRBSP(tt.in); !bytes.Equal(got, tt.want) {
			t.Errorf("unescapeRBSP(%x) = %x, want %x", tt.in, got, tt.want)
		}
	}
}

// TestRenderMP4WithFFmpeg has the real tools judge the files: ffprobe must see H.264 at the
// right size and duration, and ffmpeg must decode every frame without complaint.
func TestRenderMP4WithFFmpeg(t *testing.T) {
	t.Parallel()
	ffprobe, err := exec.LookPath("ffprobe")
	if err != nil {
		t.Skip("ffprobe is not on PATH")
	}
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg is not on PATH")
	}
	tests := []VideoSpec{
		{Width: 854, Height: 480, Duration: 5 * time.Second},
		{Width: 1280, Height: 720, Duration: 1300 * time.Millisecond},
		{Width: 1920, Height: 1080, Duration: 10 * time.Second},
		{Width: 720, Height: 1680, Duration: 2 * time.Second},
		{Width: 1080, Height: 1080, Duration: 250 * time.Millisecond},
		{Width: 2520, Height: 1080, Duration: 3700 * time.Millisecond},
		{Width: 480, Height: 640, Duration: MaxVideoDuration},
	}
	for _, spec := range tests {
		t.Run(fmt.Sprintf("%dx%d/%s", spec.Width, spec.Height, spec.Duration), func(t *testing.T) {
			t.Parallel()
			b, err := RenderMP4(fixtures.FS, spec)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "out.mp4")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(ffprobe, "-v", "error", "-show_streams", "-show_format", "-of", "json", path).Output()
			if err != nil {
				t.Fatalf("ffprobe: %v", err)
			}
			var probe struct {
				Streams []struct {
					CodecName string `json:"codec_name"`
					Width     int    `json:"width"`
					Height    int    `json:"height"`
					Duration  string `json:"duration"`
				} `json:"streams"`
				Format struct {
					Duration string `json:"duration"`
				} `json:"format"`
			}
			if err := json.Unmarshal(out, &probe); err != nil {
				t.Fatalf("ffprobe output: %v\n%s", err, out)
			}
			if len(probe.Streams) != 1 {
				t.Fatalf("%d streams, want 1", len(probe.Streams))
			}
			s := probe.Streams[0]
			if s.CodecName != "h264" || s.Width != spec.Width || s.Height != spec.Height {
				t.Errorf("stream is %s %dx%d, want h264 %dx%d", s.CodecName, s.Width, s.Height, spec.Width, spec.Height)
			}
			for what, d := range map[string]string{"stream": s.Duration, "format": probe.Format.Duration} {
				secs, err := strconv.ParseFloat(d, 64)
				if err != nil || math.Abs(secs-spec.Duration.Seconds()) > 0.1 {
					t.Errorf("%s duration %q, want %.3f ± 0.1", what, d, spec.Duration.Seconds())
				}
			}
			cmd := exec.Command(ffmpeg, "-v", "error", "-xerror", "-i", path, "-f", "null", "-")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Errorf("ffmpeg decode: %v\n%s", err, stderr.String())
			}
		})
	}
}

func BenchmarkRenderMP4(b *testing.B) {
	spec := VideoSpec{Width: 1280, Height: 720, Duration: 5 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RenderMP4(fixtures.FS, spec); err != nil {
			b.Fatal(err)
		}
	}
}
