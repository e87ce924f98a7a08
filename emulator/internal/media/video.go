package media

import (
	"fmt"
	"io/fs"
	"time"
)

// MaxVideoDuration is the longest video a Maker renders.
const MaxVideoDuration = 60 * time.Second

// VideoSpec describes one video output.
type VideoSpec struct {
	// Width and Height must be one of VideoSizes.
	Width, Height int
	// Duration is the exact length, to 1/24000 s; 0 < Duration <= MaxVideoDuration.
	Duration time.Duration
	// Seed is accepted for symmetry with the other specs; there is one fixture per size, so it
	// does not change the video.
	Seed uint64
	// Opening, when set, is the raster of the frame the video opens on (NewOpening, of this
	// size): the first frame shows it, and the fixture's frames follow.
	Opening string
}

// Video timing: the fixtures are encoded at 24 fps, and every frame but the last lasts exactly
// one frame period; the last is shortened so the track ends at the requested duration.
const (
	videoFPS       = 24
	videoTimescale = 24000 // ticks per second of the video track
	frameTicks     = videoTimescale / videoFPS
)

// videoFixtureDir is where a Maker looks for video fixtures, relative to the fixtures root.
const videoFixtureDir = "media/video"

// VideoSizes lists every width×height a Maker renders as video: the aspect ratios 21:9, 16:9, 4:3,
// 1:1, 3:4, 9:16 and 9:21 with a short side of 480, 720 or 1080, the long side rounded to the
// nearest even number (16:9 at 480 is 854×480). The fixtures cover exactly these sizes.
func VideoSizes() [][2]int {
	sizes := videoSizes()
	return sizes[:]
}

// videoSizes returns VideoSizes as an array, which checking a size need not allocate.
func videoSizes() [21][2]int {
	ratios := [...][2]int{{21, 9}, {16, 9}, {4, 3}, {1, 1}, {3, 4}, {9, 16}, {9, 21}}
	sides := [...]int{480, 720, 1080}
	var sizes [len(ratios) * len(sides)][2]int
	i := 0
	for _, s := range sides {
		for _, r := range ratios {
			n, d := r[0], r[1]
			if n >= d {
				sizes[i] = [2]int{evenRound(s*n, d), s}
			} else {
				sizes[i] = [2]int{s, evenRound(s*d, n)}
			}
			i++
		}
	}
	return sizes
}

// evenRound returns num/den rounded to the nearest even integer.
func evenRound(num, den int) int {
	return (num + den) / (2 * den) * 2
}

// videoTicks validates spec and returns its duration in ticks of the video timescale.
func videoTicks(spec VideoSpec) (int, error) {
	if !isVideoSize(spec.Width, spec.Height) {
		return 0, fmt.Errorf("%w: video size %dx%d is not supported (see VideoSizes: 21:9, 16:9, 4:3, 1:1, 3:4, 9:16 or 9:21 at 480, 720 or 1080)",
			ErrInvalidSpec, spec.Width, spec.Height)
	}
	if spec.Duration <= 0 || spec.Duration > MaxVideoDuration {
		return 0, fmt.Errorf("%w: video duration %s is outside (0, %s]",
			ErrInvalidSpec, spec.Duration, MaxVideoDuration)
	}
	ticks := int((int64(spec.Duration)*videoTimescale + int64(time.Second)/2) / int64(time.Second))
	if ticks < 1 {
		return 0, fmt.Errorf("%w: video duration %s is too short", ErrInvalidSpec, spec.Duration)
	}
	return ticks, nil
}

// loadGOP reads and parses the fixture for w×h and checks that it is that size.
func loadGOP(fixtures fs.FS, w, h int) (*gop, error) {
	name := fmt.Sprintf("%s/%dx%d.h264", videoFixtureDir, w, h)
	stream, err := fs.ReadFile(fixtures, name)
	if err != nil {
		return nil, fmt.Errorf("media: video fixture: %w", err)
	}
	g, err := parseAnnexB(stream)
	if err != nil {
		return nil, fmt.Errorf("media: video fixture %s: %w", name, err)
	}
	if g.width != w || g.height != h {
		return nil, fmt.Errorf("media: video fixture %s is %dx%d", name, g.width, g.height)
	}
	return g, nil
}

// opens says how a video opens: on its fixture's first frame (the zero value), or on an
// opening frame of its own, coded with parameter sets of its own.
type opens struct {
	sample   []byte // the opening frame's MP4 sample; nil when only sized
	size     int    // its length
	sps, pps []byte
}

// opening prepares the opening frame of a video of g's size; the zero opens when there is none.
// Only its lengths are made unless render says so.
func opening(g *gop, raster string, render bool) opens {
	if raster == "" {
		return opens{}
	}
	o := opens{size: openingSampleLen(g.width, g.height), sps: openingSPS(g.sps, g.width, g.height), pps: openingPPS()}
	if render {
		o.sample = openingSample(raster, g.width, g.height)
	}
	return o
}

// fixtureFrame is the fixture frame that frame i of a video shows: an opening frame, when
// there is one, shifts the fixture's frames one on (-1 for the opening itself).
func fixtureFrame(g *gop, op opens, i int) int {
	if op.size > 0 {
		i--
	}
	if i < 0 {
		return -1
	}
	return i % len(g.frames)
}

// videoTrack lays out the track of a video ticks long made of g's frames, repeated (after its
// opening frame, when it has one): every frame lasts one frame period but the last, which is
// cut to end at the duration, and each run of as many frames as the GOP has is one chunk.
func videoTrack(g *gop, ticks int, op opens) *mp4Track {
	frames := (ticks + frameTicks - 1) / frameTicks
	t := &mp4Track{
		width: g.width, height: g.height,
		sps: [][]byte{g.sps}, pps: [][]byte{g.pps},
		timescale: videoTimescale,
		durations: make([]uint32, frames),
		sizes:     make([]uint32, frames),
		sync:      make([]bool, frames),
		chunk:     len(g.frames),
	}
	if op.size > 0 {
		t.sps, t.pps = append(t.sps, op.sps), append(t.pps, op.pps)
	}
	for i := range frames {
		t.durations[i] = frameTicks
		if f := fixtureFrame(g, op, i); f < 0 {
			t.sizes[i], t.sync[i] = uint32(op.size), true
		} else {
			t.sizes[i], t.sync[i] = uint32(len(g.frames[f])), g.sync[f]
		}
	}
	t.durations[frames-1] = uint32(ticks - (frames-1)*frameTicks)
	return t
}

// renderMP4 writes the MP4 of g's frames lasting ticks: the fixture's one-second 24 fps GOP
// (media/video/WIDTHxHEIGHT.h264 under the fixtures) repeated as often as needed and cut at the
// duration, after the opening frame when there is one, in a fresh MP4 with moov before mdat.
// The bytes depend only on g, ticks and the opening, and their length is exactly mp4Size's.
func renderMP4(g *gop, ticks int, op opens) []byte {
	t := videoTrack(g, ticks, op)
	frames := len(t.sizes)
	return writeMP4(t, mp4Size(g, ticks, op), func(b []byte) []byte {
		for i := range frames {
			if f := fixtureFrame(g, op, i); f < 0 {
				b = append(b, op.sample...)
			} else {
				b = append(b, g.frames[f]...)
			}
		}
		return b
	})
}

// mp4Size returns the length of renderMP4(g, ticks, op) from counts alone: the boxes writeMP4
// writes are fixed but for the avcC parameter sets, a few tables with one entry per sample,
// sync sample, chunk or run of durations, and the samples themselves.
func mp4Size(g *gop, ticks int, op opens) int64 {
	frames := (ticks + frameTicks - 1) / frameTicks
	shown := frames // the fixture's frames shown
	var payload int64
	syncs := 0
	if op.size > 0 {
		shown--
		payload, syncs = int64(op.size), 1
	}
	per := len(g.frames)
	reps, rest := shown/per, shown%per
	for i, f := range g.frames {
		n := reps + b2i(i < rest)
		payload += int64(n) * int64(len(f))
		syncs += n * b2i(g.sync[i])
	}
	chunks := (frames + per - 1) / per
	sttsEntries := 1 // every frame lasts one period, or a single frame
	if last := ticks - (frames-1)*frameTicks; last != frameTicks && frames > 1 {
		sttsEntries = 2
	}
	stscEntries := 1
	if frames%per != 0 && chunks > 1 {
		stscEntries = 2
	}
	avcC := 8 + 11 + len(g.sps) + len(g.pps)
	if op.size > 0 {
		avcC += 2 + len(op.sps) + 2 + len(op.pps)
	}
	if p := g.sps[1]; p == 100 || p == 110 || p == 122 || p == 144 {
		avcC += 4
	}
	const (
		ftyp = 32
		mvhd = 108
		tkhd = 92
		mdhd = 32
		hdlr = 45
		vmhd = 20
		dinf = 36 // holding dref and one url entry
		avc1 = 86 // the visual sample entry's header and fixed fields
		pasp = 16
		full = 12 // a full box's header
	)
	stbl := 8 +
		full + 4 + avc1 + int64(avcC) + pasp + // stsd
		full + 4 + 8*int64(sttsEntries) + // stts
		full + 4 + 4*int64(syncs) + // stss
		full + 4 + 12*int64(stscEntries) + // stsc
		full + 8 + 4*int64(frames) + // stsz
		full + 4 + 4*int64(chunks) // stco
	moov := 8 + mvhd + 8 + tkhd + 8 + mdhd + hdlr + 8 + vmhd + dinf + stbl
	return ftyp + moov + 8 + payload
}

// isVideoSize reports whether w×h is one of VideoSizes.
func isVideoSize(w, h int) bool {
	for _, s := range videoSizes() {
		if s == [2]int{w, h} {
			return true
		}
	}
	return false
}
